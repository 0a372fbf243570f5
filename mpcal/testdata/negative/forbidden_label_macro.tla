\* EXPECT: forbidden-label 8:3 a label inside a macro
---- MODULE forbidden_label_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal forbidden_label_macro {
  macro Set(v) {
  inMacro:
    x := v;
  }
  archetype A(ref x) {
  l1:
    Set(1);
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
