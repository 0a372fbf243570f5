\* EXPECT: yield-outside-mapping 8:5 yield in a macro body
---- MODULE yield_in_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal yield_in_macro {
  macro Give(v) {
    yield v;
  }
  archetype A(ref x) {
  l1:
    Give(1);
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
