---- MODULE ref_index_2d ----
\* Golden: repeated [_]: an archetype parameter ref m[_][_] indexed with two
\* indices, unmapped in one instance and mapped by a mapping macro (whose
\* $variable is then m[i][j]) in another.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal ref_index_2d {
  mapping macro Saturate {
    read { yield $variable; }
    write { yield IF $value > 3 THEN 3 ELSE $value; }
  }

  archetype AMatrix(ref m[_][_]) {
  set:
    m[self][1] := m[self][2] + 5;
  get:
    assert m[self][1] \in {3, 5};
  }

  variables
    plain = [i \in 1..2 |-> [j \in 1..2 |-> 0]];
    capped = [i \in 3..4 |-> [j \in 1..2 |-> 0]];

  process (Plain \in 1..2) == instance AMatrix(ref plain[_][_]);
  process (Capped \in 3..4) == instance AMatrix(ref capped[_][_])
    mapping capped[_][_] via Saturate;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == /\ \A i \in 1..2 : plain[i][1] \in {0, 5}
       /\ \A i \in 3..4 : capped[i][1] \in {0, 3}
====
