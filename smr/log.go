package smr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"strata/wor"
)

// The apply loop: it reads the log in order (log segments' metadata,
// then their registers), applies the entries to the state machine and
// resolves the outcome of the proposals this replica wrote.

func (r *replica) segID(s uint64) uint64  { return r.cfg.Log + s }
func (r *replica) snapID(k uint64) uint64 { return r.cfg.Log + MaxLogSegments + k }

// fetchMeta reads log segment s's metadata and caches it. A segment whose
// metadata does not decode counts as empty (size 0), the same for every
// replica.
func (r *replica) fetchMeta(ctx context.Context, s uint64) (segState, logMeta, error) {
	r.mu.Lock()
	m, ok := r.segs[s]
	r.mu.Unlock()
	if ok {
		return segAllocated, m, nil
	}
	return r.fetchMetaFresh(ctx, s)
}

// fetchMetaFresh is fetchMeta without the cache (which does not know of
// trims).
func (r *replica) fetchMetaFresh(ctx context.Context, s uint64) (segState, logMeta, error) {
	md, err := r.c.Metadata(ctx, r.segID(s))
	switch {
	case errors.Is(err, wor.ErrNotAllocated):
		return segUnallocated, logMeta{}, nil
	case errors.Is(err, wor.ErrTrimmed):
		r.forgetTrimmed(s)
		return segTrimmed, logMeta{}, nil
	case err != nil:
		return 0, logMeta{}, err
	}
	m, err := decodeLogMeta(md)
	if err != nil {
		r.log.Error("smr: log segment with bad metadata: treated as empty", "segment", r.segID(s), "err", err)
		m = logMeta{}
	}
	r.mu.Lock()
	r.noteSegLocked(s, m)
	r.mu.Unlock()
	return segAllocated, m, nil
}

func (r *replica) probeSeg(ctx context.Context, s uint64) (segState, error) {
	st, _, err := r.fetchMetaFresh(ctx, s)
	return st, err
}

// forgetTrimmed drops cached metadata of log segments up to s, which is
// trimmed (log segments are trimmed in order).
func (r *replica) forgetTrimmed(s uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for x := range r.segs {
		if x <= s {
			delete(r.segs, x)
		}
	}
}

func (r *replica) noteSegLocked(s uint64, m logMeta) {
	r.segs[s] = m
	r.maxEpoch = max(r.maxEpoch, m.epoch)
	if s >= r.lead.seg || r.lead.id == 0 {
		r.lead = leaderInfo{id: m.leader, epoch: m.epoch, addr: m.addr, seg: s}
	}
	if t := r.term; t != nil && m.epoch > t.epoch {
		// A newer leader's segment: our term is over, whatever its writer
		// and preparer are waiting for. While it lasts the apply loop
		// does not read past the term's next register, so a term that
		// missed every other sign (its captures failing with errors it
		// retries, its segment trimmed under it) would stop this replica
		// from following the log at all.
		r.stepDownLocked(t, fmt.Sprintf("a newer leader (epoch %d) allocated log segment %d", m.epoch, r.segID(s)))
		kick(r.wake)
	}
}

// Reading registers.

type readRes struct {
	v   []byte
	err error
}

// readRange reads n registers from (seg, off) in parallel.
func (r *replica) readRange(ctx context.Context, seg, off, n uint64) []readRes {
	out := make([]readRes, n)
	if n == 1 {
		out[0].v, out[0].err = r.c.Read(ctx, seg, off)
		return out
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i].v, out[i].err = r.c.Read(ctx, seg, off+i) })
	}
	wg.Wait()
	return out
}

// learn records a chosen value for the apply loop.
func (r *replica) learn(p pos, v []byte) {
	r.mu.Lock()
	if !p.less(r.cursor) {
		r.known[p] = v
		if r.hintAt.less(p) {
			r.hintAt = p
		}
	}
	r.mu.Unlock()
	kick(r.wake)
}

// mayReadLocked: the apply loop reads p itself unless a local write or
// fill is deciding it, or this replica's term is about to write it (a read
// would complete or race our own write).
func (r *replica) mayReadLocked(p pos) bool {
	if r.owned[p] {
		return false
	}
	if t := r.term; t != nil && !p.less(pos{t.first, 0}) && (!t.ready || !p.less(t.next)) {
		// Only the term's own segments are its to write: another
		// leader's (known from its metadata) is read like any other, so
		// a term that has not noticed its end yet cannot stop this
		// replica from following the log.
		m, ok := r.segs[p.seg]
		return ok && (m.leader != r.cfg.ID || m.epoch != t.epoch)
	}
	return true
}

