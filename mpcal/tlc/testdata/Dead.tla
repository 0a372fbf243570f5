---- MODULE Dead ----
\* Counts to 3 and stops: deadlock in the fourth state.
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 3 /\ x' = x + 1
====
