------------------------- MODULE LockServiceDist_pcal -------------------------
\* Hand-written plain PlusCal equivalent of LockServiceDist.tla, the distributed
\* lock service of Listing 7 of the PGo paper: several lock servers share the
\* request queue q (a global variable), each server has its own mailbox in
\* network, and each client sends every request to a server of its choice.
\* This is what the MPCal model should compile to (the ReliableFIFOLink
\* mapping macro of Listing 2 written out inline); the two are expected to have
\* exactly the same state graph.
\*
\* LockServiceDist_pcal.cfg checks
\*   - MutualExclusion (invariant): no two clients hold the lock at once;
\*   - SingleToken (invariant): at most one grant exists, either in flight in
\*     a client's mailbox or held by a client (a stronger mutual exclusion);
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

(* --algorithm LockServiceDist_pcal {
  variables
    network = [id \in NodeSet |-> <<>>];
    q = <<>>;

  fair process (Server \in ServerSet)
    variables msg;
  {
  serverLoop:
    while (TRUE) {
    serverReceive:
      await Len(network[self]) > 0;
      msg := Head(network[self]);
      network[self] := Tail(network[self]);
    serverRespond:
      if (msg.type = LockMsg) {
        if (q = <<>>) {
          network[msg.from] := Append(network[msg.from], GrantMsg);
        };
        q := Append(q, msg.from);
      } else if (msg.type = UnlockMsg) {
        q := Tail(q);
        if (q /= <<>>) {
          network[Head(q)] := Append(network[Head(q)], GrantMsg);
        };
      };
    };
  }

  fair process (Client \in ClientSet)
    variables resp;
  {
  clientLoop:
    while (TRUE) {
    requestLock:
      with (s \in ServerSet) {
        network[s] := Append(network[s], [type |-> LockMsg, from |-> self]);
      };
    receiveLock:
      await Len(network[self]) > 0;
      resp := Head(network[self]);
      network[self] := Tail(network[self]);
    holdLock:
      assert resp = GrantMsg;
      with (s \in ServerSet) {
        network[s] := Append(network[s], [type |-> UnlockMsg, from |-> self]);
      };
    };
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

HasLock(c) == pc[c] = "holdLock"

MutualExclusion == \A i, j \in ClientSet : (i /= j) => ~(HasLock(i) /\ HasLock(j))

\* Note: q may hold a client twice: a client's unlock and its next lock request
\* can reach different servers and be handled in either order.
Tokens == {<<c, i>> \in ClientSet \X (0..(2 * NumClients)) :
             IF i = 0 THEN HasLock(c)
                      ELSE i <= Len(network[c]) /\ network[c][i] = GrantMsg}

SingleToken == Cardinality(Tokens) <= 1

EveryClientGetsLock == \A c \in ClientSet : (pc[c] = "requestLock") ~> HasLock(c)
===============================================================================
