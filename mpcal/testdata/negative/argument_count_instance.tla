\* EXPECT: argument-count 12:35 instance of A with one argument, A has two parameters
---- MODULE argument_count_instance ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal argument_count_instance {
  archetype A(ref x, y) {
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
