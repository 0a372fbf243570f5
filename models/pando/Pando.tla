------------------------------- MODULE Pando -------------------------------
(***************************************************************************)
(* Pando's reads and writes: single-decree Paxos whose acceptors store     *)
(* erasure-coded splits of the value, so a value is recoverable only from  *)
(* K splits.                                                               *)
(*                                                                         *)
(* Transcribed from the TLA+ specification in appendix B of "Near-Optimal  *)
(* Latency Versus Cost Tradeoffs in Geo-Distributed Storage" (Uluyol et    *)
(* al., NSDI 2020; ../shared/papers/pando.txt in the Strata workspace).    *)
(* The structure, names and comments follow the paper. Changes from the    *)
(* extracted text, all repairs of the PDF-to-text conversion:              *)
(*   - the conjuncts "m.bal = b" and "m.acc \in Q" of ProposeB's Q1Msgs,   *)
(*     lost in the extraction, are restored as in the other LET blocks;    *)
(*   - ProposeB's and FastRead's disjunction lists and the last conjunct   *)
(*     of AcceptorInv (cut off at the end of the text) are laid out as the *)
(*     surrounding comments and the other actions show.                    *)
(* Kept as the paper has it: "m.bal >= mm.bal" in ProposeB and FastRead    *)
(* compares the ballots of two promises for ballot b, which are equal, so  *)
(* "no other recoverable value has a higher ballot" holds vacuously (the   *)
(* accepted ballot, maxABal, seems meant). It makes no difference in       *)
(* Pando.cfg's bounds: three acceptors cannot report two values with K = 2 *)
(* splits each, and TLC finds the same states with maxABal.                *)
(***************************************************************************)
EXTENDS Integers, TLC, FiniteSets

CONSTANTS Acceptors, Ballots, Values,
          Quorum1a, Quorum1b, Quorum2, K

ASSUME QuorumAssumption ==
          /\ Quorum1a \subseteq SUBSET Acceptors
          /\ Quorum1b \subseteq SUBSET Acceptors
          /\ Quorum2 \subseteq SUBSET Acceptors
          \* Overlap of 1
          /\ \A QA \in Quorum1a :
               \A Q2 \in Quorum2 :
                 Cardinality(QA \cap Q2) >= 1
          \* Overlap of K
          /\ \A QB \in Quorum1b :
               \A Q2 \in Quorum2 :
                 Cardinality(QB \cap Q2) >= K

VARIABLES msgs,    \* The set of messages that have been sent
          maxPBal, \* maxPBal[a] is the highest promised ballot (proposal number) at acceptor a
          maxABal, \* maxABal[a] is the highest accepted ballot (proposal number) at acceptor a
          maxVal,  \* maxVal[a] is the value for maxABal[a] at acceptor a
          chosen,  \* chosen[a] is the value that acceptor a heard was chosen (or else is None)
          readLog  \* readLog[b] is the value that was read during ballot b

vars == <<msgs, maxPBal, maxABal, maxVal, chosen, readLog>>

None == CHOOSE v : v \notin Values

\* Type invariants.
Messages ==
       [type : {"prepare"}, bal : Ballots]
  \cup [type : {"promise"}, bal : Ballots, maxABal : Ballots \cup {-1},
        maxVal : Values \cup {None}, acc : Acceptors,
        chosen : Values \cup {None}]
  \cup [type : {"propose"}, bal : Ballots, val : Values \cup {None},
        op : {"R", "W"}]
  \cup [type : {"accept"}, bal : Ballots, val : Values, acc : Acceptors,
        op : {"R", "W"}]
  \cup [type : {"learn"}, bal : Ballots, val : Values]

TypeOK == /\ msgs \in SUBSET Messages
          /\ maxABal \in [Acceptors -> Ballots \cup {-1}]
          /\ maxPBal \in [Acceptors -> Ballots \cup {-1}]
          /\ maxVal \in [Acceptors -> Values \cup {None}]
          /\ chosen \in [Acceptors -> Values \cup {None}]
          /\ readLog \in [Ballots -> Values \cup {None}]
          /\ \A a \in Acceptors : maxPBal[a] >= maxABal[a]

\* Initial state.
Init == /\ msgs = {}
        /\ maxPBal = [a \in Acceptors |-> -1]
        /\ maxABal = [a \in Acceptors |-> -1]
        /\ maxVal = [a \in Acceptors |-> None]
        /\ chosen = [a \in Acceptors |-> None]
        /\ readLog = [b \in Ballots |-> None]

\* Send message m.
Send(m) == msgs' = msgs \cup {m}

(***************************************************************************)
(* Prepare: The proposer chooses a ballot id and broadcasts prepare        *)
(* requests to all acceptors. All writes start here.                       *)
(***************************************************************************)
Prepare(b) == /\ ~ \E m \in msgs : (m.type = "prepare") /\ (m.bal = b)
              /\ Send([type |-> "prepare", bal |-> b])
              /\ UNCHANGED <<maxPBal, maxABal, maxVal, chosen, readLog>>

(***************************************************************************)
(* Promise: If an acceptor receives a prepare request with ballot id       *)
(* greater than that of any prepare request which it has already responded *)
(* to, then it responds to the request with a promise. The promise reply   *)
(* contains the proposal (if any) with the highest ballot id that it has   *)
(* accepted.                                                               *)
(***************************************************************************)
Promise(a) ==
  \E m \in msgs :
    /\ m.type = "prepare"
    /\ m.bal > maxPBal[a]
    /\ Send([type |-> "promise", acc |-> a, bal |-> m.bal,
             maxABal |-> maxABal[a], maxVal |-> maxVal[a],
             chosen |-> chosen[a]])
    /\ maxPBal' = [maxPBal EXCEPT ![a] = m.bal]
    /\ UNCHANGED <<maxABal, maxVal, chosen, readLog>>

(***************************************************************************)
(* Propose (fast path): The proposer waits until it collects promises from *)
(* a Phase 1a quorum of acceptors. If no previous value is found, then the *)
(* proposer can skip to Phase 2 with its own value.                        *)
(***************************************************************************)
ProposeA(b) ==
  /\ ~ \E m \in msgs : (m.type = "propose") /\ (m.bal = b)
  /\ \E v \in Values :
       /\ \E Q \in Quorum1a :
            LET Q1Msgs == {m \in msgs : /\ m.type = "promise"
                                        /\ m.bal = b
                                        /\ m.acc \in Q}
            IN
              \* Check for promises from all acceptors in Q
              /\ \A a \in Q : \E m \in Q1Msgs : m.acc = a
              \* Make sure no previous vals have been returned in promises
              /\ \A m \in Q1Msgs : m.maxABal = -1
       /\ Send([type |-> "propose", bal |-> b, val |-> v, op |-> "W"])
       /\ UNCHANGED <<maxPBal, maxABal, maxVal, chosen, readLog>>

(***************************************************************************)
(* Propose (slow path): The proposer waits for promises from a Phase 1b    *)
(* quorum of acceptors. If no value is found accepted, then the proposer   *)
(* can pick its own value for the next phase. If any accepted coded split  *)
(* is found in one of the promises, the proposer detects whether there are *)
(* at least K splits (for the particular value) in these promises. Next,   *)
(* the proposer picks up the recoverable value with the highest ballot,    *)
(* and uses it for next phase.                                             *)
(***************************************************************************)
ProposeB(b) ==
  /\ ~ \E m \in msgs : (m.type = "propose") /\ (m.bal = b)
  /\ \E Q \in Quorum1b :
       LET Q1Msgs == {m \in msgs : /\ m.type = "promise"
                                   /\ m.bal = b
                                   /\ m.acc \in Q}
           Q1Vals == [v \in Values \cup {None} |->
                        {m \in Q1Msgs : m.maxVal = v}]
       IN
         \* Check that all acceptors from Q responded
         /\ \A a \in Q : \E m \in Q1Msgs : m.acc = a
         /\ \E v \in Values :
              /\ \/ \* No recoverable value, use anything
                    \A vv \in Values : Cardinality(Q1Vals[vv]) < K
                 \* Check if v is recoverable and of highest ballot
                 \/ \* Use previous value if K splits exist
                    /\ Cardinality(Q1Vals[v]) >= K
                    /\ \E m \in Q1Vals[v] :
                         \* Ensure no other recoverable value has a higher ballot
                         /\ \A mm \in Q1Msgs :
                              \/ m.bal >= mm.bal
                              \/ Cardinality(Q1Vals[mm.maxVal]) < K
              /\ Send([type |-> "propose", bal |-> b, val |-> v, op |-> "W"])
              /\ UNCHANGED <<maxPBal, maxABal, maxVal, chosen, readLog>>

(***************************************************************************)
(* Phase 2: If an acceptor receives an accept request with ballot i, it    *)
(* accepts the proposal unless it has already responded to a prepare       *)
(* request having a ballot greater than it does.                           *)
(***************************************************************************)
Accept(a) ==
  /\ \E m \in msgs :
       /\ m.type = "propose"
       /\ m.bal >= maxPBal[a]
       /\ maxABal' = [maxABal EXCEPT ![a] = m.bal]
       /\ maxPBal' = [maxPBal EXCEPT ![a] = m.bal]
       /\ maxVal' = [maxVal EXCEPT ![a] = m.val]
       /\ Send([type |-> "accept", bal |-> m.bal, acc |-> a, val |-> m.val,
                op |-> m.op])
  /\ UNCHANGED <<chosen, readLog>>

(***************************************************************************)
(* ProposerEnd: If the proposer receives acknowledgements from a Phase 2   *)
(* quorum, then it knows that the value was chosen and broadcasts this.    *)
(***************************************************************************)
ProposerEnd(b) ==
  /\ \E v \in Values :
       /\ \E Q \in Quorum2 :
            LET Q2msgs == {m \in msgs : /\ m.type = "accept"
                                        /\ m.bal = b
                                        /\ m.val = v
                                        /\ m.acc \in Q}
            IN
              \* Check for accept messages from all members of Q
              /\ \A a \in Q : \E m \in Q2msgs : m.acc = a
              \* If this was in response to a read, log the result
              /\ \/ \* Read: log the result
                    /\ \E m \in Q2msgs : m.op = "R"
                    /\ readLog' = [readLog EXCEPT ![b] = v]
                 \* Write: don't log the result
                 \/ (\A m \in Q2msgs : m.op = "W" /\ UNCHANGED <<readLog>>)
       /\ Send([type |-> "learn", bal |-> b, val |-> v])
  /\ UNCHANGED <<maxABal, maxPBal, maxVal, chosen>>

\* Learn: A proposer has announced that value v is chosen.
Learn(a) ==
  /\ \E m \in msgs :
       /\ m.type = "learn"
       \* Process accept before learn, needed for ReadInv, not the protocol
       /\ maxABal[a] >= m.bal
       /\ chosen' = [chosen EXCEPT ![a] = m.val]
  /\ UNCHANGED <<msgs, maxPBal, maxABal, maxVal, readLog>>

\* Count how many splits of v we have received.
CountSplitsOf(resps, v) == Cardinality({m \in resps : m.maxVal = v})

(***************************************************************************)
(* FastRead: Check if any value returned from a Phase 1a quorum was        *)
(* chosen. If we have enough splits to reconstruct that value, then return *)
(* immediately. If not, wait for Phase 1b quorum. If we have a value that  *)
(* was marked chosen, return. Otherwise, perform a write-back.             *)
(***************************************************************************)
FastRead(b) ==
  /\ ~ \E m \in msgs : (m.type = "propose") /\ (m.bal = b)
  /\ \* Fastest path: Phase 1a quorum has k splits and the value is chosen
     \/ /\ \E Q \in Quorum1a :
             LET RMsgs == {m \in msgs : /\ m.type = "promise"
                                        /\ m.bal = b
                                        /\ m.acc \in Q}
             IN \* Check that all acceptors from Q responded
                /\ \A a \in Q : \E m \in RMsgs : m.acc = a
                \* Check that we have k splits of a chosen value
                /\ \E m \in RMsgs :
                     /\ m.chosen # None
                     /\ CountSplitsOf(RMsgs, m.chosen) >= K
                     /\ readLog' = [readLog EXCEPT ![b] = m.chosen]
                     /\ UNCHANGED <<msgs, maxPBal, maxABal, maxVal, chosen>>
     \* Fast path: Phase 1b quorum has k splits and the value is chosen
     \/ /\ \E Q \in Quorum1b :
             LET RMsgs == {m \in msgs : /\ m.type = "promise"
                                        /\ m.bal = b
                                        /\ m.acc \in Q}
             IN \* Check that all acceptors from Q responded
                /\ \A a \in Q : \E m \in RMsgs : m.acc = a
                \* Check that we have k splits of a chosen value
                /\ \E m \in RMsgs :
                     /\ m.chosen # None
                     /\ CountSplitsOf(RMsgs, m.chosen) >= K
                     /\ readLog' = [readLog EXCEPT ![b] = m.chosen]
                     /\ UNCHANGED <<msgs, maxPBal, maxABal, maxVal, chosen>>
     \* Slow path: Phase 1b recovery and write back
     \/ /\ \E Q \in Quorum1b :
             LET Q1Msgs == {m \in msgs : /\ m.type = "promise"
                                         /\ m.bal = b
                                         /\ m.acc \in Q}
                 Q1Vals == [v \in Values \cup {None} |->
                              {m \in Q1Msgs : m.maxVal = v}]
             IN
               \* Check that all acceptors from Q responded
               /\ \A a \in Q : \E m \in Q1Msgs : m.acc = a
               /\ \E v \in Values :
                    \* Check if v is recoverable and of highest ballot
                    \/ \* Use previous value if K splits exist
                       /\ Cardinality(Q1Vals[v]) >= K
                       /\ \E m \in Q1Vals[v] :
                            \* Ensure no other recoverable value has a higher ballot
                            /\ \A mm \in Q1Msgs :
                                 \/ m.bal >= mm.bal
                                 \/ Cardinality(Q1Vals[mm.maxVal]) < K
                       \* readLog will be updated in ProposerEnd
                       /\ Send([type |-> "propose", bal |-> b, val |-> v,
                                op |-> "R"])
                       /\ UNCHANGED <<maxPBal, maxABal, maxVal, chosen, readLog>>
                    \* No value recovered: Return None
                    \/ /\ readLog' = [readLog EXCEPT ![b] = None]
                       /\ UNCHANGED <<msgs, maxPBal, maxABal, maxVal, chosen>>

\* Next state.
Next == \/ \E b \in Ballots : \/ Prepare(b)
                              \/ ProposeA(b)
                              \/ ProposeB(b)
                              \/ ProposerEnd(b)
                              \/ FastRead(b)
        \/ \E a \in Acceptors : Promise(a) \/ Accept(a) \/ Learn(a)

Spec == Init /\ [][Next]_vars

\* Invariant helpers.
AllChosenWereAcceptedByPhase2 ==
  \A a \in Acceptors :
    \/ chosen[a] = None
    \/ \E Q \in Quorum2 :
         \A a2 \in Q :
           \E m \in msgs : /\ m.type = "accept"
                           /\ m.acc = a2
                           /\ m.val = chosen[a]

OnlyOneChosen ==
  \A a, aa \in Acceptors :
    (chosen[a] # None /\ chosen[aa] # None) => (chosen[a] = chosen[aa])

VotedForIn(a, v, b) == \E m \in msgs : /\ m.type = "accept"
                                       /\ m.val = v
                                       /\ m.bal = b
                                       /\ m.acc = a

ProposedValue(v, b) == \E m \in msgs : /\ m.type = "propose"
                                       /\ m.val = v
                                       /\ m.bal = b
                                       /\ m.op = "W"

NoOtherFutureProposal(v, b) ==
  \A vv \in Values :
    \A bb \in Ballots :
      (bb > b /\ ProposedValue(vv, bb)) => v = vv

ChosenIn(v, b) == \E Q \in Quorum2 : \A a \in Q : VotedForIn(a, v, b)

ChosenBy(v, b) == \E b2 \in Ballots : (b2 <= b /\ ChosenIn(v, b2))

Chosen(v) == \E b \in Ballots : ChosenIn(v, b)

\* Invariants.
LearnInv == AllChosenWereAcceptedByPhase2 /\ OnlyOneChosen

ReadInv == \A b \in Ballots : readLog[b] = None \/ ChosenBy(readLog[b], b)

ConsistencyInv == \A v1, v2 \in Values : Chosen(v1) /\ Chosen(v2) => (v1 = v2)

StabilityInv ==
  \A v \in Values : \A b \in Ballots : ChosenIn(v, b) => NoOtherFutureProposal(v, b)

AcceptorInv ==
  \A a \in Acceptors :
    /\ (maxVal[a] = None) <=> (maxABal[a] = -1)
    /\ maxABal[a] <= maxPBal[a]
    /\ (maxABal[a] >= 0) => VotedForIn(a, maxVal[a], maxABal[a])
    /\ \A c \in Ballots :
         c > maxABal[a] => ~ \E v \in Values : VotedForIn(a, v, c)
=============================================================================
