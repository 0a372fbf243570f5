package wormtx

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"strata/stack"
	"strata/wor"
)

// Engine is what WormTX needs of the WOR layer: registers and learners
// (wor.Paxos and wor.Chain are both).
type Engine interface {
	wor.Engine
	wor.Learner
}

// ErrInDoubt: the initiator could not learn the outcome (its
// coordinator is unreachable and it does not know where the votes are).
var ErrInDoubt = errors.New("wormtx: outcome unknown")

// Result is what a transaction's initiator reports.
type Result struct {
	Outcome Outcome
	Reads   map[string]int64 // each Get's balance, on commit
}

// Config configures a Peer: an RM (Store set) or the TM (Store nil).
type Config struct {
	// ID is the RM's index in RMs; for the TM, ignored.
	ID uint32
	// RMs are the RMs' message addresses, by index; TM the TM's (variants
	// A8 to D4).
	RMs []stack.Addr
	TM  stack.Addr
	// Node carries this peer's messages and gives it its clock; Engine
	// (on a node of its own: an engine owns its node's deliveries) its
	// registers.
	Node   *stack.Node
	Engine Engine
	// VoteSeg is the segment of this peer's vote registers when it
	// coordinates; fresh for each incarnation. Learn lists the vote
	// segments of every coordinator whose votes this peer learns from
	// the start (others are learned once a prepare names them).
	VoteSeg uint64
	Learn   []uint64
	// Store is an RM's durable state (nil: this peer is the TM).
	Store Store
	// Timeout is how long a peer waits for an outcome before resolving
	// the transaction from the registers (default 500 ms).
	Timeout time.Duration
	Log     *slog.Logger
}

// decideHook, if set (by tests), sees every decision.
var decideHook func(p *Peer, t *txState, outcome Outcome)

// Partition is the RM holding key, of n.
func Partition(key string, n int) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return h.Sum32() % uint32(n)
}

// learnTTL is how long a Learn registration lasts; renewed at a third.
const learnTTL = time.Minute

// Peer is an RM or the TM. Every entry point (a message, a learned
// vote, an engine callback, a timer) runs under mu; what it does to the
// outside (sends, engine calls, the client's callback) is queued in
// effects and run after mu is released, so an engine that calls back at
// once does not deadlock.
type Peer struct {
	cfg Config
	n   uint32 // the number of RMs

	mu sync.Mutex
	// All below: guarded by mu.
	effects   []func()
	bal       map[string]int64 // committed balances (RM)
	locks     map[string]*lock
	txs       map[uint64]*txState
	learning  map[uint64]bool // vote segments learned
	seq       uint64          // transactions initiated here
	next      uint64          // next slot of VoteSeg
	pool      []slot          // captured slots (B6 to E3)
	capturing bool
	waiting   []func() // coordinations waiting for a captured slot
	closed    bool
	stats     Stats
}

// Stats counts a peer's transactions.
type Stats struct {
	Initiated, Committed, Aborted, Prepared, Resolved uint64
}

type slot struct {
	base  uint64
	token wor.CaptureID
}

type lock struct {
	writer  uint64          // the transaction holding it exclusively (0: none)
	readers map[uint64]bool // transactions holding it shared
}

// txState is what a peer knows of one transaction.
type txState struct {
	id      uint64
	variant Variant
	origin  uint32
	seg     uint64
	base    uint64
	parts   []uint32
	located bool // seg, base and parts are known
	ops     []Op // the whole transaction (initiator, TM) or this RM's part
	votes   map[uint32]vote
	// This RM's part.
	prepared bool             // it voted (or is voting)
	yes      bool             // its vote was yes: locks held, writes logged
	by       uint64           // the incarnation whose prepare that is
	writes   map[string]int64 // new balances, on commit
	held     []string         // keys it locked
	// Outcome.
	decided   bool
	outcome   Outcome
	reads     []read
	done      func(Result, error) // the initiator's client
	timer     func() bool
	tries     int
	resolving bool
	started   time.Duration
}

