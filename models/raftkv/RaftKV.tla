------------------------------- MODULE RaftKV -------------------------------
\* MPCal model of a Raft key-value store (Ongaro and Ousterhout's Raft, the
\* PGo paper's PGo-RaftKV), written to be both model-checked with TLC and
\* compiled to Go with `strata mpcal gogen` (package strata/distsys/systems/raftkv).
\*
\* One archetype per server, AServer, runs one loop whose critical section
\* takes one of eight branches: handle a message from another server (a
\* higher term is adopted, the vote cleared and the server back to follower
\* as the message is handled), accept a client request (or redirect it to
\* the leader), start an election when the election timer has expired, ask
\* one peer for its vote, send one peer an AppendEntries, resend to every
\* peer on a heartbeat, advance the commit index, apply one committed entry
\* to the key-value map (the leader answers the client). AClient is the
\* model's client; the Go client (distsys/systems/raftkv/client.go) follows
\* the same protocol by hand.
\*
\* What the resources are:
\*   net[_]         server-to-server mailboxes (TLC: reliable FIFO queues;
\*                  Go: distsys.Mailboxes over the stack, relaxed);
\*   reqs[_]        client requests arriving at a server (TLC: FIFO queues
\*                  the AClient archetypes append to; Go: the server's
\*                  client front end through an input channel);
\*   resps[_]       answers to clients (TLC: the clients' FIFO mailboxes;
\*                  Go: the front end through an output channel);
\*   timer[_]       the election timer: reads TRUE once a randomized timeout
\*                  has passed since the last write, a write resets it (Go:
\*                  distsys.Timer; TLC: an election budget, so a server of
\*                  Candidates may start one election at any moment);
\*   beat[_]        the leader's heartbeat timer: when it reads TRUE the
\*                  leader sends every peer an AppendEntries again, even one
\*                  still unanswered (Go: distsys.Timer; TLC: always FALSE,
\*                  since the model's network loses nothing);
\*   currentTerm[_], votedFor[_], log[_]
\*                  Raft's persistent state (TLC: global functions; Go:
\*                  distsys.Persistent regions of the server's journal).
\*
\* A log entry is [term, op ("put" or "get"), key, value, client, id]; gets
\* go through the log too, so a get answered by a leader is linearizable.
\* Candidates and MaxLog bound the model (only the servers in Candidates
\* start an election, once each; no client request is accepted into a log
\* of MaxLog entries); the Go server sets MaxLog out of reach and does not
\* use Candidates, NumClients or MaxRetries. MaxEntries bounds one
\* AppendEntries' entries.
\*
\* The configurations check the invariants ElectionSafety, LogMatching,
\* StateMachineSafety, CommitInLog and GetSeesAckedPut (each client puts
\* its own key, then gets it: the get must return the put's value):
\* RaftKV.cfg with one candidate and a client, RaftKV_Elections.cfg with
\* two candidates and no client. Mutants: RaftKV_BugDoubleVote.cfg (a
\* second vote in one term) and RaftKV_BugVoteAnyLog.cfg (votes granted
\* without Raft's up-to-date log check) must make TLC report a violation.
EXTENDS Naturals, Sequences, TLC, FiniteSets

CONSTANTS NumServers, NumClients, Candidates, MaxLog, MaxEntries, MaxRetries

ServerSet == 1..NumServers
ClientSet == (NumServers + 1)..(NumServers + NumClients)

Nil == 0

Follower  == "follower"
Candidate == "candidate"
Leader    == "leader"

RequestVote      == "rv"
RequestVoteReply == "rvr"
AppendEntries    == "ae"
AppendReply      == "aer"

\* A set of servers that, with more than half of them, can elect or commit.
IsQuorum(S) == Cardinality(S) * 2 > NumServers

\* What RaftKV_BugMinority.cfg puts in IsQuorum's place.
AnySet(S) == TRUE

Min(a, b) == IF a < b THEN a ELSE b
Max2(a, b) == IF a > b THEN a ELSE b
MaxOf(S) == CHOOSE x \in S : \A y \in S : y <= x

LastTerm(lg) == IF Len(lg) = 0 THEN 0 ELSE lg[Len(lg)].term

\* Raft §5.4.1: a vote goes only to a candidate whose log is at least as up
\* to date as the voter's.
LogUpToDate(lastTerm, lastIndex, lg) ==
    \/ lastTerm > LastTerm(lg)
    \/ /\ lastTerm = LastTerm(lg)
       /\ lastIndex >= Len(lg)

\* A voter in term ct that voted for vf may vote for the candidate of
\* RequestVote m: m is not stale, and the voter has not voted for another
\* candidate in m's term.
CanVote(m, ct, vf) == m.term >= ct /\ (m.term > ct \/ vf \in {Nil, m.from})

\* What RaftKV_BugDoubleVote.cfg puts in CanVote's place.
AnyVote(m, ct, vf) == m.term >= ct

\* What RaftKV_BugVoteAnyLog.cfg puts in LogUpToDate's place.
AnyLog(lastTerm, lastIndex, lg) == TRUE

Concat(a, b) == [i \in 1..(Len(a) + Len(b)) |-> IF i <= Len(a) THEN a[i] ELSE b[i - Len(a)]]

\* The AppendEntries consistency check: lg holds an entry at prev of term
\* prevTerm (or prev is 0).
PrevMatches(lg, prev, prevTerm) == prev = 0 \/ (prev <= Len(lg) /\ lg[prev].term = prevTerm)

\* Every entry of es is already in lg after prev (so a stale AppendEntries
\* truncates nothing).
AllPresent(lg, prev, es) ==
    /\ prev + Len(es) <= Len(lg)
    /\ \A i \in 1..Len(es) : lg[prev + i].term = es[i].term

\* The key-value map after applying entry ent.
ApplyKV(kv, ent) ==
    IF ent.op = "put"
    THEN [x \in DOMAIN kv \union {ent.key} |-> IF x = ent.key THEN ent.value ELSE kv[x]]
    ELSE kv

(*
--mpcal RaftKV {

  mapping macro ReliableFIFOLink {
    read {
      await Len($variable) > 0;
      with (m = Head($variable)) {
        $variable := Tail($variable);
        yield m;
      };
    }
    write {
      yield Append($variable, $value);
    }
  }

  \* The model's election timer of a server is a budget: it may expire at
  \* any moment, at most Elections times in all (each read is an election
  \* started, since only the election branch reads it); resets change
  \* nothing.
  mapping macro ElectionBudget {
    read {
      await $variable > 0;
      $variable := $variable - 1;
      yield TRUE;
    }
    write { yield $variable; }
  }

  \* The model's heartbeat timer never fires (its network loses nothing).
  mapping macro NeverFires {
    read { yield FALSE; }
    write { yield $variable; }
  }

  archetype AServer(ref net[_], ref reqs[_], ref resps[_], ref timer[_], ref beat[_],
                    ref currentTerm[_], ref votedFor[_], ref log[_])
    variables
      state = Follower,
      leader = Nil,
      votesGranted = {},
      voteTo = {},
      nextIndex = [j \in ServerSet |-> 1],
      matchIndex = [j \in ServerSet |-> 0],
      aeTo = {},
      inflight = [j \in ServerSet |-> FALSE],
      commitIndex = 0,
      lastApplied = 0,
      kv = <<>>;
  {
  serverLoop:
    while (TRUE) {
      either {
        \* A message from another server. A higher term is adopted (vote
        \* cleared, back to follower) as the message is handled.
        with (m = net[self], ct = currentTerm[self]) {
          if (m.type = RequestVote) {
            with (grant = CanVote(m, ct, votedFor[self]) /\ LogUpToDate(m.lastTerm, m.lastIndex, log[self])) {
              if (m.term > ct) {
                currentTerm[self] := m.term;
                state := Follower;
                leader := Nil;
              };
              if (grant) {
                votedFor[self] := m.from;
                timer[self] := TRUE;
              } else if (m.term > ct) {
                votedFor[self] := Nil;
              };
              net[m.from] := [type |-> RequestVoteReply, term |-> Max2(m.term, ct),
                              from |-> self, granted |-> grant];
            };
          } else if (m.type = AppendEntries) {
            if (m.term < ct) {
              net[m.from] := [type |-> AppendReply, term |-> ct, from |-> self,
                              success |-> FALSE, match |-> 0];
            } else {
              \* From the leader of m.term: a candidate of that term steps down.
              if (m.term > ct) {
                currentTerm[self] := m.term;
                votedFor[self] := Nil;
              };
              state := Follower;
              leader := m.from;
              timer[self] := TRUE;
              if (PrevMatches(log[self], m.prevIndex, m.prevTerm)) {
                if (~AllPresent(log[self], m.prevIndex, m.entries)) {
                  log[self] := Concat(SubSeq(log[self], 1, m.prevIndex), m.entries);
                };
                if (Min(m.commit, m.prevIndex + Len(m.entries)) > commitIndex) {
                  commitIndex := Min(m.commit, m.prevIndex + Len(m.entries));
                };
                net[m.from] := [type |-> AppendReply, term |-> m.term, from |-> self,
                                success |-> TRUE, match |-> m.prevIndex + Len(m.entries)];
              } else {
                net[m.from] := [type |-> AppendReply, term |-> m.term, from |-> self,
                                success |-> FALSE, match |-> 0];
              };
            };
          } else if (m.term > ct) {
            \* A reply from a later term: step down.
            currentTerm[self] := m.term;
            votedFor[self] := Nil;
            state := Follower;
            leader := Nil;
          } else if (m.type = RequestVoteReply) {
            if (m.term = ct /\ state = Candidate /\ m.granted) {
              if (IsQuorum(votesGranted \union {m.from})) {
                state := Leader;
                leader := self;
                votesGranted := {};
                voteTo := {};
                nextIndex := [j \in ServerSet |-> Len(log[self]) + 1];
                matchIndex := [j \in ServerSet |-> 0];
                aeTo := ServerSet \ {self};
                inflight := [j \in ServerSet |-> FALSE];
              } else {
                votesGranted := votesGranted \union {m.from};
              };
            };
          } else if (m.type = AppendReply) {
            if (m.term = ct /\ state = Leader) {
              inflight[m.from] := FALSE;
              if (m.success) {
                if (m.match > matchIndex[m.from]) {
                  matchIndex[m.from] := m.match;
                };
                nextIndex[m.from] := m.match + 1;
              } else if (nextIndex[m.from] > 1) {
                nextIndex[m.from] := nextIndex[m.from] - 1;
              };
            };
          };
        };
      } or {
        \* A client request: a leader appends it, anyone else redirects.
        with (r = reqs[self]) {
          if (state = Leader /\ Len(log[self]) < MaxLog) {
            log[self] := Append(log[self], [term |-> currentTerm[self], op |-> r.op, key |-> r.key,
                                            value |-> r.value, client |-> r.client, id |-> r.id]);
          } else {
            resps[r.client] := [id |-> r.id, status |-> "redirect", leader |-> leader,
                                found |-> FALSE, value |-> Nil];
          };
        };
      } or {
        \* Election timeout: a new term, a vote for itself.
        await state /= Leader /\ timer[self];
        currentTerm[self] := currentTerm[self] + 1;
        votedFor[self] := self;
        state := Candidate;
        leader := Nil;
        votesGranted := {self};
        voteTo := ServerSet \ {self};
        timer[self] := TRUE;
      } or {
        \* A candidate asks one more peer for its vote.
        await state = Candidate /\ voteTo /= {};
        with (j \in voteTo) {
          net[j] := [type |-> RequestVote, term |-> currentTerm[self], from |-> self,
                     lastIndex |-> Len(log[self]), lastTerm |-> LastTerm(log[self])];
          voteTo := voteTo \ {j};
        };
      } or {
        \* A leader sends one peer the entries it lacks (or an empty
        \* AppendEntries that carries the commit index), one at a time.
        await state = Leader;
        with (j \in {p \in ServerSet \ {self} : ~inflight[p] /\ (p \in aeTo \/ nextIndex[p] <= Len(log[self]))}) {
          net[j] := [type |-> AppendEntries, term |-> currentTerm[self], from |-> self,
                     prevIndex |-> nextIndex[j] - 1,
                     prevTerm |-> IF nextIndex[j] > 1 THEN log[self][nextIndex[j] - 1].term ELSE 0,
                     entries |-> SubSeq(log[self], nextIndex[j], Min(Len(log[self]), nextIndex[j] + MaxEntries - 1)),
                     commit |-> commitIndex];
          inflight[j] := TRUE;
          aeTo := aeTo \ {j};
        };
      } or {
        \* Heartbeat: every peer is sent an AppendEntries again.
        await state = Leader /\ beat[self];
        aeTo := ServerSet \ {self};
        inflight := [j \in ServerSet |-> FALSE];
        beat[self] := TRUE;
      } or {
        \* Commit: the highest entry of this term that a majority holds.
        await state = Leader;
        with (ok = {k \in (commitIndex + 1)..Len(log[self]) :
                      /\ log[self][k].term = currentTerm[self]
                      /\ IsQuorum({self} \union {p \in ServerSet : matchIndex[p] >= k})}) {
          await ok /= {};
          commitIndex := MaxOf(ok);
        };
      } or {
        \* Apply one committed entry; the leader answers its client.
        await lastApplied < commitIndex;
        with (ent = log[self][lastApplied + 1], nkv = ApplyKV(kv, ent)) {
          kv := nkv;
          lastApplied := lastApplied + 1;
          if (state = Leader) {
            resps[ent.client] := [id |-> ent.id, status |-> "ok", leader |-> self,
                                  found |-> ent.key \in DOMAIN nkv,
                                  value |-> IF ent.key \in DOMAIN nkv THEN nkv[ent.key] ELSE Nil];
          };
        };
      };
    };
  }

  \* A client: a put of its own key (value: its id), then a get of it. Each
  \* request goes to the server it believes leads, follows a redirect's
  \* hint (or tries the next server), and after a timeout (at most
  \* MaxRetries) sends the same request to the next server.
  archetype AClient(ref reqs[_], ref resps[_])
    variables srv = 1, n = 1, retries = 0, reply = Nil, got = Nil;
  {
  clientLoop:
    while (n <= 2) {
    clientSend:
      reqs[srv] := [client |-> self, id |-> n, op |-> IF n = 1 THEN "put" ELSE "get",
                    key |-> self, value |-> self];
    clientRecv:
      either {
        reply := resps[self];
        if (reply.id /= n) {
          goto clientRecv;
        } else if (reply.status = "ok") {
          if (n = 2) {
            got := IF reply.found THEN reply.value ELSE Nil;
          };
          n := n + 1;
        } else {
          srv := IF reply.leader /= Nil THEN reply.leader ELSE srv;
        };
      } or {
        await retries < MaxRetries;
        retries := retries + 1;
        srv := (srv % NumServers) + 1;
      };
    };
  }

  variables
    network = [s \in ServerSet |-> <<>>];
    reqQ = [s \in ServerSet |-> <<>>];
    cnet = [c \in ClientSet |-> <<>>];
    timers = [s \in ServerSet |-> IF s \in Candidates THEN 1 ELSE 0];
    beats = [s \in ServerSet |-> FALSE];
    terms = [s \in ServerSet |-> 0];
    votes = [s \in ServerSet |-> Nil];
    logs = [s \in ServerSet |-> <<>>];

  fair process (Server \in ServerSet) == instance AServer(ref network[_], ref reqQ[_], ref cnet[_],
      ref timers[_], ref beats[_], ref terms[_], ref votes[_], ref logs[_])
    mapping network[_] via ReliableFIFOLink
    mapping reqQ[_] via ReliableFIFOLink
    mapping cnet[_] via ReliableFIFOLink
    mapping timers[_] via ElectionBudget
    mapping beats[_] via NeverFires;

  fair process (Client \in ClientSet) == instance AClient(ref reqQ[_], ref cnet[_])
    mapping reqQ[_] via ReliableFIFOLink
    mapping cnet[_] via ReliableFIFOLink;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

\* At most one leader per term.
ElectionSafety ==
    \A s, t \in ServerSet :
        (state[s] = Leader /\ state[t] = Leader /\ terms[s] = terms[t]) => s = t

\* Two logs with an entry of the same term at one index agree up to it.
LogMatching ==
    \A s, t \in ServerSet : \A i \in 1..Min(Len(logs[s]), Len(logs[t])) :
        logs[s][i].term = logs[t][i].term => SubSeq(logs[s], 1, i) = SubSeq(logs[t], 1, i)

\* A server's commit index never passes its log.
CommitInLog == \A s \in ServerSet : lastApplied[s] <= commitIndex[s] /\ commitIndex[s] <= Len(logs[s])

\* No two servers apply (or may apply) different entries at one index.
StateMachineSafety ==
    \A s, t \in ServerSet : \A i \in 1..Min(commitIndex[s], commitIndex[t]) :
        i <= Len(logs[s]) /\ i <= Len(logs[t]) => logs[s][i] = logs[t][i]

\* A search constraint for RaftKV_BugVoteAnyLog.cfg (TLC explores only the
\* states that satisfy it): server 3 starts its election only after a
\* client's put was acknowledged, the scenario in which a stale candidate
\* can overwrite a committed entry. It prunes, so it cannot hide a
\* violation it lets TLC reach.
PutAckedBeforeSecondElection == timers[3] = 1 \/ \E c \in ClientSet : n[c] > 1

\* Client-visible: each client's get, issued after its put was acknowledged,
\* returns the put's value.
GetSeesAckedPut == \A c \in ClientSet : n[c] > 2 => got[c] = c
==============================================================================
