---- MODULE plain_process_calls_ref ----
\* Golden: a plain PlusCal process inside an MPCal block calling an MPCal
\* procedure with "ref" on a global and on its own local variable.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal plain_process_calls_ref {
  procedure Add(ref target, n) {
  addLbl:
    target := target + n;
    return;
  }

  variables g = 0;

  process (Plain \in {1})
    variables mine = 5;
  {
  p1:
    call Add(ref g, 3);
  p2:
    call Add(ref mine, 1);
  p3:
    assert mine = 6;
  }
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == g \in {0, 3}
====
