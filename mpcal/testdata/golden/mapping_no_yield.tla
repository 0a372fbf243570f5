---- MODULE mapping_no_yield ----
\* Golden: mapping macro bodies with a path that does not yield, with
\* PGo's meaning. A write that ends without yielding leaves the resource
\* unchanged (its other effects happen); a read that ends without yielding
\* gives no value: the statement that reads is skipped (an assignment, an
\* if with its branches, a while, a with) and the step goes on with the
\* statement after it. A write body that only asserts (a read-only
\* resource) is generated but never run. The asserts pin the meaning.
EXTENDS Integers, Sequences, TLC

(*
--mpcal mapping_no_yield {
  mapping macro Positive {
    read {
      if ($variable > 0) {
        yield $variable;
      };
    }
    write {
      if ($value > 0) {
        yield $value;
      };
    }
  }

  mapping macro ReadOnly {
    read { yield $variable; }
    write { assert FALSE; }
  }

  archetype A(ref x, ref z, ref ro, ref out[_])
  variables got = -1, n = 0;
  {
  r1:
    got := x;
    n := n + 1;
    assert got = -1 /\ n = 1;
  w1:
    x := 0;
    x := 2;
    got := x;
    assert got = 2;
  w2:
    x := 3;
    got := x;
    x := -2;
    out[self] := x;
    assert got = 3 /\ out[self] = 3;
  r2:
    if (x > 5) {
      n := 100;
    } else {
      n := n + 10;
    };
    assert n = 11;
  r3:
    n := 0;
    if (z > 0) {
      n := 100;
    } else {
      n := 200;
    };
    n := n + 1;
    assert n = 1;
  loop:
    while (z > 0) {
      n := 50;
    };
    assert n = 1;
  r4:
    with (v = z) {
      n := v;
    };
    n := n + 1;
    assert n = 2;
  r5:
    if (n = 0) {
      ro := 1;
    };
    got := ro;
    assert got = 7;
  }

  variables gx = 0, gz = 0, gro = 7, gout = [i \in 1..2 |-> 0];

  process (P \in {1}) == instance A(ref gx, ref gz, ref gro, ref gout[_])
    mapping gx via Positive
    mapping gz via Positive
    mapping gro via ReadOnly;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == gx \in {0, 2, 3} /\ gz = 0 /\ gro = 7 /\ gout[1] \in {0, 3}
====
