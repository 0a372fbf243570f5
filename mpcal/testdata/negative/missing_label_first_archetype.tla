\* EXPECT: missing-label 8:5 the first statement of an archetype has no label
---- MODULE missing_label_first_archetype ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal missing_label_first_archetype {
  archetype A(ref x) {
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
