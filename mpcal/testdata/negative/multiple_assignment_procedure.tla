\* EXPECT: multiple-assignment 11:7 the global x assigned before and inside an if in one step of a procedure
---- MODULE multiple_assignment_procedure ----
EXTENDS Naturals, Sequences, TLC

(*
--mpcal multiple_assignment_procedure {
  procedure Proc() {
  p1:
    x := 10;
    if (TRUE) {
      x := 11;
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
