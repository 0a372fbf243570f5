package smr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"strata/wor"
)

// maxAddr bounds Config.Addr (it travels in every log segment's metadata).
const maxAddr = 1024

// Tuning of the driver (not of the protocol).
const (
	maxReadWindow = 16                     // registers read in parallel when catching up
	snapWriteSize = 256 << 10              // bytes of snapshot chunks per SegWrite
	runBytes      = 64 << 10               // bytes of log entries per SegWrite
	fillAttempts  = 10                     // tries of one junk-fill batch before a campaign gives up
	minBackoff    = 2 * time.Millisecond   // first pause after a failed WOR call
	maxBackoff    = 200 * time.Millisecond // longest pause
)

type role int

const (
	follower role = iota
	candidate
	leading
)

func (ro role) String() string {
	return [...]string{"follower", "candidate", "leader"}[ro]
}

type result struct {
	val []byte
	err error
}

// proposal is a command waiting to be written, or an internal entry (a
// heartbeat no-op, a snapshot pointer) that is written alone.
type proposal struct {
	cmd   []byte
	entry []byte
	done  chan result // capacity 1: the result is never blocked on
}

func newProposal(cmd, entry []byte) *proposal {
	return &proposal{cmd: cmd, entry: entry, done: make(chan result, 1)}
}

// batch is what one log register carries for this replica: the proposals
// packed into it and the encoded value.
type batch struct {
	props []*proposal
	value []byte
}

// segCapture is a capture of registers [start, end) of a log segment.
type segCapture struct {
	start, end uint64
	cid        wor.CaptureID
}

// term is a leadership term of this replica, from its campaign on: it
// writes from (first, 0) on. All fields but ctx, cancel, epoch, first,
// kick and prep are guarded by replica.mu.
type term struct {
	ctx    context.Context
	cancel context.CancelFunc
	epoch  uint64
	first  uint64        // the log segment the campaign allocated
	kick   chan struct{} // wakes the writer (capacity 1)
	prep   chan struct{} // wakes the preparer (capacity 1)

	ready     bool // the junk fill is done and the term writes
	next      pos  // next register to write
	caps      map[uint64][]segCapture
	capEnd    map[uint64]uint64 // per segment: registers [0, capEnd) captured
	allocated map[uint64]bool   // log segments this term allocated
	queue     []*proposal
	inflight  int // write requests (Write or SegWrite) in flight
	lastWrite time.Time
}

func (t *term) captureFor(p pos) (segCapture, bool) {
	for _, c := range t.caps[p.seg] {
		if c.start <= p.off && p.off < c.end {
			return c, true
		}
	}
	return segCapture{}, false
}

// leaderInfo is the leader the newest known log segment names.
// campaignRun is a campaign in progress; others wait for its outcome.
type campaignRun struct {
	done chan struct{}
	err  error // set before done is closed
}

type leaderInfo struct {
	id, epoch uint64
	addr      string
	seg       uint64
}

// replica runs one member of a group. Goroutines: the apply loop (run),
// and while leading the writer (lead), the preparer (prepare) and one per
// log write in flight (write); a snapshot writer (storeSnapshot), a
// campaign started by the apply loop, and segment listeners. All are
// counted in wg and stop when ctx ends.
type replica struct {
	cfg    Config
	c      *wor.Client
	sm     StateMachine
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{} // wakes the apply loop (capacity 1)
	ready  chan struct{} // closed when the apply loop first reaches the log's tail
	nonce0 uint64        // random start of this incarnation's batch nonces

	// smMu is held while the state machine runs (Apply, Snapshot,
	// Restore) and while a Read's fn runs, so they never overlap.
	smMu sync.Mutex

	// probeMu guards probeNext and probing (shared tail probes of
	// linearizable reads; see sharedProbe).
	probeMu   sync.Mutex
	probeNext *probeBatch
	probing   bool

	// Owned by the apply loop goroutine (and by start before it runs).
	index       uint64 // last applied command index
	window      uint64 // registers to read at once when catching up
	streak      bool   // the last read found values: catching up
	behindAt    pos    // a register waited for while later ones are known
	behindSince time.Time
	polledAt    pos // the register last polled at the tail, and when
	polledSince time.Time
	readyOnce   sync.Once
	listening   map[uint64]context.CancelFunc
	tailAt      pos // silence tracking: where the tail was last seen
	tailSince   time.Time
	tailWait    time.Duration
	// stoodDownFor is the segment an automatic campaign last stood down
	// for (owned by the campaign goroutine; one runs at a time).
	stoodDownFor uint64

	mu sync.Mutex
	// Guarded by mu.
	closed      bool
	cursor      pos    // next log register the apply loop applies
	applied     uint64 // published copy of index
	progress    chan struct{}
	known       map[pos][]byte // chosen values learned ahead of the cursor
	hintAt      pos            // the furthest register known written
	owned       map[pos]bool   // registers a local write or fill is deciding
	segs        map[uint64]logMeta
	lead        leaderInfo
	maxEpoch    uint64
	role        role
	term        *term
	everLed     bool           // this incarnation allocated a log segment (see atTail)
	campaigning *campaignRun   // the campaign running, if any
	pending     map[pos]*batch // written (or being written) entries awaiting the apply loop
	nonce       uint64
	// snapshots and trim
	lastSnap     snapRef
	hasSnap      bool
	snapBusy     bool
	cmdsSince    uint64
	bytesSince   uint64
	lastSnapSize uint64
	trimLog      uint64 // lowest log segment perhaps not trimmed
	trimSnap     uint64 // lowest snapshot perhaps not trimmed
	st           Stats
}

