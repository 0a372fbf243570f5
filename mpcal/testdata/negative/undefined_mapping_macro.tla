\* EXPECT: undefined 13:19 mapping via a mapping macro that does not exist
---- MODULE undefined_mapping_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal undefined_mapping_macro {
  archetype A(ref x) {
  l1:
    x := 1;
  }
  variables x = 0;
  process (P \in {1}) == instance A(ref x)
    mapping x via NoSuchMacro;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
