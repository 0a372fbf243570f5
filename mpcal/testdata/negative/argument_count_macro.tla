\* EXPECT: argument-count 12:5 macro Set called with no argument, it has one parameter
---- MODULE argument_count_macro ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal argument_count_macro {
  macro Set(v) {
    x := v;
  }
  archetype A(ref x) {
  l1:
    Set();
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
