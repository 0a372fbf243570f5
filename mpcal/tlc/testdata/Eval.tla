---- MODULE Eval ----
\* An evaluation error in the third state: Head of the empty sequence.
EXTENDS Naturals, Sequences
VARIABLE x
Init == x = 0
Next == x < 3 /\ x' = x + 1 /\ (x = 2 => Head(<<>>) = 1)
====
