------------------------------ MODULE Voting ------------------------------
(* A Paxos-style voting algorithm: acceptors vote for values in numbered *)
(* ballots; a value is chosen when a quorum votes for it in one ballot.  *)
EXTENDS Integers, FiniteSets

CONSTANTS Value, Acceptor, Quorum, MaxBallot

ASSUME QuorumAssumption ==
          /\ \A Q \in Quorum : Q \subseteq Acceptor
          /\ \A Q1, Q2 \in Quorum : Q1 \cap Q2 # {}

ASSUME MaxBallot \in Nat

Ballot == 0 .. MaxBallot
None == CHOOSE v : v \notin Value

VARIABLES maxBal, maxVBal, maxVal, msgs

Message ==
       [type : {"1a"}, bal : Ballot]
  \cup [type : {"1b"}, acc : Acceptor, bal : Ballot,
        mbal : Ballot \cup {-1}, mval : Value \cup {None}]
  \cup [type : {"2a"}, bal : Ballot, val : Value]
  \cup [type : {"2b"}, acc : Acceptor, bal : Ballot, val : Value]

TypeOK == /\ maxBal  \in [Acceptor -> Ballot \cup {-1}]
          /\ maxVBal \in [Acceptor -> Ballot \cup {-1}]
          /\ maxVal  \in [Acceptor -> Value \cup {None}]
          /\ msgs \subseteq Message

Init == /\ maxBal  = [a \in Acceptor |-> -1]
        /\ maxVBal = [a \in Acceptor |-> -1]
        /\ maxVal  = [a \in Acceptor |-> None]
        /\ msgs = {}

Send(m) == msgs' = msgs \cup {m}

Phase1a(b) == /\ Send([type |-> "1a", bal |-> b])
              /\ UNCHANGED <<maxBal, maxVBal, maxVal>>

Phase1b(a) ==
  \E m \in msgs :
     /\ m.type = "1a"
     /\ m.bal > maxBal[a]
     /\ maxBal' = [maxBal EXCEPT ![a] = m.bal]
     /\ Send([type |-> "1b", acc |-> a, bal |-> m.bal,
              mbal |-> maxVBal[a], mval |-> maxVal[a]])
     /\ UNCHANGED <<maxVBal, maxVal>>

Phase2a(b, v) ==
  /\ ~ \E m \in msgs : m.type = "2a" /\ m.bal = b
  /\ \E Q \in Quorum :
        LET Q1b == {m \in msgs : /\ m.type = "1b"
                                 /\ m.acc \in Q
                                 /\ m.bal = b}
            Q1bv == {m \in Q1b : m.mbal \geq 0}
        IN  /\ \A a \in Q : \E m \in Q1b : m.acc = a
            /\ \/ Q1bv = {}
               \/ \E m \in Q1bv :
                    /\ m.mval = v
                    /\ \A mm \in Q1bv : m.mbal >= mm.mbal
  /\ Send([type |-> "2a", bal |-> b, val |-> v])
  /\ UNCHANGED <<maxBal, maxVBal, maxVal>>

Phase2b(a) ==
  \E m \in msgs :
    /\ m.type = "2a"
    /\ m.bal >= maxBal[a]
    /\ maxBal' = [maxBal EXCEPT ![a] = m.bal]
    /\ maxVBal' = [maxVBal EXCEPT ![a] = m.bal]
    /\ maxVal' = [maxVal EXCEPT ![a] = m.val]
    /\ Send([type |-> "2b", acc |-> a, bal |-> m.bal, val |-> m.val])

Next == \/ \E b \in Ballot : \/ Phase1a(b)
                             \/ \E v \in Value : Phase2a(b, v)
        \/ \E a \in Acceptor : Phase1b(a) \/ Phase2b(a)

Spec == Init /\ [][Next]_<<maxBal, maxVBal, maxVal, msgs>>
-----------------------------------------------------------------------------
VotedForIn(a, v, b) == \E m \in msgs : /\ m.type = "2b"
                                       /\ m.val  = v
                                       /\ m.bal  = b
                                       /\ m.acc  = a

ChosenIn(v, b) == \E Q \in Quorum : \A a \in Q : VotedForIn(a, v, b)

Chosen(v) == \E b \in Ballot : ChosenIn(v, b)

Consistency == \A v1, v2 \in Value : Chosen(v1) /\ Chosen(v2) => (v1 = v2)

\* A refinement mapping would instantiate the consensus spec:
chosenSet == {v \in Value : Chosen(v)}
C == INSTANCE Consensus WITH chosen <- chosenSet

THEOREM Refines == Spec => C!Spec
PROOF OMITTED

LEMMA QuorumsIntersect ==
  \A Q1, Q2 \in Quorum : \E a \in Acceptor : a \in Q1 /\ a \in Q2
  <1>1. TAKE Q1, Q2 \in Quorum
  <1>2. QED BY QuorumAssumption
=============================================================================
