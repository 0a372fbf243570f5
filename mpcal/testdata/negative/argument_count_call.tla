\* EXPECT: argument-count 14:10 call of Proc with two arguments, Proc has one parameter
---- MODULE argument_count_call ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal argument_count_call {
  procedure Proc(n) {
  p1:
    print n;
    return;
  }
  archetype A(ref x) {
  l1:
    call Proc(1, 2);
  }
  variables x = 0;
  process (P \in {1}) == instance A(ref x);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
