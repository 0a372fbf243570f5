---- MODULE while_loop ----
\* Golden: while loops: a loop whose body has labels, a nested loop, and the
\* labelled statement after a loop.
EXTENDS Naturals, Sequences, TLC

CONSTANT N

(*
--mpcal while_loop {
  archetype ALoops(ref sum)
    variables i = 0, j = 0;
  {
  outer:
    while (i < N) {
      j := 0;
    inner:
      while (j < i) {
        sum := sum + 1;
        j := j + 1;
      };
    next:
      i := i + 1;
    };
  after:
    assert sum = (N * (N - 1)) \div 2;
  }

  variables sum = 0;

  process (Loops \in {1}) == instance ALoops(ref sum);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

SumOK == sum <= (N * (N - 1)) \div 2
====
