\* EXPECT: syntax 17:15 "with" instead of "via" in a mapping clause
---- MODULE syntax_mapping_with_not_via ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal syntax_mapping_with_not_via {
  mapping macro M {
    read { yield $variable; }
    write { yield $value; }
  }
  archetype A(ref x) {
  l1:
    x := 1;
  }
  variables x = 0;
  process (P \in {1}) == instance A(ref x)
    mapping x with M;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
