---- MODULE pcal_csyntax_plain ----
\* Golden: plain PlusCal in C-syntax (an algorithm block, no MPCal construct):
\* global and process variables, define, a fair+ process, a process with
\* "=", when, print; passed through unchanged.
EXTENDS Naturals, Sequences, TLC

(*
--algorithm pcal_csyntax_plain {
  variables turn = 1, log = <<>>;

  define {
    Other(p) == 3 - p
  }

  fair+ process (Worker \in 1..2)
    variables steps = 0;
  {
  w1:
    while (steps < 2) {
      when turn = self;
      steps := steps + 1;
      turn := Other(self);
    };
  }

  process (Observer = 0) {
  o1:
    print <<"turn", turn>>;
  }
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == turn \in {1, 2}
====
