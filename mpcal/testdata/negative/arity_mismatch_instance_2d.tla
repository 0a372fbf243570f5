\* EXPECT: arity-mismatch 12:37 ref g[_][_] passed for the archetype parameter ref x[_]
---- MODULE arity_mismatch_instance_2d ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal arity_mismatch_instance_2d {
  archetype A(ref x[_]) {
  l1:
    x[1] := 1;
  }
  variables g = [i \in 1..2 |-> [j \in 1..2 |-> 0]];
  process (P \in {1}) == instance A(ref g[_][_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
