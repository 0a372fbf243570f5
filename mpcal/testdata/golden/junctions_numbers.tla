---- MODULE junctions_numbers ----
\* Golden: aligned /\ and \/ lists (the indentation rule), => <=> ~ and
\* precedence, # and /=, \in and \notin, and the number syntaxes \b \o \h
\* (in TLA+ definitions outside the algorithm: pcal.trans rejects them inside).
EXTENDS Naturals, Sequences, TLC

Five == \b101
Fifteen == \o17
Big == \hFF
ThirtyOne == \h1F
Three == \b11

(*
--mpcal junctions_numbers {
  define {
    Ok(x) == /\ x >= 0
             /\ \/ x = Five
                \/ x = Fifteen
                \/ x = Big
             /\ ~(x # x)
    Implies(a, b) == (a => b) <=> (~a \/ b)
  }

  archetype ANum(ref out) {
  num:
    out := IF Ok(15) /\ Implies(TRUE, FALSE) = TRUE THEN ThirtyOne + Three ELSE 0;
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
