\* EXPECT: recursive-macro 11:7 macro Retry calls itself inside an either branch (used from a procedure)
---- MODULE recursive_macro_in_either ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal recursive_macro_in_either {
  macro Retry(v) {
    either {
      r := v;
    } or {
      Retry(v + 1);
    };
  }
  procedure Proc(ref r) {
  p1:
    Retry(0);
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
