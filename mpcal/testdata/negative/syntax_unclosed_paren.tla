\* EXPECT: syntax 9:16 unclosed "(" in an expression
---- MODULE syntax_unclosed_paren ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal syntax_unclosed_paren {
  archetype A(ref x) {
  l1:
    x := (1 + 2;
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
