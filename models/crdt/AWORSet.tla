------------------------------- MODULE AWORSet -------------------------------
\* A replicated add-wins observed-remove set (AWORSet), state-based, as the
\* Go runtime's distsys.CRDT resource implements it: each replica's state is
\* a set of dots <<element, replica, sequence>> and a version vector (the
\* "optimized OR-set" of Bieniusa et al.: no tombstones), and replicas join
\* their states by gossip.
\*
\* ANode is the replica's server: it takes client operations from its `in`
\* resource (<<"add", x>>, <<"remove", x>>, or <<"read", x>> which changes
\* nothing), applies them through `ref crdt[_]` and writes the resulting
\* value to `out`. It is what `strata crdt serve` runs, compiled to Go by
\* `strata mpcal gogen` (gen/aworset). AGossip is the network's gossip, one
\* instance per ordered pair of replicas (id 10*from + to): it joins from's
\* state into to's. In Go the resource gossips by itself, so AGossip is
\* compiled but not run.
\*
\* The mapping macro AWORSetReplica models the resource: crdt[n] holds the
\* replica's state s and a ghost h, the replica's causal history (every
\* operation it has applied or received by gossip, with what each remove
\* observed). Client operations come from a shared budget of Budget
\* operations, adds and removes of Elems, so the state space is finite.
\*
\* AWORSet.cfg checks
\*   - TypeOK (invariant);
\*   - Correct (invariant): every replica's value is the add-wins value of
\*     its causal history: x is in the set iff some add of x was observed by
\*     no remove of x. Once every operation is delivered everywhere, every
\*     replica's value is therefore equal and the expected set;
\*   - StrongConvergence (invariant): replicas with the same causal history
\*     have the same state;
\*   - Converges (property): with fair gossip, all replicas eventually
\*     reach the same state and stay there.
\* BugMerge selects a deliberately wrong join for the mutant configurations
\* (AWORSet_BugUnion.cfg, AWORSet_BugRemoveWins.cfg): both violate Correct.
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS NumNodes, Budget, Elems, BugMerge

Nodes == 1..NumNodes
\* Gossip instance 10*i + j joins replica i's state into replica j's.
GossipIds == {g \in {10 * i + j : i, j \in Nodes} : g \div 10 /= g % 10}
\* The client operations the model explores.
OpSet == {<<k, x>> : k \in {"add", "remove"}, x \in Elems}

Max(a, b) == IF a >= b THEN a ELSE b

Empty == [dots |-> {}, vv |-> [n \in Nodes |-> 0]]

DotsOf(D, x) == {d \in D : d[1] = x}

\* The set's value: the elements with at least one dot.
Value(st) == {d[1] : d \in st.dots}

\* A client operation applied at replica r. An add gets the next dot of r
\* and replaces the dots of x that r has seen; a remove drops them.
Update(st, r, op) ==
  IF op[1] = "add"
  THEN [dots |-> (st.dots \ DotsOf(st.dots, op[2])) \cup {<<op[2], r, st.vv[r] + 1>>},
        vv   |-> [st.vv EXCEPT ![r] = @ + 1]]
  ELSE IF op[1] = "remove"
  THEN [st EXCEPT !.dots = @ \ DotsOf(@, op[2])]
  ELSE st

\* The join: a dot both have stays; a dot only one has stays unless the
\* other has seen it (its version vector covers it), i.e. removed it.
Join(a, b) ==
  [dots |-> IF BugMerge = "union" THEN a.dots \cup b.dots
            ELSE IF BugMerge = "removewins" THEN a.dots \cap b.dots
            ELSE (a.dots \cap b.dots)
                 \cup {d \in a.dots \ b.dots : d[3] > b.vv[d[2]]}
                 \cup {d \in b.dots \ a.dots : d[3] > a.vv[d[2]]},
   vv   |-> [n \in Nodes |-> Max(a.vv[n], b.vv[n])]]

\* Ghost causal history: op records with a unique id <<replica, k>>; a
\* remove records the ids of the adds of its element it observed.
MyOps(h, r) == {o \in h : o.id[1] = r}
Record(h, r, op) ==
  IF op[1] = "read" THEN h
  ELSE h \cup {[id   |-> <<r, Cardinality(MyOps(h, r)) + 1>>,
                kind |-> op[1],
                elem |-> op[2],
                obs  |-> IF op[1] = "remove"
                         THEN {o.id : o \in {a \in h : a.kind = "add" /\ a.elem = op[2]}}
                         ELSE {}]}

\* The add-wins value of a history.
Expected(h) ==
  {a.elem : a \in {o \in h : o.kind = "add" /\ ~\E r \in h : r.kind = "remove" /\ o.id \in r.obs}}

(*
--mpcal AWORSet {

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

  \* The replica's side of the CRDT resource: reads give the value, writes
  \* apply an operation (and record it in the ghost history).
  mapping macro AWORSetReplica {
    read { yield Value($variable.s); }
    write {
      yield [s |-> Update($variable.s, self, $value), h |-> Record($variable.h, self, $value)];
    }
  }

  \* The gossip's side: reads give the whole state, writes join into it.
  mapping macro GossipJoin {
    read { yield $variable; }
    write {
      yield [s |-> Join($variable.s, $value.s), h |-> $variable.h \cup $value.h];
    }
  }

  \* Client operations: at most Budget in all, each any of OpSet.
  mapping macro Ops {
    read {
      await $variable > 0;
      $variable := $variable - 1;
      with (o \in OpSet) { yield o; };
    }
    write { assert FALSE; }
  }

  \* Replies to clients: not part of the state.
  mapping macro Sink {
    read { assert FALSE; }
    write { skip; }
  }

  variables
    crdt = [n \in Nodes |-> [s |-> Empty, h |-> {}]];
    budget = Budget;
    replies = 0;

  fair process (Node \in Nodes) == instance ANode(ref crdt[_], ref budget, ref replies)
    mapping crdt[_] via AWORSetReplica
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
  /\ \A n \in Nodes :
       /\ crdt[n].s.dots \subseteq Elems \X Nodes \X (1..Budget)
       /\ crdt[n].s.vv \in [Nodes -> 0..Budget]
       /\ \A d \in crdt[n].s.dots : d[3] <= crdt[n].s.vv[d[2]]

Correct == \A n \in Nodes : Value(crdt[n].s) = Expected(crdt[n].h)

StrongConvergence == \A i, j \in Nodes : crdt[i].h = crdt[j].h => crdt[i].s = crdt[j].s

Converges == <>[](\A i, j \in Nodes : crdt[i] = crdt[j])
==============================================================================
