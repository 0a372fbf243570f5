---- MODULE archetype_nonref_param ----
\* Golden: non-ref archetype parameters (they become process-local variables
\* initialised with the instance's argument expressions), assigned inside the
\* archetype like locals, beside a ref parameter.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal archetype_nonref_param {
  archetype ACount(ref out[_], start, step)
    variables n = 0;
  {
  loop:
    while (n < 2) {
      start := start + step;
      n := n + 1;
    };
  publish:
    out[self] := start;
  }

  variables out = [i \in 1..2 |-> 0];

  process (Small \in {1}) == instance ACount(ref out[_], 0, 1);
  process (Large \in {2}) == instance ACount(ref out[_], 10 * 10, 5 + 5);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == out[1] \in {0, 2} /\ out[2] \in {0, 120}
====
