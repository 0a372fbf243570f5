---------------------------- MODULE PaxosWOR_pcal ----------------------------
\* Hand-written plain PlusCal equivalent of PaxosWOR.tla: single-decree Paxos
\* as the implementation of a write-once register (WOR). Each proposer owns
\* one ballot (its own id). A write(v) is: capture = phase 1 (prepare /
\* promise from a quorum), then write = phase 2 (accept / accepted from a
\* quorum) of the value found in the highest-ballot promise, or of v if the
\* quorum reported none. A read is the same capture; if the quorum reports a
\* value (possibly written to less than a quorum: a half-written register),
\* the reader completes the write with phase 2 before returning it, and if
\* none, it returns Nil without writing.
\* The network is one global set of messages: a message stays in the set once
\* sent, and a receive picks any message of the set, so messages can be lost
\* (never picked), duplicated (picked again) and reordered. The mapping macro
\* of PaxosWOR.tla is written out inline.
\* Expected to have exactly the same state graph as PaxosWOR.tla compiled.
\*
\* Each proposer performs one operation, picked from the global set
\* operations: write(v) for a v in Values, or read (Nil).
\*
\* PaxosWOR_pcal.cfg: 2 proposers, 3 acceptors, 2 values, ballots 1..2 (one
\* per proposer). It checks
\*   - WriteOnce (invariant): no two different values are ever chosen (a value
\*     is chosen once a quorum accepted it at one ballot);
\*   - ReturnsChosen (invariant): every value a read or a write returns is the
\*     chosen value;
\*   - Agreement (invariant): no two operations return different values.
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS NumProposers, NumAcceptors, Values, Nil, Pending

Proposers == 1..NumProposers
Acceptors == 11..(10 + NumAcceptors)
Ballots   == Proposers            \* each proposer owns the ballot equal to its id
Majority  == NumAcceptors \div 2 + 1
Quorums   == {Q \in SUBSET Acceptors : Cardinality(Q) >= Majority}

(* --algorithm PaxosWOR_pcal {
  variables
    msgs = {};
    operations = Values \cup {Nil};
    result = [p \in Proposers |-> Pending];

  process (Proposer \in Proposers)
    variables input, promised = {}, best = [vbal |-> 0, val |-> Nil], acks = {}, v;
  {
  capture:
    with (op \in operations) {
      input := op;
    };
    msgs := msgs \cup {[type |-> "prepare", bal |-> self]};
  collectPromises:
    with (m \in msgs) {
      await m.type = "promise" /\ m.bal = self /\ m.acc \notin promised;
      promised := promised \cup {m.acc};
      if (m.vbal > best.vbal) {
        best := [vbal |-> m.vbal, val |-> m.val];
      };
    };
    if (Cardinality(promised) < Majority) {
      goto collectPromises;
    } else {
      v := IF best.vbal > 0 THEN best.val ELSE input;
    };
  write:
    if (v = Nil) {
      result[self] := Nil;
    } else {
      msgs := msgs \cup {[type |-> "accept", bal |-> self, val |-> v]};
    collectAccepts:
      with (m \in msgs) {
        await m.type = "accepted" /\ m.bal = self /\ m.acc \notin acks;
        acks := acks \cup {m.acc};
      };
      if (Cardinality(acks) >= Majority) {
        result[self] := v;
      } else {
        goto collectAccepts;
      };
    };
  }

  process (Acceptor \in Acceptors)
    variables maxBal = 0, maxVBal = 0, maxVal = Nil;
  {
  acc:
    with (m \in msgs) {
      await \/ m.type = "prepare" /\ m.bal > maxBal
            \/ m.type = "accept" /\ m.bal >= maxBal;
      if (m.type = "prepare") {
        maxBal := m.bal;
        msgs := msgs \cup {[type |-> "promise", acc |-> self, bal |-> m.bal,
                            vbal |-> maxVBal, val |-> maxVal]};
      } else {
        maxBal := m.bal;
        maxVBal := m.bal;
        maxVal := m.val;
        msgs := msgs \cup {[type |-> "accepted", acc |-> self, bal |-> m.bal, val |-> m.val]};
      };
    };
    goto acc;
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Chosen(val) == \E b \in Ballots : \E Q \in Quorums : \A a \in Q :
                 [type |-> "accepted", acc |-> a, bal |-> b, val |-> val] \in msgs

WriteOnce == \A v1, v2 \in Values : Chosen(v1) /\ Chosen(v2) => v1 = v2

ReturnsChosen == \A p \in Proposers : result[p] \in Values => Chosen(result[p])

Agreement == \A p, q \in Proposers :
               result[p] \in Values /\ result[q] \in Values => result[p] = result[q]
==============================================================================
