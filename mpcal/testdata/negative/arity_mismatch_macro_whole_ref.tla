\* EXPECT: arity-mismatch 12:13 ref en[_] passed whole to a macro that assigns it without an index (position: the argument)
---- MODULE arity_mismatch_macro_whole_ref ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal arity_mismatch_macro_whole_ref {
  macro Disable(flags) {
    flags := [i \in 1..2 |-> FALSE];
  }
  archetype A(ref en[_]) {
  l1:
    Disable(en);
  }
  variables g = [i \in 1..2 |-> TRUE];
  process (P \in {1}) == instance A(ref g[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
