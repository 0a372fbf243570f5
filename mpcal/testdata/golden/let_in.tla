---- MODULE let_in ----
\* Golden: LET/IN in a define block, in an assignment and in an await, with
\* several definitions in one LET, a local operator with a parameter and a
\* nested LET.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal let_in {
  define {
    Mid(a, b) == LET sum == a + b
                     half(x) == x \div 2
                 IN half(sum)
  }

  archetype AWorker(ref total) {
  first:
    total := LET x == 3
                 y == LET z == x * 2 IN z + 1
             IN x + y;
  second:
    await LET t == total IN t > 5;
    total := Mid(total, 20);
  }

  variables total = 0;

  process (Worker \in {1}) == instance AWorker(ref total);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

TotalOK == total \in {0, 10, 15}
====
