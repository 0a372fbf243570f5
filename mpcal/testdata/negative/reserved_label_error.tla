\* EXPECT: reserved-label 8:3 a label named Error
---- MODULE reserved_label_error ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal reserved_label_error {
  archetype A(ref x) {
  Error:
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
