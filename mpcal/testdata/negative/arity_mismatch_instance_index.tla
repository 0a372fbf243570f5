\* EXPECT: arity-mismatch 12:37 ref g[_] passed for the archetype parameter ref x (not indexed)
---- MODULE arity_mismatch_instance_index ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal arity_mismatch_instance_index {
  archetype A(ref x) {
  l1:
    x := 1;
  }
  variables g = [i \in 1..2 |-> 0];
  process (P \in {1}) == instance A(ref g[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
