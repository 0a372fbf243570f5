\* EXPECT: yield-outside-mapping 9:5 yield in an archetype body
---- MODULE yield_in_archetype ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal yield_in_archetype {
  archetype A(ref x) {
  l1:
    yield x;
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
