---- MODULE define_block ----
\* Golden: a define block whose operators use constants, parameters and one
\* another, used from an archetype's expressions and its while condition.
EXTENDS Naturals, Sequences, TLC

CONSTANT N

(*
--mpcal define_block {
  define {
    Limit == N * 2
    Double(x) == x + x
    Capped(x) == IF x > Limit THEN Limit ELSE x
    Below(x, y) == x < y
  }

  archetype ACounter(ref c) {
  loop:
    while (Below(c, Limit)) {
      c := Capped(Double(c) + 1);
    };
  }

  variables counter = 0;

  process (Counter \in {1}) == instance ACounter(ref counter);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

CounterOK == counter \in 0..(2 * N)
====
