\* EXPECT: redefinition 11:17 two mapping macros named M
---- MODULE redefinition_mapping_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal redefinition_mapping_macro {
  mapping macro M {
    read { yield $variable; }
    write { yield $value; }
  }
  mapping macro M {
    read { yield $variable + 1; }
    write { yield $value; }
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
