\* EXPECT: syntax 10:5 missing ";" between two statements
---- MODULE syntax_missing_semicolon ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal syntax_missing_semicolon {
  archetype A(ref x) {
  l1:
    x := 1
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
