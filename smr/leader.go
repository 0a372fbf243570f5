package smr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"strata/wor"
)

// The leader's side: proposals, the writer that packs them into entries
// and writes them with one round trip each (or one SegWrite for several),
// settling of writes that failed, stepping down, and the preparer that
// captures ahead and allocates the next segment.

func (r *replica) propose(ctx context.Context, cmd []byte) ([]byte, error) {
	if len(cmd) > r.cfg.MaxCommand {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(cmd), r.cfg.MaxCommand)
	}
	parts := len(cmd) > maxCommand(r.cfg.MaxEntry)
	var p *proposal
	if !parts {
		p = newProposal(bytes.Clone(cmd), nil)
		if p.cmd == nil {
			p.cmd = []byte{}
		}
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	t := r.term
	if t == nil {
		err := r.notLeaderLocked()
		r.mu.Unlock()
		return nil, err
	}
	if parts {
		// One queue entry per part, appended together so that they are
		// written to consecutive registers; the last carries the result.
		r.nonce++
		ps := encodeParts(r.cfg.ID, r.nonce0+r.nonce, cmd, r.cfg.MaxEntry)
		for _, e := range ps[:len(ps)-1] {
			t.queue = append(t.queue, newProposal(nil, e))
		}
		p = newProposal(nil, ps[len(ps)-1])
		p.last = true
		r.st.PartCommands++
	}
	t.queue = append(t.queue, p)
	r.mu.Unlock()
	kick(t.kick)
	select {
	case res := <-p.done:
		return res.val, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// nextBatchLocked takes the next entry off the term's queue: an internal
// entry alone, or as many commands as fit in one batch.
func (r *replica) nextBatchLocked(t *term) *batch {
	if t.queue[0].entry != nil {
		p := t.queue[0]
		t.queue = t.queue[1:]
		return &batch{props: []*proposal{p}, value: p.entry}
	}
	var sizes []int
	for _, p := range t.queue {
		if p.entry != nil {
			break
		}
		sizes = append(sizes, len(p.cmd))
	}
	n := packBatch(sizes, r.cfg.MaxEntry)
	props := t.queue[:n:n]
	t.queue = t.queue[n:]
	cmds := make([][]byte, n)
	for i, p := range props {
		cmds[i] = p.cmd
	}
	r.nonce++
	return &batch{props: props, value: encodeBatch(r.cfg.ID, r.nonce0+r.nonce, cmds)}
}

// writer is the term's writer: it packs queued proposals into entries and
// writes each into the next captured register with one round trip,
// keeping up to Config.Pipeline write requests in flight. Proposals that
// arrive while that many are in flight are batched: into one register as
// far as MaxEntry allows, and when more than one register's worth is
// waiting, several consecutive registers go in one SegWrite (one message,
// one group commit at the servers). One proposal arriving at an idle
// leader is written at once. When idle for a heartbeat it writes a no-op,
// so that followers see the leader alive.
func (r *replica) writer(t *term) {
	defer r.wg.Done()
	timer := time.NewTimer(r.cfg.Heartbeat)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if r.term != t {
			r.mu.Unlock()
			return
		}
		idle := time.Since(t.lastWrite)
		if len(t.queue) == 0 && t.inflight == 0 && idle >= r.cfg.Heartbeat {
			t.queue = append(t.queue, newProposal(nil, encodeNoop(r.cfg.ID, t.epoch)))
		}
		c, captured := t.captureFor(t.next)
		if len(t.queue) == 0 || t.inflight >= r.cfg.Pipeline || !captured {
			r.mu.Unlock()
			if !captured {
				kick(t.prep)
			}
			timer.Reset(max(r.cfg.Heartbeat-idle, time.Millisecond))
			select {
			case <-t.kick:
			case <-timer.C:
			case <-t.ctx.Done():
				return
			}
			continue
		}
		// One register, or a run of them while more is queued (within
		// the capture, so one CaptureID serves the SegWrite).
		at := t.next
		var values [][]byte
		bytesOut := 0
		for len(t.queue) > 0 && t.next.seg == at.seg && t.next.off < c.end && len(values) < wor.MaxSegBatch && bytesOut < runBytes {
			b := r.nextBatchLocked(t)
			r.owned[t.next] = true
			r.pending[t.next] = b
			values = append(values, b.value)
			bytesOut += len(b.value)
			r.st.Entries++
			if b.props[0].entry == nil {
				r.st.Commands += uint64(len(b.props))
			}
			t.next = nextPos(t.next, r.segs[at.seg].size)
		}
		t.inflight++
		t.lastWrite = time.Now()
		if len(values) > 1 {
			r.st.SegWrites++
		}
		r.mu.Unlock()
		kick(t.prep)
		r.wg.Add(1)
		if len(values) == 1 {
			go r.write(t, at, values[0], c.cid)
		} else {
			go r.writeRun(t, at, values, c.cid)
		}
	}
}

// write writes one entry (one request in flight).
func (r *replica) write(t *term, at pos, value []byte, cid wor.CaptureID) {
	defer r.wg.Done()
	defer r.requestDone(t)
	err := r.c.Write(t.ctx, r.segID(at.seg), at.off, value, cid)
	r.settle(t, at, value, err)
}

// writeRun writes entries to consecutive registers from at with one
// SegWrite (one request in flight); if it fails, each register is settled
// on its own.
func (r *replica) writeRun(t *term, at pos, values [][]byte, cid wor.CaptureID) {
	defer r.wg.Done()
	defer r.requestDone(t)
	held, err := r.c.SegWrite(t.ctx, r.segID(at.seg), at.off, values, cid)
	if err == nil && len(held) == len(values) {
		for i, v := range held {
			r.written(t, pos{at.seg, at.off + uint64(i)}, v, bytes.Equal(v, values[i]))
		}
		return
	}
	if err == nil {
		err = fmt.Errorf("smr: SegWrite of %d values returned %d", len(values), len(held))
	}
	var wg sync.WaitGroup
	for i, v := range values {
		wg.Go(func() { r.settle(t, pos{at.seg, at.off + uint64(i)}, v, err) })
	}
	wg.Wait()
}

func (r *replica) requestDone(t *term) {
	r.mu.Lock()
	t.inflight--
	r.mu.Unlock()
	kick(t.kick)
}

// settle finishes the write of value at register at, which returned err.
// A write that failed for any reason other than a chosen value has an
// unknown outcome: settle reads the register and, if it is still
// unwritten, captures and writes again, until the register holds a value
// (ours: done; another, which only a junk fill writes: this replica was
// deposed) or the term ends (then the apply loop reads the register).
func (r *replica) settle(t *term, at pos, value []byte, err error) {
	seg := r.segID(at.seg)
	if err != nil {
		var we *wor.WrittenError
		if !errors.As(err, &we) {
			r.mu.Lock()
			r.st.Settled++
			r.mu.Unlock()
			r.log.Debug("smr: settling a write", "at", at.String(), "err", err)
		}
	}
	for attempt := 0; ; attempt++ {
		var we *wor.WrittenError
		switch {
		case err == nil:
			r.written(t, at, value, true)
			return
		case errors.As(err, &we):
			r.written(t, at, we.Value, bytes.Equal(we.Value, value))
			return
		case t.ctx.Err() != nil:
			r.release(at)
			return
		}
		if errors.Is(err, wor.ErrStorage) && attempt%50 == 0 {
			// Too large for the servers (MaxEntry above what they store)
			// or their storage is full: retried, but nothing moves.
			r.log.Error("smr: the WOR servers cannot store a log entry", "at", at.String(), "bytes", len(value), "err", err)
		}
		if attempt > 0 && !sleep(t.ctx, backoff(attempt)) {
			r.release(at)
			return
		}
		v, rerr := r.c.Read(t.ctx, seg, at.off)
		switch {
		case rerr == nil:
			r.written(t, at, v, bytes.Equal(v, value))
			return
		case errors.Is(rerr, wor.ErrUnwritten):
			// Before capturing again (which would preempt a new leader's
			// junk fill, and so duel with it), make sure no newer leader
			// exists.
			if r.superseded(t) {
				r.release(at)
				r.stepDown(t, "a newer leader allocated a log segment after ours")
				return
			}
			var c2 wor.CaptureID
			if c2, err = r.c.Capture(t.ctx, seg, at.off); err == nil {
				err = r.c.Write(t.ctx, seg, at.off, value, c2)
			}
		case errors.Is(rerr, wor.ErrTrimmed):
			r.release(at)
			r.stepDown(t, "its segment was trimmed")
			return
		default:
			err = rerr
		}
	}
}

// superseded reports whether a log segment after the last one term t
// allocated exists and is not t's: a newer leader's.
func (r *replica) superseded(t *term) bool {
	r.mu.Lock()
	newest := t.first
	for s := range t.allocated {
		newest = max(newest, s)
	}
	r.mu.Unlock()
	st, m, err := r.fetchMetaFresh(t.ctx, newest+1)
	return err == nil && st == segAllocated && (m.leader != r.cfg.ID || m.epoch != t.epoch)
}

// written records that register at holds v (mine: our entry).
func (r *replica) written(t *term, at pos, v []byte, mine bool) {
	r.mu.Lock()
	if !at.less(r.cursor) {
		r.known[at] = v
	}
	delete(r.owned, at)
	if !mine {
		r.stepDownLocked(t, "another value was chosen in its segment")
	}
	r.mu.Unlock()
	kick(r.wake)
}

// release gives up deciding register at (the term ended): the apply loop
// reads it like any other.
func (r *replica) release(at pos) {
	r.mu.Lock()
	delete(r.owned, at)
	r.mu.Unlock()
	kick(r.wake)
}

func (r *replica) stepDown(t *term, why string) {
	r.mu.Lock()
	r.stepDownLocked(t, why)
	r.mu.Unlock()
	kick(r.wake)
}

// stepDownLocked ends term t: queued proposals fail with ErrNotLeader
// (never written); written ones are resolved by the apply loop when it
// reaches their registers.
func (r *replica) stepDownLocked(t *term, why string) {
	if r.term != t {
		return
	}
	r.term = nil
	r.role = follower
	t.cancel()
	err := r.notLeaderLocked()
	for _, p := range t.queue {
		p.done <- result{err: err}
	}
	t.queue = nil
	r.log.Info("smr: no longer leading", "epoch", t.epoch, "why", why)
}

// prepare keeps the term's writer supplied with captured registers: it
// captures the segment ahead of need (SegCapture, at most MaxSegBatch at
// a time) and allocates and captures the next segment before the current
// one is full. Finding the next segment allocated by someone else, or a
// capture preempted, means another replica took over: the term ends.
func (r *replica) prepare(t *term) {
	defer r.wg.Done()
	attempt := 0
	for {
		select {
		case <-t.prep:
		case <-t.ctx.Done():
			return
		}
		for t.ctx.Err() == nil {
			r.mu.Lock()
			if r.term != t {
				r.mu.Unlock()
				return
			}
			act, seg, a, b := r.prepNeedLocked(t)
			r.mu.Unlock()
			if act == prepNone {
				break
			}
			var err error
			switch act {
			case prepAlloc:
				m := logMeta{leader: r.cfg.ID, epoch: t.epoch, size: uint64(r.cfg.SegmentSize), addr: r.cfg.Addr}
				err = r.c.Alloc(t.ctx, r.segID(seg), encodeLogMeta(m))
				var ae *wor.AllocatedError
				if errors.As(err, &ae) {
					if om, derr := decodeLogMeta(ae.Metadata); derr == nil {
						r.mu.Lock()
						r.noteSegLocked(seg, om)
						r.mu.Unlock()
					}
					r.stepDown(t, "the next log segment was allocated by another replica")
					return
				}
				if err == nil {
					r.mu.Lock()
					r.noteSegLocked(seg, m)
					t.allocated[seg] = true
					r.mu.Unlock()
				}
			case prepCapture:
				var cid wor.CaptureID
				cid, err = r.c.SegCapture(t.ctx, r.segID(seg), a, b)
				if errors.Is(err, wor.ErrPreempted) {
					r.stepDown(t, "its segment was captured by another replica")
					return
				}
				if err == nil {
					r.mu.Lock()
					t.caps[seg] = append(t.caps[seg], segCapture{a, b, cid})
					t.capEnd[seg] = b
					for s := range t.caps {
						if s+1 < t.next.seg {
							delete(t.caps, s)
						}
					}
					r.mu.Unlock()
				}
			}
			if errors.Is(err, wor.ErrTrimmed) {
				r.stepDown(t, "its segment was trimmed")
				return
			}
			if err != nil {
				// Failing for another reason (no majority, a timeout): the
				// term goes on unless a newer leader has taken over.
				if attempt%4 == 3 && r.superseded(t) {
					r.stepDown(t, "a newer leader allocated a log segment after ours")
					return
				}
				if !sleep(t.ctx, backoff(attempt)) {
					return
				}
				attempt++
				continue
			}
			attempt = 0
			kick(t.kick)
		}
	}
}

const (
	prepNone = iota
	prepAlloc
	prepCapture
)

// prepNeedLocked decides the preparer's next step: allocate the segment
// the writer is in or nearly at, or capture its next registers.
func (r *replica) prepNeedLocked(t *term) (act int, seg, a, b uint64) {
	cur := t.next.seg
	targets := []uint64{cur}
	if m, ok := r.segs[cur]; ok && t.allocated[cur] {
		left := m.size - min(m.size, t.next.off)
		if left <= max(m.size/4, uint64(2*r.cfg.Pipeline)) {
			targets = append(targets, cur+1)
		}
	}
	for _, s := range targets {
		if !t.allocated[s] {
			if s >= MaxLogSegments {
				return prepNone, 0, 0, 0
			}
			return prepAlloc, s, 0, 0
		}
		size := r.segs[s].size
		end := t.capEnd[s]
		from := uint64(0)
		if s == cur {
			from = t.next.off
		}
		if end < size && end < from+min(size, wor.MaxSegBatch)/2+uint64(r.cfg.Pipeline) {
			return prepCapture, s, end, min(size, end+wor.MaxSegBatch)
		}
	}
	return prepNone, 0, 0, 0
}