// NewPeer starts a peer: it recovers an RM's in-doubt transactions from
// its store and learns the configured vote segments.
func NewPeer(cfg Config) (*Peer, error) {
	if cfg.Node == nil || cfg.Engine == nil || len(cfg.RMs) == 0 || len(cfg.RMs) > maxParts {
		return nil, errors.New("wormtx: a peer needs a node, an engine and 1 to 1024 RMs")
	}
	if cfg.Store != nil && int(cfg.ID) >= len(cfg.RMs) {
		return nil, fmt.Errorf("wormtx: RM id %d out of range", cfg.ID)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 500 * time.Millisecond
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Peer{cfg: cfg, n: uint32(len(cfg.RMs)), locks: map[string]*lock{}, txs: map[uint64]*txState{}, learning: map[uint64]bool{}}
	if cfg.Store != nil {
		p.bal = cfg.Store.Balances()
	}
	cfg.Node.OnDeliver(func(_ stack.Addr, body []byte) {
		m, err := decodeMsg(body)
		if err != nil {
			p.cfg.Log.Debug("wormtx: message dropped", "err", err)
			return
		}
		p.run(func() { p.receive(m) })
	})
	p.run(func() {
		for _, seg := range cfg.Learn {
			p.learn(seg)
		}
		if cfg.Store != nil {
			for _, pr := range cfg.Store.Votes() {
				if pr.Yes && !pr.Done {
					p.recoverLocked(pr)
				} else {
					p.forgetLater(pr.Tx)
				}
			}
		}
	})
	p.renew()
	return p, nil
}

// run runs f under the lock, then the effects it queued.
func (p *Peer) run(f func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	f()
	effects := p.effects
	p.effects = nil
	p.mu.Unlock()
	for _, e := range effects {
		e()
	}
}

// do queues an effect (under the lock).
func (p *Peer) do(f func()) { p.effects = append(p.effects, f) }

// Close stops the peer: it ignores everything from now on (a crash, as
// far as the others can tell, with its store kept).
func (p *Peer) Close() {
	p.mu.Lock()
	p.closed = true
	for _, t := range p.txs {
		if t.timer != nil {
			t.timer()
		}
	}
	p.mu.Unlock()
}

// Stats returns the peer's counters.
func (p *Peer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// lockCount is the number of accounts locked here.
func (p *Peer) lockCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.locks)
}

// Balances returns an RM's committed balances (a copy).
func (p *Peer) Balances() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.bal))
	for k, v := range p.bal {
		out[k] = v
	}
	return out
}

func (p *Peer) send(to stack.Addr, m msg) {
	b := m.encode()
	p.do(func() {
		if err := p.cfg.Node.Send(to, b); err != nil {
			p.cfg.Log.Debug("wormtx: send failed", "to", to, "err", err)
		}
	})
}

// learn starts learning the votes of seg (under the lock).
func (p *Peer) learn(seg uint64) {
	if p.learning[seg] {
		return
	}
	p.learning[seg] = true
	p.do(func() {
		p.cfg.Engine.Learn(seg, learnTTL, func(addr uint64, value []byte) {
			p.run(func() { p.learned(addr, value) })
		}, func(err error) {
			if err != nil {
				p.cfg.Log.Warn("wormtx: learner registration failed", "segment", seg, "err", err)
				return
			}
			// Votes written before the servers had the registration
			// were not reported: read those of the transactions of seg
			// waiting for them (a vote chosen before a majority
			// registered is seen by the read; one chosen after is
			// reported by a majority).
			p.run(func() { p.readVotes(seg) })
		})
	})
}

// readVotes reads the registers of the votes not yet known of seg's
// undecided transactions (under the lock); unwritten ones are left to
// the learner and the timeout.
func (p *Peer) readVotes(seg uint64) {
	for _, t := range p.txs {
		if t.seg != seg || !t.located || t.decided {
			continue
		}
		for _, r := range t.parts {
			if _, ok := t.votes[r]; ok {
				continue
			}
			addr := wor.Addr(seg, t.base+uint64(r))
			e := p.cfg.Engine
			p.do(func() {
				e.Read(addr, func(v []byte, err error) {
					if err == nil {
						p.run(func() { p.learned(addr, v) })
					}
				})
			})
		}
	}
}

