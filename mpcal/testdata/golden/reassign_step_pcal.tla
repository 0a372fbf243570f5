---- MODULE reassign_step_pcal ----
\* Hand translation of reassign_step to PlusCal, written independently of
\* the compiler: each step computes its final values with LET.
EXTENDS Naturals, Sequences, TLC

(*
--algorithm reassign_step_pcal {
  variables glog = <<>>, gslot = [i \in 1..2 |-> 0], gctr = [n |-> 0, writes |-> 0],
    gdone = [i \in 1..2 |-> FALSE];

  procedure Twice() {
  twice:
    gslot[self] := (gslot[self] + 1) * 2;
    return;
  }

  process (W \in 1..2)
  variables c = 0, seen = <<>>;
  {
  first:
    with (l = LET l2 == Append(Append(glog, self), self * 10)
              IN [l2 EXCEPT ![Len(l2)] = @ + 1]) {
      assert 2 * Len(l) + 2 = 2 * Len(l) + 2 /\ l[Len(l)] = self * 10 + 1 /\ l[Len(l) - 1] = self;
      glog := l;
      c := 2 * Len(l) + 2;
      seen := <<2 * Len(l) + 2>>;
    };
  second:
    with (c2 = IF c > 100 THEN c ELSE c + 1, s2 = IF c > 100 THEN 0 ELSE 2) {
      gslot[self] := s2;
      c := c2 + s2;
      gctr := [n |-> 6, writes |-> gctr.writes + 2];
      seen := Append(seen, 6);
      assert 6 = 6 /\ c2 + s2 = seen[1] + 3;
    };
  third:
    call Twice();
  fourth:
    assert gslot[self] = 6;
    gdone[self] := TRUE;
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == /\ Len(glog) \in {0, 2, 4}
       /\ \A i \in 1..2 : gdone[i] => gslot[i] = 6
       /\ gctr.n \in {0, 6}
       /\ gctr.writes \in {0, 2, 4}
====
