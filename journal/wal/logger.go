package wal

// The logger goroutine: group commit. It holds mu while it decides what to
// log and releases it for the disk writes and the barrier, so appends and
// reads go on meanwhile; it retakes mu to publish the new diskEnd.
//
// Crash at any point of a round:
//   - before the record's blocks are written, or while they are: the ring
//     past ringEnd holds a partial record whose checksum fails; recovery
//     stops before it, so the state is the previous records (diskEnd as
//     before). Nobody was told the multiwrites are durable.
//   - after the record's blocks, before the barrier returns: the record
//     may or may not be on disk, whole or not; recovery replays it only
//     if its checksum holds, i.e. all or none of its multiwrites. Flush
//     has not returned for them.
//   - after the barrier, before diskEnd moves under mu: the record is
//     durable and recovery replays it; callers learn it a moment later.
// The header (SetEnd, every hdrEvery records) only bounds where recovery
// starts looking; a stale one costs a longer scan, never a lost record.
// diskEnd advances only after the barrier: the invariant Flush relies on
// is that every position below diskEnd is in a durable record.

import (
	"fmt"
	"os"
	"time"

	"strata/journal/circular"
)

func (w *WAL) logger() {
	defer w.wg.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for w.err == nil && w.memEnd() == w.diskEnd && !w.closing {
			w.logCond.Wait()
		}
		if w.err != nil || w.memEnd() == w.diskEnd {
			return // failed, or closing with everything logged
		}
		if w.lazy() {
			continue
		}
		w.freeze()
		// The largest freeze point whose record fits the free ring space.
		free := w.logBlocks - (w.ringEnd - w.ringStart)
		end := uint64(0)
		for _, f := range w.freezes {
			if circular.RecordBlocks(int(f-w.diskEnd)) > free {
				break
			}
			end = f
		}
		if end == 0 {
			w.stats.LogWaits++
			w.logWaiting = true
			w.instCond.Signal()
			w.logCond.Wait() // the installer signals when it frees space
			w.logWaiting = false
			continue
		}
		ups := w.memLog[w.diskEnd-w.memStart : end-w.memStart : end-w.memStart]
		pos, durableEnd := w.ringEnd, w.ringEnd
		hook := w.hookBeforeAppend
		// Multiwrites in this record may point at blocks written directly
		// before they were appended: those writes must be durable before the
		// record can be, or recovery could find metadata without its data.
		direct := w.direct
		dataBarrier := direct != w.directSynced
		w.mu.Unlock()
		if hook != nil {
			hook()
		}
		t0 := time.Now()
		var err error
		if dataBarrier {
			err = w.d.Barrier()
		}
		var newEnd uint64
		if err == nil {
			newEnd, err = w.log.Append(pos, ups)
		}
		if err == nil && w.stats.Records%hdrEvery == 0 {
			err = w.log.SetEnd(durableEnd)
		}
		if err == nil {
			err = w.d.Barrier()
		}
		w.mu.Lock()
		if err != nil {
			w.fail(fmt.Errorf("wal: logger: %w", err))
			return
		}
		w.stats.LogBusy += time.Since(t0)
		w.stats.Records++
		w.stats.LoggedBlks += uint64(len(ups))
		w.stats.RingBlks += newEnd - pos
		w.stats.Barriers++
		if dataBarrier {
			w.stats.Barriers++
			w.stats.DataBarrier++
		}
		w.directSynced = max(w.directSynced, direct)
		w.diskEnd = end
		w.ringEnd = newEnd
		i := 0
		for i < len(w.freezes) && w.freezes[i] <= end {
			i++
		}
		w.freezes = w.freezes[i:]
		w.groups = append(w.groups, group{end: end, ringEnd: newEnd})
		close(w.durable)
		w.durable = make(chan struct{})
		w.instCond.Signal()
	}
}

// logDelay resolves Options.LogDelay.
func logDelay(opt time.Duration) time.Duration {
	if opt != 0 {
		return opt
	}
	if v := os.Getenv("STRATA_LOGDELAY"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return DefaultLogDelay
}

// lazy reports whether the logger should wait before logging: nobody waits
// for durability, nothing presses for space, and the oldest unlogged
// multiwrite is younger than the log delay. Logging such multiwrites at
// once costs a barrier each time, and a Flush that arrives while that
// barrier runs waits for two; waiting lets them share the record of the
// next Flush (ext4 and other journals hold commits the same way). It arms
// a wake-up for the deadline and waits once. Caller holds mu.
func (w *WAL) lazy() bool {
	if w.logDelay <= 0 || w.flushWaiting > 0 || w.closing || w.logWaiting || w.appWaiting > 0 ||
		w.memEnd()-w.memStart >= w.memLimit/2 {
		return false
	}
	left := w.logDelay - time.Since(w.unloggedAt)
	if left <= 0 {
		return false
	}
	if w.lazyTimer == nil {
		w.lazyTimer = time.AfterFunc(left, func() {
			w.mu.Lock()
			w.lazyTimer = nil
			w.mu.Unlock()
			w.logCond.Broadcast()
		})
	}
	w.logCond.Wait()
	return true
}
