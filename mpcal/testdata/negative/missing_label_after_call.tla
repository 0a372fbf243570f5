\* EXPECT: missing-label 14:5 the statement after a call is neither labelled nor return/goto
---- MODULE missing_label_after_call ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal missing_label_after_call {
  procedure Proc() {
  pr:
    return;
  }
  archetype A(ref x) {
  l1:
    call Proc();
    x := 1;
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
