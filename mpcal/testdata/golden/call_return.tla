---- MODULE call_return ----
\* Golden: plain PlusCal procedures (no ref parameters, using a global) with
\* a parameter and a local, called from plain processes inside an MPCal
\* block; return, the label after a call, a call followed directly by goto,
\* nested calls.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal call_return {
  procedure Inc(amount)
    variables tmp = 0;
  {
  incStart:
    tmp := amount + 1;
  incEnd:
    total := total + tmp;
    return;
  }

  procedure Twice() {
  tw1:
    call Inc(1);
  tw2:
    call Inc(2);
    return;
  }


  variables total = 0;

  process (Plain \in {1}) {
  p1:
    call Twice();
  p2:
    skip;
  }

  process (Other \in {2}) {
  c1:
    call Inc(10);
    goto c2;
  c2:
    skip;
  }
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

TotalOK == total \in {0, 2, 5, 11, 13, 16}
====
