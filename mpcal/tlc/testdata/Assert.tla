---- MODULE Assert ----
EXTENDS Naturals, TLC
(* --algorithm Assert
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
  chk:
    assert total < 4;
end process;
end algorithm; *)
\* A process that finishes its loop after the other fails the assertion.
\* BEGIN TRANSLATION
\* END TRANSLATION
====
