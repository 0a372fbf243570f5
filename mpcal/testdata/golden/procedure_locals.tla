---- MODULE procedure_locals ----
\* Golden: a procedure with several locals with and without initial values,
\* several parameters, a loop inside the procedure and recursion.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal procedure_locals {
  procedure Count(from, to)
    variables i = from, acc = 0, scratch;
  {
  cLoop:
    while (i <= to) {
      acc := acc + i;
      i := i + 1;
    };
  cDone:
    scratch := acc;
  cRet:
    \* not in cDone: return restores the locals, so it cannot share a step
    \* with an assignment to one of them
    result := result + scratch;
    return;
  }

  procedure Down(k) {
  d1:
    if (k > 0) {
      result := result + 1;
      call Down(k - 1);
    };
  d2:
    return;
  }

  variables result = 0;

  process (Main \in {1}) {
  m1:
    call Count(1, 3);
  m2:
    call Down(2);
  }
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

ResultOK == result \in {0, 6, 7, 8}
====
