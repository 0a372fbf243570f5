----------------------------- MODULE LockService -----------------------------
\* MPCal model of the central lock service: Listing 2 of the PGo paper (the
\* AServer archetype with a ReliableFIFOLink mapping macro over a global
\* network of mailboxes), plus an AClient archetype that loops: ask for the
\* lock, wait for the grant, hold the lock, release it.
\*
\* Compiled to PlusCal, this must be state-for-state equivalent to the
\* hand-written Listing 1 version in LockService_pcal.tla (same variables:
\* network global, msg/q local to the server, resp local to the clients; same
\* labels; the mapping macro bodies inlined at each access of network[_]).
\*
\* LockService.cfg checks
\*   - MutualExclusion (invariant): no two clients hold the lock at once;
\*   - TypeOK (invariant): every mailbox holds at most 2 * NumClients messages;
\*   - EveryClientGetsLock (property): a client that asks eventually holds the
\*     lock (weak fairness: every process is declared fair).
EXTENDS Naturals, Sequences, TLC, FiniteSets

CONSTANTS NumClients

ServerID  == 0
ClientSet == 1..NumClients
NodeSet   == {ServerID} \cup ClientSet

LockMsg   == "lock"
UnlockMsg == "unlock"
GrantMsg  == "grant"

(*
--mpcal LockService {

  \* Listing 2, lines 1-21: the server, with no knowledge of how the network works.
  archetype AServer(ref network[_])
    variables msg, q = <<>>;
  {
  serverLoop:
    while (TRUE) {
    serverReceive:
      msg := network[self];
    serverRespond:
      if (msg.type = LockMsg) {
        if (q = <<>>) {
          network[msg.from] := GrantMsg;
        };
        q := Append(q, msg.from);
      } else if (msg.type = UnlockMsg) {
        q := Tail(q);
        if (q /= <<>>) {
          network[Head(q)] := GrantMsg;
        };
      };
    };
  }

  archetype AClient(ref network[_])
    variables resp;
  {
  clientLoop:
    while (TRUE) {
    requestLock:
      network[ServerID] := [type |-> LockMsg, from |-> self];
    receiveLock:
      resp := network[self];
    holdLock:
      assert resp = GrantMsg;
      network[ServerID] := [type |-> UnlockMsg, from |-> self];
    };
  }

  \* Listing 2, lines 23-34: a reliable FIFO mailbox per node.
  mapping macro ReliableFIFOLink {
    read {
      await Len($variable) > 0;
      with (readMsg = Head($variable)) {
        $variable := Tail($variable);
        yield readMsg;
      };
    }
    write {
      yield Append($variable, $value);
    }
  }

  variables network = [id \in NodeSet |-> <<>>];

  fair process (Server \in {ServerID}) == instance AServer(ref network[_])
    mapping network[_] via ReliableFIFOLink;

  fair process (Client \in ClientSet) == instance AClient(ref network[_])
    mapping network[_] via ReliableFIFOLink;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

HasLock(c) == pc[c] = "holdLock"

MutualExclusion == \A i, j \in ClientSet : (i /= j) => ~(HasLock(i) /\ HasLock(j))

TypeOK == \A n \in NodeSet : Len(network[n]) <= 2 * NumClients

EveryClientGetsLock == \A c \in ClientSet : (pc[c] = "requestLock") ~> HasLock(c)
==============================================================================
