package smr

import (
	"context"
	"fmt"
	"time"

	"strata/internal/segsearch"
)

// The protocol decisions that need no I/O: where the log goes next, how
// proposals pack into entries, which registers a new leader junk-fills,
// how a restarting replica finds the live log, when to snapshot and what
// to trim. The replica (replica.go) is the driver that does the I/O.

// nextPos is the position after p in a segment of size registers.
func nextPos(p pos, size uint64) pos {
	if p.off+1 >= size {
		return pos{p.seg + 1, 0}
	}
	return pos{p.seg, p.off + 1}
}

// packBatch returns how many of the queued commands (their sizes, in
// queue order) go into one batch entry of at most maxEntry bytes: as many
// as fit, at least one (a command that cannot fit alone is refused before
// it is queued).
func packBatch(sizes []int, maxEntry int) int {
	used := batchOverhead
	for i, n := range sizes {
		used += cmdOverhead(n) + n
		if used > maxEntry && i > 0 {
			return i
		}
	}
	return len(sizes)
}

// maxCommand is the largest command a batch of maxEntry bytes holds.
func maxCommand(maxEntry int) int {
	return maxEntry - batchOverhead - binaryMaxLenPrefix
}

// binaryMaxLenPrefix bounds the length prefix of one command (commands are
// below wor.MaxValue, 2^20 bytes: three varint bytes).
const binaryMaxLenPrefix = 3

// fillRange is registers [start, end) of log segment seg, captured and
// written with junk in one SegCapture and one SegWrite.
type fillRange struct{ seg, start, end uint64 }

// fillBatch is the registers of one junk-fill step. Smaller than a
// segment so that the fill shows progress: followers watching the log see
// each batch turn into junk, and do not take a slow fill for silence and
// depose the new leader before it writes.
const fillBatch = 128

// fillPlan lists what a new leader junk-fills: every register from `from`
// to the end of the segments before its own, in batches of at most
// fillBatch. sizes[i] is the size of log segment from.seg+i; the
// new leader's segment is from.seg+len(sizes). Registers already chosen
// are included from `from` on: the junk write completes their values
// instead (and reports them), so the fill doubles as a bulk read.
func fillPlan(from pos, sizes []uint64) []fillRange {
	var out []fillRange
	for i, size := range sizes {
		seg := from.seg + uint64(i)
		start := uint64(0)
		if i == 0 {
			start = from.off
		}
		for a := start; a < size; a += fillBatch {
			out = append(out, fillRange{seg, a, min(size, a+fillBatch)})
		}
	}
	return out
}

// segState is what Metadata says of a log segment.
type segState int

const (
	segTrimmed     segState = iota // ErrTrimmed
	segAllocated                   // metadata present
	segUnallocated                 // ErrNotAllocated
)

// firstLive finds the first log segment that is not trimmed. Log segments
// are allocated in order and trimmed in order, so their states run
// trimmed*, allocated*, unallocated*: an exponential then a binary search
// asks O(log n) probes (segsearch). It returns that segment and its state.
func firstLive(ctx context.Context, probe func(ctx context.Context, seg uint64) (segState, error)) (uint64, segState, error) {
	states := map[uint64]segState{}
	s, err := segsearch.First(ctx, MaxLogSegments, func(ctx context.Context, seg uint64) (bool, error) {
		st, err := probe(ctx, seg)
		states[seg] = st
		return st == segTrimmed, err
	})
	if err != nil {
		return 0, 0, err
	}
	if s == MaxLogSegments {
		return 0, 0, fmt.Errorf("smr: every log segment is trimmed")
	}
	st, ok := states[s]
	if !ok {
		if st, err = probe(ctx, s); err != nil {
			return 0, 0, err
		}
	}
	return s, st, nil
}

// snapPolicy is what the leader knows when it decides whether to
// snapshot: commands, entries (registers) and entry bytes applied since
// the last snapshot, and that snapshot's size.
type snapPolicy struct {
	every        uint64
	cmdsSince    uint64
	entriesSince uint64
	bytesSince   uint64
	lastSnapSize uint64
	// lastSnapSlots is the registers the last snapshot's chunks took.
	lastSnapSlots uint64
}

// Bounds on the log kept behind the last snapshot, in registers (each a
// journal slot on a persistent wormserver): a snapshot is considered
// after snapEntries whatever the commands (an idle leader's heartbeats
// fill the log too), and taken at maxLiveEntries — or as many registers
// as the last snapshot took, if more — whatever the sizes.
const (
	snapEntries    = 3 * 1024
	maxLiveEntries = 8 * 1024
)

// due reports whether to snapshot now: after `every` commands, or once
// the log since the last snapshot holds snapEntries entries; but not
// before the log since then is at least as large as that snapshot, so a
// large state is not rewritten for a few small commands (the classic log
// ≥ state rule keeps the cost of snapshots proportional to the writes) —
// unless the live log holds maxLiveEntries registers, or as many as the
// last snapshot if that is more. The log's registers are then at most the
// snapshot's (the journals hold at most the old snapshot, the new one and
// a log as large), and a large state is not rewritten every few thousand
// small entries: at 1 KiB commands, an entry's 4 KiB slot holds a
// quarter of the bytes a snapshot chunk's does.
func (p snapPolicy) due() bool {
	if p.entriesSince >= max(maxLiveEntries, p.lastSnapSlots) {
		return true
	}
	if p.bytesSince < p.lastSnapSize {
		return false
	}
	return p.cmdsSince >= p.every || p.entriesSince >= snapEntries
}

// trimPlan lists the log segments and snapshot segments a snapshot makes
// garbage: log segments in [logLow, snap.at.seg), wholly before the
// snapshot's last entry, and snapshots in [snapLow, snap.k).
func trimPlan(logLow, snapLow uint64, snap snapRef) (logSegs, snaps []uint64) {
	for s := logLow; s < snap.at.seg; s++ {
		logSegs = append(logSegs, s)
	}
	for k := snapLow; k < snap.k; k++ {
		snaps = append(snaps, k)
	}
	return logSegs, snaps
}

// allocLost decides what a candidate that lost the allocation of the
// segment after `last` (whose epoch is lastEpoch) does: follow the winner
// if it is a newer leader (another candidate, epoch above lastEpoch); if
// the winner is the leader it meant to replace (same epoch: that leader
// moved on to its next segment, so it is alive), stand down for now.
func allocLost(lastEpoch uint64, winner logMeta) (newLeader bool) {
	return winner.epoch > lastEpoch
}

// snapPace is how long the snapshot writer waits before writing more,
// having written `written` bytes in `elapsed`, to stay within rate bytes
// a second (no wait if rate <= 0).
func snapPace(written uint64, elapsed time.Duration, rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	due := time.Duration(float64(written) / rate * float64(time.Second))
	return max(due-elapsed, 0)
}
