---- MODULE Counter ----
\* Two bounded counters: x in 0..3, y in 0..2, every pair reachable.
\* 12 distinct states; 18 generated (the initial state, plus one IncX from
\* each of the 9 states with x < 3 and one IncY from each of the 8 with
\* y < 2); depth 6 (from (0, 0) to (3, 2) takes 5 steps, 6 states).
\* (3, 2) has no successor: check it with deadlock checking off.
EXTENDS Naturals
VARIABLES x, y
Init == x = 0 /\ y = 0
IncX == x < 3 /\ x' = x + 1 /\ y' = y
IncY == y < 2 /\ y' = y + 1 /\ x' = x
Next == IncX \/ IncY
TypeOK == x \in 0..3 /\ y \in 0..2
====
