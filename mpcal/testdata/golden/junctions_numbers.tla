---- MODULE junctions_numbers ----
\* Golden: aligned /\ and \/ lists (the indentation rule), => <=> ~ and
\* precedence, # and /=, \in and \notin, and the number syntaxes \b \o \h.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal junctions_numbers {
  define {
    Ok(x) == /\ x >= 0
             /\ \/ x = \b101
                \/ x = \o17
                \/ x = \hFF
             /\ ~(x # x)
    Implies(a, b) == (a => b) <=> (~a \/ b)
  }

  archetype ANum(ref out) {
  num:
    out := IF Ok(15) /\ Implies(TRUE, FALSE) = TRUE THEN \h1F + \b11 ELSE 0;
  check:
    assert /\ out \notin {1, 2}
           /\ \/ out = 34
              \/ out = 0;
  }

  variables out = 1;

  process (Num \in {1}) == instance ANum(ref out);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

OutOK == out \in {1, 34}
====
