----------------------------- MODULE JournalWAL -----------------------------
(***************************************************************************)
(* Strata's journal write-ahead log (journal/wal/wal.go over the on-disk   *)
(* format of journal/circular), as the code does it:                        *)
(*                                                                         *)
(*  - the logical log of block updates, absolute positions                 *)
(*      installed | memStart .. diskEnd | .. nextDiskEnd | .. memEnd        *)
(*    MemAppend adds one multiwrite (an operation) at memEnd, absorbing a  *)
(*    write into the latest update of the same block only if that update  *)
(*    is at or after nextDiskEnd (not frozen), and freezing first when    *)
(*    the unfrozen tail would no longer fit one record;                    *)
(*  - the logger (group commit): freeze at memEnd, take the largest freeze *)
(*    point whose record fits the free ring space, write the record       *)
(*    (descriptor + data blocks) into the circular ring at ringEnd, maybe  *)
(*    write the logger header naming the ring end before this record (a   *)
(*    lower bound, written every hdrEvery records: here nondeterministic),*)
(*    one barrier, then advance diskEnd (Flush callers return);            *)
(*  - the installer: take the logged groups, write the latest value of     *)
(*    each block home, barrier, write the installer header (the ring       *)
(*    start), barrier, then drop the installed prefix (memStart) and free  *)
(*    the ring space;                                                      *)
(*  - recovery (Open + circular.Recover): read both headers, scan records  *)
(*    from the installer's start up to the first one that is torn, stale   *)
(*    (names another position) or absent, report corruption if that is    *)
(*    before the logger header's end, replay the latest value of each      *)
(*    block home, barrier, move the start past the records, barrier.       *)
(*                                                                         *)
(* The disk is, for every block, a durable value and a current value (what *)
(* reads see). A write changes the current value; a barrier makes every   *)
(* current value durable; a crash keeps, for every block independently,    *)
(* either value, so a record may be torn. A ring block holds the position  *)
(* and the updates of the record it belongs to: a record is intact iff all *)
(* its blocks name it (the CRC-32C and position check of the real format). *)
(* Operation i writes the value i to each block of OpsTable[i].            *)
(*                                                                         *)
(* Abstracted away: byte contents, descriptor sizes (one descriptor block  *)
(* per record), the lazy log delay and install thresholds (the logger and  *)
(* installer may run whenever they are enabled), the memory limit (never   *)
(* reached with these bounds), WriteDirect, disk errors.                   *)
(*                                                                         *)
(* Bug* constants switch on deliberate mistakes (all FALSE in the real    *)
(* configuration) to show the invariants catch them.                       *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    NumOps,       \* operations appended, in this order, from OpsTable
    LogBlocks,    \* ring size in blocks (circular.MinLogBlocks = 4)
    MaxCrashes,
    BugAckBeforeBarrier,   \* logger advances diskEnd before its barrier
    BugNoInstallBarrier,   \* installer writes the start header without first making home blocks durable
    BugEndHeaderAhead,     \* logger header names the end of the record being written
    BugAbsorbFrozen        \* absorption into updates the logger has frozen (GoJournal section 8.6)

Blocks == 1..2
OpsTable == <<{1}, {1, 2}, {2}, {1}>>
ASSUME NumOps \in 1..Len(OpsTable) /\ LogBlocks >= 4

Vals == 0..NumOps
Slots == 0..(LogBlocks - 1)
RecordBlocks(n) == 1 + n
NoBlock == [pos |-> LogBlocks * 100, ups |-> <<>>]   \* stale / never written

Max(S) == CHOOSE x \in S : \A y \in S : y <= x
Range(s) == {s[i] : i \in DOMAIN s}
\* The set S of blocks as an ascending sequence.
Sorted(S) == [j \in 1..Cardinality(S) |->
                CHOOSE b \in S : Cardinality({c \in S : c < b}) = j - 1]

\* The durable effect of applying the operations of h in order.
Apply(h) == [b \in Blocks |->
               LET W == {i \in 1..Len(h) : b \in OpsTable[h[i]]}
               IN IF W = {} THEN 0 ELSE h[Max(W)]]

\* The latest value of each block in a sequence of updates, over base.
Overlay(base, ups) ==
    [b \in Blocks |->
       LET P == {j \in 1..Len(ups) : ups[j].addr = b}
       IN IF P = {} THEN base[b] ELSE ups[Max(P)].val]

VARIABLES
    \* the disk
    dHome, cHome,      \* home blocks: durable and current values
    dRing, cRing,      \* ring blocks
    dIH, cIH,          \* installer header (block 0): the ring start
    dLH, cLH,          \* logger header (block 1): a lower bound on the end
    \* the WAL in memory
    phase,             \* "up", "rec" (recovering) or "dead" (Open failed)
    memStart, diskEnd, nextDiskEnd, memLog, freezes,
    ringStart, ringEnd, groups,
    lpc, lEnd, lPos, lNewEnd,     \* logger
    ipc, iLast, iN,               \* installer
    rpc, rEnd, rLatest,           \* recovery
    \* ghosts
    nextOp, hist, txnPos, flushable, acked, crashes,
    corrupt, recPrefix, recAcked

disk == <<dHome, cHome, dRing, cRing, dIH, cIH, dLH, cLH>>
mem == <<memStart, diskEnd, nextDiskEnd, memLog, freezes, ringStart, ringEnd, groups>>
lvars == <<lpc, lEnd, lPos, lNewEnd>>
ivars == <<ipc, iLast, iN>>
rvars == <<rpc, rEnd, rLatest>>
ghost == <<nextOp, hist, txnPos, flushable, acked, crashes, corrupt, recPrefix, recAcked>>
vars == <<disk, phase, mem, lvars, ivars, rvars, ghost>>

MemEnd == memStart + Len(memLog)
\* memLog index of absolute position p
Ix(p) == p - memStart + 1
\* absolute position of the latest update of block b in memory, or -1
Latest(b) == LET P == {j \in 1..Len(memLog) : memLog[j].addr = b}
             IN IF P = {} THEN -1 ELSE memStart + Max(P) - 1

Init ==
    /\ dHome = [b \in Blocks |-> 0] /\ cHome = dHome
    /\ dRing = [s \in Slots |-> NoBlock] /\ cRing = dRing
    /\ dIH = 0 /\ cIH = 0 /\ dLH = 0 /\ cLH = 0
    /\ phase = "up"
    /\ memStart = 0 /\ diskEnd = 0 /\ nextDiskEnd = 0 /\ memLog = <<>>
    /\ freezes = <<>> /\ ringStart = 0 /\ ringEnd = 0 /\ groups = <<>>
    /\ lpc = "idle" /\ lEnd = 0 /\ lPos = 0 /\ lNewEnd = 0
    /\ ipc = "idle" /\ iLast = [end |-> 0, ringEnd |-> 0] /\ iN = 0
    /\ rpc = "scan" /\ rEnd = 0 /\ rLatest = <<>>
    /\ nextOp = 1 /\ hist = <<>> /\ txnPos = [i \in 1..NumOps |-> 0]
    /\ flushable = {} /\ acked = {} /\ crashes = 0
    /\ corrupt = FALSE /\ recPrefix = TRUE /\ recAcked = TRUE

Barrier ==
    /\ dHome' = cHome /\ dRing' = cRing /\ dIH' = cIH /\ dLH' = cLH

(***************************************************************************)
(* MemAppend of operation nextOp (one atomic step: the code holds mu).     *)
(***************************************************************************)
MemAppend ==
    LET i == nextOp
        k == Cardinality(OpsTable[i])
        needFreeze == RecordBlocks(MemEnd - nextDiskEnd + k) > LogBlocks
                      /\ MemEnd > nextDiskEnd
        nde == IF needFreeze THEN MemEnd ELSE nextDiskEnd
        limit == IF BugAbsorbFrozen THEN diskEnd ELSE nde
        absorbs(b) == Latest(b) # -1 /\ Latest(b) >= limit
        A == {b \in OpsTable[i] : absorbs(b)}
        absorbedLog == [j \in 1..Len(memLog) |->
                          IF /\ memLog[j].addr \in A
                             /\ memStart + j - 1 = Latest(memLog[j].addr)
                          THEN [memLog[j] EXCEPT !.val = i]
                          ELSE memLog[j]]
        new == Sorted(OpsTable[i] \ A)
        newLog == absorbedLog \o [j \in 1..Len(new) |-> [addr |-> new[j], val |-> i]]
    IN
    /\ phase = "up" /\ nextOp <= NumOps
    /\ nextDiskEnd' = nde
    /\ freezes' = IF needFreeze THEN Append(freezes, MemEnd) ELSE freezes
    /\ memLog' = newLog
    /\ txnPos' = [txnPos EXCEPT ![i] = memStart + Len(newLog)]
    /\ hist' = Append(hist, i)
    /\ flushable' = flushable \cup {i}
    /\ nextOp' = i + 1
    /\ UNCHANGED <<disk, phase, memStart, diskEnd, ringStart, ringEnd, groups,
                   lvars, ivars, rvars, acked, crashes, corrupt, recPrefix, recAcked>>

\* A Flush(txnPos[i]) returns: operation i is acknowledged durable.
Ack(i) ==
    /\ phase = "up" /\ i \in flushable /\ diskEnd >= txnPos[i]
    /\ acked' = acked \cup {i}
    /\ flushable' = flushable \ {i}
    /\ UNCHANGED <<disk, phase, mem, lvars, ivars, rvars,
                   nextOp, hist, txnPos, crashes, corrupt, recPrefix, recAcked>>

(***************************************************************************)
(* The logger.                                                             *)
(***************************************************************************)
\* Under mu: freeze at memEnd, pick the largest freeze point that fits.
\* If none fits it waits for the installer (only the freeze happens).
LoggerChoose ==
    LET doFreeze == MemEnd > nextDiskEnd
        fz == IF doFreeze THEN Append(freezes, MemEnd) ELSE freezes
        free == LogBlocks - (ringEnd - ringStart)
        fits == {f \in Range(fz) : RecordBlocks(f - diskEnd) <= free}
    IN
    /\ phase = "up" /\ lpc = "idle" /\ MemEnd > diskEnd
    /\ nextDiskEnd' = IF doFreeze THEN MemEnd ELSE nextDiskEnd
    /\ freezes' = fz
    /\ IF fits = {}
       THEN UNCHANGED <<lpc, lEnd, lPos>>
       ELSE /\ lEnd' = Max(fits) /\ lPos' = ringEnd /\ lpc' = "write"
    /\ UNCHANGED <<disk, phase, memStart, diskEnd, memLog, ringStart, ringEnd, groups,
                   lNewEnd, ivars, rvars, ghost>>

\* Unlocked: write the record's blocks (descriptor + data) into the ring.
\* The update data is read from memLog now (the Go slice aliases it).
LoggerWrite ==
    LET ups == SubSeq(memLog, Ix(diskEnd), Ix(lEnd) - 1)
        n == RecordBlocks(Len(ups))
        blk == [pos |-> lPos, ups |-> [j \in 1..Len(ups) |-> ups[j]]]
    IN
    /\ phase = "up" /\ lpc = "write"
    /\ cRing' = [s \in Slots |->
                   IF \E j \in 0..(n - 1) : (lPos + j) % LogBlocks = s
                   THEN blk ELSE cRing[s]]
    /\ lNewEnd' = lPos + n
    /\ lpc' = "hdr"
    /\ UNCHANGED <<dHome, cHome, dRing, dIH, cIH, dLH, cLH, phase, mem,
                   lEnd, lPos, ivars, rvars, ghost>>

\* Every hdrEvery records the logger header is written (here: or not).
LoggerHeader ==
    /\ phase = "up" /\ lpc = "hdr"
    /\ \/ cLH' = IF BugEndHeaderAhead THEN lNewEnd ELSE lPos
       \/ UNCHANGED cLH
    /\ lpc' = IF BugAckBeforeBarrier THEN "publish" ELSE "barrier"
    /\ UNCHANGED <<dHome, cHome, dRing, cRing, dIH, cIH, dLH, phase, mem,
                   lEnd, lPos, lNewEnd, ivars, rvars, ghost>>

LoggerBarrier ==
    /\ phase = "up" /\ lpc = "barrier"
    /\ Barrier
    /\ lpc' = IF BugAckBeforeBarrier THEN "idle" ELSE "publish"
    /\ UNCHANGED <<cHome, cRing, cIH, cLH, phase, mem, lEnd, lPos, lNewEnd,
                   ivars, rvars, ghost>>

\* Under mu: the record is durable; diskEnd advances, Flush callers return.
LoggerPublish ==
    /\ phase = "up" /\ lpc = "publish"
    /\ diskEnd' = lEnd
    /\ ringEnd' = lNewEnd
    /\ freezes' = SelectSeq(freezes, LAMBDA f : f > lEnd)
    /\ groups' = Append(groups, [end |-> lEnd, ringEnd |-> lNewEnd])
    /\ lpc' = IF BugAckBeforeBarrier THEN "barrier" ELSE "idle"
    /\ UNCHANGED <<disk, phase, memStart, nextDiskEnd, memLog, ringStart,
                   lEnd, lPos, lNewEnd, ivars, rvars, ghost>>

(***************************************************************************)
(* The installer.                                                          *)
(***************************************************************************)
InstallerChoose ==
    /\ phase = "up" /\ ipc = "idle" /\ groups # <<>>
    /\ iLast' = groups[Len(groups)] /\ iN' = Len(groups)
    /\ ipc' = "home"
    /\ UNCHANGED <<disk, phase, mem, lvars, rvars, ghost>>

InstallerHome ==
    /\ phase = "up" /\ ipc = "home"
    /\ cHome' = Overlay(cHome, SubSeq(memLog, 1, Ix(iLast.end) - 1))
    /\ ipc' = IF BugNoInstallBarrier THEN "start" ELSE "barrier1"
    /\ UNCHANGED <<dHome, dRing, cRing, dIH, cIH, dLH, cLH, phase, mem,
                   lvars, iLast, iN, rvars, ghost>>

InstallerBarrier1 ==
    /\ phase = "up" /\ ipc = "barrier1"
    /\ Barrier /\ ipc' = "start"
    /\ UNCHANGED <<cHome, cRing, cIH, cLH, phase, mem, lvars, iLast, iN, rvars, ghost>>

InstallerStart ==
    /\ phase = "up" /\ ipc = "start"
    /\ cIH' = iLast.ringEnd /\ ipc' = "barrier2"
    /\ UNCHANGED <<dHome, cHome, dRing, cRing, dIH, dLH, cLH, phase, mem,
                   lvars, iLast, iN, rvars, ghost>>

InstallerBarrier2 ==
    /\ phase = "up" /\ ipc = "barrier2"
    /\ Barrier /\ ipc' = "publish"
    /\ UNCHANGED <<cHome, cRing, cIH, cLH, phase, mem, lvars, iLast, iN, rvars, ghost>>

InstallerPublish ==
    /\ phase = "up" /\ ipc = "publish"
    /\ memLog' = SubSeq(memLog, Ix(iLast.end), Len(memLog))
    /\ memStart' = iLast.end
    /\ ringStart' = iLast.ringEnd
    /\ groups' = SubSeq(groups, iN + 1, Len(groups))
    /\ ipc' = "idle"
    /\ UNCHANGED <<disk, phase, diskEnd, nextDiskEnd, freezes, ringEnd,
                   lvars, iLast, iN, rvars, ghost>>

(***************************************************************************)
(* A crash: memory is lost, each block keeps its durable or current value. *)
(***************************************************************************)
Keep(d, c, D) == {f \in [D -> Range(d) \cup Range(c)] : \A x \in D : f[x] \in {d[x], c[x]}}

Crash ==
    /\ phase \in {"up", "rec"} /\ crashes < MaxCrashes
    /\ \E h \in Keep(dHome, cHome, Blocks), r \in Keep(dRing, cRing, Slots),
          ih \in {dIH, cIH}, lh \in {dLH, cLH} :
          /\ dHome' = h /\ cHome' = h /\ dRing' = r /\ cRing' = r
          /\ dIH' = ih /\ cIH' = ih /\ dLH' = lh /\ cLH' = lh
    /\ crashes' = crashes + 1
    /\ phase' = "rec" /\ rpc' = "scan" /\ rEnd' = 0 /\ rLatest' = <<>>
    /\ memStart' = 0 /\ diskEnd' = 0 /\ nextDiskEnd' = 0 /\ memLog' = <<>>
    /\ freezes' = <<>> /\ ringStart' = 0 /\ ringEnd' = 0 /\ groups' = <<>>
    /\ lpc' = "idle" /\ lEnd' = 0 /\ lPos' = 0 /\ lNewEnd' = 0
    /\ ipc' = "idle" /\ iLast' = [end |-> 0, ringEnd |-> 0] /\ iN' = 0
    /\ flushable' = {}
    /\ UNCHANGED <<nextOp, hist, txnPos, acked, corrupt, recPrefix, recAcked>>

(***************************************************************************)
(* Recovery.                                                               *)
(***************************************************************************)
\* The record at logical position pos is intact and fits the room left.
Intact(pos, start) ==
    LET blk == cRing[pos % LogBlocks]
    IN /\ blk.pos = pos
       /\ Len(blk.ups) >= 1
       /\ RecordBlocks(Len(blk.ups)) <= LogBlocks - (pos - start)
       /\ \A j \in 0..(RecordBlocks(Len(blk.ups)) - 1) : cRing[(pos + j) % LogBlocks] = blk

\* The updates of the intact records from pos on, and the end of the last.
RECURSIVE Scan(_, _)
Scan(pos, start) ==
    IF pos - start < LogBlocks /\ Intact(pos, start)
    THEN LET ups == cRing[pos % LogBlocks].ups
             rest == Scan(pos + RecordBlocks(Len(ups)), start)
         IN [ups |-> ups \o rest.ups, end |-> rest.end]
    ELSE [ups |-> <<>>, end |-> pos]

RecoverScan ==
    LET start == cIH
        hint == cLH
        s == Scan(start, start)
    IN
    /\ phase = "rec" /\ rpc = "scan"
    /\ IF (hint > start /\ hint - start > LogBlocks) \/ s.end < hint
       THEN /\ corrupt' = TRUE /\ phase' = "dead"
            /\ UNCHANGED <<rpc, rEnd, rLatest>>
       ELSE /\ rEnd' = s.end
            /\ rLatest' = s.ups
            /\ rpc' = IF s.ups = <<>> THEN "done" ELSE "home"
            /\ UNCHANGED <<corrupt, phase>>
    /\ UNCHANGED <<disk, mem, lvars, ivars, nextOp, hist, txnPos, flushable,
                   acked, crashes, recPrefix, recAcked>>

RecoverHome ==
    /\ phase = "rec" /\ rpc = "home"
    /\ cHome' = Overlay(cHome, rLatest) /\ rpc' = "barrier1"
    /\ UNCHANGED <<dHome, dRing, cRing, dIH, cIH, dLH, cLH, phase, mem,
                   lvars, ivars, rEnd, rLatest, ghost>>

RecoverBarrier1 ==
    /\ phase = "rec" /\ rpc = "barrier1"
    /\ Barrier /\ rpc' = "start"
    /\ UNCHANGED <<cHome, cRing, cIH, cLH, phase, mem, lvars, ivars, rEnd, rLatest, ghost>>

RecoverStart ==
    /\ phase = "rec" /\ rpc = "start"
    /\ cIH' = rEnd /\ rpc' = "barrier2"
    /\ UNCHANGED <<dHome, cHome, dRing, cRing, dIH, dLH, cLH, phase, mem,
                   lvars, ivars, rEnd, rLatest, ghost>>

RecoverBarrier2 ==
    /\ phase = "rec" /\ rpc = "barrier2"
    /\ Barrier /\ rpc' = "done"
    /\ UNCHANGED <<cHome, cRing, cIH, cLH, phase, mem, lvars, ivars, rEnd, rLatest, ghost>>

\* Open returns: the WAL starts empty in memory, with the ring at rEnd. The
\* ghost history becomes the prefix of operations the disk now reflects.
RecoverDone ==
    LET K == {k \in 0..Len(hist) : Apply(SubSeq(hist, 1, k)) = dHome}
        k == Max(K)
    IN
    /\ phase = "rec" /\ rpc = "done"
    /\ phase' = "up"
    /\ ringStart' = rEnd /\ ringEnd' = rEnd
    /\ recPrefix' = (K # {})
    /\ recAcked' = (K # {} /\ acked \subseteq Range(SubSeq(hist, 1, k)))
    /\ hist' = IF K # {} THEN SubSeq(hist, 1, k) ELSE hist
    /\ UNCHANGED <<disk, memStart, diskEnd, nextDiskEnd, memLog, freezes, groups,
                   lvars, ivars, rvars, nextOp, txnPos, flushable, acked, crashes, corrupt>>

Next ==
    \/ MemAppend
    \/ \E i \in 1..NumOps : Ack(i)
    \/ LoggerChoose \/ LoggerWrite \/ LoggerHeader \/ LoggerBarrier \/ LoggerPublish
    \/ InstallerChoose \/ InstallerHome \/ InstallerBarrier1 \/ InstallerStart
    \/ InstallerBarrier2 \/ InstallerPublish
    \/ Crash
    \/ RecoverScan \/ RecoverHome \/ RecoverBarrier1 \/ RecoverStart
    \/ RecoverBarrier2 \/ RecoverDone

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)
\* After every recovery the disk holds the effect of a prefix of the
\* operations appended (in order), ...
RecoveredPrefix == recPrefix
\* ... and that prefix includes every operation whose Flush returned.
AckedDurable == recAcked
\* Recovery never finds the on-disk log inconsistent (the logger header
\* naming an end the records do not reach).
NoCorruption == ~corrupt
\* While running, a read of every block (memory first, then home) returns
\* the effect of all operations appended since the last recovery.
ReadsLatest ==
    phase = "up" =>
        \A b \in Blocks :
            (IF Latest(b) # -1 THEN memLog[Ix(Latest(b))].val ELSE cHome[b]) = Apply(hist)[b]
\* The in-memory pointers stay ordered and the ring never overfills.
PointersOK ==
    phase = "up" =>
        /\ memStart <= diskEnd /\ diskEnd <= nextDiskEnd /\ nextDiskEnd <= MemEnd
        /\ ringStart <= ringEnd /\ ringEnd - ringStart <= LogBlocks
=============================================================================
