\* EXPECT: undefined 12:35 instance of an archetype that does not exist
---- MODULE undefined_archetype ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal undefined_archetype {
  archetype A(ref x) {
  l1:
    x := 1;
  }
  variables x = 0;
  process (P \in {1}) == instance B(ref x);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
