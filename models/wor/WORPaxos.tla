------------------------------ MODULE WORPaxos ------------------------------
(***************************************************************************)
(* The WOR paxos engine (wor/) as the code does it: every register of a    *)
(* segment is a single-shot Paxos instance over the partition's replica    *)
(* set.                                                                    *)
(*                                                                         *)
(*  - acceptor.step (wor/acceptor.go): a prepare is promised only above    *)
(*    the promise (a prepare at the promised ballot is refused), an accept *)
(*    at or above the promise replaces the accepted (ballot, value) and    *)
(*    promises its ballot, a read changes nothing; every reply carries the *)
(*    state after the request;                                             *)
(*  - Server.handle (wor/server.go): admit (a request of an older epoch is *)
(*    refused as sealed, of a newer or inactive one as not ready), then a  *)
(*    register of a trimmed segment refuses everything (stTrim); a trim    *)
(*    marks the segment trimmed; a segment prepare or accept is the batch  *)
(*    of per-register steps in one request (Server.segBatch);              *)
(*  - the client (wor/client.go, batch.go, engine.go): ballots are          *)
(*    round * 10 + client id, a nack makes the round move past the promise *)
(*    it reports (observe) and a capture retry; a quorum call decides on   *)
(*    the first majority of OK answers, or at once on one trim or seal     *)
(*    answer (wor/quorum.go); Capture remembers, per register, the value   *)
(*    accepted at the highest ballot in its quorum, and Write writes that  *)
(*    one instead of its own (WrittenError); Read returns a value seen     *)
(*    accepted at one ballot by the whole quorum, and otherwise completes  *)
(*    it: capture, write the value seen (or what the capture found), and   *)
(*    return what was written; SegCapture/SegWrite are the same over every *)
(*    register of the segment in one request;                              *)
(*  - reconfiguration (wor/reconfig.go), with WithReconfig: seal epoch 2   *)
(*    at a majority of the old servers, dump and merge their state (per    *)
(*    register the highest promise and the value accepted at the highest   *)
(*    ballot; a trim mark wins, mergeAcceptor), install it on the new      *)
(*    servers (Server.install merges it into what they hold) and activate  *)
(*    epoch 2 there; Reconfigure returns once a majority of the new set is *)
(*    active; a client answered "sealed" moves to epoch 2 (its operation   *)
(*    fails; it may start another if MaxOps allows); LateClients start in  *)
(*    epoch 2 once Reconfigure returned.                                   *)
(*                                                                         *)
(* The network: a request to a server may be delivered at any later time  *)
(* or never; a reply reaches its client only while the client still waits *)
(* for that request (a client whose quorum never forms waits forever).     *)
(* A client runs MaxOps operations one after the other; its ballot rounds  *)
(* (retries and read completions included) are bounded by MaxRound.        *)
(* Not modelled: the chain and ec engines, hedging and widening (which     *)
(* servers are asked; any majority can be the first to answer), the        *)
(* journal under each server (state survives: no crashes), learners and    *)
(* notifications, segment metadata registers; a read whose completion is   *)
(* preempted fails here (the code reads again while tries remain); seals   *)
(* delivered after the dump; the directory's choice of the next            *)
(* configuration (fixed: Cfg[2]). Reads still in flight once their client  *)
(* stopped waiting are dropped (delivering them changes nothing).          *)
(*                                                                         *)
(* Bug* constants switch on deliberate mistakes (FALSE in the real config).*)
(***************************************************************************)
EXTENDS Integers, FiniteSets, TLC

CONSTANTS
    Regs,          \* registers of the one segment
    Clients,       \* client ids (numbers 1..9)
    Writers,       \* the clients that may write (capture + write)
    Readers,       \* the clients that may read
    LateClients,   \* with WithReconfig: clients that start in epoch 2 once Reconfigure returned
    MaxRound,      \* ballot rounds per client
    MaxOps,        \* operations per client
    WithTrim,      \* clients may trim the segment
    WithSeg,       \* clients may capture/write the whole segment at once
    WithReconfig,  \* one reconfiguration from epoch 1 to epoch 2
    OldServers,    \* the replica set of epoch 1
    NewServers,    \* the replica set of epoch 2 (WithReconfig)
    BugAcceptBelowPromise,  \* an acceptor accepts a ballot below its promise
    BugTrimForgets,         \* a trim forgets the registers but keeps serving them
    BugNoSeal               \* reconfiguration dumps the old servers without sealing them

Cfg == [e \in {1, 2} |-> IF e = 1 THEN OldServers ELSE NewServers]
Servers == OldServers \cup (IF WithReconfig THEN NewServers ELSE {})
Epochs == IF WithReconfig THEN {1, 2} ELSE {1}
Maj(e) == Cardinality(Cfg[e]) \div 2 + 1
IsQuorum(Q, e) == Q \subseteq Cfg[e] /\ Cardinality(Q) = Maj(e)
Val(c) == c                         \* the value client c writes
None == 0
Ballot(r, c) == r * 10 + c
Max(S) == CHOOSE x \in S : \A y \in S : y <= x

\* acceptor state of one register
Empty == [prom |-> 0, acc |-> 0, val |-> None]

VARIABLES
    acc,        \* acc[s][a]: acceptor state
    trimmed,    \* trimmed[s]: the segment is trimmed at s
    sepoch, active,   \* per server: the partition's epoch and whether it serves it
    msgs,       \* requests in flight: [req, to]
    cpc, ckind, caddrs, cround, cballot, cwv, cvals, cseq, creq, creply, cops, cepoch,
    rpc, sealed, merged,   \* the reconfigurer
    votes,      \* ghost: every acceptance [s, a, b, v, e] (installs included)
    returned,   \* ghost: every [a, v] a read or write returned
    trimSent    \* the trim was sent

cvars == <<cpc, ckind, caddrs, cround, cballot, cwv, cvals, cseq, creq, creply, cops, cepoch>>
vars == <<acc, trimmed, sepoch, active, msgs, cvars, rpc, sealed, merged, votes, returned, trimSent>>

NoReply == [st |-> "none"]
NoReq(c) == [op |-> "none", addrs |-> {}, ballot |-> 0, vals |-> [a \in Regs |-> None], c |-> c, seq |-> 0, epoch |-> 0]

Init ==
    /\ acc = [s \in Servers |-> [a \in Regs |-> Empty]]
    /\ trimmed = [s \in Servers |-> FALSE]
    /\ sepoch = [s \in Servers |-> IF s \in Cfg[1] THEN 1 ELSE 0]
    /\ active = [s \in Servers |-> s \in Cfg[1]]
    /\ msgs = {}
    /\ cpc = [c \in Clients |-> "idle"]
    /\ ckind = [c \in Clients |-> "write"]
    /\ caddrs = [c \in Clients |-> {}]
    /\ cround = [c \in Clients |-> 0]
    /\ cballot = [c \in Clients |-> 0]
    /\ cwv = [c \in Clients |-> [a \in Regs |-> None]]
    /\ cvals = [c \in Clients |-> [a \in Regs |-> None]]
    /\ cseq = [c \in Clients |-> 0]
    /\ creq = [c \in Clients |-> NoReq(c)]
    /\ creply = [c \in Clients |-> [s \in Servers |-> NoReply]]
    /\ cops = [c \in Clients |-> 0]
    /\ cepoch = [c \in Clients |-> IF c \in LateClients THEN 2 ELSE 1]
    /\ rpc = IF WithReconfig THEN "seal" ELSE "done"
    /\ sealed = {}
    /\ merged = [a \in Regs |-> Empty]
    /\ votes = {}
    /\ returned = {}
    /\ trimSent = FALSE

\* Pending reads of client c once it no longer waits for them: delivering
\* them changes nothing, so they are dropped (as if lost).
StaleReads(c) == {m \in msgs : m.req.c = c /\ m.req.op = "read"}

(***************************************************************************)
(* Clients                                                                 *)
(***************************************************************************)
\* Send request body r (op, addrs, ballot, vals) to the client's replica set
\* and wait for it. pc, kind, addrs, round, ballot, wv and vals are set by
\* the caller (UNCHANGED otherwise).
Send(c, r) ==
    LET req == [r EXCEPT !.c = c, !.seq = cseq[c] + 1, !.epoch = cepoch[c]]
    IN /\ cseq' = [cseq EXCEPT ![c] = cseq[c] + 1]
       /\ creq' = [creq EXCEPT ![c] = req]
       /\ creply' = [creply EXCEPT ![c] = [s \in Servers |-> NoReply]]
       /\ msgs' = (msgs \ StaleReads(c)) \cup {[req |-> req, to |-> s] : s \in Cfg[cepoch[c]]}

Req(op, A, b, vals) == [op |-> op, addrs |-> A, ballot |-> b, vals |-> vals, c |-> 0, seq |-> 0, epoch |-> 0]

\* Capture (phase 1) of the registers A with the next ballot.
Prepare(c, A, r) ==
    /\ cround' = [cround EXCEPT ![c] = r]
    /\ cballot' = [cballot EXCEPT ![c] = Ballot(r, c)]
    /\ Send(c, Req("prepare", A, Ballot(r, c), [a \in Regs |-> None]))

Done(c) ==
    /\ cpc' = [cpc EXCEPT ![c] = "idle"]
    /\ creq' = [creq EXCEPT ![c] = NoReq(c)]

\* Write (or SegWrite) of the client's value to A: capture first.
StartWrite(c) ==
    /\ c \in Writers /\ cpc[c] = "idle" /\ cops[c] < MaxOps /\ cround[c] < MaxRound
    /\ c \in LateClients => rpc = "done"
    /\ \E A \in (IF WithSeg THEN {Regs} ELSE {}) \cup {{a} : a \in Regs} :
         /\ caddrs' = [caddrs EXCEPT ![c] = A]
         /\ cwv' = [cwv EXCEPT ![c] = [a \in Regs |-> IF a \in A THEN Val(c) ELSE None]]
         /\ Prepare(c, A, cround[c] + 1)
    /\ cpc' = [cpc EXCEPT ![c] = "prep"]
    /\ ckind' = [ckind EXCEPT ![c] = "write"]
    /\ cops' = [cops EXCEPT ![c] = cops[c] + 1]
    /\ UNCHANGED <<acc, trimmed, sepoch, active, cvals, cepoch, rpc, sealed, merged, votes, returned, trimSent>>

StartRead(c) ==
    /\ c \in Readers /\ cpc[c] = "idle" /\ cops[c] < MaxOps
    /\ c \in LateClients => rpc = "done"
    /\ \E a \in Regs :
         /\ caddrs' = [caddrs EXCEPT ![c] = {a}]
         /\ Send(c, Req("read", {a}, 0, [x \in Regs |-> None]))
    /\ cpc' = [cpc EXCEPT ![c] = "read"]
    /\ ckind' = [ckind EXCEPT ![c] = "read"]
    /\ cops' = [cops EXCEPT ![c] = cops[c] + 1]
    /\ UNCHANGED <<acc, trimmed, sepoch, active, cround, cballot, cwv, cvals, cepoch,
                   rpc, sealed, merged, votes, returned, trimSent>>

\* Trim (Paxos.Trim, trimAll): someone sends the segment's trim to every
\* replica of epoch e, once, after some operation returned a value (an
\* application trims a segment it has used; other clients may still be
\* working on it); nobody waits for it here.
StartTrim ==
    /\ WithTrim /\ ~trimSent /\ returned # {}
    /\ \E e \in Epochs :
         msgs' = msgs \cup {[req |-> [Req("trim", Regs, 0, [a \in Regs |-> None]) EXCEPT !.epoch = e],
                            to |-> s] : s \in Cfg[e]}
    /\ trimSent' = TRUE
    /\ UNCHANGED <<acc, trimmed, sepoch, active, cvars, rpc, sealed, merged, votes, returned>>

