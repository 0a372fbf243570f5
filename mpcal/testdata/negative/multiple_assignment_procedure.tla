\* EXPECT: multiple-assignment 12:7 plain PlusCal: the global x assigned before and inside an if in one step of a procedure
---- MODULE multiple_assignment_procedure ----
EXTENDS Naturals, Sequences, TLC

(*
--algorithm multiple_assignment_procedure {
  variables x = 0;
  procedure Proc() {
  p1:
    x := 10;
    if (TRUE) {
      x := 11;
    };
    return;
  }
  process (P \in {1}) {
  l1:
    call Proc();
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