func (r *replica) stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

func start(ctx context.Context, cfg Config, sm StateMachine) (*replica, error) {
	r := &replica{
		cfg: cfg, c: cfg.Client, sm: sm,
		log:       cfg.Logger.With("replica", cfg.ID),
		wake:      make(chan struct{}, 1),
		ready:     make(chan struct{}),
		nonce0:    rand.Uint64() >> 1,
		window:    1,
		listening: map[uint64]context.CancelFunc{},
		progress:  make(chan struct{}),
		known:     map[pos][]byte{},
		owned:     map[pos]bool{},
		segs:      map[uint64]logMeta{},
		pending:   map[pos]*batch{},
	}
	r.tailAt, r.tailSince = pos{^uint64(0), 0}, time.Now()
	r.ctx, r.cancel = context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, r.cancel) // Start's ctx bounds the catch-up
	for attempt := 0; ; attempt++ {
		err := r.recover(r.ctx)
		if err == nil {
			break
		}
		r.log.Debug("smr: catching up from the snapshot", "err", err)
		if !sleep(r.ctx, backoff(attempt)) {
			stop()
			r.cancel()
			return nil, fmt.Errorf("smr: catching up from the snapshot: %w (last error: %v)", ctxErr(ctx, ErrClosed), err)
		}
	}
	r.wg.Add(1)
	go r.run()
	select {
	case <-r.ready:
	case <-r.ctx.Done():
		stop()
		r.close()
		return nil, fmt.Errorf("smr: catching up with the log: %w", ctxErr(ctx, ErrClosed))
	}
	if !stop() {
		r.close()
		return nil, ctxErr(ctx, ErrClosed)
	}
	return r, nil
}

// ctxErr prefers ctx's error to err once ctx has ended.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sleep pauses for d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func backoff(attempt int) time.Duration {
	d := minBackoff << min(attempt, 10)
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// ---- segments ----

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
}

// ---- reading ----

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
		return false
	}
	return true
}

