\* EXPECT: assign-non-variable 12:5 assignment to Limit, an operator of the define block
---- MODULE assign_define ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal assign_define {
  define {
    Limit == 3
  }
  archetype A(ref x) {
  l1:
    Limit := 4;
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
