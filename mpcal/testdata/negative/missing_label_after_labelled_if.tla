\* EXPECT: missing-label 13:5 the statement after an if that contains a label has no label
---- MODULE missing_label_after_labelled_if ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal missing_label_after_labelled_if {
  archetype A(ref x) {
  l1:
    if (x = 0) {
    inner:
      x := 1;
    };
    print x;
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
