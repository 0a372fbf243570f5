package smr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"strata/wor"
)

// Snapshots in the WOR space, trim, and catching up from a snapshot.

// storeSnapshot writes a snapshot the apply loop took into snapshot
// segment ref.k (the next free number), then proposes a pointer entry to
// it; once the pointer is applied it trims the log segments wholly before
// the snapshot and the older snapshots.
//
// It encodes the snapshot first (encode runs beside later commands), and
// writes its chunks at most rate bytes a second (no limit if rate <= 0):
// written at full speed, a large snapshot's SegWrites fill the
// wormservers' journals and group commits for seconds, and the commands
// written meanwhile wait behind them.
func (r *replica) storeSnapshot(t *term, ref snapRef, encode func() ([]byte, error), rate float64) {
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		r.snapBusy = false
		r.mu.Unlock()
	}()
	data, err := encode()
	if err != nil {
		r.log.Error("smr: state machine snapshot failed", "err", err)
		return
	}
	chunk := r.cfg.MaxEntry
	var m snapMeta
	for try := 0; ; try++ {
		m = newSnapMeta(ref, data, chunk)
		if m.chunks > wor.MaxOffset || ref.k >= GroupSpan-MaxLogSegments {
			r.log.Error("smr: snapshot does not fit a segment", "bytes", len(data))
			return
		}
		err := r.c.Alloc(t.ctx, r.snapID(ref.k), encodeSnapMeta(m))
		if errors.Is(err, wor.ErrAllocated) && try < 8 {
			ref.k++ // an abandoned snapshot (its pointer never written) holds k
			continue
		}
		if err != nil {
			r.log.Warn("smr: snapshot not stored", "k", ref.k, "err", err)
			return
		}
		break
	}
	// The segment is ours (Alloc), and nobody reads it before the pointer
	// exists: unsafe writes (no capture) are enough.
	per := max(1, min(wor.MaxSegBatch, snapWriteSize/chunk))
	start := time.Now()
	for i := uint64(0); i < m.chunks; i += uint64(per) {
		if d := snapPace(i*uint64(chunk), time.Since(start), rate); d > 0 && !sleep(t.ctx, d) {
			return
		}
		n := min(uint64(per), m.chunks-i)
		vals := make([][]byte, n)
		for j := range vals {
			vals[j] = m.chunk(data, i+uint64(j))
		}
		if _, err := r.c.SegWrite(t.ctx, r.snapID(ref.k), i, vals, 0); err != nil {
			r.log.Warn("smr: snapshot not stored", "k", ref.k, "err", err)
			return
		}
	}
	p := newProposal(nil, encodePointer(ref))
	r.mu.Lock()
	if r.term != t {
		r.mu.Unlock()
		return
	}
	t.queue = append(t.queue, p)
	r.mu.Unlock()
	kick(t.kick)
	var res result
	select {
	case res = <-p.done:
	case <-t.ctx.Done():
		return
	}
	if res.err != nil {
		return
	}
	r.mu.Lock()
	r.lastSnapSize = uint64(len(data))
	r.st.Snapshots++
	logs, snaps := trimPlan(r.trimLog, r.trimSnap, ref)
	r.mu.Unlock()
	r.log.Debug("smr: snapshot stored", "k", ref.k, "index", ref.index, "bytes", len(data), "trimming", len(logs))
	for _, s := range logs {
		if err := r.trim(r.segID(s)); err != nil {
			return
		}
		r.mu.Lock()
		r.trimLog = max(r.trimLog, s+1)
		r.mu.Unlock()
	}
	for _, k := range snaps {
		if err := r.trim(r.snapID(k)); err != nil {
			return
		}
		r.mu.Lock()
		r.trimSnap = max(r.trimSnap, k+1)
		r.mu.Unlock()
	}
}

func (r *replica) trim(seg uint64) error {
	err := r.c.Trim(r.ctx, seg)
	if err == nil || errors.Is(err, wor.ErrTrimmed) || errors.Is(err, wor.ErrNotAllocated) {
		return nil
	}
	r.log.Warn("smr: trim failed", "segment", seg, "err", err)
	return err
}

// recoverNow is the apply loop meeting a trimmed segment: it moves to the
// newest snapshot, retrying until it succeeds or the replica closes.
func (r *replica) recoverNow() {
	for attempt := 0; r.ctx.Err() == nil; attempt++ {
		err := r.recover(r.ctx)
		if err == nil {
			return
		}
		r.log.Warn("smr: catching up from a snapshot", "err", err)
		sleep(r.ctx, max(backoff(attempt), r.cfg.Heartbeat))
	}
}

// recover brings the cursor past trimmed log: it finds the first log
// segment not trimmed and, if the cursor is before it, scans the log from
// there for a snapshot pointer at or after it, loads that snapshot and
// continues after it.
func (r *replica) recover(ctx context.Context) error {
	for tries := 0; ; tries++ {
		err := r.recoverOnce(ctx)
		if !errors.Is(err, wor.ErrTrimmed) || tries >= 8 {
			return err
		}
	}
}

