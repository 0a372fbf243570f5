\* EXPECT: multiple-yield 10:7 two yields on one path of a read body
---- MODULE multiple_yield_read ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal multiple_yield_read {
  mapping macro M {
    read {
      yield $variable;
      yield $variable + 1;
    }
    write { yield $value; }
  }
  archetype A(ref x, ref y) {
  l1:
    y := x;
  }
  variables a = 0, b = 0;
  process (P \in {1}) == instance A(ref a, ref b) mapping a via M;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
