------------------------------- MODULE GCounter ------------------------------
\* A replicated grow-only counter, state-based, as the Go runtime's
\* distsys.CRDT resource implements it: each replica's state is a count
\* per replica, its value their sum, and replicas join their states (the
\* pointwise maximum) by gossip.
\*
\* The archetypes are those of AWORSet.tla (see there): ANode is the
\* replica's server, taking client operations (<<"inc", k>>, or
\* <<"read", k>> which changes nothing) from `in`, applying them through
\* `ref crdt[_]` and writing the value to `out`; it is what
\* `strata crdt serve --crdt gcounter` runs, compiled to Go (gen/gcounter).
\* AGossip (10*from + to) is the network's gossip, modelled, not run in Go.
\* crdt[n] holds the state s and the ghost causal history h: the
\* increments (id, amount) the replica has applied or received.
\*
\* GCounter.cfg checks TypeOK; Correct (every replica's value is the sum
\* of the increments in its history, so replicas that have received every
\* increment agree on the total); StrongConvergence (same history, same
\* state); Converges (fair gossip brings every replica to the same state).
\* GCounter_BugSum.cfg joins by adding the counts (not idempotent): a
\* repeated gossip counts increments twice, violating Correct.
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS NumNodes, Budget, Amounts, BugMerge

Nodes == 1..NumNodes
GossipIds == {g \in {10 * i + j : i, j \in Nodes} : g \div 10 /= g % 10}
OpSet == {<<"inc", k>> : k \in Amounts}

Max(a, b) == IF a >= b THEN a ELSE b

RECURSIVE SumOver(_, _)
\* The sum of f[x] for x in S.
SumOver(f, S) == IF S = {} THEN 0
                 ELSE LET x == CHOOSE y \in S : TRUE IN f[x] + SumOver(f, S \ {x})

Empty == [n \in Nodes |-> 0]
Value(st) == SumOver(st, Nodes)
Update(st, r, op) == IF op[1] = "inc" THEN [st EXCEPT ![r] = @ + op[2]] ELSE st
Join(a, b) == [n \in Nodes |-> IF BugMerge = "sum" THEN a[n] + b[n] ELSE Max(a[n], b[n])]

MyOps(h, r) == {o \in h : o.id[1] = r}
Record(h, r, op) ==
  IF op[1] = "read" THEN h
  ELSE h \cup {[id |-> <<r, Cardinality(MyOps(h, r)) + 1>>, amount |-> op[2]]}
Expected(h) == SumOver([o \in h |-> o.amount], h)

(*
--mpcal GCounter {

  archetype ANode(ref crdt[_], ref in, ref out)
    variables op;
  {
  serve:
    while (TRUE) {
    take:
      op := in;
    apply:
      if (op[1] /= "read") {
        crdt[self] := op;
      };
      out := crdt[self];
    };
  }

  archetype AGossip(ref crdt[_])
  {
  gossip:
    while (TRUE) {
      crdt[self % 10] := crdt[self \div 10];
    };
  }

  mapping macro GCounterReplica {
    read { yield Value($variable.s); }
    write {
      yield [s |-> Update($variable.s, self, $value), h |-> Record($variable.h, self, $value)];
    }
  }

  mapping macro GossipJoin {
    read { yield $variable; }
    write {
      yield [s |-> Join($variable.s, $value.s), h |-> $variable.h \cup $value.h];
    }
  }

  mapping macro Ops {
    read {
      await $variable > 0;
      $variable := $variable - 1;
      with (o \in OpSet) { yield o; };
    }
    write { assert FALSE; }
  }

  mapping macro Sink {
    read { assert FALSE; }
    write { skip; }
  }

  variables
    crdt = [n \in Nodes |-> [s |-> Empty, h |-> {}]];
    budget = Budget;
    replies = 0;

  fair process (Node \in Nodes) == instance ANode(ref crdt[_], ref budget, ref replies)
    mapping crdt[_] via GCounterReplica
    mapping budget via Ops
    mapping replies via Sink;

  fair process (Gossip \in GossipIds) == instance AGossip(ref crdt[_])
    mapping crdt[_] via GossipJoin;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

TypeOK ==
  /\ budget \in 0..Budget
  /\ \A n \in Nodes : crdt[n].s \in [Nodes -> Nat] /\ Value(crdt[n].s) <= Budget * 2

Correct == \A n \in Nodes : Value(crdt[n].s) = Expected(crdt[n].h)

StrongConvergence == \A i, j \in Nodes : crdt[i].h = crdt[j].h => crdt[i].s = crdt[j].s

Converges == <>[](\A i, j \in Nodes : crdt[i] = crdt[j])
==============================================================================