func (r *replica) recoverOnce(ctx context.Context) error {
	s0, st, err := firstLive(ctx, r.probeSeg)
	if err != nil {
		return err
	}
	r.mu.Lock()
	cur := r.cursor
	if r.trimLog < s0 {
		r.trimLog = s0
	}
	r.mu.Unlock()
	if cur.seg >= s0 || st == segUnallocated && s0 == 0 {
		return nil // nothing the cursor needs is trimmed (or the log is empty)
	}
	if st != segAllocated {
		return fmt.Errorf("smr: the log is trimmed up to segment %d, which is not allocated", r.segID(s0))
	}
	first := pos{s0, 0}
	cache := map[pos][]byte{}
	p := first
	w := uint64(8)
	for {
		st, m, err := r.fetchMeta(ctx, p.seg)
		if err != nil {
			return err
		}
		if st == segTrimmed {
			return fmt.Errorf("%w: segment %d while scanning for a snapshot", wor.ErrTrimmed, r.segID(p.seg))
		}
		if st == segUnallocated {
			return fmt.Errorf("smr: no usable snapshot pointer after the trimmed log (scanned to %v)", p)
		}
		if p.off >= m.size {
			p = pos{p.seg + 1, 0}
			continue
		}
		n := min(w, m.size-p.off)
		res := r.readRange(ctx, r.segID(p.seg), p.off, n)
		for i, x := range res {
			q := pos{p.seg, p.off + uint64(i)}
			if errors.Is(x.err, wor.ErrUnwritten) {
				return fmt.Errorf("smr: no usable snapshot pointer after the trimmed log (scanned to %v)", q)
			}
			if errors.Is(x.err, wor.ErrTrimmed) {
				r.forgetTrimmed(q.seg)
			}
			if x.err != nil {
				return x.err
			}
			cache[q] = x.v
			e, derr := decodeEntry(x.v)
			if derr != nil || e.kind != kindPointer || e.snap.at.less(first) || e.snap.at.less(cur) {
				continue
			}
			err := r.loadSnapshot(ctx, e.snap, cache)
			if err == nil {
				return nil
			}
			if !errors.Is(err, wor.ErrTrimmed) && !errors.Is(err, wor.ErrNotAllocated) {
				return err
			}
			// A newer snapshot superseded this one: keep scanning.
		}
		p.off += n
		w = min(2*w, maxReadWindow)
	}
}

// loadSnapshot reads snapshot ref, restores the state machine from it and
// moves the cursor after its position; cache holds log values read
// meanwhile (those after the snapshot are kept for the apply loop).
func (r *replica) loadSnapshot(ctx context.Context, ref snapRef, cache map[pos][]byte) error {
	md, err := r.c.Metadata(ctx, r.snapID(ref.k))
	if err != nil {
		return err
	}
	m, err := decodeSnapMeta(md)
	if err != nil {
		return err
	}
	if m.ref != ref {
		return fmt.Errorf("%w: snapshot segment %d holds snapshot %+v, the pointer names %+v", ErrMalformed, r.snapID(ref.k), m.ref, ref)
	}
	_, at, err := r.fetchMeta(ctx, ref.at.seg)
	if err != nil {
		return err
	}
	data := make([]byte, 0, m.size)
	for i := uint64(0); i < m.chunks; i += maxReadWindow {
		res := r.readRange(ctx, r.snapID(ref.k), i, min(maxReadWindow, m.chunks-i))
		for _, x := range res {
			if x.err != nil {
				return x.err
			}
			data = append(data, x.v...)
		}
	}
	if err := m.check(data); err != nil {
		return err
	}
	r.smMu.Lock()
	err = r.sm.Restore(ref.index, data)
	r.smMu.Unlock()
	if err != nil {
		return fmt.Errorf("smr: restoring snapshot %d: %w", ref.k, err)
	}
	r.index = ref.index
	r.asm = assembly{} // a snapshot is taken between commands
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cursor = nextPos(ref.at, at.size)
	r.applied = ref.index
	r.lastSnap, r.hasSnap = ref, true
	r.lastSnapSize = m.size
	r.cmdsSince, r.entriesSince, r.bytesSince, r.sinceAt = 0, 0, 0, time.Now()
	r.st.Restores++
	r.trimSnap = max(r.trimSnap, ref.k-min(ref.k, 8))
	for q := range r.known {
		if q.less(r.cursor) {
			delete(r.known, q)
		}
	}
	for q, v := range cache {
		if !q.less(r.cursor) {
			r.known[q] = v
		}
	}
	for q, b := range r.pending {
		if q.less(r.cursor) {
			delete(r.pending, q)
			for _, p := range b.props {
				p.done <- result{err: fmt.Errorf("%w: snapshot %d covers register %v before it was read here", ErrUnknown, ref.k, q)}
			}
		}
	}
	close(r.progress)
	r.progress = make(chan struct{})
	r.log.Info("smr: restored snapshot", "k", ref.k, "index", ref.index, "at", ref.at.String(), "bytes", len(data))
	return nil
}
