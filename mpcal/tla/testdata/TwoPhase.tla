This prose before the header is ignored, as SANY ignores it.

------------------------------- MODULE TwoPhase -------------------------------
(***************************************************************************)
(* Two-phase commit with a transaction manager (TM) and a set of resource  *)
(* managers (RMs) that communicate by messages.  Messages are never        *)
(* removed from the set msgs, which models a network that may delay and    *)
(* duplicate them.  (* Comments nest. *)                                   *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANT RM          \* the set of resource managers

VARIABLES
  rmState,           \* rmState[r] is the state of resource manager r
  tmState,           \* the state of the transaction manager
  tmPrepared,        \* the RMs from which the TM has received "Prepared"
  msgs               \* all messages ever sent

vars == <<rmState, tmState, tmPrepared, msgs>>

Messages ==
  [type : {"Prepared"}, rm : RM]  \cup  [type : {"Commit", "Abort"}]

TPTypeOK ==
  /\ rmState \in [RM -> {"working", "prepared", "committed", "aborted"}]
  /\ tmState \in {"init", "committed", "aborted"}
  /\ tmPrepared \subseteq RM
  /\ msgs \subseteq Messages

TPInit ==
  /\ rmState = [r \in RM |-> "working"]
  /\ tmState = "init"
  /\ tmPrepared   = {}
  /\ msgs = {}
-----------------------------------------------------------------------------
TMRcvPrepared(r) ==
  /\ tmState = "init"
  /\ [type |-> "Prepared", rm |-> r] \in msgs
  /\ tmPrepared' = tmPrepared \cup {r}
  /\ UNCHANGED <<rmState, tmState, msgs>>

TMCommit ==
  /\ tmState = "init"
  /\ tmPrepared = RM
  /\ tmState' = "committed"
  /\ msgs' = msgs \cup {[type |-> "Commit"]}
  /\ UNCHANGED <<rmState, tmPrepared>>

TMAbort ==
  /\ tmState = "init"
  /\ tmState' = "aborted"
  /\ msgs' = msgs \cup {[type |-> "Abort"]}
  /\ UNCHANGED <<rmState, tmPrepared>>

RMPrepare(r) ==
  /\ rmState[r] = "working"
  /\ rmState' = [rmState EXCEPT ![r] = "prepared"]
  /\ msgs' = msgs \cup {[type |-> "Prepared", rm |-> r]}
  /\ UNCHANGED <<tmState, tmPrepared>>

RMChooseToAbort(r) ==
  /\ rmState[r] = "working"
  /\ rmState' = [rmState EXCEPT ![r] = "aborted"]
  /\ UNCHANGED <<tmState, tmPrepared, msgs>>

RMRcvCommitMsg(r) ==
  /\ [type |-> "Commit"] \in msgs
  /\ rmState' = [rmState EXCEPT ![r] = "committed"]
  /\ UNCHANGED <<tmState, tmPrepared, msgs>>

RMRcvAbortMsg(r) ==
  /\ [type |-> "Abort"] \in msgs
  /\ rmState' = [rmState EXCEPT ![r] = "aborted"]
  /\ UNCHANGED <<tmState, tmPrepared, msgs>>

TPNext ==
  \/ TMCommit \/ TMAbort
  \/ \E r \in RM :
       TMRcvPrepared(r) \/ RMPrepare(r) \/ RMChooseToAbort(r)
         \/ RMRcvCommitMsg(r) \/ RMRcvAbortMsg(r)

TPSpec == TPInit /\ [][TPNext]_vars /\ WF_vars(TMCommit \/ TMAbort)

(* Consistency: no RM commits while another aborts. *)
TCConsistent ==
  \A r1, r2 \in RM : ~ /\ rmState[r1] = "aborted"
                       /\ rmState[r2] = "committed"

AllDecided == \A r \in RM : rmState[r] \in {"committed", "aborted"}

Liveness == <>AllDecided
Stable == [](AllDecided => [](AllDecided))

PreparedCount == Cardinality({r \in RM : rmState[r] = "prepared"})

THEOREM TPSpec => [](TPTypeOK /\ TCConsistent)
=============================================================================
Text after the end is ignored too: ---- MODULE Bogus ----
