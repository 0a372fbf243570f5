\* EXPECT: multiple-assignment 13:7 y assigned before and inside an if in one step of a procedure
---- MODULE multiple_assignment_procedure ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal multiple_assignment_procedure {
  procedure Proc()
    variables y = 0;
  {
  p1:
    y := 10;
    if (TRUE) {
      y := 11;
    };
    return;
  }
  variables x = 0;
  process (P \in {1}) {
  l1:
    call Proc();
  }
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
