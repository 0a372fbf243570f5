\* EXPECT: missing-label 11:5 the statement after a goto has no label
---- MODULE missing_label_after_goto ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal missing_label_after_goto {
  archetype A(ref x) {
  l1:
    x := 1;
    goto l1;
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
