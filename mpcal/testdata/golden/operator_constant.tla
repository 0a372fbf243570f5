---- MODULE operator_constant ----
\* Golden: operator constants (CONSTANT F(_,_), CONSTANT G(_)) used in a
\* define block and in an archetype; the cfg substitutes definitions.
EXTENDS Naturals, Sequences, TLC

CONSTANTS F(_, _), G(_), Base

AddImpl(a, b) == a + b
TwiceImpl(a) == 2 * a

(*
--mpcal operator_constant {
  define {
    Combined(x) == F(G(x), Base)
  }

  archetype AUse(ref out) {
  use:
    out := Combined(3);
  again:
    out := F(out, G(1));
  }

  variables out = 0;

  process (Use \in {1}) == instance AUse(ref out);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

OutOK == out \in {0, 7, 9}
====
