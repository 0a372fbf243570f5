---------------------------- MODULE Operators ----------------------------
(* User-defined operators of every fixity, instances, temporal logic,    *)
(* and a nested module.                                                  *)
EXTENDS Naturals

CONSTANTS S, _ ** _, Op(_), -. _, _ ^#
VARIABLES x, y

\* infix, prefix and postfix definitions
a (+) b == a + b
a \sqsubseteq b == a <= b
a ++ b == a \cup b
a %% b == a % b
a ^^ b == a ^ b
s ^* == s
-. a == 0 - a
Twice(F(_), v) == F(F(v))
Apply(_ # _, u, w) == u # w
Negate == Twice(LAMBDA v : -v, 3)
Mix == (1 (+) 2) \oplus 3 \oplus 4
Chains == 1 + 2 + 3 - 4 - 5 = (1 * 2 * 3) \div 2
Ranges == {1..3, 1...3}
Compare == <<1 < 2, 1 =< 2, 1 <= 2, 1 \leq 2, 2 >= 1, 2 \geq 1, 1 # 2, 1 /= 2>>
Logic == (TRUE \land FALSE) \lor (~FALSE /\ \lnot TRUE) \/ \neg TRUE
Equiv == (TRUE <=> TRUE) /\ (TRUE \equiv FALSE) /\ (FALSE => TRUE)
SetOps == ((S \cup S) \cap (S \union S) \intersect S) \ {} \subseteq S
Products == S \X S \times S
Sub == UNION {SUBSET S, {S}}
Quants == /\ \A v \in S : \E w \in S : v = w
          /\ \A v, w \in S, <<p, q>> \in S \X S : p = q
          /\ \forall v : \exists w : v = w
          /\ \E <<p, q>> \in S \X S : p # q

\* temporal and action operators
Next == x' = x + 1 /\ y' = y
vars == <<x, y>>
Box == [][Next]_vars /\ [][Next]_x
Dia == <>(x > 3) /\ <><<Next>>_vars /\ <><<Next>>_<<x, y>>
Fair == WF_vars(Next) /\ SF_<<x, y>>(Next) /\ WF_(x)(Next)
Leads == (x = 0) ~> (x = 1)
Guarantee == (x = 0) -+-> (y = 0)
Enab == ENABLED Next /\ ENABLED (x')
Unch == UNCHANGED <<x, y>> /\ UNCHANGED x
Comp == Next \cdot Next
Hide == \EE z : z = x
All == \AA z : z = x
Primes == (x + 1)' = x' + 1 /\ x'' = x
Closures == x^+ = x^* /\ x^# = x

---- MODULE Inner ----
VARIABLE z
Id(v) == v
=====

I == INSTANCE Inner WITH z <- x
J(v) == INSTANCE Inner WITH z <- v
LOCAL INSTANCE Naturals
UseInner == I!Id(1) + J(2)!Id(3)
-----------------------------------------------------------------------------
\* the indentation rule at its trickiest
Tricky ==
  /\ \/ x = 1
     \/ y = 2
  /\ \/ /\ x = 3
        /\ y = 4
     \/ x = 5
  /\ x
       + 1 = 2
  /\ IF x = 0
       THEN /\ y = 1
            /\ x = 2
       ELSE y = 3
  /\ LET t == /\ x
              /\ y
     IN t
Sameline == /\ x /\ y
Leftend == /\ x = 1
           /\ y = 2
=> x = 1
=============================================================================
