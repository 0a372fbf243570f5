\* EXPECT: missing-label 8:5 the first statement of a procedure has no label
---- MODULE missing_label_first_procedure ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal missing_label_first_procedure {
  procedure Proc(ref r) {
    r := 1;
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
