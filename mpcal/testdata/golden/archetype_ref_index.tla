---- MODULE archetype_ref_index ----
\* Golden: a ref x[_] parameter without a mapping: indexed reads and writes
\* go straight to the global function; self as the index; two instances.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal archetype_ref_index {
  archetype ASlot(ref slots[_]) {
  write:
    slots[self] := slots[self] + self;
  read:
    assert slots[self] = self;
  }

  variables slots = [i \in 1..2 |-> 0];

  process (Slot \in 1..2) == instance ASlot(ref slots[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == \A i \in 1..2 : slots[i] \in {0, i}
====
