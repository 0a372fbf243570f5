\* EXPECT: syntax 9:3 archetype body without "{"
---- MODULE syntax_archetype_no_brace ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal syntax_archetype_no_brace {
  archetype A(ref x)
    variables y = 0;
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