func (r *replica) run() {
	defer r.wg.Done()
	defer func() {
		for _, c := range r.listening {
			c()
		}
	}()
	attempt := 0
	for r.ctx.Err() == nil {
		r.mu.Lock()
		p := r.cursor
		r.mu.Unlock()
		st, m, err := r.fetchMeta(r.ctx, p.seg)
		switch {
		case err != nil:
			r.pause(attempt, err)
			attempt++
			continue
		case st == segTrimmed:
			r.recoverNow()
			continue
		case st == segUnallocated:
			r.atTail(p)
			continue
		}
		if p.off >= m.size { // an empty (malformed) segment
			r.mu.Lock()
			if r.cursor == p {
				r.cursor = pos{p.seg + 1, 0}
			}
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		v, ok := r.known[p]
		if ok {
			delete(r.known, p)
			r.mu.Unlock()
			r.apply(p, v, m)
			attempt = 0
			continue
		}
		if !r.mayReadLocked(p) {
			r.mu.Unlock()
			r.waitWake(r.cfg.Heartbeat)
			continue
		}
		// Whether to read p now, and how many registers from it. A read
		// of a register the leader is still writing completes it, which
		// preempts the leader's write (it then settles the register by
		// reading it: correct, but a round trip or two lost), so near
		// the tail the loop reads only what it has reason to think
		// written and leaves the rest to SegListen.
		n, wait := r.readPlanLocked(p, m)
		r.mu.Unlock()
		if wait > 0 {
			r.waitWake(wait)
			continue
		}
		res := r.readRange(r.ctx, r.segID(p.seg), p.off, n)
		tail, all := false, true
		for i, x := range res {
			q := pos{p.seg, p.off + uint64(i)}
			all = all && x.err == nil
			switch {
			case x.err == nil:
				r.catchRun++
				r.learn(q, x.v)
			case errors.Is(x.err, wor.ErrUnwritten):
				if i == 0 {
					tail = true
				}
			case errors.Is(x.err, wor.ErrTrimmed):
				if i == 0 {
					r.forgetTrimmed(q.seg)
					r.recoverNow()
				}
			case i == 0:
				err = x.err
			}
			if x.err != nil {
				break
			}
		}
		switch {
		case tail:
			r.window, r.streak = 1, false
			r.lastCatch, r.catchRun = r.catchRun, 0
			r.atTail(p)
		case err != nil:
			r.window, r.streak = 1, false
			r.pause(attempt, err)
			attempt++
		default:
			// p was written; if its whole window was too, keep catching
			// up with a larger one; if the tail was inside it, the next
			// read is a poll of the tail, one register (a large window
			// there reads mostly unwritten registers, every poll).
			if all {
				r.window = min(2*r.window, maxReadWindow)
			} else {
				r.window = 1
				r.lastCatch, r.catchRun = r.catchRun, 0
			}
			r.streak = all
			attempt = 0
		}
	}
}

// readPlanLocked decides the apply loop's read at p (not known, ours to
// read), in segment meta m: n registers from p, or wait that long first.
//
//   - Catching up (the last read found values) or in a segment a newer
//     one follows (its writer has moved on): read a window at once.
//   - Values already known beyond p (SegListen or a probe reported later
//     registers): p is written too, or being written; give its report
//     time to arrive (twice SegListen's settling delay), then read it.
//   - Nothing known beyond p: p is probably the tail. Poll it every
//     pollInterval; a poll that finds it written catches up from there
//     in windows (a follower of a busy log learns this way, in batches
//     of parallel reads the stack bundles, rather than register by
//     register through SegListen, which costs a notification from every
//     server and a confirming read per register).
func (r *replica) readPlanLocked(p pos, m logMeta) (n uint64, wait time.Duration) {
	now := time.Now()
	maxN := m.size - p.off
	window := func() uint64 {
		n := uint64(1)
		for n < r.window && n < maxN && r.mayReadLocked(pos{p.seg, p.off + n}) && r.known[pos{p.seg, p.off + n}] == nil {
			n++
		}
		return n
	}
	if r.streak || p.seg < r.lead.seg {
		return window(), 0
	}
	if r.hintAt.seg == p.seg && p.less(r.hintAt) {
		if r.behindAt != p {
			r.behindAt, r.behindSince = p, now
		}
		if d := hintSettle - now.Sub(r.behindSince); d > 0 {
			return 0, d
		}
		r.streak = true // p's report was lost: read on until the tail
		return 1, 0
	}
	if r.polledAt == p {
		if d := r.pollInterval() - now.Sub(r.polledSince); d > 0 {
			return 0, d
		}
	}
	r.polledAt, r.polledSince = p, now
	// As many registers as the last catch-up found: the log grows at
	// about the same rate between polls, so this reads what was written
	// since in one round trip, and little beyond the tail.
	n = 1
	for n < min(r.lastCatch, maxReadWindow) && n < maxN && r.mayReadLocked(pos{p.seg, p.off + n}) && r.known[pos{p.seg, p.off + n}] == nil {
		n++
	}
	return n, 0
}

// pollInterval is how often a follower at the tail reads it.
func (r *replica) pollInterval() time.Duration { return max(r.cfg.Heartbeat/4, time.Millisecond) }

// hintSettle is how long the apply loop waits for the report of a
// register when later ones were reported: twice the wor client's
// SegListen settling delay.
const hintSettle = 40 * time.Millisecond

func (r *replica) pause(attempt int, err error) {
	if r.ctx.Err() != nil {
		return
	}
	r.log.Debug("smr: reading the log", "err", err)
	sleep(r.ctx, max(backoff(attempt), r.cfg.Heartbeat/2))
}

func (r *replica) waitWake(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.wake:
	case <-t.C:
	case <-r.ctx.Done():
	}
}

