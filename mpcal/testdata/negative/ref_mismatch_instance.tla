\* EXPECT: ref-mismatch 12:44 "ref" argument for the non-ref parameter y of the archetype
---- MODULE ref_mismatch_instance ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal ref_mismatch_instance {
  archetype A(ref x, y) {
  l1:
    x := y;
  }
  variables x = 0, z = 1;
  process (P \in {1}) == instance A(ref x, ref z);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
