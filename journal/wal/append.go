package wal

// The append path: MemAppend (callers' goroutines) adds multiwrites to the
// in-memory log under mu; Flush and FlushAll wait, without mu, on the
// durable channel the logger closes after each record; WriteDirect writes
// blocks home outside the log. Every function here takes mu itself and
// holds it only to read or extend the logical log, never across a disk
// write or barrier.
//
// Crash: nothing here writes the log. A multiwrite only in memory
// (position >= diskEnd) is lost by a crash, atomically (the logger writes
// whole multiwrites, between freeze points); WriteDirect's blocks may
// reach the disk at any moment, so the logger issues a barrier for them
// before any record that may refer to them (directSynced).

import (
	"context"
	"fmt"
	"time"

	"strata/journal/circular"
	"strata/journal/disk"
)

// Txn identifies an appended multiwrite.
type Txn struct {
	Pos uint64 // log position after it: pass to Flush
	Seq uint64 // 1 for the first multiwrite since Open, 2 for the next, ...
}

// MemAppend appends the multiwrite ups at memEnd. It waits while memory is
// full. The WAL takes ownership of every Data slice.
func (w *WAL) MemAppend(ups []Update) (Txn, error) {
	for _, u := range ups {
		if u.Addr >= w.dataSize {
			return Txn{}, fmt.Errorf("%w: block %d, data region has %d", ErrAddr, u.Addr, w.dataSize)
		}
		if len(u.Data) != disk.BlockSize {
			return Txn{}, fmt.Errorf("wal: update of block %d has %d bytes, want %d", u.Addr, len(u.Data), disk.BlockSize)
		}
	}
	k := uint64(len(ups))
	if circular.RecordBlocks(len(ups)) > w.logBlocks {
		return Txn{}, fmt.Errorf("%w: %d blocks need %d log blocks, the log has %d", ErrTooBig, k, circular.RecordBlocks(len(ups)), w.logBlocks)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && !w.closing && w.memEnd()-w.memStart+k > w.memLimit {
		w.stats.AppendWaits++
		w.appWaiting++
		w.logCond.Signal()
		w.instCond.Signal()
		w.spaceCond.Wait()
		w.appWaiting--
	}
	if w.err != nil {
		return Txn{}, w.err
	}
	if w.closing {
		return Txn{}, ErrClosed
	}
	if w.memEnd() == w.diskEnd {
		w.unloggedAt = time.Now() // the oldest unlogged multiwrite, for lazy
	}
	// Keep every unfrozen stretch loggable as one record.
	if circular.RecordBlocks(int(w.memEnd()-w.nextDiskEnd+k)) > w.logBlocks {
		w.freeze()
	}
	for _, u := range ups {
		abs := u.Addr + w.dataStart
		if p, ok := w.index[abs]; ok && p >= w.nextDiskEnd {
			// Nothing else holds the absorbed block: readers copy under mu
			// and the logger and installer only touch positions before
			// nextDiskEnd.
			PutBlock(w.memLog[p-w.memStart].Data)
			w.memLog[p-w.memStart].Data = u.Data
			w.stats.Absorbed++
			continue
		}
		w.index[abs] = w.memEnd()
		w.memLog = append(w.memLog, circular.Update{Addr: abs, Data: u.Data})
	}
	w.stats.Appended += k
	w.seq++
	w.logCond.Signal()
	return Txn{Pos: w.memEnd(), Seq: w.seq}, nil
}

func (w *WAL) memEnd() uint64 { return w.memStart + uint64(len(w.memLog)) }

// freeze makes memEnd a point where a logged record may end and stops
// absorption into anything before it. Caller holds mu.
func (w *WAL) freeze() {
	if e := w.memEnd(); e > w.nextDiskEnd {
		w.nextDiskEnd = e
		w.freezes = append(w.freezes, e)
	}
}

// Flush waits until every multiwrite before pos is durable.
func (w *WAL) Flush(ctx context.Context, pos uint64) error {
	for {
		w.mu.Lock()
		if w.diskEnd >= pos {
			w.mu.Unlock()
			return nil
		}
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		ch := w.durable
		w.flushWaiting++
		w.logCond.Signal()
		w.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = fmt.Errorf("wal: flush: %w", ctx.Err())
		}
		w.mu.Lock()
		w.flushWaiting--
		w.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// WriteDirect writes bufs (whole blocks) to consecutive data blocks from a
// at their home locations, bypassing the log (ordered mode: the data is
// written once instead of twice). It writes nothing and returns ErrLogged
// if any of the blocks has an update in memory, whose installation or
// replay would overwrite the direct write.
//
// The write is durable once a multiwrite appended after WriteDirect
// returned is durable: the logger issues a barrier for direct writes
// before it writes the next record. So a caller that writes data into
// blocks nothing references yet and then appends the multiwrite that
// references them never exposes unwritten data after a crash.
//
// The caller must guarantee that no multiwrite writing these blocks is
// appended while WriteDirect runs, and that no state that may still be
// recovered references them (a block freed by a multiwrite that is not yet
// durable could come back to life with the direct write's contents).
func (w *WAL) WriteDirect(a uint64, bufs [][]byte) error {
	n := uint64(0)
	for _, b := range bufs {
		if len(b) == 0 || len(b)%disk.BlockSize != 0 {
			return fmt.Errorf("wal: direct write of %d bytes is not whole blocks", len(b))
		}
		n += uint64(len(b) / disk.BlockSize)
	}
	if n == 0 || a >= w.dataSize || n > w.dataSize-a {
		return fmt.Errorf("%w: direct write of blocks [%d,%d), data region has %d", ErrAddr, a, a+n, w.dataSize)
	}
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if w.closing {
		w.mu.Unlock()
		return ErrClosed
	}
	for i := uint64(0); i < n; i++ {
		if _, ok := w.index[a+i+w.dataStart]; ok {
			w.mu.Unlock()
			return fmt.Errorf("%w: block %d", ErrLogged, a+i)
		}
	}
	w.mu.Unlock()
	if err := disk.WriteVec(w.d, a+w.dataStart, bufs); err != nil {
		return fmt.Errorf("wal: direct write at block %d: %w", a, err)
	}
	w.mu.Lock()
	w.direct++
	w.stats.DirectBlks += n
	w.mu.Unlock()
	return nil
}

// DurablePos is the position up to which appended multiwrites are durable:
// a multiwrite with Txn.Pos <= DurablePos survives a crash.
func (w *WAL) DurablePos() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.diskEnd
}

// Pending reports whether some appended multiwrite is not yet durable.
func (w *WAL) Pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.memEnd() > w.diskEnd
}

// FlushAll waits until everything appended so far is durable.
func (w *WAL) FlushAll(ctx context.Context) error {
	w.mu.Lock()
	end := w.memEnd()
	w.mu.Unlock()
	return w.Flush(ctx, end)
}
