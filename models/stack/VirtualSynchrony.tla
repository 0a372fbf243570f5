------------------------- MODULE VirtualSynchrony -------------------------
(***************************************************************************)
(* The group layers of Strata's stack (stack/layers): gms (membership and  *)
(* the flush), sync (casts wait during a flush), total (a fixed sequencer) *)
(* over mnak/local (reliable FIFO multicast with self delivery) and pt2pt  *)
(* (reliable FIFO point to point), for one view change.                    *)
(*                                                                         *)
(* View 1 has members 1..N (ID 1, made by member 1); member 1 sequences    *)
(* (total: the view's first member). Members cast, some crash or ask to    *)
(* leave; the coordinator (elect: the first member it does not suspect)   *)
(* runs maybeChange: a proposal, a flush to the members that stay, their   *)
(* oks (the number of each origin's casts they delivered: gms's report),   *)
(* then an install to the stayers and leavers with the casts each lacks.   *)
(* A coordinator that fails during the flush is replaced by the next,      *)
(* whose flush (a higher ID) supersedes it. Names follow the Go code:      *)
(* gms's flush/ok/install/leave messages, answered, blocked, delivered,    *)
(* maxID, proposal (stay, leave, oks); total's held, order, done, made.    *)
(*                                                                         *)
(* What is abstracted:                                                     *)
(*  - mnak: each origin's casts of view 1 form one stream casts[o]; a      *)
(*    member delivers them in order, each arbitrarily late: a cast may     *)
(*    also never arrive before the flush stops deliveries (loss that mnak  *)
(*    does not repair before the view ends, or an origin that crashed).    *)
(*    Stability (stable.go) is left out: gms keeps every cast it           *)
(*    delivered, which changes nothing a flush gives (a stable cast was    *)
(*    delivered by every member already).                                  *)
(*  - local: a member's own cast is delivered back to it in the step that  *)
(*    sends it; so is the sequencer's order cast, made as it delivers a    *)
(*    data cast. mflow and the overtaking it allows among the sequencer's  *)
(*    casts are left out: order casts are applied in position order, as   *)
(*    total applies them.                                                  *)
(*  - sync: a cast made while blocked waits for view 2, which this model   *)
(*    ends at: Cast is disabled while blocked.                             *)
(*  - pt2pt: one FIFO channel per ordered pair; messages from a crashed    *)
(*    sender may be lost (Drop removes the channel's last message, so     *)
(*    what arrives is a prefix).                                           *)
(*  - suspect/elect: only crashed members are suspected (no false          *)
(*    suspicion, hence no partition and no merge); joins are not modelled. *)
(*                                                                         *)
(* What the code guarantees, and the model checks (VirtualSynchrony.cfg):  *)
(* members that install the same next view delivered the same casts in     *)
(* view 1 in the same order (VirtualSynchrony; the issue's same-set form  *)
(* is SameSet); members that neither crash nor leave never deliver two     *)
(* casts in different orders (TotalOrder); no duplicates; a member that    *)
(* moves on delivered its own casts; casts are delivered in the view they  *)
(* were sent in. What it does not guarantee, shown by TLC (findings, the   *)
(* real model): total order between a leaver and the members that stay     *)
(* (TotalOrderWithLeavers: a leaver is not flushed, so a leaving sequencer *)
(* goes on ordering), nor between a crashed member and the others (not     *)
(* stated: the order is not uniform); and that a flush always ends        *)
(* (FlushEnds: a coordinator taking over mid-flush may reuse the flush ID  *)
(* of the one that crashed, which members that answered it ignore).        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    N,            \* members of view 1: 1..N
    Casters,      \* members that cast data
    MaxCasts,     \* data casts per caster in view 1
    CanCrash,     \* members that may crash
    CanLeave,     \* members that may ask to leave
    MaxCrashes,   \* crashes in a behaviour
    MaxLeaves,    \* leave requests in a behaviour
    \* Mutants (FALSE in the real configurations):
    BugDeliverAfterOk,      \* gms.cast delivers casts after the member answered a flush
    BugInstallBeforeFlush,  \* the coordinator installs once all but one stayer answered
    BugEndViewByArrival,    \* total.endView delivers unordered casts in arrival order
    BugViewBeforeCasts      \* gms.install emits the view before the casts the flush gave

Mem == 1..N
Seq1 == 1                 \* total's sequencer: view 1's first member
None == [none |-> TRUE]

\* A cast of view 1, in its origin's mnak stream: a data cast (total's data
\* kind, the origin's message number n) or the sequencer's order cast
\* naming a data cast <<origin, n>> (total's order kind).
DataCast(n) == [k |-> "data", n |-> n]
OrderCast(e) == [k |-> "order", e |-> e]

VARIABLES
    casts,      \* casts[o]: o's casts of view 1, in mnak order
    chan,       \* chan[<<p, q>>]: pt2pt messages from p to q, in order
    alive,      \* alive[p]: not crashed
    view,       \* view[p]: View1, or the view p installed (gms setView)
    leaving,    \* gms.leaving
    suspects,   \* gms.suspects
    leaves,     \* gms.leaves (at a coordinator)
    maxID,      \* gms.maxID
    proposal,   \* gms.proposal (None or [id, members, stay, leave, oks])
    answered,   \* gms.answered: the flush answered in view 1 (0: none)
    blocked,    \* gms.blocked, and total.blocked (EBlock goes up at once)
    delivered,  \* gms.delivered[p][o]: o's casts p's gms delivered in view 1
    next,       \* total.next: own data casts numbered
    held,       \* total.held: data casts waiting for their order entry, in arrival order
    order,      \* total.order: order entries applied, in position order
    done,       \* total.done: order entries delivered
    app,        \* what total delivered to the application: <<<<origin, n>>, view>>
    crashes, leaveReqs

vars == <<casts, chan, alive, view, leaving, suspects, leaves, maxID, proposal,
          answered, blocked, delivered, next, held, order, done, app, crashes, leaveReqs>>

ViewRec(id, by, members) == [id |-> id, by |-> by, members |-> members]
View1 == ViewRec(1, 1, [i \in Mem |-> i])
InView1(p) == view[p] = View1
Installed(p) == view[p] # View1

\* elect: the coordinator p believes in, the first member it does not suspect.
Coord(p) == CHOOSE c \in Mem \ suspects[p] : \A d \in Mem \ suspects[p] : c <= d

Range(s) == {s[i] : i \in DOMAIN s}
Remove(s, x) == SelectSeq(s, LAMBDA y : y # x)
Max(a, b) == IF a >= b THEN a ELSE b

(***************************************************************************)
(* total, as functions of one member's total state t = [held, order, done, *)
(* app]; v is the view the application is in.                              *)
(***************************************************************************)
RECURSIVE Drain(_, _)
\* total.drain: deliver held casts in the order of the entries.
Drain(t, v) ==
    IF t.done < Len(t.order) /\ t.order[t.done + 1] \in Range(t.held)
    THEN LET k == t.order[t.done + 1]
         IN Drain([t EXCEPT !.held = Remove(@, k), !.done = @ + 1,
                            !.app = Append(@, <<k, v>>)], v)
    ELSE t

\* total.Up for a cast r of origin o.
TotalUp(t, o, r, v) ==
    IF r.k = "data" THEN Drain([t EXCEPT !.held = Append(@, <<o, r.n>>)], v)
    ELSE Drain([t EXCEPT !.order = Append(@, r.e)], v)

KeyLess(a, b) == a[1] < b[1] \/ (a[1] = b[1] /\ a[2] < b[2])
RECURSIVE Sorted(_)
Sorted(S) ==
    IF S = {} THEN <<>>
    ELSE LET m == CHOOSE x \in S : \A y \in S \ {x} : KeyLess(x, y)
         IN <<m>> \o Sorted(S \ {m})

\* total.endView: the order as far as it goes, then what was never ordered,
\* by origin rank and number.
EndView(t, v) ==
    LET d == Drain(t, v)
        rest == IF BugEndViewByArrival THEN d.held ELSE Sorted(Range(d.held))
    IN [d EXCEPT !.held = <<>>,
                 !.app = @ \o [i \in 1..Len(rest) |-> <<rest[i], v>>]]

TotalOf(p) == [held |-> held[p], order |-> order[p], done |-> done[p], app |-> app[p]]

RECURSIVE UpAll(_, _, _)
\* gms.install delivers the casts it brings, list of <<o, cast>>.
UpAll(t, list, v) ==
    IF list = <<>> THEN t
    ELSE UpAll(TotalUp(t, list[1][1], list[1][2], v), Tail(list), v)

RECURSIVE Missing(_, _, _)
\* The casts between from[o] and to[o] for origins o..N, by origin then
\* number (the order gms.ok lists them in).
Missing(from, to, o) ==
    IF o > N THEN <<>>
    ELSE [i \in 1..(to[o] - from[o]) |-> <<o, casts[o][from[o] + i]>>]
         \o Missing(from, to, o + 1)

(***************************************************************************)
(* Messages (pt2pt) and sending.                                           *)
(***************************************************************************)
LeaveMsg == [t |-> "leave"]
FlushMsg(id) == [t |-> "flush", id |-> id]
OkMsg(id, rep) == [t |-> "ok", id |-> id, rep |-> rep]
InstallMsg(id, by, members, from, to) ==
    [t |-> "install", id |-> id, by |-> by, members |-> members, from |-> from, to |-> to]

\* Append msgs[q] (if not None) to chan[<<p, q>>] for every q.
SendAll(c, p, msgs) ==
    [pq \in DOMAIN c |-> IF pq[1] = p /\ pq[2] \in DOMAIN msgs /\ msgs[pq[2]] # None
                         THEN Append(c[pq], msgs[pq[2]]) ELSE c[pq]]

SeqOf(S) == Sorted({<<m, 0>> : m \in S})  \* members in rank order, as pairs
MembersSeq(S) == [i \in 1..Cardinality(S) |-> SeqOf(S)[i][1]]

Init ==
    /\ casts = [o \in Mem |-> <<>>]
    /\ chan = [pq \in Mem \X Mem |-> <<>>]
    /\ alive = [p \in Mem |-> TRUE]
    /\ view = [p \in Mem |-> View1]
    /\ leaving = [p \in Mem |-> FALSE]
    /\ suspects = [p \in Mem |-> {}]
    /\ leaves = [p \in Mem |-> {}]
    /\ maxID = [p \in Mem |-> 1]
    /\ proposal = [p \in Mem |-> None]
    /\ answered = [p \in Mem |-> 0]
    /\ blocked = [p \in Mem |-> FALSE]
    /\ delivered = [p \in Mem |-> [o \in Mem |-> 0]]
    /\ next = [p \in Mem |-> 0]
    /\ held = [p \in Mem |-> <<>>]
    /\ order = [p \in Mem |-> <<>>]
    /\ done = [p \in Mem |-> 0]
    /\ app = [p \in Mem |-> <<>>]
    /\ crashes = 0
    /\ leaveReqs = 0

SetTotal(p, t) ==
    /\ held' = [held EXCEPT ![p] = t.held]
    /\ order' = [order EXCEPT ![p] = t.order]
    /\ done' = [done EXCEPT ![p] = t.done]
    /\ app' = [app EXCEPT ![p] = t.app]

(***************************************************************************)
(* A member casts (the sync layer lets it through: not blocked), and local *)
(* delivers it back at once through gms.cast (kept, delivered[p][p] + 1)   *)
(* to total; the sequencer orders it as it delivers it (total.sequence),   *)
(* and its order cast comes back to it the same way.                       *)
(***************************************************************************)
\* p's gms and total take cast r of origin o (gms.cast then total.Up); at
\* the sequencer, a data cast is ordered unless a flush blocked it.
\* Returns [t, own]: the total state and the order casts p made.
Take(p, o, r) ==
    LET t1 == TotalUp(TotalOf(p), o, r, 1)
        seq == p = Seq1 /\ r.k = "data" /\ ~blocked[p]
        oc == OrderCast(<<o, r.n>>)
    IN IF seq THEN [t |-> TotalUp(t1, p, oc, 1), own |-> <<oc>>]
       ELSE [t |-> t1, own |-> <<>>]

Cast(p) ==
    /\ alive[p] /\ InView1(p) /\ ~blocked[p] /\ p \in Casters /\ next[p] < MaxCasts
    /\ LET r == DataCast(next[p] + 1)
           x == Take(p, p, r)
       IN /\ casts' = [casts EXCEPT ![p] = (@ \o <<r>>) \o x.own]
          /\ delivered' = [delivered EXCEPT ![p][p] = @ + 1 + Len(x.own)]
          /\ SetTotal(p, x.t)
    /\ next' = [next EXCEPT ![p] = @ + 1]
    /\ UNCHANGED <<chan, alive, view, leaving, suspects, leaves, maxID, proposal,
                   answered, blocked, crashes, leaveReqs>>

\* mnak delivers o's next cast to p; gms.cast passes it up unless p has
\* answered a flush (then the install brings what is due).
Receive(p, o) ==
    /\ alive[p] /\ InView1(p) /\ o # p
    /\ answered[p] = 0 \/ BugDeliverAfterOk
    /\ delivered[p][o] < Len(casts[o])
    /\ LET r == casts[o][delivered[p][o] + 1]
           x == Take(p, o, r)
       IN /\ casts' = [casts EXCEPT ![p] = @ \o x.own]
          /\ delivered' = [delivered EXCEPT ![p][o] = @ + 1, ![p][p] = @ + Len(x.own)]
          /\ SetTotal(p, x.t)
    /\ UNCHANGED <<chan, alive, view, leaving, suspects, leaves, maxID, proposal,
                   answered, blocked, next, crashes, leaveReqs>>

Crash(p) ==
    /\ alive[p] /\ p \in CanCrash /\ crashes < MaxCrashes
    /\ alive' = [alive EXCEPT ![p] = FALSE]
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<casts, chan, view, leaving, suspects, leaves, maxID, proposal,
                   answered, blocked, delivered, next, held, order, done, app, leaveReqs>>

\* pt2pt gives up on what a crashed sender had not got through.
Drop(p, q) ==
    /\ ~alive[p] /\ chan[<<p, q>>] # <<>>
    /\ chan' = [chan EXCEPT ![<<p, q>>] = SubSeq(@, 1, Len(@) - 1)]
    /\ UNCHANGED <<casts, alive, view, leaving, suspects, leaves, maxID, proposal,
                   answered, blocked, delivered, next, held, order, done, app, crashes, leaveReqs>>

\* The suspect layer reports a crashed member of the view.
Suspect(p, q) ==
    /\ alive[p] /\ InView1(p) /\ ~alive[q] /\ q \notin suspects[p]
    /\ suspects' = [suspects EXCEPT ![p] = @ \cup {q}]
    /\ UNCHANGED <<casts, chan, alive, view, leaving, leaves, maxID, proposal,
                   answered, blocked, delivered, next, held, order, done, app, crashes, leaveReqs>>

\* The application asks to leave (gms.Down ELeave): the coordinator notes
\* it (its maybeChange follows: StartFlush), another member tells it.
Leave(p) ==
    /\ alive[p] /\ InView1(p) /\ ~leaving[p] /\ p \in CanLeave /\ leaveReqs < MaxLeaves
    /\ leaving' = [leaving EXCEPT ![p] = TRUE]
    /\ leaveReqs' = leaveReqs + 1
    /\ IF Coord(p) = p
       THEN /\ leaves' = [leaves EXCEPT ![p] = @ \cup {p}]
            /\ UNCHANGED chan
       ELSE /\ chan' = [chan EXCEPT ![<<p, Coord(p)>>] = Append(@, LeaveMsg)]
            /\ UNCHANGED leaves
    /\ UNCHANGED <<casts, alive, view, suspects, maxID, proposal,
                   answered, blocked, delivered, next, held, order, done, app, crashes>>

\* gms.tick: a leaver whose coordinator changed asks the new one (the code
\* asks every tick; here once per coordinator it has no request queued to).
ResendLeave(p) ==
    /\ alive[p] /\ InView1(p) /\ leaving[p] /\ Coord(p) # p
    /\ LeaveMsg \notin Range(chan[<<p, Coord(p)>>])
    /\ p \notin leaves[Coord(p)]
    /\ chan' = [chan EXCEPT ![<<p, Coord(p)>>] = Append(@, LeaveMsg)]
    /\ UNCHANGED <<casts, alive, view, leaving, suspects, leaves, maxID, proposal,
                   answered, blocked, delivered, next, held, order, done, app, crashes, leaveReqs>>

(***************************************************************************)
(* The view change. The coordinator's own flush and its own install are    *)
(* handled in the step that sends the others' (gms defers them), so these *)
(* are written as functions of the coordinator's gms state.                *)
(***************************************************************************)
\* The members of the next view, and who stays and who leaves, as the
\* coordinator p sees it (gms.maybeChange).
Lv(p) == leaves[p] \cup (IF leaving[p] THEN {p} ELSE {})
Stay(p) == {m \in Mem : m \notin suspects[p] /\ m \notin Lv(p)}
Leavers(p) == {m \in Mem : m \notin suspects[p] /\ m \in Lv(p)}

\* The installs of a proposal whose oks are in (gms.ok): every stayer gets
\* the casts it lacks of the union, a leaver none; returns the messages per
\* member (the coordinator's own included).
Installs(p, prop, oks) ==
    LET answeredBy == {m \in prop.stay : oks[m] # None}
        target == [o \in Mem |-> LET ds == {oks[m][o] : m \in answeredBy}
                                 IN CHOOSE x \in ds : \A y \in ds : x >= y]
    IN [m \in prop.stay \cup prop.leave |->
          IF m \in answeredBy
          THEN InstallMsg(prop.id, p, prop.members, oks[m], target)
          ELSE InstallMsg(prop.id, p, prop.members, [o \in Mem |-> 0], [o \in Mem |-> 0])]

Complete(prop, oks) ==
    LET n == Cardinality({m \in prop.stay : oks[m] # None})
    IN IF BugInstallBeforeFlush THEN n >= 1 /\ n + 1 >= Cardinality(prop.stay)
       ELSE n = Cardinality(prop.stay)

\* gms.install at p of message m (p accepts it: checked by the caller):
\* the casts it brings, then the view (EView: total.endView delivers what
\* the old view left, then moves on).
InstallEffect(p, m) ==
    LET v == ViewRec(m.id, m.by, m.members)
        list == Missing(m.from, m.to, 1)
        t1 == UpAll(TotalOf(p), list, IF BugViewBeforeCasts THEN v.id ELSE 1)
        t2 == EndView(t1, IF BugViewBeforeCasts THEN v.id ELSE 1)
    IN /\ view' = [view EXCEPT ![p] = v]
       /\ SetTotal(p, t2)

Accepts(p, m) == InView1(p) /\ (m.id = answered[p] \/ leaving[p])

\* gms.maybeChange at the coordinator p: a new proposal, a flush to every
\* member that stays (its own answered at once). If the coordinator is the
\* only stayer, its own ok completes the flush in the same step.
StartFlush(p) ==
    /\ alive[p] /\ InView1(p) /\ Coord(p) = p
    /\ LET stay == Stay(p)
           members == MembersSeq(stay)
           id == maxID[p] + 1
           selfOk == [m \in Mem |-> IF m = p /\ p \in stay THEN delivered[p] ELSE None]
           prop == [id |-> id, members |-> members, stay |-> stay, leave |-> Leavers(p), oks |-> selfOk]
           flushes == [q \in stay \ {p} |-> FlushMsg(id)]
       IN /\ stay # Mem
          /\ stay # {}
          /\ IF proposal[p] = None THEN TRUE ELSE proposal[p].members # members
          /\ maxID' = [maxID EXCEPT ![p] = id]
          /\ IF p \in stay
             THEN \* its own flush (gms.control gmsFlush, deferred)
                  /\ answered' = [answered EXCEPT ![p] = id]
                  /\ blocked' = [blocked EXCEPT ![p] = TRUE]
             ELSE UNCHANGED <<answered, blocked>>
          /\ IF Complete(prop, selfOk)
             THEN LET ins == Installs(p, prop, selfOk)
                  IN /\ chan' = SendAll(chan, p, [q \in DOMAIN ins \ {p} |-> ins[q]] @@ flushes)
                     /\ proposal' = [proposal EXCEPT ![p] = None]
                     /\ InstallEffect(p, ins[p])
             ELSE /\ chan' = SendAll(chan, p, flushes)
                  /\ proposal' = [proposal EXCEPT ![p] = prop]
                  /\ UNCHANGED <<view, held, order, done, app>>
    /\ UNCHANGED <<casts, alive, leaving, suspects, leaves, delivered, next, crashes, leaveReqs>>

\* q takes the first pt2pt message from p.
RecvCtl(p, q) ==
    /\ alive[q] /\ chan[<<p, q>>] # <<>>
    /\ LET m == Head(chan[<<p, q>>])
           rest == [chan EXCEPT ![<<p, q>>] = Tail(@)]
       IN CASE m.t = "leave" ->
                 /\ chan' = rest
                 /\ leaves' = IF InView1(q) THEN [leaves EXCEPT ![q] = @ \cup {p}] ELSE leaves
                 /\ UNCHANGED <<view, maxID, proposal, answered, blocked, held, order, done, app>>
            [] m.t = "flush" ->
                 \* gms.control gmsFlush: stale, or of a view q is not in: ignored.
                 IF InView1(q) /\ m.id > answered[q]
                 THEN /\ maxID' = [maxID EXCEPT ![q] = Max(@, m.id)]
                      /\ proposal' = IF proposal[q] # None /\ proposal[q].id < m.id
                                     THEN [proposal EXCEPT ![q] = None] ELSE proposal
                      /\ answered' = [answered EXCEPT ![q] = m.id]
                      /\ blocked' = [blocked EXCEPT ![q] = TRUE]
                      /\ chan' = [rest EXCEPT ![<<q, p>>] = Append(@, OkMsg(m.id, delivered[q]))]
                      /\ UNCHANGED <<view, leaves, held, order, done, app>>
                 ELSE /\ maxID' = [maxID EXCEPT ![q] = Max(@, m.id)]
                      /\ chan' = rest
                      /\ UNCHANGED <<view, leaves, proposal, answered, blocked, held, order, done, app>>
            [] m.t = "ok" ->
                 \* gms.ok: an answer to q's current proposal from a stayer.
                 LET prop == proposal[q]
                 IN IF InView1(q) /\ prop # None /\ m.id = prop.id /\ p \in prop.stay
                    THEN LET oks == [prop.oks EXCEPT ![p] = m.rep]
                         IN IF Complete(prop, oks)
                            THEN LET ins == Installs(q, prop, oks)
                                 IN /\ proposal' = [proposal EXCEPT ![q] = None]
                                    /\ chan' = SendAll(rest, q, [r \in DOMAIN ins \ {q} |-> ins[r]])
                                    /\ IF q \in DOMAIN ins /\ Accepts(q, ins[q])
                                       THEN InstallEffect(q, ins[q])
                                       ELSE UNCHANGED <<view, held, order, done, app>>
                                    /\ UNCHANGED <<maxID, leaves, answered, blocked>>
                            ELSE /\ proposal' = [proposal EXCEPT ![q].oks = oks]
                                 /\ chan' = rest
                                 /\ UNCHANGED <<view, maxID, leaves, answered, blocked, held, order, done, app>>
                    ELSE /\ chan' = rest
                         /\ UNCHANGED <<view, maxID, proposal, leaves, answered, blocked, held, order, done, app>>
            [] m.t = "install" ->
                 /\ chan' = rest
                 /\ IF Accepts(q, m)
                    THEN InstallEffect(q, m)
                    ELSE UNCHANGED <<view, held, order, done, app>>
                 /\ UNCHANGED <<maxID, proposal, leaves, answered, blocked>>
    /\ UNCHANGED <<casts, alive, leaving, suspects, delivered, next, crashes, leaveReqs>>

Next ==
    \/ \E p \in Mem : Cast(p) \/ Crash(p) \/ Leave(p) \/ ResendLeave(p) \/ StartFlush(p)
    \/ \E p, q \in Mem : Receive(p, q) \/ Drop(p, q) \/ Suspect(p, q) \/ RecvCtl(p, q)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)
Keys(p) == {app[p][i][1] : i \in DOMAIN app[p]}
InNext(p) == Installed(p) /\ \E i \in DOMAIN view[p].members : view[p].members[i] = p

\* Members that install the same view ID together agree on its members
\* (one view per ID: a single coordinator makes each ID here).
ViewAgreement ==
    \A p, q \in Mem : Installed(p) /\ Installed(q) /\ view[p].id = view[q].id
                      /\ view[p].by = view[q].by => view[p].members = view[q].members

\* Virtual synchrony, as gms states it: members that move together from
\* view 1 to the same next view delivered the same casts in view 1, and
\* (with total) in the same order.
VirtualSynchrony ==
    \A p, q \in Mem : InNext(p) /\ InNext(q) /\ view[p] = view[q]
                      => app[p] = app[q]

\* The issue's weaker form: the same set of messages.
SameSet ==
    \A p, q \in Mem : InNext(p) /\ InNext(q) /\ view[p] = view[q]
                      => Keys(p) = Keys(q)

\* Total order among the members that do not fail or leave: what any two
\* of them have delivered so far is ordered the same way (common casts in
\* the same relative order).
Before(p, a, b) == \E i, j \in DOMAIN app[p] : i < j /\ app[p][i][1] = a /\ app[p][j][1] = b
Correct(p) == alive[p] /\ ~leaving[p]
TotalOrder ==
    \A p, q \in Mem : Correct(p) /\ Correct(q) =>
        \A a, b \in Keys(p) \cap Keys(q) : Before(p, a, b) => Before(q, a, b)

\* The same for any two members that have not crashed, leavers included:
\* the code does NOT guarantee this (see the README and TotalOrderLeaver.cfg).
TotalOrderWithLeavers ==
    \A p, q \in Mem : alive[p] /\ alive[q] =>
        \A a, b \in Keys(p) \cap Keys(q) : Before(p, a, b) => Before(q, a, b)

\* No cast is delivered twice.
NoDuplication ==
    \A p \in Mem : \A i, j \in DOMAIN app[p] : i # j => app[p][i][1] # app[p][j][1]

\* A member that moves to the next view delivered, in view 1, every cast
\* it made in view 1 (its own casts come back through local at once).
SelfDelivery ==
    \A p \in Mem : InNext(p) => \A n \in 1..next[p] : <<p, n>> \in Keys(p)

\* Every cast is delivered in the view it was sent in (all casts here are
\* sent in view 1: a cast made while blocked waits in sync for view 2).
DeliveredInSentView ==
    \A p \in Mem : \A i \in DOMAIN app[p] : app[p][i][2] = 1

\* A flush the coordinator p sent can still be answered by q: false when q
\* answered a flush with the same (or a higher) ID from another coordinator
\* (one that crashed) and has nothing for p in flight: gms.control ignores
\* p's flush (id <= answered), p waits for q's ok for ever, and sync holds
\* everyone's casts for ever. Violated: see VirtualSynchrony_FlushID.cfg.
FlushEnds ==
    ~ \E p, q \in Mem :
        /\ alive[p] /\ InView1(p) /\ proposal[p] # None
        /\ q \in proposal[p].stay \ {p} /\ alive[q] /\ InView1(q)
        /\ proposal[p].oks[q] = None
        /\ answered[q] >= proposal[p].id
        /\ FlushMsg(proposal[p].id) \notin Range(chan[<<p, q>>])
        /\ \A i \in DOMAIN chan[<<q, p>>] : chan[<<q, p>>][i].t # "ok"

\* Only casts that were made are delivered.
Integrity ==
    \A p \in Mem : \A k \in Keys(p) : k[2] <= next[k[1]]

=============================================================================
