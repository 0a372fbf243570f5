---- MODULE mapping_macro_basic ----
\* Golden: a mapping macro on a non-indexed ref: read transforms $variable,
\* write transforms $value; reads and writes in separate steps.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mapping_macro_basic {
  mapping macro Offset {
    read {
      yield $variable + 1;
    }
    write {
      yield $value - 1;
    }
  }

  archetype AUse(ref cell, ref seen) {
  r:
    seen := cell;
  w:
    cell := 10;
  r2:
    seen := seen + cell;
  }

  variables cell = 0, seen = 0;

  process (Use \in {1}) == instance AUse(ref cell, ref seen)
    mapping cell via Offset;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == cell \in {0, 9} /\ seen \in {0, 1, 11}
====
