\* EXPECT: syntax 21:1 a "(*" comment after the translation that is never closed (it swallows the end of the module)
---- MODULE syntax_unterminated_comment ----
EXTENDS Naturals, TLC

(*
--mpcal syntax_unterminated_comment {
  archetype A(ref x) {
  l1:
    x := 1;
  }
  variables x = 0;
  process (P \in {1}) == instance A(ref x);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

(* a note that is never closed
====
