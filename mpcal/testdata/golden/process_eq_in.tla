---- MODULE process_eq_in ----
\* Golden: processes declared with "=" (a single process; its archetype does
\* not use self) and with "\in" over a range and over a constant set, both
\* plain and as instances.
EXTENDS Naturals, Sequences, TLC

CONSTANT Workers

(*
--mpcal process_eq_in {
  archetype AOnce(ref hits) {
  once:
    hits := hits + 1;
  }

  archetype AMark(ref marks[_]) {
  mark:
    marks[self] := TRUE;
  }

  variables hits = 0, marks = [w \in Workers |-> FALSE];

  process (Single = 100) == instance AOnce(ref hits);
  process (Many \in Workers) == instance AMark(ref marks[_]);
  process (Range \in 10..11) == instance AOnce(ref hits);

  process (PlainEq = 200) {
  pe:
    hits := hits + 10;
  }
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

HitsOK == hits \in {0, 1, 2, 3, 10, 11, 12, 13}
====
