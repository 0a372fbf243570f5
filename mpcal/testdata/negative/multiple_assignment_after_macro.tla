\* EXPECT: multiple-assignment 14:5 plain PlusCal: the macro assigns x, then the same step assigns x again
---- MODULE multiple_assignment_after_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--algorithm multiple_assignment_after_macro {
  variables x = 0;
  macro Set(v) {
    x := v;
  }
  process (P \in {1}) {
  l1:
    Set(1);
    x := 2;
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
