\* EXPECT: multiple-assignment 10:5 x assigned twice in the step l1
---- MODULE multiple_assignment_archetype ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal multiple_assignment_archetype {
  archetype A(ref x) {
  l1:
    x := 1;
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
