---- MODULE goto_labels ----
\* Golden: goto backwards and forwards, goto inside if and either branches,
\* and the labels required after them.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal goto_labels {
  archetype AJump(ref n) {
  start:
    n := n + 1;
    if (n < 3) {
      goto start;
    } else {
      goto finish;
    };
  unreachable:
    n := 100;
  finish:
    either { goto over; } or { n := n + 10; };
  over:
    skip;
  }

  variables n = 0;

  process (Jump \in {1}) == instance AJump(ref n);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

NOK == n \in {0, 1, 2, 3, 13}
====
