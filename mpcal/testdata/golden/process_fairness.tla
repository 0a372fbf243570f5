---- MODULE process_fairness ----
\* Golden: a fair process, a fair+ process and an unfair process (all
\* instances of archetypes), with a liveness property that needs the
\* fairness.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal process_fairness {
  archetype ATick(ref count[_]) {
  tick:
    while (count[self] < 2) {
      count[self] := count[self] + 1;
    };
  }

  variables count = [p \in 1..3 |-> 0];

  fair process (Weak \in {1}) == instance ATick(ref count[_]);
  fair+ process (Strong \in {2}) == instance ATick(ref count[_]);
  process (Unfair \in {3}) == instance ATick(ref count[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

CountOK == \A p \in 1..3 : count[p] <= 2
FairOnesFinish == <>(count[1] = 2 /\ count[2] = 2)
====
