---- MODULE reassign_step ----
\* Golden: variables assigned several times in one step (MPCal lifts
\* PlusCal's limit of one assignment per variable per step). Each
\* assignment, and each read after it, sees the ones before it in the
\* step: a global through a ref, an indexed ref x[_], a process local
\* (also through a macro called twice), a resource behind a mapping macro,
\* and a procedure's step; the asserts pin the sequential meaning.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal reassign_step {
  macro Bump(v) {
    v := v + 1;
  }

  mapping macro Counter {
    read { yield $variable.n; }
    write { yield [n |-> $value, writes |-> $variable.writes + 1]; }
  }

  procedure Twice(ref r[_]) {
  twice:
    r[self] := r[self] + 1;
    r[self] := r[self] * 2;
    return;
  }

  archetype AWorker(ref log, ref slot[_], ref ctr, ref done[_])
  variables c = 0, seen = <<>>;
  {
  first:
    log := Append(log, self);
    log := Append(log, self * 10);
    log[Len(log)] := log[Len(log)] + 1;
    c := Len(log);
    c := c * 2;
    Bump(c);
    Bump(c);
    assert c = 2 * Len(log) + 2 /\ log[Len(log)] = self * 10 + 1 /\ log[Len(log) - 1] = self;
    seen := <<c>>;
  second:
    slot[self] := 1;
    slot[self] := slot[self] + 1;
    if (c > 100) {
      slot[self] := 0;
    } else {
      c := c + 1;
    };
    c := c + slot[self];
    ctr := 5;
    ctr := ctr + 1;
    seen := Append(seen, ctr);
    assert seen[2] = 6 /\ c = seen[1] + 3;
  third:
    call Twice(ref slot[_]);
  fourth:
    assert slot[self] = 6;
    done[self] := TRUE;
  }

  variables glog = <<>>, gslot = [i \in 1..2 |-> 0], gctr = [n |-> 0, writes |-> 0],
    gdone = [i \in 1..2 |-> FALSE];

  process (W \in 1..2) == instance AWorker(ref glog, ref gslot[_], ref gctr, ref gdone[_])
    mapping gctr via Counter;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == /\ Len(glog) \in {0, 2, 4}
       /\ \A i \in 1..2 : gdone[i] => gslot[i] = 6
       /\ gctr.n \in {0, 6}
       /\ gctr.writes \in {0, 2, 4}
====
