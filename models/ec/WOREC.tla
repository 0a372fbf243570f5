------------------------------- MODULE WOREC -------------------------------
(***************************************************************************)
(* The WOR ec engine (wor/ec.go, ecrules.go, ecdelegate.go) on one         *)
(* register, as the code does it: Pando's erasure-coded Paxos. Server s    *)
(* accepts its own split of a value; a value is rebuilt from any K splits  *)
(* of it. The plan's sizes Q1a, Q1b, Q2: any set of servers of that size   *)
(* is a quorum of that kind (ECPlan).                                      *)
(*                                                                         *)
(*  - servers: acceptor.step (wor/acceptor.go): prepare above the promise, *)
(*    accept at or above it (replacing the split held, clearing the chosen *)
(*    mark), commit (Phase 3) marks the split chosen if it is the one      *)
(*    accepted at that ballot; replies carry the state after the request;  *)
(*  - EC.Capture (Phase 1): a prepare to every server; ECPlan.phase1:      *)
(*    Q1a promises none of which holds a split capture with nothing found  *)
(*    (the fast path); Q1b promises capture with recoverValue's value: the *)
(*    value of the highest accepted ballot among them that has K splits    *)
(*    among them, counted by value over all ballots; a nack once the       *)
(*    quorum cannot form is observed and the capture retried above it;     *)
(*  - EC.Write (Phase 2, ballots.take: the recovered value replaces the    *)
(*    client's): an accept of its split to every server; chosen (returned) *)
(*    at Q2 OKs; then Phase 3: a commit to every server, not waited for;   *)
(*    a nack once Q2 cannot form fails the write (ErrPreempted);           *)
(*  - EC.Read (ECPlan.read): a read to every server; once Q1a answered, a  *)
(*    value some answer marks chosen is returned if K of its splits are    *)
(*    among the answers; once Q1b answered, recoverValue's value is        *)
(*    returned if an answer marks it chosen or Q2 answers hold it at its   *)
(*    ballot, completed (capture and write back, engine.go's complete)     *)
(*    otherwise, and nothing recovered is ErrUnwritten;                    *)
(*  - EC.Propose with a delegate (ecdelegate.go), for the clients in       *)
(*    Delegated: Phase 1 as opPrepareFor to every server, whose promises   *)
(*    go to the delegate; the delegate, holding the value and promises     *)
(*    that capture by ECPlan.phase1, runs Phase 2 at the front end's       *)
(*    ballot (opAcceptFor, its recovered value if any), the acceptances    *)
(*    forwarded to the front end, then Phase 3; the front end returns at   *)
(*    Q2 forwarded acceptances or the delegate's answer, or falls back to  *)
(*    Capture and Write at a ballot of its own (proposeHere).              *)
(*                                                                         *)
(* The network: a request may be delivered at any later time or never; a  *)
(* reply reaches its round only while the round is undecided: as in      *)
(* EC.round, the round is decided by the first answer its rule accepts   *)
(* and later answers are dropped. A client may time out at any moment     *)
(* (the operation fails; its requests may still be delivered), which      *)
(* stands for answers that never come. The delegate's answer to the front *)
(* end is folded into the forwarded acceptances (it carries the same     *)
(* news); a front end may give up on its delegate at any moment.          *)
(* Values: writer c writes value c; a split is (ballot, value) at its     *)
(* server. Ballots are round * 10 + client id. Not modelled: unsafe       *)
(* writes, segments, trim, learners, damaged splits (a damaged split is a *)
(* missing answer), the leader fallback (to Paxos the leader is one more *)
(* proposer, as a writer here), server crashes (replies leave after the   *)
(* state is durable; a crashed server is one that stops answering).       *)
(*                                                                         *)
(* The plan's rules are not assumed (a plan breaking them is a mutant):   *)
(* PlanValid says whether they hold.                                      *)
(* Bug* constants switch on deliberate mistakes (FALSE in the real config).*)
(***************************************************************************)
EXTENDS Integers, FiniteSets, TLC

CONSTANTS
    Servers,     \* the servers (model values; any set of a size is a quorum)
    K,           \* data splits: any K splits rebuild a value
    Q1a, Q1b, Q2,   \* the plan's quorum sizes
    Writers,     \* clients that write their own value once (Capture + Write)
    Delegated,   \* writers that Propose through a delegate (a subset of Writers)
    Readers,     \* clients that read once
    MaxRound,    \* ballot rounds per client (retries and completions included)
    BugCountByBallot,   \* recovery counts splits per ballot, not per value
    BugReadNoWriteBack  \* a read returns the value it recovered without writing it back

N == Cardinality(Servers)
Clients == Writers \cup Readers
None == 0
Ballot(r, c) == r * 10 + c
Max(S) == CHOOSE x \in S : \A y \in S : y <= x
Min(a, b) == IF a < b THEN a ELSE b

ASSUME Writers \cap Readers = {} /\ Delegated \subseteq Writers /\ \A c \in Clients : c \in 1..9

\* The rules ECPlan.Validate enforces (the safety ones).
PlanValid ==
    /\ Q1a + Q2 > N          \* Phase 1a meets Phase 2 in >= 1
    /\ Q1b + Q2 >= N + K     \* Phase 1b meets Phase 2 in >= K
    /\ 2 * Q2 >= N + K       \* Phase 2 meets Phase 2 in >= K

\* acceptor state of the register at one server
Empty == [prom |-> 0, acc |-> 0, val |-> None, chosen |-> FALSE]
NoAns == [st |-> "none"]

VARIABLES
    acc,      \* acc[s]: acceptor state at s
    net,      \* requests in flight: [c, tag, op, to, b, v, fwd]
    cpc,      \* client: "idle", "prep", "acc", "read", "dwait" (waits for its delegate), "done"
    ckind,    \* "write", "complete" (a read writing back), "propose" (delegated)
    cround, cballot,
    cval,     \* the value the client writes (its own, or what a capture found)
    ctag,     \* the tag of the round it waits for
    cans,     \* cans[c][s]: s's answer in the client's current round
    dpc,      \* the delegate of a Delegated client: "idle", "wait", "acc", "done"
    dans,     \* dans[c][s]: promises forwarded to the delegate, then its Phase 2 answers
    dval,     \* the value the delegate writes
    votes,    \* ghost: every acceptance <<s, b, v>>
    observed, \* ghost: every value a write, proposal or read returned
    rstart,   \* ghost: rstart[c]: a value was chosen when reader c's read began
    lost      \* ghost: a read answered ErrUnwritten though a value was chosen before it began

cvars == <<cpc, ckind, cround, cballot, cval, ctag, cans>>
dvars == <<dpc, dans, dval>>
vars == <<acc, net, cvars, dvars, votes, observed, rstart, lost>>

Init ==
    /\ acc = [s \in Servers |-> Empty]
    /\ net = {}
    /\ cpc = [c \in Clients |-> "idle"]
    /\ ckind = [c \in Clients |-> "write"]
    /\ cround = [c \in Clients |-> 0]
    /\ cballot = [c \in Clients |-> 0]
    /\ cval = [c \in Clients |-> None]
    /\ ctag = [c \in Clients |-> 0]
    /\ cans = [c \in Clients |-> [s \in Servers |-> NoAns]]
    /\ dpc = [c \in Delegated |-> "idle"]
    /\ dans = [c \in Delegated |-> [s \in Servers |-> NoAns]]
    /\ dval = [c \in Delegated |-> None]
    /\ votes = {}
    /\ observed = {}
    /\ rstart = [c \in Readers |-> FALSE]
    /\ lost = FALSE
    /\ rstart = [c \in Readers |-> FALSE]
    /\ lost = FALSE

\* A value is chosen once a Phase 2 quorum accepted it at one ballot.
Chosen(v) == \E b \in {x[2] : x \in votes} : Cardinality({x \in votes : x[2] = b /\ x[3] = v}) >= Q2
ChosenValues == {v \in {x[3] : x \in votes} : Chosen(v)}

(***************************************************************************)
(* The rules of ecrules.go over a set of answers                           *)
(***************************************************************************)
\* The OK answers (usable states) and whether any was a nack.
OKs(A) == {s \in DOMAIN A : A[s].st = "ok"}
Nacked(A) == \E s \in DOMAIN A : A[s].st = "nack"
HiNack(A) == Max({0} \cup {A[s].prom : s \in {x \in DOMAIN A : A[x].st = "nack"}})
Answered(A) == {s \in DOMAIN A : A[s].st # "none"}
Splits(A, S, v) == {s \in S : A[s].val = v}

\* recoverValue: among the values with K splits in S (by value over all
\* ballots; per ballot with BugCountByBallot), the one accepted at the
\* highest ballot in S; None if there is none.
Recover(A, S) ==
    LET Held == {A[s].val : s \in {x \in S : A[x].acc # 0}}
        Top(v) == Max({A[s].acc : s \in Splits(A, S, v)})
        Enough(v) == IF BugCountByBallot
                     THEN Cardinality({s \in Splits(A, S, v) : A[s].acc = Top(v)}) >= K
                     ELSE Cardinality(Splits(A, S, v)) >= K
        Cands == {v \in Held : Enough(v)}
    IN IF Cands = {} THEN [ok |-> FALSE, val |-> None, acc |-> 0]
       ELSE LET hi == Max({Top(v) : v \in Cands})
                v == CHOOSE x \in Cands : Top(x) = hi
            IN [ok |-> TRUE, val |-> v, acc |-> hi]

\* Servers that have not answered (yet).
Outstanding(A) == N - Cardinality(Answered(A))

\* ECPlan.phase1: "captured" with prior (None: nothing to write instead),
\* "preempted" (a quorum can no longer promise, and some server nacked),
\* or "wait".
Phase1(A) ==
    LET S == OKs(A)
        clean == \A s \in S : A[s].acc = 0
        need == IF clean THEN Min(Q1a, Q1b) ELSE Q1b
    IN IF clean /\ Cardinality(S) >= Q1a THEN [out |-> "captured", prior |-> None]
       ELSE IF Cardinality(S) >= Q1b THEN [out |-> "captured", prior |-> Recover(A, S).val]
       ELSE IF Cardinality(S) + Outstanding(A) < need /\ Nacked(A)
            THEN [out |-> "preempted", prior |-> None]
       ELSE [out |-> "wait", prior |-> None]

\* ECPlan.phase2
Phase2(A) ==
    IF Cardinality(OKs(A)) >= Q2 THEN "chosen"
    ELSE IF Cardinality(OKs(A)) + Outstanding(A) < Q2 /\ Nacked(A) THEN "preempted"
    ELSE "wait"

\* ECPlan.read: [out, val]
ReadRule(A) ==
    LET S == OKs(A)
        marked == {v \in {A[s].val : s \in {x \in S : A[x].chosen}} : Cardinality(Splits(A, S, v)) >= K}
        r == Recover(A, S)
    IN IF Cardinality(S) >= Q1a /\ marked # {} THEN [out |-> "chosen", val |-> CHOOSE v \in marked : TRUE]
       ELSE IF Cardinality(S) >= Q1b
            THEN IF ~r.ok THEN [out |-> "unwritten", val |-> None]
                 ELSE IF \/ \E s \in Splits(A, S, r.val) : A[s].chosen
                         \/ Cardinality({s \in Splits(A, S, r.val) : A[s].acc = r.acc}) >= Q2
                      THEN [out |-> "chosen", val |-> r.val]
                      ELSE [out |-> IF BugReadNoWriteBack THEN "chosen" ELSE "complete", val |-> r.val]
            ELSE IF Outstanding(A) = 0 THEN [out |-> "unavailable", val |-> None]
            ELSE [out |-> "wait", val |-> None]

(***************************************************************************)
(* Clients                                                                 *)
(***************************************************************************)
Req(c, tag, op, s, b, v, fwd) == [c |-> c, tag |-> tag, op |-> op, to |-> s, b |-> b, v |-> v, fwd |-> fwd]
ToAll(c, tag, op, b, v, fwd) == {Req(c, tag, op, s, b, v, fwd) : s \in Servers}
Fresh == [s \in Servers |-> NoAns]

\* A new round of client c: op to every server, waiting in state pc.
Round(c, pc, op, b, v) ==
    /\ cpc' = [cpc EXCEPT ![c] = pc]
    /\ ctag' = [ctag EXCEPT ![c] = ctag[c] + 1]
    /\ cans' = [cans EXCEPT ![c] = Fresh]
    /\ net' = net \cup ToAll(c, ctag[c] + 1, op, b, v, FALSE)

\* Capture at round r (if rounds remain) for an operation of kind k
\* writing v unless the capture finds a value.
\* The client's operation ends (returned or failed): what it no longer
\* waits for is forgotten, and its reads in flight (which change nothing)
\* are dropped.
End(c) ==
    /\ cpc' = [cpc EXCEPT ![c] = "done"]
    /\ cans' = [cans EXCEPT ![c] = Fresh]
    /\ net' = {m \in net : ~(m.c = c /\ m.op = "read")}

Capture(c, r, k, v) ==
    IF r > MaxRound
    THEN /\ End(c)
         /\ UNCHANGED <<ckind, cround, cballot, cval, ctag>>
    ELSE /\ Round(c, "prep", "prepare", Ballot(r, c), None)
         /\ ckind' = [ckind EXCEPT ![c] = k]
         /\ cround' = [cround EXCEPT ![c] = r]
         /\ cballot' = [cballot EXCEPT ![c] = Ballot(r, c)]
         /\ cval' = [cval EXCEPT ![c] = v]

StartWrite(c) ==
    /\ c \in Writers \ Delegated /\ cpc[c] = "idle"
    /\ Capture(c, cround[c] + 1, "write", c)
    /\ UNCHANGED <<acc, dvars, votes, observed>>

StartRead(c) ==
    /\ c \in Readers /\ cpc[c] = "idle"
    /\ Round(c, "read", "read", 0, None)
    /\ rstart' = [rstart EXCEPT ![c] = ChosenValues # {}]
    /\ UNCHANGED <<acc, ckind, cround, cballot, cval, dvars, votes, observed, lost>>

\* EC.delegated: Phase 1 (prepareFor, promises forwarded to the delegate)
\* and the value to the delegate; then wait for Q2 forwarded acceptances.
StartPropose(c) ==
    /\ c \in Delegated /\ cpc[c] = "idle"
    /\ cpc' = [cpc EXCEPT ![c] = "dwait"]
    /\ ckind' = [ckind EXCEPT ![c] = "propose"]
    /\ cround' = [cround EXCEPT ![c] = 1]
    /\ cballot' = [cballot EXCEPT ![c] = Ballot(1, c)]
    /\ cval' = [cval EXCEPT ![c] = c]
    /\ ctag' = [ctag EXCEPT ![c] = ctag[c] + 1]
    /\ cans' = [cans EXCEPT ![c] = Fresh]
    /\ net' = net \cup ToAll(c, ctag[c] + 1, "prepare", Ballot(1, c), None, TRUE)
    /\ dpc' = [dpc EXCEPT ![c] = "wait"]
    /\ UNCHANGED <<acc, dans, dval, votes, observed>>

\* The client's round decides.
PrepDecide(c) ==
    /\ cpc[c] = "prep"
    /\ LET p == Phase1(cans[c]) IN
       CASE p.out = "captured" ->
              \* Write: Phase 2 of the value found, or of the client's own
              LET v == IF p.prior # None THEN p.prior ELSE cval[c] IN
              /\ Round(c, "acc", "accept", cballot[c], v)
              /\ cval' = [cval EXCEPT ![c] = v]
              /\ UNCHANGED <<ckind, cround, cballot>>
         [] p.out = "preempted" ->
              Capture(c, Max({cround[c], HiNack(cans[c]) \div 10}) + 1, ckind[c], cval[c])
         [] OTHER -> FALSE
    /\ UNCHANGED <<acc, dvars, votes, observed>>

\* Phase 2 decided: chosen (returned; Phase 3 sent) or preempted.
AccDecide(c) ==
    /\ cpc[c] = "acc"
    /\ LET p == Phase2(cans[c]) IN
       CASE p = "chosen" ->
              /\ observed' = observed \cup {cval[c]}
              /\ cpc' = [cpc EXCEPT ![c] = "done"]
              /\ cans' = [cans EXCEPT ![c] = Fresh]
              /\ net' = net \cup ToAll(c, 0, "commit", cballot[c], None, FALSE)
              /\ UNCHANGED <<ckind, cround, cballot, cval, ctag>>
         [] p = "preempted" /\ ckind[c] = "complete" ->
              \* complete's retry: the read again
              /\ Round(c, "read", "read", 0, None)
              /\ cround' = [cround EXCEPT ![c] = Max({cround[c], HiNack(cans[c]) \div 10})]
              /\ UNCHANGED <<ckind, cballot, cval, observed>>
         [] p = "preempted" /\ ckind[c] # "complete" ->
              /\ End(c)     \* ErrPreempted
              /\ UNCHANGED <<ckind, cround, cballot, cval, ctag, observed>>
         [] OTHER -> FALSE
    /\ UNCHANGED <<acc, dvars, votes>>

ReadDecide(c) ==
    /\ cpc[c] = "read"
    /\ LET r == ReadRule(cans[c]) IN
       CASE r.out = "chosen" ->
              /\ observed' = observed \cup {r.val}
              /\ End(c)
              /\ UNCHANGED <<ckind, cround, cballot, cval, ctag, lost>>
         [] r.out \in {"unwritten", "unavailable"} ->
              /\ End(c)
              /\ lost' = (lost \/ (r.out = "unwritten" /\ rstart[c]))
              /\ UNCHANGED <<ckind, cround, cballot, cval, ctag, observed>>
         [] r.out = "complete" ->
              /\ Capture(c, cround[c] + 1, "complete", r.val)
              /\ UNCHANGED <<observed, lost>>
         [] OTHER -> FALSE
    /\ UNCHANGED <<acc, dvars, votes, rstart>>

\* A delegated proposal ends: Q2 acceptances at its ballot forwarded here
\* (or the delegate's answer saying so): the value they carry is chosen.
ProposeDone(c) ==
    /\ cpc[c] = "dwait"
    /\ Phase2(cans[c]) = "chosen"
    /\ LET v == cans[c][CHOOSE s \in OKs(cans[c]) : TRUE].val IN
       observed' = observed \cup {v}
    /\ End(c)
    /\ UNCHANGED <<acc, ckind, cround, cballot, cval, ctag, dvars, votes>>

\* The front end gives up on its delegate (a failure answer, refusals,
\* or its timeout) and runs both phases itself (proposeHere).
Fallback(c) ==
    /\ cpc[c] = "dwait"
    /\ Capture(c, cround[c] + 1, "write", c)
    /\ UNCHANGED <<acc, dvars, votes, observed>>

\* A client's call times out: the operation fails (its requests may still
\* be delivered; reads in flight change nothing and are dropped).
Timeout(c) ==
    /\ cpc[c] \in {"prep", "acc", "read", "dwait"}
    /\ End(c)
    /\ UNCHANGED <<acc, ckind, cround, cballot, cval, ctag, dvars, votes, observed>>

(***************************************************************************)
(* The delegate of client c (ecdelegate.go's delegates.step, phase2)       *)
(***************************************************************************)
DelegatePhase1(c) ==
    /\ dpc[c] = "wait"
    /\ LET p == Phase1(dans[c]) IN
       CASE p.out = "captured" ->
              LET v == IF p.prior # None THEN p.prior ELSE c IN
              /\ dpc' = [dpc EXCEPT ![c] = "acc"]
              /\ dval' = [dval EXCEPT ![c] = v]
              /\ dans' = [dans EXCEPT ![c] = Fresh]
              /\ net' = net \cup ToAll(c, 0, "accept", Ballot(1, c), v, TRUE)
         [] p.out = "preempted" ->
              /\ dpc' = [dpc EXCEPT ![c] = "done"]   \* answers failed: the front end falls back
              /\ dans' = [dans EXCEPT ![c] = Fresh]
              /\ UNCHANGED <<dval, net>>
         [] OTHER -> FALSE
    /\ UNCHANGED <<acc, cvars, votes, observed>>

DelegatePhase2(c) ==
    /\ dpc[c] = "acc"
    /\ Phase2(dans[c]) # "wait"
    /\ dpc' = [dpc EXCEPT ![c] = "done"]
    /\ dans' = [dans EXCEPT ![c] = Fresh]
    /\ net' = IF Phase2(dans[c]) = "chosen"
              THEN net \cup ToAll(c, 0, "commit", Ballot(1, c), None, FALSE)
              ELSE net
    /\ UNCHANGED <<acc, cvars, dval, votes, observed>>

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
           ELSE [next |-> [prom |-> b, acc |-> b, val |-> v,
                           chosen |-> st.chosen /\ st.acc = b /\ st.val = v], ok |-> TRUE]
      [] op = "commit" ->
           [next |-> IF st.acc = b /\ st.val # None THEN [st EXCEPT !.chosen = TRUE] ELSE st,
            ok |-> TRUE]

Answer(res) ==
    [st |-> IF res.ok THEN "ok" ELSE "nack", prom |-> res.next.prom,
     acc |-> res.next.acc, val |-> res.next.val, chosen |-> res.next.chosen]

\* A round is decided as soon as its rule allows (EC.round calls decide
\* after every answer, and drops the answers after that): its client
\* takes the decision step next, and no more answers are recorded.
Decided(c) ==
    CASE cpc[c] = "prep" -> Phase1(cans[c]).out # "wait"
      [] cpc[c] = "acc" -> Phase2(cans[c]) # "wait"
      [] cpc[c] = "read" -> ReadRule(cans[c]).out # "wait"
      [] cpc[c] = "dwait" -> Phase2(cans[c]) = "chosen"
      [] OTHER -> TRUE
DDecided(c) ==
    CASE dpc[c] = "wait" -> Phase1(dans[c]).out # "wait"
      [] dpc[c] = "acc" -> Phase2(dans[c]) # "wait"
      [] OTHER -> TRUE

\* Server m.to handles m. Its answer goes to the round that waits for it:
\* the client's (its tag), or, for a delegated proposal, the delegate's
\* (forwarded promises; its Phase 2 answers) and the front end's
\* (forwarded acceptances).
Deliver(m) ==
    LET s == m.to
        c == m.c
        res == Step(acc[s], m.op, m.b, m.v)
        a == Answer(res)
        toClient == m.op # "commit" /\ ctag[c] = m.tag /\ cpc[c] \in {"prep", "acc", "read", "dwait"}
                    /\ (cpc[c] = "dwait" => m.op = "accept")
                    /\ ~Decided(c)
        toDelegate == m.fwd /\ c \in Delegated /\ ~DDecided(c) /\
                      \/ dpc[c] = "wait" /\ m.op = "prepare"
                      \/ dpc[c] = "acc" /\ m.op = "accept"
    IN /\ acc' = [acc EXCEPT ![s] = res.next]
       /\ net' = net \ {m}
       /\ votes' = IF m.op = "accept" /\ res.ok THEN votes \cup {<<s, m.b, m.v>>} ELSE votes
       /\ cans' = IF toClient THEN [cans EXCEPT ![c][s] = a] ELSE cans
       /\ dans' = IF toDelegate THEN [dans EXCEPT ![c][s] = a] ELSE dans
       /\ UNCHANGED <<cpc, ckind, cround, cballot, cval, ctag, dpc, dval, observed>>

Next ==
    \/ \E c \in Readers : StartRead(c) \/ ReadDecide(c)
    \/ /\ \/ \E c \in Clients :
             \/ StartWrite(c) \/ StartPropose(c)
             \/ PrepDecide(c) \/ AccDecide(c)
             \/ ProposeDone(c) \/ Fallback(c) \/ Timeout(c)
          \/ \E c \in Delegated : DelegatePhase1(c) \/ DelegatePhase2(c)
          \/ \E m \in net : Deliver(m)
       /\ UNCHANGED <<rstart, lost>>

Spec == Init /\ [][Next]_vars

ServerSymmetry == Permutations(Servers)

(***************************************************************************)
(* Properties                                                              *)
(***************************************************************************)

\* Write-once: no two different values are ever returned.
WriteOnce == Cardinality(observed) <= 1

\* A read that began after a value was chosen does not answer
\* ErrUnwritten (the half of linearizability that WriteOnce misses).
ReadsSeeChosen == ~lost

\* Paxos agreement: at most one value is chosen.
Agreement == Cardinality(ChosenValues) <= 1

\* What a returned value rests on: it is chosen.
ReturnsChosen == observed \subseteq ChosenValues

\* Every Phase 1b quorum holds K splits of the chosen value (so recovery
\* rebuilds it), and every Phase 1a quorum holds a split of it (so the
\* fast path's "nothing accepted" is never seen over a chosen value).
Q1bRebuilds == \A v \in ChosenValues : \A Q \in SUBSET Servers :
                 Cardinality(Q) = Q1b => Cardinality({s \in Q : acc[s].val = v}) >= K
Q1aSees == \A v \in ChosenValues : \A Q \in SUBSET Servers :
                 Cardinality(Q) = Q1a => \E s \in Q : acc[s].val = v
=============================================================================
