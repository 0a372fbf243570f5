\* EXPECT: multiple-assignment 11:5 plain PlusCal: x assigned twice in the step l1 (MPCal allows it)
---- MODULE multiple_assignment_process ----
EXTENDS Naturals, Sequences, TLC

(*
--algorithm multiple_assignment_process {
  variables x = 0;
  process (P \in {1}) {
  l1:
    x := 1;
    x := 2;
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION
====
