\* EXPECT: duplicate-label 10:3 label p1 twice in one procedure
---- MODULE duplicate_label_procedure ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal duplicate_label_procedure {
  procedure Proc(ref r) {
  p1:
    r := 1;
  p1:
    r := 2;
    return;
  }
  archetype A(ref x) {
  l1:
    call Proc(ref x);
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
