--------------------------- MODULE LockService_pcal ---------------------------
\* Hand-written plain PlusCal: the lock server of Listing 1 of the PGo paper
\* (a central server with a FIFO mailbox per node, buffering requests in a queue),
\* completed with looping clients that ask for the lock, hold it, and release it.
\* This is the PlusCal that the MPCal model LockService.tla (Listing 2) should
\* compile to: same variables (network global; msg, q local to the server; resp
\* local to the clients), same labels, the ReliableFIFOLink mapping macro written
\* out inline. The two are expected to have exactly the same state graph.
\*
\* LockService_pcal.cfg checks
\*   - MutualExclusion (invariant): no two clients hold the lock at once;
\*   - TypeOK (invariant): every mailbox holds at most 2 * NumClients messages;
\*   - EveryClientGetsLock (property): a client that asks eventually holds the
\*     lock (weak fairness on every process: they are all declared fair).
EXTENDS Naturals, Sequences, TLC, FiniteSets

CONSTANTS NumClients

ServerID  == 0
ClientSet == 1..NumClients
NodeSet   == {ServerID} \cup ClientSet

LockMsg   == "lock"
UnlockMsg == "unlock"
GrantMsg  == "grant"

(* --algorithm LockService_pcal {
  variables network = [id \in NodeSet |-> <<>>];

  fair process (Server \in {ServerID})
    variables msg, q = <<>>;
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
      network[ServerID] := Append(network[ServerID], [type |-> LockMsg, from |-> self]);
    receiveLock:
      await Len(network[self]) > 0;
      resp := Head(network[self]);
      network[self] := Tail(network[self]);
    holdLock:
      assert resp = GrantMsg;
      network[ServerID] := Append(network[ServerID], [type |-> UnlockMsg, from |-> self]);
    };
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

HasLock(c) == pc[c] = "holdLock"

MutualExclusion == \A i, j \in ClientSet : (i /= j) => ~(HasLock(i) /\ HasLock(j))

TypeOK == \A n \in NodeSet : Len(network[n]) <= 2 * NumClients

EveryClientGetsLock == \A c \in ClientSet : (pc[c] = "requestLock") ~> HasLock(c)
===============================================================================
