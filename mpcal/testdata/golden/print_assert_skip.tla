---- MODULE print_assert_skip ----
\* Golden: print (with and without parentheses), assert (with and without
\* parentheses) and skip statements.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal print_assert_skip {
  archetype APrint(ref x) {
  p1:
    print "start";
    print(<<"x is", x>>);
    skip;
  p2:
    x := x + 1;
    assert x = 1;
    assert(x > 0);
    skip;
  }

  variables x = 0;

  process (Printer \in {1}) == instance APrint(ref x);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

XOK == x \in {0, 1}
====
