---- MODULE archetype_local_in ----
\* Golden: archetype local variables with \in initial values (one initial
\* state per choice), one depending on a constant, beside "=" and
\* uninitialised locals.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal archetype_local_in {
  archetype AGuess(ref out[_])
    variables g \in 1..3, h \in {"a", "b"}, k = 7, u;
  {
  guess:
    u := <<g, h>>;
    out[self] := g + k;
  }

  variables out = [i \in 1..2 |-> 0];

  process (Guess \in 1..2) == instance AGuess(ref out[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == \A i \in 1..2 : out[i] \in {0, 8, 9, 10}
====
