---- MODULE Loop ----
\* Cycles through 0, 1, 2 forever, so x never reaches 5: a lasso.
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x' = (x + 1) % 3
Spec == Init /\ [][Next]_x /\ WF_x(Next)
ReachesFive == <>(x = 5)
====
