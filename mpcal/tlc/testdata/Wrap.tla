---- MODULE Wrap ----
\* The counters of Counter.tla with a record TLC prints over several lines.
\* NotBoth fails first in the state x = 2, y = 2, four steps from the
\* initial state (a trace of 5 states), whatever the order of the steps.
EXTENDS Naturals
VARIABLES x, y, r
Note == "a note long enough to make TLC wrap the record over several lines"
Init == x = 0 /\ y = 0 /\ r = [sum |-> 0, pair |-> <<0, 0>>, note |-> Note]
IncX == x < 3 /\ x' = x + 1 /\ y' = y /\ r' = [r EXCEPT !.sum = @ + 1, !.pair = <<x + 1, y>>]
IncY == y < 2 /\ y' = y + 1 /\ x' = x /\ r' = [r EXCEPT !.sum = @ + 1, !.pair = <<x, y + 1>>]
Next == IncX \/ IncY
NotBoth == ~(x = 2 /\ y = 2)
====