// ---- the apply loop ----

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
			r.atTail(p)
		case err != nil:
			r.window, r.streak = 1, false
			r.pause(attempt, err)
			attempt++
		default:
			// p was written; if its whole window was too, keep catching
			// up with a larger one.
			if all {
				r.window = min(2*r.window, maxReadWindow)
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
	return 1, 0
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
	r.cmdsSince += uint64(len(e.cmds))
	r.bytesSince += uint64(len(v))
	if e.kind == kindPointer && (!r.hasSnap || e.snap.k >= r.lastSnap.k) {
		r.lastSnap, r.hasSnap = e.snap, true
		r.cmdsSince, r.bytesSince = 0, 0
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
	if t != nil && r.role == leading && !r.snapBusy {
		pol = snapPolicy{every: r.cfg.SnapshotEvery, cmdsSince: r.cmdsSince, bytesSince: r.bytesSince, lastSnapSize: r.lastSnapSize}
		if r.hasSnap {
			pol.segsSince = p.seg - min(p.seg, r.lastSnap.at.seg)
		} else {
			pol.segsSince = p.seg
		}
		due = pol.due()
	}
	if due {
		r.snapBusy = true
	}
	k := uint64(0)
	if r.hasSnap {
		k = r.lastSnap.k + 1
	}
	r.mu.Unlock()
	if due {
		r.smMu.Lock()
		data, err := r.sm.Snapshot()
		r.smMu.Unlock()
		if err != nil {
			r.log.Error("smr: state machine snapshot failed", "err", err)
			r.mu.Lock()
			r.snapBusy = false
			r.mu.Unlock()
			return
		}
		r.wg.Add(1)
		go r.storeSnapshot(t, snapRef{k: k, index: r.index, at: p}, data)
	}
}

// resolveLocked reports the outcome of a batch this replica wrote at a
// register whose chosen value is v: its results if v is the batch, else
// ErrNotLeader (the batch lost the register to a junk fill, so it was not
// applied and never will be: each batch is written to one register only).
func (r *replica) resolveLocked(b *batch, v []byte, results [][]byte) {
	if bytes.Equal(v, b.value) {
		for i, p := range b.props {
			var out []byte
			if p.entry == nil && i < len(results) {
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

// ---- proposing ----

func (r *replica) propose(ctx context.Context, cmd []byte) ([]byte, error) {
	if len(cmd) > maxCommand(r.cfg.MaxEntry) {
		return nil, fmt.Errorf("%w: %d bytes, at most %d with MaxEntry %d", ErrTooLarge, len(cmd), maxCommand(r.cfg.MaxEntry), r.cfg.MaxEntry)
	}
	p := newProposal(bytes.Clone(cmd), nil)
	if p.cmd == nil {
		p.cmd = []byte{}
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
			if err != nil {
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

// ---- campaigning ----

func (r *replica) campaign(ctx context.Context) error { return r.campaignMode(ctx, false) }

// campaignAuto is the campaign a silent log starts: unlike Campaign, it
// stands down once for a newer leader that has allocated a segment but
// not yet written where this replica reads (it is taking over right now).
func (r *replica) campaignAuto(ctx context.Context) error { return r.campaignMode(ctx, true) }

func (r *replica) campaignMode(ctx context.Context, auto bool) error {
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return ErrClosed
	case r.role == leading:
		r.mu.Unlock()
		return nil
	}
	run := r.campaigning
	if run == nil {
		// The campaign runs on the replica's context: a caller that stops
		// waiting does not stop it half-way.
		run = &campaignRun{done: make(chan struct{})}
		r.campaigning = run
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			err := r.runCampaign(r.ctx, auto)
			r.mu.Lock()
			run.err = err
			r.campaigning = nil
			close(run.done)
			r.mu.Unlock()
		}()
	}
	r.mu.Unlock()
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runCampaign is one campaign: allocate the next log segment, junk-fill
// the log before it, start leading.
func (r *replica) runCampaign(ctx context.Context, auto bool) error {
	r.mu.Lock()
	cur := r.cursor
	from := max(cur.seg, r.lead.seg)
	tailEpoch := uint64(0)
	if m, ok := r.segs[cur.seg]; ok {
		tailEpoch = m.epoch
	} else if m, ok := r.segs[cur.seg-min(cur.seg, 1)]; ok {
		tailEpoch = m.epoch
	}
	r.mu.Unlock()

	// 1. The last allocated log segment.
	last, lastMeta, any, err := r.lastAllocated(ctx, cur.seg, from)
	if err != nil {
		return err
	}
	if auto && any && lastMeta.epoch > tailEpoch && last != r.stoodDownFor {
		// A newer leader allocated a segment after the one we read in:
		// it is filling the log right now. Give it an election timeout.
		r.stoodDownFor = last
		return fmt.Errorf("%w: leader %d (epoch %d) is taking over in segment %d", ErrNotLeader, lastMeta.leader, lastMeta.epoch, r.segID(last))
	}
	newSeg := uint64(0)
	if any {
		newSeg = last + 1
	}
	if newSeg >= MaxLogSegments {
		return errors.New("smr: the group's log segments are used up")
	}
	// 2. Alloc arbitrates: one candidate wins the segment.
	r.mu.Lock()
	epoch := max(r.maxEpoch, lastMeta.epoch) + 1
	r.mu.Unlock()
	meta := logMeta{leader: r.cfg.ID, epoch: epoch, size: uint64(r.cfg.SegmentSize), addr: r.cfg.Addr}
	err = r.c.Alloc(ctx, r.segID(newSeg), encodeLogMeta(meta))
	var ae *wor.AllocatedError
	if errors.As(err, &ae) {
		om, derr := decodeLogMeta(ae.Metadata)
		r.mu.Lock()
		defer r.mu.Unlock()
		if derr == nil {
			r.noteSegLocked(newSeg, om)
		}
		if derr == nil && allocLost(lastMeta.epoch, om) {
			return r.notLeaderLocked()
		}
		return fmt.Errorf("%w: leader %d allocated segment %d itself, so it is alive", ErrNotLeader, om.leader, r.segID(newSeg))
	}
	if err != nil {
		return fmt.Errorf("smr: campaign: allocating segment %d: %w", r.segID(newSeg), err)
	}
	tctx, tcancel := context.WithCancel(r.ctx)
	t := &term{ctx: tctx, cancel: tcancel, epoch: epoch, first: newSeg, next: pos{newSeg, 0},
		kick: make(chan struct{}, 1), prep: make(chan struct{}, 1),
		caps: map[uint64][]segCapture{}, capEnd: map[uint64]uint64{}, allocated: map[uint64]bool{newSeg: true}}
	r.mu.Lock()
	r.noteSegLocked(newSeg, meta)
	// The newest segment names us now, from this incarnation: if this
	// campaign fails, the next is started by silence, as for any leader.
	r.everLed = true
	if r.closed {
		r.mu.Unlock()
		tcancel()
		return ErrClosed
	}
	if old := r.term; old != nil {
		r.stepDownLocked(old, "a newer campaign of its own")
	}
	r.term, r.role = t, candidate
	r.mu.Unlock()
	r.log.Info("smr: campaign won segment, junk-filling the log before it", "segment", r.segID(newSeg), "epoch", epoch, "from", cur.String())

	// 3. Junk-fill every register from the cursor to the end of the
	// segments before ours: afterwards the log before our segment is
	// decided, with no holes, and the old leader's captures are preempted.
	var sizes []uint64
	for s := cur.seg; s < newSeg; s++ {
		st, m, err := r.fetchMeta(ctx, s)
		if err == nil && st != segAllocated {
			err = fmt.Errorf("smr: campaign: log segment %d is %v", r.segID(s), map[segState]string{segTrimmed: "trimmed", segUnallocated: "not allocated"}[st])
		}
		if err != nil {
			r.stepDown(t, "campaign failed")
			return err
		}
		sizes = append(sizes, m.size)
	}
	for _, f := range fillPlan(cur, sizes) {
		if err := r.fill(t, f); err != nil {
			r.stepDown(t, "campaign failed")
			return err
		}
	}
	// 4. Lead: the writer starts with a no-op that announces the term.
	r.mu.Lock()
	if r.term != t {
		err := r.notLeaderLocked()
		r.mu.Unlock()
		return err
	}
	t.ready, r.role = true, leading
	r.st.Campaigns++
	t.queue = append([]*proposal{newProposal(nil, encodeNoop(r.cfg.ID, epoch))}, t.queue...)
	r.mu.Unlock()
	r.log.Info("smr: leading", "segment", r.segID(newSeg), "epoch", epoch)
	r.wg.Add(2)
	go r.writer(t)
	go r.prepare(t)
	kick(t.prep)
	kick(r.wake)
	return nil
}

// lastAllocated finds the last allocated log segment at or after `from`
// (cursor is the apply loop's segment, allocated unless the log is empty
// there). any is false if no log segment was ever allocated.
func (r *replica) lastAllocated(ctx context.Context, cursorSeg, from uint64) (last uint64, m logMeta, any bool, err error) {
	s := from
	st, m, err := r.fetchMeta(ctx, s)
	if err != nil {
		return 0, logMeta{}, false, err
	}
	switch st {
	case segTrimmed:
		return 0, logMeta{}, false, fmt.Errorf("smr: campaign: log segment %d is trimmed: catching up first", r.segID(s))
	case segUnallocated:
		if s == 0 {
			return 0, logMeta{}, false, nil
		}
		// The cursor's segment is the first unallocated one; the one
		// before it is the last.
		s = max(cursorSeg, 1) - 1
		if st, m, err = r.fetchMeta(ctx, s); err != nil {
			return 0, logMeta{}, false, err
		}
		if st != segAllocated {
			// Trimmed behind us: its epoch is in our cache if anywhere.
			r.mu.Lock()
			m = logMeta{epoch: r.maxEpoch}
			r.mu.Unlock()
		}
		return s, m, true, nil
	}
	for {
		st2, m2, err := r.fetchMeta(ctx, s+1)
		if err != nil {
			return 0, logMeta{}, false, err
		}
		if st2 != segAllocated {
			return s, m, true, nil
		}
		s, m = s+1, m2
	}
}

// fill junk-fills one range: SegCapture then SegWrite of junk. The values
// the registers then hold (junk, or an old leader's entry the capture
// found and completed) are the log. A preempted fill is retried unless a
// newer leader has allocated a segment after ours.
func (r *replica) fill(t *term, f fillRange) error {
	r.mu.Lock()
	var mine []pos
	for o := f.start; o < f.end; o++ {
		p := pos{f.seg, o}
		if !p.less(r.cursor) && !r.owned[p] {
			r.owned[p] = true
			mine = append(mine, p)
		}
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		for _, p := range mine {
			delete(r.owned, p)
		}
		r.mu.Unlock()
		kick(r.wake)
	}()
	n := f.end - f.start
	junk := make([][]byte, n)
	for i := range junk {
		junk[i] = junkEntry
	}
	var err error
	for attempt := 0; attempt < fillAttempts; attempt++ {
		var cid wor.CaptureID
		var held [][]byte
		cid, err = r.c.SegCapture(t.ctx, r.segID(f.seg), f.start, f.end)
		if err == nil {
			held, err = r.c.SegWrite(t.ctx, r.segID(f.seg), f.start, junk, cid)
		}
		if err == nil {
			for i, v := range held {
				r.learn(pos{f.seg, f.start + uint64(i)}, v)
			}
			return nil
		}
		if t.ctx.Err() != nil || errors.Is(err, wor.ErrTrimmed) {
			return err
		}
		if st, _, merr := r.fetchMeta(t.ctx, t.first+1); merr == nil && st == segAllocated {
			return fmt.Errorf("%w: a newer leader allocated segment %d", ErrNotLeader, r.segID(t.first+1))
		}
		if !sleep(t.ctx, backoff(attempt)) {
			return t.ctx.Err()
		}
	}
	return fmt.Errorf("smr: campaign: junk-filling segment %d [%d, %d): %w", r.segID(f.seg), f.start, f.end, err)
}

// ---- snapshots ----

// storeSnapshot writes a snapshot the apply loop took into snapshot
// segment ref.k (the next free number), then proposes a pointer entry to
// it; once the pointer is applied it trims the log segments wholly before
// the snapshot and the older snapshots.
func (r *replica) storeSnapshot(t *term, ref snapRef, data []byte) {
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		r.snapBusy = false
		r.mu.Unlock()
	}()
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
	for i := uint64(0); i < m.chunks; i += uint64(per) {
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
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cursor = nextPos(ref.at, at.size)
	r.applied = ref.index
	r.lastSnap, r.hasSnap = ref, true
	r.lastSnapSize = m.size
	r.cmdsSince, r.bytesSince = 0, 0
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

// ---- reads ----

func (r *replica) read(ctx context.Context, c Consistency, fn func()) error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	switch c {
	case Sequential:
	case Linearizable:
		r.mu.Lock()
		r.st.Reads++
		r.mu.Unlock()
		tail, err := r.sharedProbe(ctx)
		if err != nil {
			return err
		}
		if err := r.waitApplied(ctx, tail); err != nil {
			return err
		}
	default:
		return fmt.Errorf("smr: unknown consistency %v", c)
	}
	r.smMu.Lock()
	defer r.smMu.Unlock()
	fn()
	return nil
}

// probeBatch is one tail probe shared by the linearizable reads that
// arrived before it started.
type probeBatch struct {
	done chan struct{}
	tail pos   // set before done is closed
	err  error // likewise
}

// sharedProbe returns the log's tail as found by a probe that started
// after the call: concurrent linearizable reads share one probe (a read
// that arrives while a probe runs waits for the next one, which starts
// after it arrived), so a burst of reads costs one register read, not
// one each.
func (r *replica) sharedProbe(ctx context.Context) (pos, error) {
	r.probeMu.Lock()
	b := r.probeNext
	if b == nil {
		b = &probeBatch{done: make(chan struct{})}
		r.probeNext = b
	}
	if !r.probing {
		r.mu.Lock() // lock order: probeMu, then mu
		closed := r.closed
		if !closed {
			r.wg.Add(1) // before Close waits (it sets closed first)
		}
		r.mu.Unlock()
		if closed {
			r.probeMu.Unlock()
			return pos{}, ErrClosed
		}
		r.probing = true
		go r.prober()
	}
	r.probeMu.Unlock()
	select {
	case <-b.done:
		return b.tail, b.err
	case <-ctx.Done():
		return pos{}, ctx.Err()
	}
}

// prober runs probes while reads wait for them.
func (r *replica) prober() {
	defer r.wg.Done()
	for {
		r.probeMu.Lock()
		b := r.probeNext
		r.probeNext = nil
		if b == nil {
			r.probing = false
			r.probeMu.Unlock()
			return
		}
		r.probeMu.Unlock()
		r.mu.Lock()
		start := r.cursor
		if t := r.term; t != nil && t.ready && start.less(t.next) {
			// Our own writes before t.next are in flight; a newer leader
			// junk-fills t.next before writing anything, so the probe
			// starts there.
			start = t.next
		}
		r.st.Probes++
		r.mu.Unlock()
		b.tail, b.err = r.probe(r.ctx, start)
		if b.err != nil && r.ctx.Err() != nil {
			b.err = ErrClosed
		}
		close(b.done)
	}
}

// probe finds the log's tail from p: the first unwritten register,
// reading forward (in parallel windows) and crossing into later segments.
// Every write that completed before the probe started is before it.
func (r *replica) probe(ctx context.Context, p pos) (pos, error) {
	w := uint64(1)
	attempt := 0
	retry := func(err error) error {
		// A WOR call that failed (no majority in time, ...) is retried
		// until ctx ends.
		if !sleep(ctx, backoff(attempt)) {
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		attempt++
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return pos{}, err
		}
		st, m, err := r.fetchMeta(ctx, p.seg)
		if err != nil {
			if err := retry(err); err != nil {
				return pos{}, err
			}
			continue
		}
		switch st {
		case segUnallocated:
			return pos{p.seg, 0}, nil
		case segTrimmed:
			// The apply loop is behind a snapshot; it recovers, and the
			// probe continues from where it then is.
			r.mu.Lock()
			ch := r.progress
			r.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return pos{}, ctx.Err()
			case <-r.ctx.Done():
				return pos{}, ErrClosed
			}
			r.mu.Lock()
			if p.less(r.cursor) {
				p = r.cursor
			}
			r.mu.Unlock()
			continue
		}
		if p.off >= m.size {
			p = pos{p.seg + 1, 0}
			continue
		}
		n := min(w, m.size-p.off)
		res := r.readRange(ctx, r.segID(p.seg), p.off, n)
		var failed error
		for i, x := range res {
			q := pos{p.seg, p.off + uint64(i)}
			switch {
			case x.err == nil:
				r.learn(q, x.v)
			case errors.Is(x.err, wor.ErrUnwritten):
				return q, nil
			case errors.Is(x.err, wor.ErrTrimmed):
				r.forgetTrimmed(q.seg)
				n = uint64(i) // handled at the top of the next round
			default:
				n, failed = uint64(i), x.err
			}
			if x.err != nil {
				break
			}
		}
		p.off += n
		if failed != nil {
			w = 1
			if err := retry(failed); err != nil {
				return pos{}, err
			}
			continue
		}
		w = min(2*w, maxReadWindow)
	}
}

// waitApplied waits until the apply loop has applied everything before
// tail.
func (r *replica) waitApplied(ctx context.Context, tail pos) error {
	for {
		r.mu.Lock()
		done := !r.cursor.less(tail)
		ch := r.progress
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-r.ctx.Done():
			return ErrClosed
		}
	}
}

// ---- the rest of the API ----

func (r *replica) leader() (uint64, string, uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.role == leading && r.term != nil {
		return r.cfg.ID, r.cfg.Addr, r.term.epoch, true
	}
	e := r.notLeaderLocked()
	return e.LeaderID, e.LeaderAddr, e.Epoch, e.LeaderID != 0
}

func (r *replica) appliedIndex() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.applied
}

func (r *replica) close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	if t := r.term; t != nil {
		r.term, r.role = nil, follower
		t.cancel()
		for _, p := range t.queue {
			p.done <- result{err: ErrClosed}
		}
		t.queue = nil
	}
	for q, b := range r.pending {
		delete(r.pending, q)
		for _, p := range b.props {
			p.done <- result{err: ErrClosed}
		}
	}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return nil
}
