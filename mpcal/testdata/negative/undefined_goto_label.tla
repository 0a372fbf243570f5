\* EXPECT: undefined 10:10 goto a label that does not exist
---- MODULE undefined_goto_label ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal undefined_goto_label {
  archetype A(ref x) {
  l1:
    x := 1;
    goto nowhere;
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
