\* EXPECT: yield-outside-mapping 9:5 yield in a procedure body
---- MODULE yield_in_procedure ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal yield_in_procedure {
  procedure Proc(ref r) {
  p1:
    yield r;
    return;
  }
  archetype A(ref x) {
  l1:
    call Proc(ref x);
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
