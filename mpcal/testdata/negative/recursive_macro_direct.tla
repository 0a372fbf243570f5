\* EXPECT: recursive-macro 9:5 macro Loop calls itself
---- MODULE recursive_macro_direct ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal recursive_macro_direct {
  macro Loop(v) {
    x := v;
    Loop(v);
  }
  archetype A(ref x) {
  l1:
    Loop(1);
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