// atTail is the apply loop at the log's tail (p unwritten or its segment
// unallocated): listen for writes, and campaign if the tail stays still
// for the election timeout.
func (r *replica) atTail(p pos) {
	r.readyOnce.Do(func() { close(r.ready) })
	now := time.Now()
	if p != r.tailAt {
		r.tailAt, r.tailSince = p, now
		r.tailWait = r.cfg.ElectionTimeout + rand.N(r.cfg.ElectionTimeout+1)
	}
	r.mu.Lock()
	ro := r.role
	// A restarted leader finds itself named: its old incarnation is gone.
	myOld := !r.everLed && r.lead.id == r.cfg.ID
	startCampaign := ro == follower && r.campaigning == nil && (now.Sub(r.tailSince) >= r.tailWait || myOld)
	r.mu.Unlock()
	// SegListen is a wake-up hint for a quiet log (no leader, or one that
	// has just died): a follower of a busy log learns by polling.
	quiet := now.Sub(r.tailSince) >= r.cfg.Heartbeat
	r.listen(p, ro, quiet)
	if startCampaign {
		r.log.Info("smr: the log's tail is still, campaigning", "tail", p.String(), "still_for", now.Sub(r.tailSince).Round(time.Millisecond), "restarted_leader", myOld)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.campaignAuto(r.ctx); err != nil && r.ctx.Err() == nil {
				r.log.Info("smr: campaign failed", "err", err)
			}
		}()
		r.tailSince = now
	}
	wait := r.pollInterval()
	if ro != follower {
		wait = r.cfg.ElectionTimeout // our own writes wake us
	}
	r.waitWake(wait)
}

// listen keeps a SegListen on the cursor's segment while the log is
// quiet (a follower's hint of the next entry; the apply loop still reads
// anything not reported), and none otherwise.
func (r *replica) listen(p pos, ro role, quiet bool) {
	want := ro != leading && quiet
	for s, c := range r.listening {
		if s != p.seg || !want {
			c()
			delete(r.listening, s)
		}
	}
	if !want || r.listening[p.seg] != nil {
		return
	}
	r.mu.Lock()
	_, ok := r.segs[p.seg]
	r.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	ch, err := r.c.SegListen(ctx, r.segID(p.seg))
	if err != nil {
		cancel()
		return
	}
	r.listening[p.seg] = cancel
	seg := p.seg
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for w := range ch {
			r.learn(pos{seg, w.Off}, w.Value)
		}
	}()
}

