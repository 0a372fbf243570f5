\* EXPECT: redefinition 11:13 two archetypes named A
---- MODULE redefinition_archetype ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal redefinition_archetype {
  archetype A(ref x) {
  l1:
    x := 1;
  }
  archetype A(ref x) {
  l2:
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
