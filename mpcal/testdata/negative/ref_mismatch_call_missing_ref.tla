\* EXPECT: ref-mismatch 14:15 plain argument for the ref parameter r of the procedure
---- MODULE ref_mismatch_call_missing_ref ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal ref_mismatch_call_missing_ref {
  procedure Proc(ref r) {
  p1:
    r := 1;
    return;
  }
  archetype A(ref x) {
  l1:
    call Proc(x);
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
