---- MODULE Assume ----
\* Assume.cfg makes the ASSUME false, InitInv.cfg the invariant false in an
\* initial state, NoConstant.cfg forgets to give N a value.
EXTENDS Naturals
CONSTANT N
VARIABLES x, y
ASSUME N > 0
Init == x \in 0..1 /\ y = 0
Next == x < N /\ x' = x + 1 /\ y' = y
Small == x < 1
====