// renew keeps the learner registrations alive.
func (p *Peer) renew() {
	p.cfg.Node.AfterFunc(learnTTL/3, func() {
		p.mu.Lock()
		segs := make([]uint64, 0, len(p.learning))
		for s := range p.learning {
			segs = append(segs, s)
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		for _, s := range segs {
			p.cfg.Engine.Subscribe(s, learnTTL, nil, func(error) {})
		}
		p.renew()
	})
}

// tx returns the state of transaction id, creating it.
func (p *Peer) tx(id uint64) *txState {
	t := p.txs[id]
	if t == nil {
		t = &txState{id: id, votes: map[uint32]vote{}, started: p.cfg.Node.Now()}
		p.txs[id] = t
	}
	return t
}

// Submit runs a transaction with this RM as its initiator; done gets the
// outcome. ops may touch any RM's accounts.
func (p *Peer) Submit(v Variant, ops []Op, done func(Result, error)) {
	if v < A8 || v > E3 {
		done(Result{}, fmt.Errorf("wormtx: bad variant %d", v))
		return
	}
	if len(ops) == 0 {
		done(Result{}, errors.New("wormtx: empty transaction"))
		return
	}
	for _, o := range ops {
		if (o.Kind != Get && o.Kind != Add) || o.Key == "" {
			done(Result{}, fmt.Errorf("wormtx: bad operation %+v", o))
			return
		}
	}
	p.run(func() {
		if p.cfg.Store == nil {
			p.do(func() { done(Result{}, errors.New("wormtx: only an RM initiates")) })
			return
		}
		p.seq++
		p.stats.Initiated++
		// Unique across RMs and incarnations: the vote segment is.
		id := p.cfg.VoteSeg<<24 | p.seq&(1<<24-1)
		t := p.tx(id)
		t.variant, t.origin, t.ops, t.done = v, p.cfg.ID, ops, done
		t.parts = p.participants(ops)
		p.arm(t)
		if v.usesTM() {
			p.send(p.cfg.TM, msg{kind: mBegin, variant: v, tx: id, origin: p.cfg.ID, ops: ops})
			return
		}
		p.coordinate(t)
	})
}

// participants are the RMs ops touch, ascending.
func (p *Peer) participants(ops []Op) []uint32 {
	var parts []uint32
	for _, o := range ops {
		r := Partition(o.Key, int(p.n))
		if !slices.Contains(parts, r) {
			parts = append(parts, r)
		}
	}
	slices.Sort(parts)
	return parts
}

// coordinate starts the vote (the TM on a begin, the initiator in E3):
// it takes a slot of registers and sends each participant its prepare.
func (p *Peer) coordinate(t *txState) {
	if t.variant == A8 {
		// Registers are captured by their voters.
		base := p.next
		p.next += uint64(p.n)
		p.prepareAll(t, slot{base: base})
		return
	}
	if len(p.pool) == 0 {
		p.waiting = append(p.waiting, func() { p.coordinate(t) })
		p.refill()
		return
	}
	s := p.pool[0]
	p.pool = p.pool[1:]
	if len(p.pool) < p.lowWater() {
		p.refill()
	}
	p.prepareAll(t, s)
}

func (p *Peer) prepareAll(t *txState, s slot) {
	t.seg, t.base, t.located = p.cfg.VoteSeg, s.base, true
	p.learn(t.seg)
	m := msg{kind: mPrepare, variant: t.variant, tx: t.id, origin: t.origin, seg: t.seg, base: s.base, token: uint64(s.token), parts: t.parts}
	for _, r := range t.parts {
		m.ops = p.opsFor(t.ops, r)
		if p.cfg.Store != nil && r == p.cfg.ID {
			p.prepare(m) // the initiator's own part (E3): no message
			continue
		}
		p.send(p.cfg.RMs[r], m)
	}
	if t.variant == D4 && !slices.Contains(t.parts, t.origin) {
		// The initiator learns the votes itself: tell it where they are.
		m.ops = nil
		p.send(p.cfg.RMs[t.origin], m)
	}
}

func (p *Peer) opsFor(ops []Op, r uint32) []Op {
	var out []Op
	for _, o := range ops {
		if Partition(o.Key, int(p.n)) == r {
			out = append(out, o)
		}
	}
	return out
}

// slotsPerCapture: one SegCapture covers this many transactions.
func (p *Peer) slotsPerCapture() int { return max(1, wor.MaxSegBatch/int(p.n)) }

func (p *Peer) lowWater() int { return p.slotsPerCapture() / 2 }

// refill captures the next batch of slots, one capture at a time.
func (p *Peer) refill() {
	if p.capturing {
		return
	}
	k := uint64(p.slotsPerCapture())
	start := p.next
	end := start + k*uint64(p.n)
	if end > wor.MaxOffset {
		p.cfg.Log.Error("wormtx: vote segment full; restart the coordinator with a fresh segment", "segment", p.cfg.VoteSeg)
		return
	}
	p.next = end
	p.capturing = true
	seg := p.cfg.VoteSeg
	p.do(func() {
		p.cfg.Engine.SegCapture(seg, start, end, func(cid wor.CaptureID, err error) {
			p.run(func() {
				p.capturing = false
				if err != nil {
					p.cfg.Log.Warn("wormtx: capturing vote registers failed", "segment", seg, "err", err)
					p.do(func() {
						p.cfg.Node.AfterFunc(p.cfg.Timeout/4, func() { p.run(p.refill) })
					})
					return
				}
				for b := start; b < end; b += uint64(p.n) {
					p.pool = append(p.pool, slot{base: b, token: cid})
				}
				waiting := p.waiting
				p.waiting = nil
				for _, f := range waiting {
					f()
				}
			})
		})
	})
}

// Prime captures the first batch of slots ahead of any transaction, and
// calls ready once it holds them (B6 to E3; A8 needs none).
func (p *Peer) Prime(ready func()) {
	p.run(func() {
		if len(p.pool) > 0 {
			p.do(ready)
			return
		}
		p.waiting = append(p.waiting, func() { p.do(ready) })
		p.refill()
	})
}

func (p *Peer) receive(m msg) {
	switch m.kind {
	case mBegin:
		if p.cfg.Store != nil {
			return
		}
		if _, ok := p.txs[m.tx]; ok {
			return // a duplicate
		}
		t := p.tx(m.tx)
		t.variant, t.origin, t.ops = m.variant, m.origin, m.ops
		t.parts = p.participants(m.ops)
		p.arm(t)
		p.coordinate(t)
	case mPrepare:
		if p.cfg.Store == nil {
			return
		}
		p.prepare(m)
	case mVote:
		if p.cfg.Store != nil {
			return
		}
		v, err := decodeVote(m.vote)
		if err != nil || v.tx != m.tx {
			return
		}
		p.record(m.tx, m.rm, v)
	case mDecide:
		t := p.tx(m.tx)
		if !t.decided {
			p.decide(t, m.outcome, m.reads)
		}
	}
}

// prepare is a participant's part: lock, check, log, vote.
func (p *Peer) prepare(m msg) {
	t := p.tx(m.tx)
	if !t.located {
		t.variant, t.origin, t.seg, t.base, t.parts, t.located = m.variant, m.origin, m.seg, m.base, m.parts, true
		p.learn(m.seg)
		p.arm(t)
	}
	if t.prepared || t.decided || len(m.ops) == 0 {
		p.check(t)
		return
	}
	t.prepared = true
	p.stats.Prepared++
	if rec, ok := p.cfg.Store.Vote(t.id); ok {
		// Prepared before (by an earlier incarnation, or before this
		// one dropped its state): the same vote again, never another
		// value under the same capture.
		if v, err := decodeVote(rec.Vote); err == nil {
			p.writeVote(t, v, wor.CaptureID(m.token))
		}
		return
	}
	status, reads := p.lockAndCheck(t, m.ops)
	v := vote{tx: t.id, status: status, by: p.cfg.VoteSeg, reads: reads}
	rec := Prepared{Tx: t.id, Seg: t.seg, Base: t.base, Parts: t.parts, Vote: v.encode(), Yes: status == Committed, By: p.cfg.VoteSeg, Done: status != Committed}
	if rec.Yes {
		rec.Writes = t.writes
		for _, r := range reads {
			rec.Reads = append(rec.Reads, r.key)
		}
	}
	if err := p.cfg.Store.Prepare(rec); err != nil {
		// No vote is written without its record: the others time out
		// and write no for this RM.
		p.cfg.Log.Error("wormtx: cannot log a vote; not voting", "tx", t.id, "err", err)
		p.unlock(t)
		t.writes = nil
		return
	}
	t.yes, t.by = rec.Yes, p.cfg.VoteSeg
	p.writeVote(t, v, wor.CaptureID(m.token))
}

// lockAndCheck takes the locks of ops (all or none) and computes the
// writes; it returns the vote's status and the Gets' balances.
func (p *Peer) lockAndCheck(t *txState, ops []Op) (Outcome, []read) {
	excl := map[string]bool{}
	for _, o := range ops {
		if o.Kind == Add {
			excl[o.Key] = true
		}
	}
	keys := make([]string, 0, len(ops))
	for _, o := range ops {
		if !slices.Contains(keys, o.Key) {
			keys = append(keys, o.Key)
		}
	}
	for _, k := range keys {
		l := p.locks[k]
		if l == nil {
			continue
		}
		if l.writer != 0 && l.writer != t.id {
			return Conflict, nil
		}
		if excl[k] {
			for r := range l.readers {
				if r != t.id {
					return Conflict, nil
				}
			}
		}
	}
	for _, k := range keys {
		l := p.locks[k]
		if l == nil {
			l = &lock{readers: map[uint64]bool{}}
			p.locks[k] = l
		}
		if excl[k] {
			l.writer = t.id
		} else {
			l.readers[t.id] = true
		}
		t.held = append(t.held, k)
	}
	t.writes = map[string]int64{}
	var reads []read
	for _, o := range ops {
		cur, ok := t.writes[o.Key]
		if !ok {
			cur = p.bal[o.Key]
		}
		switch o.Kind {
		case Get:
			reads = append(reads, read{o.Key, cur})
		case Add:
			if cur+o.Delta < 0 {
				p.unlock(t)
				t.writes = nil
				return Insufficient, nil
			}
			t.writes[o.Key] = cur + o.Delta
		}
	}
	return Committed, reads
}

func (p *Peer) unlock(t *txState) {
	for _, k := range t.held {
		l := p.locks[k]
		if l == nil {
			continue
		}
		if l.writer == t.id {
			l.writer = 0
		}
		delete(l.readers, t.id)
		if l.writer == 0 && len(l.readers) == 0 {
			delete(p.locks, k)
		}
	}
	t.held = nil
}

// writeVote writes this RM's vote into its register: with the
// coordinator's token in one round trip, or (A8, token 0) after a capture
// of its own. Whatever value the register ends up holding is the vote.
func (p *Peer) writeVote(t *txState, v vote, token wor.CaptureID) {
	addr := wor.Addr(t.seg, t.base+uint64(p.cfg.ID))
	val := v.encode()
	e := p.cfg.Engine
	id, me := t.id, p.cfg.ID
	finish := func(err error) {
		p.run(func() {
			var we *wor.WrittenError
			switch {
			case err == nil:
				p.voted(id, me, v)
			case errors.As(err, &we):
				if got, derr := decodeVote(we.Value); derr == nil {
					p.voted(id, me, got)
				}
			default:
				// Preempted (another RM is writing no for us) or failed:
				// the timeout reads the register.
				p.cfg.Log.Debug("wormtx: vote not written", "tx", id, "err", err)
			}
		})
	}
	write := func() {
		if token == 0 {
			e.Capture(addr, func(cid wor.CaptureID, err error) {
				if err != nil {
					finish(err)
					return
				}
				e.Write(addr, val, cid, finish)
			})
			return
		}
		if err := wor.Adopt(e, addr, token); err != nil {
			finish(err)
			return
		}
		e.Write(addr, val, token, finish)
	}
	store, log := p.cfg.Store, p.cfg.Log
	p.do(func() {
		// The vote's record must be durable before the vote is: a vote
		// written and then forgotten in a crash could be voted again
		// differently under the same capture. The Sync runs outside the
		// lock, so prepares arriving meanwhile share its flush.
		store.Sync(func(err error) {
			if err != nil {
				log.Error("wormtx: cannot make a vote's record durable; not voting", "tx", id, "err", err)
				return
			}
			write()
		})
	})
}

// voted: this RM's register holds v. In A8 and B6 it tells the TM.
func (p *Peer) voted(id uint64, me uint32, v vote) {
	t := p.tx(id)
	if t.variant == A8 || t.variant == B6 {
		p.send(p.cfg.TM, msg{kind: mVote, variant: t.variant, tx: id, rm: me, vote: v.encode()})
	}
	p.record(id, me, v)
}

// learned: a register of a learned segment holds value.
func (p *Peer) learned(addr uint64, value []byte) {
	v, err := decodeVote(value)
	if err != nil {
		return
	}
	if t := p.txs[v.tx]; t != nil && p.cfg.Store == nil && (t.variant == A8 || t.variant == B6) && !t.resolving {
		// In A8 and B6 the TM waits for the RMs' vote messages: these
		// variants do without learners (C5's step).
		return
	}
	if _, ok := p.txs[v.tx]; !ok {
		// A transaction this peer has not heard of: most are others'
		// (every RM learns every coordinator's segment), a few are ones
		// whose prepare is still on its way. Keep the vote a while.
		id := v.tx
		p.do(func() {
			p.cfg.Node.AfterFunc(10*p.cfg.Timeout, func() {
				p.run(func() {
					if t := p.txs[id]; t != nil && !t.located && t.done == nil {
						delete(p.txs, id)
					}
				})
			})
		})
	}
	off := addr & (1<<24 - 1)
	p.record(v.tx, uint32(off%uint64(p.n)), v)
}

// record notes rm's vote on transaction id, and decides once every
// participant's is known. Who decides from votes: the TM in A8 to C5,
// every peer in D4 and E3 (and anyone resolving after a timeout).
func (p *Peer) record(id uint64, rm uint32, v vote) {
	t := p.tx(id)
	if t.decided {
		return
	}
	if rm == p.cfg.ID && t.yes && v.status == Committed && v.by != t.by {
		// This RM prepared the transaction again (its state was lost to
		// a restart or dropped) but its register holds an earlier vote:
		// that one counts, and this prepare is void, so that nothing is
		// applied twice. Its earlier life's effects are in the store.
		p.void(t)
	}
	t.votes[rm] = v
	p.check(t)
}

// void drops this RM's prepare of t: its log record and its locks.
func (p *Peer) void(t *txState) {
	if err := p.cfg.Store.Finish(t.id, false); err != nil {
		p.cfg.Log.Error("wormtx: cannot drop a void prepare", "tx", t.id, "err", err)
	}
	p.unlock(t)
	t.yes, t.writes = false, nil
}

// check decides t if its votes allow it.
func (p *Peer) check(t *txState) {
	if t.decided || t.parts == nil {
		return
	}
	byVotes := t.variant == D4 || t.variant == E3 || p.cfg.Store == nil || t.resolving
	if !byVotes {
		return
	}
	outcome, reads, ok := outcomeOf(t.parts, t.votes)
	if !ok {
		return
	}
	if p.cfg.Store == nil && t.variant != D4 {
		// The TM tells the participants and the initiator.
		m := msg{kind: mDecide, variant: t.variant, tx: t.id, outcome: outcome, reads: reads}
		for _, r := range t.parts {
			p.send(p.cfg.RMs[r], m)
		}
		if !slices.Contains(t.parts, t.origin) {
			p.send(p.cfg.RMs[t.origin], m)
		}
	}
	p.decide(t, outcome, reads)
}

// outcomeOf is the decision as a function of the votes: committed if
// every participant voted yes, else the first no's reason; ok is false
// while a vote is missing and none is a no.
func outcomeOf(parts []uint32, votes map[uint32]vote) (Outcome, []read, bool) {
	var reads []read
	missing := false
	for _, r := range parts {
		v, ok := votes[r]
		switch {
		case !ok:
			missing = true
		case v.status != Committed:
			return v.status, nil, true
		default:
			reads = append(reads, v.reads...)
		}
	}
	if missing {
		return 0, nil, false
	}
	return Committed, reads, true
}

// decide ends t here: an RM applies or drops its writes and releases its
// locks; the initiator reports to its client.
func (p *Peer) decide(t *txState, outcome Outcome, reads []read) {
	t.decided, t.outcome, t.reads = true, outcome, reads
	if decideHook != nil {
		decideHook(p, t, outcome)
	}
	if t.timer != nil {
		t.timer()
		t.timer = nil
	}
	if outcome == Committed {
		p.stats.Committed++
	} else {
		p.stats.Aborted++
	}
	if t.yes {
		if err := p.cfg.Store.Finish(t.id, outcome == Committed); err != nil {
			p.cfg.Log.Error("wormtx: cannot finish a transaction", "tx", t.id, "err", err)
		}
		if outcome == Committed {
			for k, v := range t.writes {
				p.bal[k] = v
			}
		}
	}
	p.unlock(t)
	if t.done != nil {
		done := t.done
		t.done = nil
		res := Result{Outcome: outcome}
		if outcome == Committed {
			res.Reads = map[string]int64{}
			for _, r := range reads {
				res.Reads[r.key] = r.val
			}
		}
		p.do(func() { done(res, nil) })
	}
	// The state and the vote record are kept a while for late
	// messages, then dropped.
	p.forgetLater(t.id)
}

// forgetLater drops a decided transaction's state and its vote record
// after 10 timeouts (a prepare delayed longer could be voted on again).
func (p *Peer) forgetLater(id uint64) {
	p.do(func() {
		p.cfg.Node.AfterFunc(10*p.cfg.Timeout, func() {
			p.run(func() {
				if t := p.txs[id]; t == nil || t.decided {
					delete(p.txs, id)
					if p.cfg.Store != nil {
						if err := p.cfg.Store.Forget(id); err != nil {
							p.cfg.Log.Warn("wormtx: cannot drop a vote record", "tx", id, "err", err)
						}
					}
				}
			})
		})
	})
}

// arm starts t's timeout.
func (p *Peer) arm(t *txState) {
	if t.timer != nil || t.decided {
		return
	}
	id := t.id
	p.do(func() {
		stop := p.cfg.Node.AfterFunc(p.cfg.Timeout, func() { p.run(func() { p.timeout(id) }) })
		p.run(func() {
			if t := p.txs[id]; t != nil && !t.decided && t.timer == nil {
				t.timer = stop
			} else {
				stop()
			}
		})
	})
}

// timeout: t is undecided after the timeout; resolve it from the
// registers.
func (p *Peer) timeout(id uint64) {
	t := p.txs[id]
	if t == nil || t.decided {
		return
	}
	t.timer = nil
	t.tries++
	if !t.located {
		if t.tries >= 3 {
			// Nothing tells this peer where the votes are: it gives up
			// (a participant's prepare, should it come, starts afresh).
			delete(p.txs, id)
			if done := t.done; done != nil {
				p.do(func() {
					done(Result{}, fmt.Errorf("%w: transaction %x: no prepare or outcome from the coordinator", ErrInDoubt, id))
				})
			}
			return
		}
		p.arm(t)
		return
	}
	t.resolving = true
	p.stats.Resolved++
	p.check(t)
	if t.decided {
		return
	}
	for _, r := range t.parts {
		if _, ok := t.votes[r]; !ok {
			p.resolveVote(t, r)
		}
	}
	p.arm(t)
}

// resolveVote reads participant r's register and, if it is unwritten,
// writes a no vote into it (a capture and a write): whatever the
// register then holds is r's vote.
func (p *Peer) resolveVote(t *txState, r uint32) {
	addr := wor.Addr(t.seg, t.base+uint64(r))
	id := t.id
	e := p.cfg.Engine
	got := func(value []byte) {
		if v, err := decodeVote(value); err == nil && v.tx == id {
			p.run(func() { p.record(id, r, v) })
		}
	}
	no := vote{tx: id, status: TimedOut}.encode()
	p.do(func() {
		e.Read(addr, func(value []byte, err error) {
			if err == nil {
				got(value)
				return
			}
			if !errors.Is(err, wor.ErrUnwritten) {
				return // the next timeout tries again
			}
			e.Capture(addr, func(cid wor.CaptureID, err error) {
				if err != nil {
					return
				}
				e.Write(addr, no, cid, func(err error) {
					var we *wor.WrittenError
					switch {
					case err == nil:
						got(no)
					case errors.As(err, &we):
						got(we.Value)
					}
				})
			})
		})
	})
}

func (p *Peer) relock(k string) *lock {
	l := p.locks[k]
	if l == nil {
		l = &lock{readers: map[uint64]bool{}}
		p.locks[k] = l
	}
	return l
}

// recoverLocked restores a transaction an RM had prepared (voted yes, or
// was about to) before a restart: its locks are taken again and the
// outcome is resolved from the registers.
func (p *Peer) recoverLocked(pr Prepared) {
	t := p.tx(pr.Tx)
	t.seg, t.base, t.parts, t.located = pr.Seg, pr.Base, pr.Parts, true
	t.variant = E3 // decided from the votes, whoever coordinated
	t.prepared, t.yes, t.writes, t.by = true, true, pr.Writes, pr.By
	// Its locks again: a read lock dropped by a restart would let a
	// writer commit between this transaction's reads and its outcome.
	for k := range pr.Writes {
		p.relock(k).writer = t.id
		t.held = append(t.held, k)
	}
	for _, k := range pr.Reads {
		if _, ok := pr.Writes[k]; !ok {
			p.relock(k).readers[t.id] = true
			t.held = append(t.held, k)
		}
	}
	p.learn(t.seg)
	t.tries = 1
	t.resolving = true
	for _, r := range t.parts {
		p.resolveVote(t, r)
	}
	p.arm(t)
}
