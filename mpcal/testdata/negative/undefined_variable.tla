\* EXPECT: undefined 9:10 "y" is neither a parameter, a local nor a definition
---- MODULE undefined_variable ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal undefined_variable {
  archetype A(ref x) {
  l1:
    x := y + 1;
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
