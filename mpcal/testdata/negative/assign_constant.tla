\* EXPECT: assign-non-variable 10:5 assignment to the constant N
---- MODULE assign_constant ----
EXTENDS Naturals, Sequences, TLC
CONSTANT N

(*
--mpcal assign_constant {
  archetype A(ref x) {
  l1:
    N := 1;
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
