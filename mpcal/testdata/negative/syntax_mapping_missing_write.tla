\* EXPECT: syntax 9:3 a mapping macro without its write block
---- MODULE syntax_mapping_missing_write ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal syntax_mapping_missing_write {
  mapping macro M {
    read { yield $variable; }
  }
  archetype A(ref x) {
  l1:
    x := 1;
  }
  variables x = 0;
  process (P \in {1}) == instance A(ref x) mapping x via M;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
