---- MODULE nested_labels ----
\* Golden: labels inside if and either branches (so the statement after the
\* if/either needs its own label), and a label as the first statement of a
\* branch.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal nested_labels {
  archetype ABranch(ref x) {
  top:
    if (x = 0) {
      x := 1;
    inThen:
      x := x + 1;
    } else {
    inElse:
      x := 5;
    };
  afterIf:
    either {
      x := x * 2;
    } or {
    inOr:
      x := x * 3;
    };
  afterEither:
    x := x + 100;
  }

  variables x = 0;

  process (Branch \in {1}) == instance ABranch(ref x);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

XOK == x \in {0, 1, 2, 4, 6, 104, 106}
====