// apply applies the entry v chosen at p (in segment meta m).
func (r *replica) apply(p pos, v []byte, m logMeta) {
	e, err := decodeEntry(v)
	if err != nil {
		// Every replica reads the same bytes, so skipping them keeps the
		// replicas identical.
		r.log.Error("smr: malformed log entry skipped", "at", p.String(), "err", err)
		e = entry{kind: kindJunk}
	}
	var results [][]byte
	if e.kind == kindBatch {
		results = make([][]byte, len(e.cmds))
		r.smMu.Lock()
		for i, cmd := range e.cmds {
			r.index++
			results[i] = r.sm.Apply(r.index, cmd)
		}
		r.smMu.Unlock()
	}
	applied := len(e.cmds)
	cmd, ok, dropped := r.asm.add(e)
	if dropped {
		r.mu.Lock()
		r.st.DroppedParts++
		r.mu.Unlock()
	}
	if ok {
		r.smMu.Lock()
		r.index++
		results = [][]byte{r.sm.Apply(r.index, cmd)}
		r.smMu.Unlock()
		applied = 1
	}
	r.mu.Lock()
	r.cursor = nextPos(p, m.size)
	r.applied = r.index
	r.st.Applied++
	if r.cursor.seg != p.seg {
		// Entering a new segment: forget the metadata of old ones (a
		// campaign looks at most one segment back).
		for s := range r.segs {
			if s+2 < r.cursor.seg {
				delete(r.segs, s)
			}
		}
	}
	r.cmdsSince += uint64(applied)
	r.entriesSince++
	r.bytesSince += uint64(len(v))
	if e.kind == kindPointer && (!r.hasSnap || e.snap.k >= r.lastSnap.k) {
		r.lastSnap, r.hasSnap = e.snap, true
		r.cmdsSince, r.entriesSince, r.bytesSince, r.sinceAt = 0, 0, 0, time.Now()
	}
	if b := r.pending[p]; b != nil {
		delete(r.pending, p)
		r.resolveLocked(b, v, results)
	}
	close(r.progress)
	r.progress = make(chan struct{})
	t := r.term
	var pol snapPolicy
	due := false
	if t != nil && r.role == leading && !r.snapBusy && !r.asm.open {
		// Not while a command's parts are being joined: a snapshot is
		// taken between commands (see assembly).
		pol = snapPolicy{every: r.cfg.SnapshotEvery, cmdsSince: r.cmdsSince, entriesSince: r.entriesSince, bytesSince: r.bytesSince, lastSnapSize: r.lastSnapSize,
			lastSnapSlots: chunksFor(r.lastSnapSize, uint64(r.cfg.MaxEntry))}
		due = pol.due()
	}
	// The pace of the snapshot's writes: the configured rate, or twice
	// the rate the log grew at since the last snapshot if that is more
	// (so that a heavy writer's snapshots keep up with its log).
	rate := float64(r.cfg.SnapshotRate)
	if due {
		r.snapBusy = true
		if el := time.Since(r.sinceAt).Seconds(); el > 0 && rate > 0 {
			rate = max(rate, 2*float64(r.bytesSince)/el)
		}
	}
	k := uint64(0)
	if r.hasSnap {
		k = r.lastSnap.k + 1
	}
	r.mu.Unlock()
	if due {
		// Only the capture runs here, on the apply loop; a Capturer's
		// encoding runs in the snapshot writer, beside later commands.
		var encode func() ([]byte, error)
		r.smMu.Lock()
		if c, ok := r.sm.(Capturer); ok {
			encode = c.CaptureSnapshot()
		} else {
			data, err := r.sm.Snapshot()
			encode = func() ([]byte, error) { return data, err }
		}
		r.smMu.Unlock()
		r.wg.Add(1)
		go r.storeSnapshot(t, snapRef{k: k, index: r.index, at: p}, encode, rate)
	}
}

// resolveLocked reports the outcome of a batch this replica wrote at a
// register whose chosen value is v: its results if v is the batch, else
// ErrNotLeader (the batch lost the register to a junk fill, so it was not
// applied and never will be: each batch is written to one register only).
//
// The last part of a command written as parts resolves its proposal: with
// the command's result if the command was applied, else ErrNotLeader (a
// junk fill took an earlier part, so no replica applied it).
func (r *replica) resolveLocked(b *batch, v []byte, results [][]byte) {
	if bytes.Equal(v, b.value) {
		for i, p := range b.props {
			var out []byte
			switch {
			case p.last && len(results) == 0:
				p.done <- result{err: r.notLeaderLocked()}
				continue
			case (p.entry == nil || p.last) && i < len(results):
				out = results[i]
			}
			p.done <- result{val: out}
		}
		return
	}
	err := r.notLeaderLocked()
	for _, p := range b.props {
		p.done <- result{err: err}
	}
}

func (r *replica) notLeaderLocked() *NotLeaderError {
	l := r.lead
	if l.id == r.cfg.ID && r.role != leading {
		return &NotLeaderError{Epoch: l.epoch}
	}
	return &NotLeaderError{LeaderID: l.id, LeaderAddr: l.addr, Epoch: l.epoch}
}
