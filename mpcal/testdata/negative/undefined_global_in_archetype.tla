\* EXPECT: undefined 9:10 an archetype uses the global "g" without taking it as a parameter
---- MODULE undefined_global_in_archetype ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal undefined_global_in_archetype {
  archetype A(ref x) {
  l1:
    x := g;
  }
  variables x = 0, g = 1;
  process (P \in {1}) == instance A(ref x);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
