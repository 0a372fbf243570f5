\* EXPECT: syntax 9:7 "=" used instead of ":=" in a statement
---- MODULE syntax_eq_for_assign ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal syntax_eq_for_assign {
  archetype A(ref x) {
  l1:
    x = 1;
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
