\* EXPECT: ref-mismatch 16:22 "ref" argument for the non-ref parameter n of the procedure
---- MODULE ref_mismatch_call_extra_ref ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal ref_mismatch_call_extra_ref {
  procedure Proc(ref r, n) {
  p1:
    r := n;
    return;
  }
  archetype A(ref x)
    variables k = 1;
  {
  l1:
    call Proc(ref x, ref k);
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
