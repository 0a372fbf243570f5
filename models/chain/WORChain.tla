------------------------------ MODULE WORChain ------------------------------
(***************************************************************************)
(* The WOR chain engine (wor/chain.go) on one register, as the code does   *)
(* it: client-driven chain replication in which the head arbitrates.       *)
(*                                                                         *)
(*  - the servers run acceptor.step (wor/acceptor.go), as for paxos: a     *)
(*    prepare is promised only above the promise, an accept at or above    *)
(*    the promise replaces the accepted (ballot, value), a read changes    *)
(*    nothing; every reply carries the state after the request;            *)
(*  - Chain.Capture: a prepare at the head only (Chain.one to chain[0]);   *)
(*    a nack makes the client observe the promise and prepare again above  *)
(*    it; an OK remembers what the head had accepted (ballots.remember);   *)
(*  - Chain.Write (writeAt): ballots.take turns the value into the one the *)
(*    capture found, if any; the accept goes to chain[0], then chain[1],   *)
(*    ... in order, each sent once the previous one answered OK; a nack    *)
(*    anywhere fails the write (ErrPreempted); the write returns (the      *)
(*    value, or a WrittenError with the value found) after the tail;       *)
(*  - Chain.Read: a read at the tail; a value there is returned; else a    *)
(*    read at the head: nothing there is ErrUnwritten, a value there is    *)
(*    completed (engine.go's complete: capture, write the value seen or    *)
(*    what the capture found, return what was written); a completion      *)
(*    preempted reads again while rounds remain.                           *)
(*                                                                         *)
(* The network: a request may be delivered at any later time or never; a  *)
(* reply reaches its client only while the client still waits for that    *)
(* request; a client may time out at any moment (its operation fails, its *)
(* request may still be delivered later). A server may crash (it handles  *)
(* nothing while down) and restart with its registers (persistent mode:   *)
(* every reply leaves after the state it reports is durable), at most     *)
(* MaxCrashes times and never all servers at once. The chain engine has   *)
(* no reconfiguration (Cluster.Reconfigure refuses it, wor/reconfig.go):  *)
(* a crashed member blocks writes (and reads, if it is the tail or the    *)
(* head is needed) until it is back; a member that never comes back is a  *)
(* removed one, and the property Durable says what survives it.           *)
(*                                                                         *)
(* Ballots are round * 10 + client id (ballots.next, observe). Writer c    *)
(* writes value c. Not modelled: unsafe writes (capture id 0, ballot 1),   *)
(* segments, trim, learners and notifications, the tries counters (rounds *)
(* are bounded by MaxRound instead).                                       *)
(*                                                                         *)
(* Bug* constants switch on deliberate mistakes (FALSE in the real config).*)
(***************************************************************************)
EXTENDS Integers, FiniteSets, TLC

CONSTANTS
    N,          \* servers in the chain: server i is chain[i-1] in the code (1 is the head)
    Writers,    \* clients that write (capture + write) their own value once
    Readers,    \* clients that read once
    MaxRound,   \* ballot rounds per client
    MaxCrashes, \* server crashes in a behaviour
    BugWriteOwn,     \* Write ignores what the capture found and writes its own value
    BugReadAtHead,   \* Read asks the head instead of the tail
    BugRestartEmpty  \* a server restarts without its registers (a memory server restarted)

Chain == [i \in 1..N |-> i]
Servers == 1..N
Head == 1
Tail == N
Clients == Writers \cup Readers
None == 0
Ballot(r, c) == r * 10 + c
Max(S) == CHOOSE x \in S : \A y \in S : y <= x

ASSUME N >= 1 /\ Writers \cap Readers = {} /\ \A c \in Clients : c \in 1..9

\* acceptor state of the register at one server
Empty == [prom |-> 0, acc |-> 0, val |-> None]

VARIABLES
    acc,       \* acc[s]: the acceptor state at server s
    up,        \* up[s]: s handles requests
    crashes,   \* crashes so far
    net,       \* requests in flight: [c, seq, op, to, b, v]
    cpc,       \* client c: "idle", "prep", "acc", "rtail", "rhead" (waiting), "done"
    ckind,     \* "write", or "complete" (a read completing a value)
    cround,    \* the client's ballot round (ballots.round)
    cballot,   \* the ballot of its capture
    cval,      \* the value it writes (after take)
    cwant,     \* the value a completion writes unless its capture finds one
    cidx,      \* the chain position its accept is at
    cseq,      \* the sequence number of the request it waits for
    observed   \* ghost: every value a write or read returned

cvars == <<cpc, ckind, cround, cballot, cval, cwant, cidx, cseq>>
vars == <<acc, up, crashes, net, cvars, observed>>

Init ==
    /\ acc = [s \in Servers |-> Empty]
    /\ up = [s \in Servers |-> TRUE]
    /\ crashes = 0
    /\ net = {}
    /\ cpc = [c \in Clients |-> "idle"]
    /\ ckind = [c \in Clients |-> "write"]
    /\ cround = [c \in Clients |-> 0]
    /\ cballot = [c \in Clients |-> 0]
    /\ cval = [c \in Clients |-> None]
    /\ cwant = [c \in Clients |-> None]
    /\ cidx = [c \in Clients |-> 0]
    /\ cseq = [c \in Clients |-> 0]
    /\ observed = {}

\* A request from c (its next sequence number) to server s.
Req(c, op, s, b, v) == [c |-> c, seq |-> cseq[c] + 1, op |-> op, to |-> s, b |-> b, v |-> v]

ReadAt == IF BugReadAtHead THEN Head ELSE Tail

(***************************************************************************)
(* Clients                                                                 *)
(***************************************************************************)
StartWrite(c) ==
    /\ c \in Writers /\ cpc[c] = "idle" /\ cround[c] < MaxRound
    /\ cpc' = [cpc EXCEPT ![c] = "prep"]
    /\ cround' = [cround EXCEPT ![c] = cround[c] + 1]
    /\ cballot' = [cballot EXCEPT ![c] = Ballot(cround[c] + 1, c)]
    /\ cval' = [cval EXCEPT ![c] = c]
    /\ cseq' = [cseq EXCEPT ![c] = cseq[c] + 1]
    /\ net' = net \cup {Req(c, "prepare", Head, Ballot(cround[c] + 1, c), None)}
    /\ UNCHANGED <<acc, up, crashes, ckind, cwant, cidx, observed>>

StartRead(c) ==
    /\ c \in Readers /\ cpc[c] = "idle"
    /\ cpc' = [cpc EXCEPT ![c] = "rtail"]
    /\ cseq' = [cseq EXCEPT ![c] = cseq[c] + 1]
    /\ net' = net \cup {Req(c, "read", ReadAt, 0, None)}
    /\ UNCHANGED <<acc, up, crashes, ckind, cround, cballot, cval, cwant, cidx, observed>>

\* The client's call times out: the operation fails (ErrUnavailable); its
\* request may still be delivered. A read still in flight changes nothing
\* when delivered, so it is dropped.
Timeout(c) ==
    /\ cpc[c] \in {"prep", "acc", "rtail", "rhead"}
    /\ cpc' = [cpc EXCEPT ![c] = "done"]
    /\ net' = {m \in net : ~(m.c = c /\ m.op = "read")}
    /\ UNCHANGED <<acc, up, crashes, ckind, cround, cballot, cval, cwant, cidx, cseq, observed>>

\* Client c's reaction to the reply rep to its request m; rest is the
\* network without m. Sets every client variable and net.
Fail(c, rest) ==
    /\ cpc' = [cpc EXCEPT ![c] = "done"]
    /\ net' = rest
    /\ UNCHANGED <<ckind, cround, cballot, cval, cwant, cidx, cseq, observed>>

Return(c, v, rest) ==
    /\ cpc' = [cpc EXCEPT ![c] = "done"]
    /\ observed' = observed \cup {v}
    /\ net' = rest
    /\ UNCHANGED <<ckind, cround, cballot, cval, cwant, cidx, cseq>>

\* Capture at the head at round r (if rounds remain) for an operation of
\* kind k; a completion writes want unless the capture finds a value.
Capture(c, r, k, want, rest) ==
    IF r > MaxRound THEN Fail(c, rest)
    ELSE /\ cpc' = [cpc EXCEPT ![c] = "prep"]
         /\ ckind' = [ckind EXCEPT ![c] = k]
         /\ cwant' = [cwant EXCEPT ![c] = want]
         /\ cround' = [cround EXCEPT ![c] = r]
         /\ cballot' = [cballot EXCEPT ![c] = Ballot(r, c)]
         /\ cseq' = [cseq EXCEPT ![c] = cseq[c] + 1]
         /\ net' = rest \cup {Req(c, "prepare", Head, Ballot(r, c), None)}
         /\ UNCHANGED <<cval, cidx, observed>>

\* Send the accept of the client's value to chain position i.
AcceptAt(c, i, v, rest) ==
    /\ cpc' = [cpc EXCEPT ![c] = "acc"]
    /\ cval' = [cval EXCEPT ![c] = v]
    /\ cidx' = [cidx EXCEPT ![c] = i]
    /\ cseq' = [cseq EXCEPT ![c] = cseq[c] + 1]
    /\ net' = rest \cup {Req(c, "accept", Chain[i], cballot[c], v)}
    /\ UNCHANGED <<ckind, cround, cballot, cwant, observed>>

React(c, rep, rest) ==
    CASE cpc[c] = "prep" ->
           IF ~rep.ok
           THEN \* nack: observe the promise, capture again above it
                Capture(c, Max({cround[c], rep.prom \div 10}) + 1, ckind[c], cwant[c], rest)
           ELSE \* take: the value the head holds replaces the client's
                LET mine == IF ckind[c] = "complete" THEN cwant[c] ELSE cval[c]
                    v == IF rep.has /\ ~BugWriteOwn THEN rep.val ELSE mine
                IN AcceptAt(c, 1, v, rest)
      [] cpc[c] = "acc" ->
           IF ~rep.ok
           THEN IF ckind[c] = "complete"
                THEN \* complete's retry: read again (the tail first)
                     /\ cpc' = [cpc EXCEPT ![c] = "rtail"]
                     /\ cround' = [cround EXCEPT ![c] = Max({cround[c], rep.prom \div 10})]
                     /\ cseq' = [cseq EXCEPT ![c] = cseq[c] + 1]
                     /\ net' = rest \cup {Req(c, "read", ReadAt, 0, None)}
                     /\ UNCHANGED <<ckind, cballot, cval, cwant, cidx, observed>>
                ELSE Fail(c, rest)   \* ErrPreempted
           ELSE IF cidx[c] = N
                THEN Return(c, cval[c], rest)
                ELSE AcceptAt(c, cidx[c] + 1, cval[c], rest)
      [] cpc[c] = "rtail" ->
           IF rep.has
           THEN Return(c, rep.val, rest)
           ELSE /\ cpc' = [cpc EXCEPT ![c] = "rhead"]
                /\ cseq' = [cseq EXCEPT ![c] = cseq[c] + 1]
                /\ net' = rest \cup {Req(c, "read", Head, 0, None)}
                /\ UNCHANGED <<ckind, cround, cballot, cval, cwant, cidx, observed>>
      [] cpc[c] = "rhead" ->
           IF ~rep.has
           THEN Fail(c, rest)   \* ErrUnwritten: nothing observed
           ELSE Capture(c, cround[c] + 1, "complete", rep.val, rest)

(***************************************************************************)
(* Servers                                                                 *)
(***************************************************************************)
\* acceptor.step: [next, ok]
Step(st, op, b, v) ==
    CASE op = "read" -> [next |-> st, ok |-> TRUE]
      [] op = "prepare" ->
           IF b <= st.prom THEN [next |-> st, ok |-> FALSE]
           ELSE [next |-> [st EXCEPT !.prom = b], ok |-> TRUE]
      [] op = "accept" ->
           IF b < st.prom THEN [next |-> st, ok |-> FALSE]
           ELSE [next |-> [prom |-> b, acc |-> b, val |-> v], ok |-> TRUE]

\* Server m.to handles request m; the reply goes to its client if the
\* client still waits for it.
Deliver(m) ==
    LET s == m.to
        res == Step(acc[s], m.op, m.b, m.v)
        rep == [ok |-> res.ok, prom |-> res.next.prom,
                has |-> res.next.acc # 0, val |-> res.next.val]
        c == m.c
        rest == net \ {m}
    IN /\ up[s]
       /\ acc' = [acc EXCEPT ![s] = res.next]
       /\ IF cseq[c] = m.seq /\ cpc[c] \in {"prep", "acc", "rtail", "rhead"}
          THEN React(c, rep, rest)
          ELSE /\ net' = rest
               /\ UNCHANGED <<cvars, observed>>
       /\ UNCHANGED <<up, crashes>>

Crash(s) ==
    /\ up[s] /\ crashes < MaxCrashes
    /\ Cardinality({x \in Servers : up[x]}) > 1
    /\ up' = [up EXCEPT ![s] = FALSE]
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<acc, net, cvars, observed>>

Restart(s) ==
    /\ ~up[s]
    /\ up' = [up EXCEPT ![s] = TRUE]
    /\ acc' = IF BugRestartEmpty THEN [acc EXCEPT ![s] = Empty] ELSE acc
    /\ UNCHANGED <<crashes, net, cvars, observed>>

Next ==
    \/ \E c \in Clients : StartWrite(c) \/ StartRead(c) \/ Timeout(c)
    \/ \E m \in net : Deliver(m)
    \/ \E s \in Servers : Crash(s) \/ Restart(s)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties                                                              *)
(***************************************************************************)
\* Write-once: no two different values are ever observed at the register.
WriteOnce == Cardinality(observed) <= 1

\* Every value observed is held by every member of the chain: the chain of
\* f+1 servers keeps it through the loss of any f of them.
Durable == \A v \in observed : \A s \in Servers : acc[s].val = v

\* The head arbitrates: what any member accepted, the head holds.
HeadArbitrates == \A s \in Servers : acc[s].val # None => acc[Head].val = acc[s].val
=============================================================================
