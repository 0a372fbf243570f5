---- MODULE Structures ----
(* Exercises the operators of the standard modules at the parser level: *)
(* Sequences, FiniteSets, TLC, Bags, plus records, EXCEPT and friends.   *)
EXTENDS Naturals, Integers, Sequences, FiniteSets, TLC, Bags

CONSTANTS Keys, Vals, N, _ \prec _, F(_, _)

VARIABLES store, log, inbox, pending

LOCAL Max(a, b) == IF a > b THEN a ELSE b
Min(S) == CHOOSE x \in S : \A y \in S : x <= y

\* Sequences
Last(s) == s[Len(s)]
Front(s) == SubSeq(s, 1, Len(s) - 1)
Evens(s) == SelectSeq(s, LAMBDA x : x % 2 = 0)
Joined == <<1, 2>> \o <<3>> \o <<>>
Reverse(s) == [i \in 1..Len(s) |-> s[Len(s) - i + 1]]
SeqsUpTo(S) == UNION {[1..n -> S] : n \in 0..N}

RECURSIVE Sum(_), Fold(_, _, _)
Sum(s) == IF s = <<>> THEN 0 ELSE Head(s) + Sum(Tail(s))
Fold(op(_, _), acc, s) ==
  IF s = <<>> THEN acc ELSE Fold(op, op(acc, Head(s)), Tail(s))
Total(s) == Fold(LAMBDA a, b : a + b, 0, s)

fact[n \in Nat] == IF n = 0 THEN 1 ELSE n * fact[n - 1]
grid[i, j \in 1..N, <<k, l>> \in Nat \X Nat] == i * j + k - l

\* FiniteSets and numbers in every base
Sizes == <<Cardinality(Keys), IsFiniteSet(Vals)>>
Numbers == {0, 42, \b1010, \B11, \o17, \O7, \h1F, \Hff, 3.25}
Arith == (-N + (2 ^ 3 * 4) \div 2) - ((7 % 3) - (-1))

\* TLC
Table == (1 :> "one") @@ (2 :> "two") @@ [k \in {3} |-> "many"]
Check == /\ Assert(N >= 0, "N must be natural")
         /\ Print(<<"store", store>>, TRUE)
         /\ PrintT("ok")
Perms == Permutations(Keys)
Tuned == TLCGet("level") < 10 /\ TLCSet(1, 0)

\* Bags
B1 == SetToBag({1, 2})
B2 == B1 (+) B1 (-) SetToBag({2})
SubBag == B1 \sqsubseteq B2 /\ BagIn(1, B2) /\ CopiesIn(1, B2) = 2
Elems == BagToSet(B2) \cup {BagCardinality(B2)}

\* Records, EXCEPT and @
Entry == [key : Keys, val : Vals, ver : Nat]
Init == /\ store = [k \in Keys |-> [val |-> CHOOSE v \in Vals : TRUE, ver |-> 0]]
        /\ log = <<>>
        /\ inbox = [k \in Keys |-> <<>>]
        /\ pending = {}

Put(k, v) ==
  /\ store' = [store EXCEPT ![k].val = v, ![k].ver = @ + 1]
  /\ log' = Append(log, [op |-> "put", key |-> k, val |-> v])
  /\ inbox' = [inbox EXCEPT ![k] = Append(@, v)]
  /\ UNCHANGED pending

Deliver(k) ==
  /\ inbox[k] # <<>>
  /\ LET m == Head(inbox[k])
         rest == Tail(inbox[k])
     IN  /\ inbox' = [inbox EXCEPT ![k] = rest]
         /\ pending' = pending \cup {<<k, m>>}
  /\ UNCHANGED <<store, log>>

Classify(x) ==
  CASE x < 0 -> "negative"
    [] x = 0 -> "zero"
    [] x \in 1..9 -> "small"
    [] OTHER -> "large"

Pick(S) == CHOOSE <<a, b>> \in S \X S : a \prec b
Pairs == {<<a, b>> \in Keys \X Vals : F(a, b)}
Images == {F(k, v) : k \in Keys, v \in Vals}
Funs == [Keys -> SUBSET Vals]
Dom == DOMAIN store \ {CHOOSE k \in Keys : TRUE}
Nested == [store EXCEPT ![CHOOSE k \in Keys : TRUE] = [@ EXCEPT !.ver = 0]]
Fields == store[CHOOSE k \in Keys : TRUE].val
Strings == <<"quote \" and backslash \\", "tab\tnewline\n", "">>

Next == \/ \E k \in Keys, v \in Vals : Put(k, v)
        \/ \E k \in Keys : Deliver(k)

vars == <<store, log, inbox, pending>>
Spec == Init /\ [][Next]_vars /\ \A k \in Keys : SF_vars(Deliver(k))
NoLoss == \A k \in Keys : inbox[k] # <<>> ~> inbox[k] = <<>>
=============================================================================
