\* EXPECT: redefinition 8:22 two locals named y in one archetype
---- MODULE redefinition_local ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal redefinition_local {
  archetype A(ref x)
    variables y = 0, y = 1;
  {
  l1:
    x := y;
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
