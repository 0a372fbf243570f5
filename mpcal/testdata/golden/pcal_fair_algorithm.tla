---- MODULE pcal_fair_algorithm ----
\* Golden: plain PlusCal, P-syntax fair algorithm (every process weakly
\* fair), with a liveness property; passed through unchanged.
EXTENDS Naturals, Sequences, TLC

(*
--fair algorithm pcal_fair_algorithm
variables done = {};
process Job \in 1..3
begin
  J1:
    done := done \cup {self};
end process;
end algorithm;

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == done \subseteq 1..3
AllDone == <>(done = 1..3)
====
