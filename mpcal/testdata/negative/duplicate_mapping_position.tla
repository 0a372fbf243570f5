\* EXPECT: duplicate-mapping 22:13 parameter 2 mapped twice (by position)
---- MODULE duplicate_mapping_position ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal duplicate_mapping_position {
  mapping macro M1 {
    read { yield $variable; }
    write { yield $value; }
  }
  mapping macro M2 {
    read { yield $variable; }
    write { yield $value; }
  }
  archetype A(ref x, ref y) {
  l1:
    x := y;
  }
  variables a = 0, b = 0;
  process (P \in {1}) == instance A(ref a, ref b)
    mapping @2 via M1
    mapping @2 via M2;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
