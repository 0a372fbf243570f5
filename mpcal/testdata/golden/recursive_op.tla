---- MODULE recursive_op ----
\* Golden: RECURSIVE operators (one in the module, one in the define block)
\* and a recursive function definition.
EXTENDS Naturals, Sequences, TLC

RECURSIVE Fact(_)
Fact(n) == IF n = 0 THEN 1 ELSE n * Fact(n - 1)

fib[n \in 0..10] == IF n < 2 THEN n ELSE fib[n - 1] + fib[n - 2]

(*
--mpcal recursive_op {
  define {
    RECURSIVE SumSeq(_)
    SumSeq(s) == IF s = <<>> THEN 0 ELSE Head(s) + SumSeq(Tail(s))
  }

  archetype ACompute(ref out) {
  compute:
    out := <<Fact(4), fib[6], SumSeq(<<1, 2, 3>>)>>;
  }

  variables out = <<>>;

  process (Compute \in {1}) == instance ACompute(ref out);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

OutOK == out \in {<<>>, <<24, 8, 6>>}
====
