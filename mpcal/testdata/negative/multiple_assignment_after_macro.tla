\* EXPECT: multiple-assignment 13:5 the macro assigns x, then the same step assigns x again
---- MODULE multiple_assignment_after_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal multiple_assignment_after_macro {
  macro Set(v) {
    x := v;
  }
  archetype A(ref x) {
  l1:
    Set(1);
    x := 2;
  }
  variables x = 0;
  process (P \in {1}) == instance A(ref x);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
