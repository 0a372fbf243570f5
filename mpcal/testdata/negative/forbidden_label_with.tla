\* EXPECT: forbidden-label 10:5 a label inside a with body
---- MODULE forbidden_label_with ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal forbidden_label_with {
  archetype A(ref x) {
  l1:
    with (v \in 1..2) {
    l2:
      x := v;
    };
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
