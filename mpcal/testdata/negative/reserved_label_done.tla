\* EXPECT: reserved-label 10:3 a label named Done
---- MODULE reserved_label_done ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal reserved_label_done {
  archetype A(ref x) {
  l1:
    x := 1;
  Done:
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
