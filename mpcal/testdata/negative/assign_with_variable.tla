\* EXPECT: assign-non-variable 10:7 assignment to v, a variable bound by with
---- MODULE assign_with_variable ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal assign_with_variable {
  archetype A(ref x) {
  l1:
    with (v \in 1..2) {
      v := 3;
    };
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
