------------------------------ MODULE WormTXE3 ------------------------------
(***************************************************************************)
(* WormTX's E3 variant (wormtx/peer.go; WormSpace §4.3) for one           *)
(* transaction: non-blocking atomic commit over write-once registers.     *)
(*                                                                         *)
(*  - the initiator (an RM) pre-captured the transaction's slot of vote   *)
(*    registers (SegCapture) and sends every participant its prepare with *)
(*    the capture id (Peer.coordinate, prepareAll);                        *)
(*  - Peer.prepare: a participant locks and checks (lockAndCheck: the vote *)
(*    is yes or no), logs the vote (Store.Prepare; the record is durable   *)
(*    before the vote is written: writeVote's Sync) and writes it into its *)
(*    own register with the token (wor.Adopt + Write); a prepare delivered *)
(*    again, also to a later incarnation, writes the logged vote again     *)
(*    (Store.Vote);                                                        *)
(*  - every peer learns the registers' values (Peer.learned, the engine's  *)
(*    learner; or the reads of resolveVote) and records them              *)
(*    (Peer.record); Peer.check decides once outcomeOf can: abort at the  *)
(*    first no, commit once every participant's register holds yes (the   *)
(*    learning is folded into Decide: what a peer learns of a register is *)
(*    what the register holds);                                           *)
(*  - Peer.timeout, at any time after the prepare (or recovery) located   *)
(*    the transaction: resolveVote on every participant whose vote is not *)
(*    known: read the register and, if unwritten, capture it and write no; *)
(*    whatever the register holds is that participant's vote;             *)
(*  - Peer.decide: a yes voter finishes (Store.Finish, not waited for: a  *)
(*    crash may lose it) and releases its locks;                          *)
(*  - a crash loses a peer's memory, not its store (the vote records and   *)
(*    finishes that reached the disk); recoverLocked: a restarted RM with  *)
(*    a yes record not finished resolves the transaction again from the   *)
(*    registers.                                                           *)
(*                                                                         *)
(* The registers are write-once registers as the WOR engines provide them *)
(* (their models check that): a write takes effect at once if the        *)
(* register is empty, or fails; a failed write of a vote (preempted, or   *)
(* timed out) may still take effect later, or never. A resolver's capture *)
(* and write of no is one step: it writes no if the register is empty.    *)
(* Messages (prepares) may be lost, delayed or delivered again. Fairness  *)
(* (for Termination): a peer that is up keeps taking its steps (learning, *)
(* deciding, finishing, resolving after its timeout); crashes and         *)
(* restarts, message delivery and late writes need none.                  *)
(*                                                                         *)
(* Not modelled: the accounts, locks and reads (a vote is yes or no       *)
(* nondeterministically), other variants (A8 to D4), several              *)
(* transactions, void prepares of an RM that lost its record (forgetLater *)
(* drops records after 10 timeouts).                                      *)
(*                                                                         *)
(* Bug* constants switch on deliberate mistakes (FALSE in the real config).*)
(***************************************************************************)
EXTENDS Integers, FiniteSets, TLC

CONSTANTS
    RMs,          \* the participants (the initiator is one of them)
    Initiator,
    MaxCrashes,   \* crashes in a behaviour (any RM, the initiator included)
    BugPartialVotes,  \* a peer commits once its own yes is known, without the others' votes
    BugReadOnlyResolve \* resolveVote reads the register but never writes no

ASSUME Initiator \in RMs

Votes == {"yes", "no"}
None == "none"

VARIABLES
    reg,        \* reg[r]: participant r's vote register (None, "yes", "no")
    pend,       \* participants whose vote write is under way (it may land later, or never)
    sent,       \* the initiator sent the prepares (each may be delivered any number of times)
    up,         \* up[p]: p runs
    crashes,
    logged,     \* logged[p]: p's vote record (None, "yes", "no"), durable
    finished,   \* finished[p]: p's finish of a yes vote is durable
    located,    \* located[p]: p knows the transaction (memory)
    decided,    \* decided[p]: None, "commit" or "abort" (memory)
    outcomes    \* ghost: every outcome any peer ever decided

vars == <<reg, pend, sent, up, crashes, logged, finished, located, decided, outcomes>>

Init ==
    /\ reg = [r \in RMs |-> None]
    /\ pend = {}
    /\ sent = FALSE
    /\ up = [p \in RMs |-> TRUE]
    /\ crashes = 0
    /\ logged = [p \in RMs |-> None]
    /\ finished = [p \in RMs |-> FALSE]
    /\ located = [p \in RMs |-> FALSE]
    /\ decided = [p \in RMs |-> None]
    /\ outcomes = {}

\* The initiator coordinates: the prepares go out (the slot is captured).
Coordinate ==
    /\ ~sent /\ up[Initiator]
    /\ sent' = TRUE
    /\ located' = [located EXCEPT ![Initiator] = TRUE]
    /\ UNCHANGED <<reg, pend, up, crashes, logged, finished, decided, outcomes>>

\* p's vote write (Adopt + Write with the token) is under way: it lands
\* (LandVote) if the register is still empty, later or never. The vote is
\* always logged[p]: the record is durable before the write is sent.
WriteVote(p) == pend' = pend \cup {p}

\* Peer.prepare at participant p.
Prepare(p) ==
    /\ up[p] /\ sent /\ decided[p] = None
    \* (a prepare delivered again while p knows the transaction and has
    \* logged its vote changes nothing: t.prepared)
    /\ logged[p] = None \/ ~located[p]
    /\ located' = [located EXCEPT ![p] = TRUE]
    /\ IF logged[p] # None
       THEN \* prepared before: the same vote again, never another value
            UNCHANGED logged
       ELSE \E v \in Votes : logged' = [logged EXCEPT ![p] = v]
    /\ WriteVote(p)
    /\ UNCHANGED <<reg, sent, up, crashes, finished, decided, outcomes>>

\* p's vote write lands: the register holds p's vote unless it holds a
\* no already (a capture at a higher ballot would also refuse it).
LandVote(p) ==
    /\ p \in pend
    /\ pend' = pend \ {p}
    /\ reg' = IF reg[p] = None THEN [reg EXCEPT ![p] = logged[p]] ELSE reg
    /\ UNCHANGED <<sent, up, crashes, logged, finished, located, decided, outcomes>>

\* resolveVote after p's timeout: r's register, if unwritten, gets no
\* (capture and write); whatever it holds is r's vote.
Resolve(p, r) ==
    /\ up[p] /\ located[p] /\ decided[p] = None
    /\ ~BugReadOnlyResolve
    /\ reg[r] = None
    /\ reg' = [reg EXCEPT ![r] = "no"]
    /\ UNCHANGED <<pend, sent, up, crashes, logged, finished, located, decided, outcomes>>

\* outcomeOf over the votes p learned: abort at a no, commit once every
\* vote is a yes. What p learns of a register is what it holds (it is
\* write-once), so the outcomes p can reach are those of the registers:
\* learning is folded into Decide.
Outcomes(p) ==
    (IF \E r \in RMs : reg[r] = "no" THEN {"abort"} ELSE {})
    \cup (IF \A r \in RMs : reg[r] = "yes" THEN {"commit"} ELSE {})
    \* the mistake: commit once p's own yes is learned, other votes unknown
    \cup (IF BugPartialVotes /\ reg[p] = "yes" THEN {"commit"} ELSE {})

\* Peer.learned / record, check and decide.
Decide(p) ==
    /\ up[p] /\ located[p] /\ decided[p] = None
    /\ \E o \in Outcomes(p) :
         /\ decided' = [decided EXCEPT ![p] = o]
         /\ outcomes' = outcomes \cup {o}
    /\ UNCHANGED <<reg, pend, sent, up, crashes, logged, finished, located>>

\* Store.Finish of a yes voter's decision reaches the disk.
Finish(p) ==
    /\ up[p] /\ decided[p] # None /\ logged[p] = "yes" /\ ~finished[p]
    /\ finished' = [finished EXCEPT ![p] = TRUE]
    /\ UNCHANGED <<reg, pend, sent, up, crashes, logged, located, decided, outcomes>>

Crash(p) ==
    /\ up[p] /\ crashes < MaxCrashes
    /\ up' = [up EXCEPT ![p] = FALSE]
    /\ crashes' = crashes + 1
    /\ located' = [located EXCEPT ![p] = FALSE]
    /\ decided' = [decided EXCEPT ![p] = None]
    /\ UNCHANGED <<reg, pend, sent, logged, finished, outcomes>>

\* NewPeer: recoverLocked for a yes vote not finished.
Restart(p) ==
    /\ ~up[p]
    /\ up' = [up EXCEPT ![p] = TRUE]
    /\ located' = [located EXCEPT ![p] = logged[p] = "yes" /\ ~finished[p]]
    /\ UNCHANGED <<reg, pend, sent, crashes, logged, finished, decided, outcomes>>

Next ==
    \/ Coordinate
    \/ \E p \in RMs : Prepare(p) \/ Decide(p) \/ Finish(p) \/ Crash(p) \/ Restart(p)
    \/ \E p, r \in RMs : Resolve(p, r)
    \/ \E p \in pend : LandVote(p)

Fairness ==
    /\ \A p \in RMs : WF_vars(Decide(p)) /\ WF_vars(Finish(p))
    /\ \A p, r \in RMs : WF_vars(Resolve(p, r))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

(***************************************************************************)
(* Properties                                                              *)
(***************************************************************************)
\* Atomicity: no peer commits while another aborts (over every decision
\* ever made, before and after crashes).
Atomicity == outcomes # {"commit", "abort"}

\* Commit only if every participant voted yes (its logged vote).
CommitOnlyIfAllYes == "commit" \in outcomes => \A r \in RMs : logged[r] = "yes"

\* A register holds its participant's own vote, or a no written for it.
RegisterIsVote == \A r \in RMs : reg[r] = "yes" => logged[r] = "yes"

\* Non-blocking termination: a peer that knows the transaction and stays up
\* decides, whichever others crashed for good.
Termination == \A p \in RMs : (up[p] /\ located[p]) ~> (~up[p] \/ decided[p] # None)
=============================================================================
