\* EXPECT: forbidden-label 9:5 a label inside a mapping macro read body
---- MODULE forbidden_label_mapping_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal forbidden_label_mapping_macro {
  mapping macro M {
    read {
    r:
      yield $variable;
    }
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
