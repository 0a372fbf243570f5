package smr

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"strata/internal/wake"
	"strata/wor"
)

// maxAddr bounds Config.Addr (it travels in every log segment's metadata).
const maxAddr = 1024

// Tuning of the driver (not of the protocol).
const (
	maxReadWindow = 64                     // registers read in parallel when catching up
	snapWriteSize = 128 << 10              // bytes of snapshot chunks per SegWrite
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
	// last: entry is the last part of a command written as parts (this
	// proposal's command); its result is the command's.
	last bool
	done chan result // capacity 1: the result is never blocked on
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
	index       uint64   // last applied command index
	asm         assembly // the command whose parts are being joined
	window      uint64   // registers to read at once when catching up
	streak      bool     // the last read found values: catching up
	catchRun    uint64   // registers read since the tail was last reached
	lastCatch   uint64   // registers the last catch-up read (the next poll reads as many)
	behindAt    pos      // a register waited for while later ones are known
	behindSince time.Time
	polledAt    pos // the register last polled at the tail, and when
	polledSince time.Time
	readyOnce   sync.Once
	listening   map[uint64]context.CancelFunc
	tailAt      pos // silence tracking: where the tail was last seen
	tailSince   time.Time
	tailWait    time.Duration
	// newerSeg is the newest log segment an automatic campaign found
	// allocated by a newer leader beyond the tail; newerSince is when it
	// first did, or last saw the tail (newerTail) move since (owned by the
	// campaign goroutine; one runs at a time).
	newerSeg   uint64
	newerTail  pos
	newerSince time.Time

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
	entriesSince uint64
	bytesSince   uint64
	sinceAt      time.Time // when the counts above last started from zero
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
		sinceAt:   time.Now(),
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

// kick and sleep: see internal/wake.
var (
	kick  = wake.Kick
	sleep = wake.Sleep
)

func backoff(attempt int) time.Duration {
	d := minBackoff << min(attempt, 10)
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// The rest of the API.

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
