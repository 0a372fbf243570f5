---- MODULE Workers ----
EXTENDS Naturals
(* --algorithm Workers
variables total = 0;
process W \in 1..2
variables i = 0;
begin
  inc:
    while i < 2 do
      add:
        total := total + 1;
        i := i + 1;
    end while;
end process;
end algorithm; *)
\* Each process goes through (inc, 0), (add, 0), (inc, 1), (add, 1),
\* (inc, 2), (Done, 2): 6 local states, and total = i[1] + i[2] always, so
\* 6 * 6 = 36 distinct states.
\* BEGIN TRANSLATION
\* END TRANSLATION
TotalOK == total = i[1] + i[2]
====
