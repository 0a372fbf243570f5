---- MODULE mapping_no_yield_pcal ----
\* Hand translation of mapping_no_yield to PlusCal, written independently
\* of the compiler: a write of a non-positive value keeps the old one; a
\* read of a non-positive value skips the reading statement.
EXTENDS Integers, Sequences, TLC

(*
--algorithm mapping_no_yield_pcal {
  variables gx = 0, gz = 0, gro = 7, gout = [i \in 1..2 |-> 0];

  process (P \in {1})
  variables got = -1, n = 0;
  {
  r1:
    if (gx > 0) {
      got := gx;
    };
    n := n + 1;
    assert got = -1 /\ n = 1;
  w1:
    with (x1 = IF 2 > 0 THEN 2 ELSE IF 0 > 0 THEN 0 ELSE gx) {
      gx := x1;
      if (x1 > 0) {
        got := x1;
      };
    };
    assert got = 2;
  w2:
    with (x1 = IF 3 > 0 THEN 3 ELSE gx) {
      with (x2 = IF -2 > 0 THEN -2 ELSE x1) {
        gx := x2;
        if (x1 > 0) {
          got := x1;
        };
        if (x2 > 0) {
          gout[self] := x2;
        };
      };
    };
    assert got = 3 /\ gout[self] = 3;
  r2:
    if (gx > 0) {
      if (gx > 5) {
        n := 100;
      } else {
        n := n + 10;
      };
    };
    assert n = 11;
  r3:
    with (n1 = IF gz > 0 THEN (IF gz > 0 THEN 100 ELSE 200) ELSE 0) {
      n := n1 + 1;
      assert n1 + 1 = 1;
    };
  loop:
    while (gz > 0 /\ gz > 0) {
      n := 50;
    };
    assert n = 1;
  r4:
    with (n1 = IF gz > 0 THEN gz ELSE n) {
      n := n1 + 1;
      assert n1 + 1 = 2;
    };
  r5:
    if (n = 0) {
      assert FALSE;
    };
    got := gro;
    assert gro = 7;
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == gx \in {0, 2, 3} /\ gz = 0 /\ gro = 7 /\ gout[1] \in {0, 3}
====