Answered(c) == {s \in Servers : creply[c][s].st # "none"}
ErrAnswer(c) == {s \in Answered(c) : creply[c][s].st \in {"trim", "sealed"}}

\* One trim or seal answer decides the call: trimmed fails the operation;
\* sealed makes the client fetch the new configuration and start the
\* operation again (the cluster client's retry), here: fail it and let the
\* client start a new one in the new epoch.
ErrDecide(c) ==
    /\ cpc[c] \in {"prep", "acc", "read"}
    /\ ErrAnswer(c) # {}
    /\ \E s \in ErrAnswer(c) :
         cepoch' = [cepoch EXCEPT ![c] = IF creply[c][s].st = "sealed" THEN 2 ELSE cepoch[c]]
    /\ Done(c)
    /\ UNCHANGED <<acc, trimmed, sepoch, active, msgs, ckind, caddrs, cround, cballot, cwv,
                   cvals, cseq, creply, cops, rpc, sealed, merged, votes, returned, trimSent>>

OKQuorums(c) == {Q \in SUBSET {s \in Answered(c) : creply[c][s].st \in {"ok", "nack"}} :
                   IsQuorum(Q, cepoch[c])}

\* A capture's quorum answered.
PrepDecide(c) ==
    /\ cpc[c] = "prep" /\ ErrAnswer(c) = {}
    /\ \E Q \in OKQuorums(c) :
       LET R == {creply[c][s] : s \in Q}
           nack == \E m \in R : m.st = "nack"
           hi == Max({m.prom : m \in R})
           \* per register, the value accepted at the highest ballot in Q
           prior(a) == LET B == {m.regs[a].acc : m \in R}
                           top == Max(B)
                       IN IF top = 0 THEN None
                          ELSE (CHOOSE m \in R : m.regs[a].acc = top).regs[a].val
           A == caddrs[c]
           vals == [a \in Regs |-> IF a \in A /\ prior(a) # None THEN prior(a) ELSE cwv[c][a]]
       IN IF nack
          THEN \* observe the promise and capture again above it, if rounds remain
               LET r == Max({cround[c], hi \div 10}) + 1 IN
               IF r <= MaxRound
               THEN /\ Prepare(c, A, r)
                    /\ UNCHANGED <<cpc, cvals>>
               ELSE /\ Done(c)
                    /\ UNCHANGED <<cround, cballot, cseq, creply, msgs, cvals>>
          ELSE /\ cvals' = [cvals EXCEPT ![c] = vals]
               /\ cpc' = [cpc EXCEPT ![c] = "acc"]
               /\ Send(c, Req("accept", A, cballot[c], vals))
               /\ UNCHANGED <<cround, cballot>>
    /\ UNCHANGED <<acc, trimmed, sepoch, active, ckind, caddrs, cwv, cops, cepoch,
                   rpc, sealed, merged, votes, returned, trimSent>>

\* A write's quorum answered: without a nack the values are written and
\* returned (the caller's own or, as a WrittenError, the captured ones).
AccDecide(c) ==
    /\ cpc[c] = "acc" /\ ErrAnswer(c) = {}
    /\ \E Q \in OKQuorums(c) :
         IF \E s \in Q : creply[c][s].st = "nack"
         THEN UNCHANGED returned
         ELSE returned' = returned \cup {<<a, cvals[c][a]>> : a \in caddrs[c]}
    /\ Done(c)
    /\ UNCHANGED <<acc, trimmed, sepoch, active, msgs, ckind, caddrs, cround, cballot, cwv,
                   cvals, cseq, creply, cops, cepoch, rpc, sealed, merged, votes, trimSent>>

\* A read's quorum answered: a value accepted at one ballot by the whole
\* quorum is returned; a half-written one is completed (capture + write).
ReadDecide(c) ==
    /\ cpc[c] = "read" /\ ErrAnswer(c) = {}
    /\ \E Q \in OKQuorums(c) :
       LET a == CHOOSE x \in caddrs[c] : TRUE
           R == {creply[c][s].regs[a] : s \in Q}
           top == Max({m.acc : m \in R})
           best == CHOOSE m \in R : m.acc = top
       IN CASE top = 0 ->   \* ErrUnwritten
                 /\ Done(c)
                 /\ msgs' = msgs \ StaleReads(c)
                 /\ UNCHANGED <<returned, cround, cballot, cseq, creply, cwv, ckind>>
            [] top # 0 /\ \A m \in R : m.acc = top ->
                 /\ returned' = returned \cup {<<a, best.val>>}
                 /\ Done(c)
                 /\ msgs' = msgs \ StaleReads(c)
                 /\ UNCHANGED <<cround, cballot, cseq, creply, cwv, ckind>>
            [] OTHER ->
                 IF cround[c] < MaxRound
                 THEN /\ cwv' = [cwv EXCEPT ![c] = [x \in Regs |-> IF x = a THEN best.val ELSE None]]
                      /\ ckind' = [ckind EXCEPT ![c] = "complete"]
                      /\ cpc' = [cpc EXCEPT ![c] = "prep"]
                      /\ Prepare(c, {a}, cround[c] + 1)
                      /\ UNCHANGED returned
                 ELSE /\ Done(c)
                      /\ msgs' = msgs \ StaleReads(c)
                      /\ UNCHANGED <<returned, cround, cballot, cseq, creply, cwv, ckind>>
    /\ UNCHANGED <<acc, trimmed, sepoch, active, caddrs, cvals, cops, cepoch,
                   rpc, sealed, merged, votes, trimSent>>

(***************************************************************************)
(* Servers                                                                 *)
(***************************************************************************)
\* acceptor.step for one register: [next state, status]
Step(st, op, b, v) ==
    CASE op = "read" -> [next |-> st, ok |-> TRUE]
      [] op = "prepare" ->
           IF b <= st.prom THEN [next |-> st, ok |-> FALSE]
           ELSE [next |-> [st EXCEPT !.prom = b], ok |-> TRUE]
      [] op = "accept" ->
           IF b < st.prom /\ ~BugAcceptBelowPromise THEN [next |-> st, ok |-> FALSE]
           ELSE [next |-> [prom |-> Max({b, st.prom}), acc |-> b, val |-> v], ok |-> TRUE]

Reply(r, st) ==
    /\ creply' = IF creq[r.c] = r
                 THEN [creply EXCEPT ![r.c] = [@ EXCEPT ![st.to] = st.reply]]
                 ELSE creply

\* Server s handles request m.req (Server.handle).
Deliver(m) ==
    LET s == m.to
        r == m.req
        admitted == r.epoch = sepoch[s] /\ active[s]
    IN
    /\ m \in msgs
    /\ msgs' = msgs \ {m}
    /\ CASE ~admitted ->
              \* sealed if older; not ready (a failure: no answer) otherwise
              /\ Reply(r, [to |-> s, reply |-> IF r.epoch < sepoch[s] THEN [st |-> "sealed"] ELSE NoReply])
              /\ UNCHANGED <<acc, trimmed, votes>>
         [] r.op = "trim" ->
              /\ trimmed' = [trimmed EXCEPT ![s] = ~BugTrimForgets]
              /\ acc' = IF BugTrimForgets THEN [acc EXCEPT ![s] = [a \in Regs |-> Empty]] ELSE acc
              /\ UNCHANGED <<creply, votes>>
         [] trimmed[s] ->
              /\ Reply(r, [to |-> s, reply |-> [st |-> "trim"]])
              /\ UNCHANGED <<acc, trimmed, votes>>
         [] OTHER ->
              LET res == [a \in r.addrs |-> Step(acc[s][a], r.op, r.ballot, r.vals[a])]
                  next == [a \in Regs |-> IF a \in r.addrs THEN res[a].next ELSE acc[s][a]]
                  ok == \A a \in r.addrs : res[a].ok
              IN /\ acc' = [acc EXCEPT ![s] = next]
                 /\ votes' = votes \cup {[s |-> s, a |-> a, b |-> r.ballot, v |-> r.vals[a], e |-> sepoch[s]] :
                                          a \in {x \in r.addrs : r.op = "accept" /\ res[x].ok}}
                 \* the reply: a nack carries the promise that beat it, an OK the
                 \* accepted (ballot, value) of each register asked (what the
                 \* client looks at; the rest is left out to keep states few)
                 /\ Reply(r, [to |-> s, reply |->
                        IF ok THEN [st |-> "ok", prom |-> 0,
                                    regs |-> [a \in Regs |-> IF a \in r.addrs /\ r.op # "accept"
                                                             THEN [acc |-> next[a].acc, val |-> next[a].val]
                                                             ELSE [acc |-> 0, val |-> None]]]
                        ELSE [st |-> "nack", prom |-> Max({next[a].prom : a \in r.addrs}),
                              regs |-> [a \in Regs |-> [acc |-> 0, val |-> None]]]])
                 /\ UNCHANGED trimmed
    /\ UNCHANGED <<sepoch, active, cpc, ckind, caddrs, cround, cballot, cwv, cvals, cseq, creq,
                   cops, cepoch, rpc, sealed, merged, returned, trimSent>>

(***************************************************************************)
(* Reconfiguration (Cluster.Reconfigure / transfer), one reconfigurer.     *)
(***************************************************************************)
\* Server s handles the seal of epoch 2.
Seal(s) ==
    /\ rpc = "seal" /\ s \in Cfg[1] /\ s \notin sealed
    /\ IF BugNoSeal THEN UNCHANGED <<sepoch, active>>
       ELSE /\ sepoch' = [sepoch EXCEPT ![s] = 2]
            /\ active' = [active EXCEPT ![s] = FALSE]
    /\ sealed' = sealed \cup {s}
    /\ UNCHANGED <<acc, trimmed, msgs, cvars, rpc, merged, votes, returned, trimSent>>

MergeAcc(x, y) ==
    [prom |-> Max({x.prom, y.prom}),
     acc |-> IF y.acc > x.acc THEN y.acc ELSE x.acc,
     val |-> IF y.acc > x.acc THEN y.val ELSE x.val]

\* Once a majority answered the seal, dump every server that answered and
\* merge their states (transfer: each(sealed, dumpAll), mergeAcceptor); a
\* trim mark wins.
Dump ==
    /\ rpc = "seal"
    /\ Cardinality(sealed) >= Maj(1)
    /\ LET Q == sealed
           tr == \E s \in Q : trimmed[s]
           m == [a \in Regs |->
                   LET ss == {acc[s][a] : s \in Q}
                       top == Max({x.acc : x \in ss})
                       best == CHOOSE x \in ss : x.acc = top
                   IN [prom |-> Max({x.prom : x \in ss}), acc |-> top, val |-> best.val]]
       IN merged' = IF tr THEN [a \in Regs |-> [prom |-> -1, acc |-> -1, val |-> None]] ELSE m
    /\ rpc' = "install"
    /\ UNCHANGED <<acc, trimmed, sepoch, active, msgs, cvars, sealed, votes, returned, trimSent>>

\* New server s installs the merged state at epoch 2 (Server.install) and
\* activates it.
Install(s) ==
    /\ rpc \in {"install", "done"} /\ s \in Cfg[2]
    /\ sepoch[s] <= 2 /\ ~(sepoch[s] = 2 /\ active[s])
    /\ IF merged[CHOOSE a \in Regs : TRUE].prom = -1
       THEN /\ trimmed' = [trimmed EXCEPT ![s] = TRUE]
            /\ UNCHANGED <<acc, votes>>
       ELSE /\ acc' = [acc EXCEPT ![s] = [a \in Regs |-> IF trimmed[s] THEN acc[s][a] ELSE MergeAcc(acc[s][a], merged[a])]]
            \* the state it now holds counts as its acceptances in epoch 2
            /\ votes' = votes \cup {[s |-> s, a |-> a, b |-> acc'[s][a].acc, v |-> acc'[s][a].val, e |-> 2] :
                                     a \in {x \in Regs : ~trimmed[s] /\ acc'[s][x].acc > 0}}
            /\ UNCHANGED trimmed
    /\ sepoch' = [sepoch EXCEPT ![s] = 2]
    /\ active' = [active EXCEPT ![s] = TRUE]
    /\ UNCHANGED <<msgs, cvars, rpc, sealed, merged, returned, trimSent>>

\* Reconfigure returns once a majority of the new servers is active (the
\* others may still install later).
Finish ==
    /\ rpc = "install"
    /\ Cardinality({s \in Cfg[2] : sepoch[s] = 2 /\ active[s]}) >= Maj(2)
    /\ rpc' = "done"
    /\ UNCHANGED <<acc, trimmed, sepoch, active, msgs, cvars, sealed, merged, votes, returned, trimSent>>

(***************************************************************************)
Next ==
    \/ \E c \in Clients :
         \/ StartWrite(c) \/ StartRead(c)
         \/ ErrDecide(c) \/ PrepDecide(c) \/ AccDecide(c) \/ ReadDecide(c)
    \/ \E m \in msgs : Deliver(m)
    \/ StartTrim
    \/ WithReconfig /\ \E s \in Servers : Seal(s) \/ Install(s)
    \/ WithReconfig /\ (Dump \/ Finish)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties                                                              *)
(***************************************************************************)
\* The servers of both replica sets are interchangeable (SYMMETRY).
ServerSymmetry == Permutations(OldServers \cap NewServers)

\* Chosen: accepted at one ballot by a majority of one epoch's replica set.
Chosen(a, v) ==
    \E e \in Epochs, b \in {x.b : x \in votes} :
        Cardinality({s \in Cfg[e] : [s |-> s, a |-> a, b |-> b, v |-> v, e |-> e] \in votes}) >= Maj(e)

\* Write-once: no two different values are returned at one address.
WriteOnce == \A x, y \in returned : x[1] = y[1] => x[2] = y[2]
\* At most one value is chosen at an address.
Agreement == \A a \in Regs : Cardinality({v \in {x.v : x \in votes} : Chosen(a, v)}) <= 1
\* Every value returned is chosen.
ReturnsChosen == \A x \in returned : Chosen(x[1], x[2])
=============================================================================
