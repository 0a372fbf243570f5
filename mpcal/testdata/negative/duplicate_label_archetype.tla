\* EXPECT: duplicate-label 12:3 label l1 twice in one archetype
---- MODULE duplicate_label_archetype ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal duplicate_label_archetype {
  archetype A(ref x) {
  l1:
    x := 1;
  l2:
    x := 2;
  l1:
    x := 3;
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
