---- MODULE comments_nested ----
\* Golden: comments everywhere inside the MPCal block: end-of-line \* comments,
\* (* ... *) comments, and a nested (* (* ... *) *) comment, also between
\* tokens of a statement.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal comments_nested {
  (* a comment (* nested inside *) another *)
  archetype AComment(ref x) \* after the header
  {
  lbl: (* before the statement *)
    x := (* inside *) x + 1; \* end of line
  \* between statements
  lbl2:
    x := x (* (* deep *) *) * 2;
  }

  variables x = 0; \* global

  process (Comment \in {1}) == instance AComment(ref x); (* done *)
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

XOK == x \in {0, 1, 2}
====
