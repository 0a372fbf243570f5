--------------------------- MODULE LockServiceDist ---------------------------
\* MPCal model of the distributed lock service of Listing 7 of the PGo paper:
\* the AServer archetype of Listing 2 with the queue q turned into a shared
\* resource (ref q, bound to a global variable), instantiated NumServers times;
\* each server reads its own mailbox network[self] through the ReliableFIFOLink
\* mapping macro. AClient sends each lock/unlock request to a server of its
\* choice (with s \in ServerSet).
\*
\* Compiled to PlusCal, this must be state-for-state equivalent to the
\* hand-written LockServiceDist_pcal.tla.
\*
\* LockServiceDist.cfg checks
\*   - MutualExclusion (invariant): no two clients hold the lock at once;
\*   - SingleToken (invariant): at most one grant exists, in flight in a
\*     client's mailbox or held by a client;
\*   - EveryClientGetsLock (property): a client that asks eventually holds the
\*     lock (weak fairness: every process is fair).
EXTENDS Naturals, Sequences, TLC, FiniteSets

CONSTANTS NumServers, NumClients

ServerSet == 1..NumServers
ClientSet == (NumServers + 1)..(NumServers + NumClients)
NodeSet   == ServerSet \cup ClientSet

LockMsg   == "lock"
UnlockMsg == "unlock"
GrantMsg  == "grant"

(*
--mpcal LockServiceDist {

  \* Listing 7, line 1: q is now a resource shared by all server instances.
  archetype AServer(ref network[_], ref q)
    variables msg;
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
      with (s \in ServerSet) {
        network[s] := [type |-> LockMsg, from |-> self];
      };
    receiveLock:
      resp := network[self];
    holdLock:
      assert resp = GrantMsg;
      with (s \in ServerSet) {
        network[s] := [type |-> UnlockMsg, from |-> self];
      };
    };
  }

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

  \* Listing 7, lines 35-41.
  variables
    network = [id \in NodeSet |-> <<>>];
    q = <<>>;

  fair process (Server \in ServerSet) == instance AServer(ref network[_], ref q)
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

\* q may hold a client twice: a client's unlock and its next lock request can
\* reach different servers and be handled in either order.
Tokens == {<<c, i>> \in ClientSet \X (0..(2 * NumClients)) :
             IF i = 0 THEN HasLock(c)
                      ELSE i <= Len(network[c]) /\ network[c][i] = GrantMsg}

SingleToken == Cardinality(Tokens) <= 1

EveryClientGetsLock == \A c \in ClientSet : (pc[c] = "requestLock") ~> HasLock(c)
==============================================================================
