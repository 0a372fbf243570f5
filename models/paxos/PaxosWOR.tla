------------------------------- MODULE PaxosWOR -------------------------------
\* MPCal model of single-decree Paxos as the implementation of a write-once
\* register (WOR). The AProposer archetype performs one operation, taken from
\* its ops resource: write(v), or read (Nil). Both start with the capture,
\* phase 1 (prepare, then promises from a quorum). The value to write is the
\* one of the highest-ballot promise, or the input of a write if the quorum
\* reported none; the write is phase 2 (accept, then accepted from a quorum).
\* A read that finds a value (maybe written to less than a quorum: a
\* half-written register) completes that write with phase 2 before returning
\* it; a read that finds none returns Nil without writing. Each proposer owns
\* one ballot: its id. The AAcceptor archetype answers prepare and accept.
\*
\* The network is the resource net, mapped by MessageSet over one global set
\* of messages: a write adds the message to the set, a read picks any message
\* of the set and leaves it there, so messages can be lost (never picked),
\* duplicated (picked again) and reordered. The acceptor reads and writes net
\* in one step. The operation stream ops is mapped by AnyOf, which yields any
\* element of the global set operations.
\*
\* Compiled to PlusCal, this must be state-for-state equivalent to the
\* hand-written PaxosWOR_pcal.tla.
\*
\* PaxosWOR.cfg: 2 proposers, 3 acceptors, 2 values, ballots 1..2. It checks
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

(*
--mpcal PaxosWOR {

  \* A set of messages that are never removed: loss, duplication, reordering.
  mapping macro MessageSet {
    read {
      with (sent \in $variable) {
        yield sent;
      };
    }
    write {
      yield $variable \cup {$value};
    }
  }

  \* Any element of a set; writing is not expected.
  mapping macro AnyOf {
    read {
      with (x \in $variable) {
        yield x;
      };
    }
    write {
      assert FALSE;
      yield $variable;
    }
  }

  archetype AProposer(ref net, ref ops, ref result[_])
    variables input, promised = {}, best = [vbal |-> 0, val |-> Nil], acks = {}, v;
  {
  capture:
    input := ops;
    net := [type |-> "prepare", bal |-> self];
  collectPromises:
    with (m = net) {
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
      net := [type |-> "accept", bal |-> self, val |-> v];
    collectAccepts:
      with (m = net) {
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

  archetype AAcceptor(ref net)
    variables maxBal = 0, maxVBal = 0, maxVal = Nil;
  {
  acc:
    with (m = net) {
      await \/ m.type = "prepare" /\ m.bal > maxBal
            \/ m.type = "accept" /\ m.bal >= maxBal;
      if (m.type = "prepare") {
        maxBal := m.bal;
        net := [type |-> "promise", acc |-> self, bal |-> m.bal,
                vbal |-> maxVBal, val |-> maxVal];
      } else {
        maxBal := m.bal;
        maxVBal := m.bal;
        maxVal := m.val;
        net := [type |-> "accepted", acc |-> self, bal |-> m.bal, val |-> m.val];
      };
    };
    goto acc;
  }

  variables
    msgs = {};
    operations = Values \cup {Nil};
    result = [p \in Proposers |-> Pending];

  process (Proposer \in Proposers) == instance AProposer(ref msgs, ref operations, ref result[_])
    mapping msgs via MessageSet
    mapping operations via AnyOf;

  process (Acceptor \in Acceptors) == instance AAcceptor(ref msgs)
    mapping msgs via MessageSet;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
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
