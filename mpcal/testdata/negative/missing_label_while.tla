\* EXPECT: missing-label 10:5 a while statement without a label
---- MODULE missing_label_while ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal missing_label_while {
  archetype A(ref x) {
  l1:
    x := 0;
    while (x < 3) {
      x := x + 1;
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
