\* EXPECT: arity-mismatch 9:14 ref m[_][_] indexed with one index (position: the index expression)
---- MODULE arity_mismatch_index_count ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal arity_mismatch_index_count {
  archetype A(ref m[_][_], ref out) {
  l1:
    out := m[1];
  }
  variables g = [i \in 1..2 |-> [j \in 1..2 |-> 0]], o = 0;
  process (P \in {1}) == instance A(ref g[_][_], ref o);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
