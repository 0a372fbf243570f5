package wor

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
)

// Errors callers act on.
var (
	// ErrPreempted: another client captured the register meanwhile; retry
	// with a new capture.
	ErrPreempted = errors.New("wor: preempted by another capture")
	// ErrUnwritten: Read found no value.
	ErrUnwritten = errors.New("wor: register not written")
	// ErrUnavailable: no majority of the replica set answered in time.
	ErrUnavailable = errors.New("wor: no majority answered")
	// ErrTrimmed: the register's segment was trimmed.
	ErrTrimmed = errors.New("wor: segment trimmed")
	// ErrCollected: the register is below its segment's floor: a keyed
	// log's old version, garbage-collected once a newer one was chosen
	// (Client.TrimBelow). Unlike ErrTrimmed, the segment lives on.
	ErrCollected = errors.New("wor: register garbage-collected (below its segment's floor)")
	// ErrStorage: a server could not store the state (its storage is full,
	// or the value is too large for it).
	ErrStorage = errors.New("wor: server could not store the state")
	// ErrWritten matches a *WrittenError.
	ErrWritten = errors.New("wor: already written")
	// ErrSealed: the partition's configuration the request was sent under
	// was sealed by a reconfiguration; fetch the new one and retry (the
	// cluster client does this itself).
	ErrSealed = errors.New("wor: configuration sealed")
	// ErrNotReady: the servers do not serve the request's configuration
	// yet (a reconfiguration is installing it); retry shortly.
	ErrNotReady = errors.New("wor: configuration not active yet")
)

// WrittenError reports that a register already held a value; the write
// completed that value instead of the caller's.
type WrittenError struct{ Value []byte }

func (e *WrittenError) Error() string {
	return fmt.Sprintf("wor: already written (%d-byte value)", len(e.Value))
}

// Is makes errors.Is(err, ErrWritten) true.
func (e *WrittenError) Is(target error) bool { return target == ErrWritten }

// CaptureID identifies a capture: a Paxos ballot (round << 32 | client).
type CaptureID uint64

const clientBits = 32

// Paxos is the paxos engine: every register is a single-shot Paxos
// instance over a replica set, with majority quorums (capture and write
// take one round trip each; a read takes one, two more if it completes a
// half-written register), each request sent to one majority first (see
// broadcast). It is safe for concurrent use; its methods never
// block and call back exactly once, so they also run inside the simulated
// network's loop.
type Paxos struct {
	node     *stack.Node
	replicas []stack.Addr
	timeout  time.Duration
	conf
	*ballots
	hub *notifyHub
	hmu sync.Mutex
	h   *replicaHealth
	// counts, shared by a cluster's engines (nil: the engine's own)
	counts *QuorumCounts
}

// QuorumCounts counts what the paxos engines of a client did beyond
// asking one majority: Requests sent to a majority, how many of them were
// Hedged (the majority was slow: the rest were asked too) and how many
// were Widened because a server of the majority failed.
type QuorumCounts struct {
	Requests, Hedged, Widened atomic.Uint64
}

// QuorumStats is a snapshot of QuorumCounts.
type QuorumStats struct{ Requests, Hedged, Widened uint64 }

func (q *QuorumCounts) snapshot() QuorumStats {
	return QuorumStats{Requests: q.Requests.Load(), Hedged: q.Hedged.Load(), Widened: q.Widened.Load()}
}

// QuorumStats reports the engine's counts.
func (c *Paxos) QuorumStats() QuorumStats {
	_, counts := c.quorumState()
	return counts.snapshot()
}

// conf is the partition and configuration epoch an engine's requests
// carry.
type conf struct{ part, epoch uint32 }

// stamp sets the request's partition and epoch.
func (c conf) stamp(r request) request { r.Part, r.Epoch = c.part, c.epoch; return r }

type captureKey struct {
	addr uint64
	cid  CaptureID
}

// prior is the highest accepted value a capture's promise quorum reported.
type prior struct {
	has   bool
	value []byte
}

// NewPaxos returns the engine for a client numbered id (1 .. 2^32-1,
// unique among the clients of a replica set) using node, whose stack must
// provide RPC. timeout bounds each request to a server.
func NewPaxos(node *stack.Node, replicas []stack.Addr, id uint64, timeout time.Duration) (*Paxos, error) {
	if len(replicas) == 0 {
		return nil, errors.New("wor: empty replica set")
	}
	b, err := newBallots(id)
	if err != nil {
		return nil, err
	}
	return &Paxos{node: node, replicas: replicas, timeout: timeout, ballots: b, hub: &notifyHub{}}, nil
}

// broadcast sends req to a majority of the replicas (thrifty Paxos) and
// calls cb once with the first majority of answers, or with ErrUnavailable
// once a majority can no longer answer. The majority asked first is the
// same for every request on a segment (rotated by segment id, so load
// spreads over the replicas), so that reads find a write's quorum where the
// write left it; replicas that recently missed a deadline are asked last.
// When one of them fails, or has not answered after the hedge delay (a
// few times the recent quorum latency), the request goes to the others as
// well. Safety does not depend on whom is asked: any majority is a quorum.
//
// Asking only a majority halves the work of the replica left out on a
// 3-server set: on the benchmark machine, where the three servers share
// one disk, a write costs two barriers instead of three.
//
// The counting and deciding is quorumCall's (quorum.go), a state machine
// without I/O; broadcast is its driver: it sends, arms the hedge timer,
// keeps replicaHealth and the counts, and calls back.
func (c *Paxos) broadcast(req request, cb func([]response, error)) {
	h, counts := c.quorumState()
	counts.Requests.Add(1)
	n := len(c.replicas)
	r := &quorumRun{c: c, h: h, counts: counts, body: c.stamp(req).encode(), cb: cb}
	order, state, got := r.orderBuf[:0], r.stateBuf[:], r.gotBuf[:]
	if n > smallSet {
		order, state, got = make([]int, 0, n), make([]replicaState, n), make([]response, 0, n/2+1)
	}
	now := c.node.Now()
	order = h.order(order, now, segOf(req.Addr))
	r.mu.Lock()
	r.q.init(order, state[:n], got)
	first, hedge := r.q.start(now)
	r.mu.Unlock()
	if hedge {
		stop := c.node.AfterFunc(h.hedge(c.timeout), r.hedgeDue)
		r.mu.Lock()
		r.stopHedge = stop
		r.mu.Unlock()
	}
	r.send(first)
}

// smallSet is the largest replica set whose calls keep their buffers in
// the quorumRun itself (no allocation for them beyond the run's own).
const smallSet = 7

// quorumRun is one broadcast: its quorum call and what the driver needs
// to carry out the call's steps.
type quorumRun struct {
	c      *Paxos
	h      *replicaHealth
	counts *QuorumCounts
	body   []byte // the request as sent (read-only)
	cb     func([]response, error)

	mu        sync.Mutex
	q         quorumCall  // guarded by mu
	stopHedge func() bool // guarded by mu; nil without a hedge timer

	// Buffers for q on small replica sets (q's slices point into them).
	orderBuf [smallSet]int
	stateBuf [smallSet]replicaState
	gotBuf   [smallSet/2 + 1]response
}

// send asks the replicas idx; a request that cannot even be sent (the
// node is closed) is that replica's failure.
func (r *quorumRun) send(idx []int) {
	for _, i := range idx {
		_, err := r.c.node.CallAsync(r.c.replicas[i], r.body, r.c.timeout, func(b []byte, err error) {
			now := r.c.node.Now()
			// Any reply, even an error status, shows the replica alive.
			r.h.answer(i, err == nil, now)
			var resp response
			if err == nil {
				resp, err = decodeResponse(b)
				err = statusErr(err, resp.Status)
			}
			r.answer(i, resp, err, now)
		})
		if err != nil {
			r.answer(i, response{}, err, r.c.node.Now())
		}
	}
}

// answer feeds replica i's answer to the call and carries out the step.
func (r *quorumRun) answer(i int, resp response, err error, now time.Duration) {
	r.mu.Lock()
	st := r.q.answer(i, resp, err, now)
	stop := r.stopHedge
	r.mu.Unlock()
	if st.widened {
		r.counts.Widened.Add(1)
	}
	if st.decided {
		if stop != nil {
			stop()
		}
		if st.err == nil {
			r.h.quorum(st.latency)
		}
		r.cb(st.rs, st.err)
	}
	r.send(st.send)
}

// hedgeDue is the hedge timer's function: the first majority was slow.
func (r *quorumRun) hedgeDue() {
	r.mu.Lock()
	st := r.q.hedgeDue()
	r.mu.Unlock()
	if st.hedged {
		r.counts.Hedged.Add(1)
		now := r.c.node.Now()
		for _, i := range st.missed {
			r.h.miss(i, now)
		}
	}
	r.send(st.send)
}

// replicaHealth is what a Paxos engine remembers about its replicas to
// choose whom to ask first: which missed a hedge deadline lately, and the
// recent quorum latency the hedge delay follows.
type replicaHealth struct {
	mu      sync.Mutex
	n       int
	suspect []time.Duration // node time until which a replica is asked last
	latency time.Duration   // moving average of quorum latency
	haveLat bool
}

// Hedge delays: never below minHedge (timer and scheduling noise), never
// above half the request timeout; a replica that missed one is asked last
// for suspectFor.
const (
	minHedge   = 2 * time.Millisecond
	hedgeTimes = 8
	suspectFor = time.Second
)

// quorumState returns the engine's replica health and counts, made on
// first use (engines are built as literals in several places).
func (c *Paxos) quorumState() (*replicaHealth, *QuorumCounts) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	if c.h == nil {
		c.h = &replicaHealth{n: len(c.replicas), suspect: make([]time.Duration, len(c.replicas))}
	}
	if c.counts == nil {
		c.counts = &QuorumCounts{}
	}
	return c.h, c.counts
}

// order appends to out the replicas' indices, the segment's rotation, with
// the suspected ones moved to the end.
func (h *replicaHealth) order(out []int, now time.Duration, seg uint64) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	rot := int(seg % uint64(h.n))
	for k := range h.n {
		if i := (rot + k) % h.n; h.suspect[i] <= now {
			out = append(out, i)
		}
	}
	for k := range h.n {
		if i := (rot + k) % h.n; h.suspect[i] > now {
			out = append(out, i)
		}
	}
	return out
}

// answer records the outcome of a call to a replica: any reply clears
// suspicion, no reply (timeout, unreachable) sets it.
func (h *replicaHealth) answer(i int, replied bool, now time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if replied {
		h.suspect[i] = 0
	} else {
		h.suspect[i] = now + suspectFor
	}
}

func (h *replicaHealth) miss(i int, now time.Duration) {
	h.mu.Lock()
	h.suspect[i] = now + suspectFor
	h.mu.Unlock()
}

func (h *replicaHealth) quorum(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.haveLat {
		h.latency, h.haveLat = d, true
		return
	}
	h.latency += (d - h.latency) / 8
}

func (h *replicaHealth) hedge(timeout time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := max(minHedge, hedgeTimes*h.latency)
	if timeout > 0 {
		if !h.haveLat {
			d = max(minHedge, timeout/4) // nothing measured yet: be patient
		}
		d = min(d, timeout/2)
	}
	return d
}

func nacked(rs []response) (uint64, bool) {
	var hi uint64
	nack := false
	for _, r := range rs {
		if r.Status == stNack {
			nack = true
			hi = max(hi, r.Promised)
		}
	}
	return hi, nack
}

// Capture runs Paxos phase 1 for addr with a new ballot. A ballot below
// one the servers already promised is retried (a few times) above it: the
// nack only means this client's round counter was behind.
func (c *Paxos) Capture(addr uint64, cb func(CaptureID, error)) {
	c.capture(addr, 3, cb)
}

func (c *Paxos) capture(addr uint64, tries int, cb func(CaptureID, error)) {
	b := c.next()
	c.broadcast(request{Op: opPrepare, Addr: addr, Ballot: b}, func(rs []response, err error) {
		if err != nil {
			cb(0, err)
			return
		}
		if hi, nack := nacked(rs); nack {
			c.observe(hi)
			if tries > 1 {
				c.capture(addr, tries-1, cb)
				return
			}
			cb(0, ErrPreempted)
			return
		}
		var p prior
		var pb uint64
		for _, r := range rs {
			if r.Has && r.AccBallot >= pb {
				p, pb = prior{has: true, value: r.Value}, r.AccBallot
			}
		}
		c.remember(addr, CaptureID(b), p)
		cb(CaptureID(b), nil)
	})
}

// Write runs Paxos phase 2 for addr with cid from Capture. If
// the capture found an accepted value, that value is written instead and
// the result is a *WrittenError carrying it. cid 0 is an unsafe write (no
// capture; the caller guarantees no concurrent writer).
func (c *Paxos) Write(addr uint64, value []byte, cid CaptureID, cb func(error)) {
	b, v, written, err := c.take(addr, value, cid)
	if err != nil {
		cb(err)
		return
	}
	c.writeAt(addr, b, v, written, cb)
}

// writeAt runs phase 2 for v at ballot b (written: report v as a
// *WrittenError).
func (c *Paxos) writeAt(addr, b uint64, v []byte, written bool, cb func(error)) {
	c.broadcast(request{Op: opAccept, Addr: addr, Ballot: b, Value: v}, func(rs []response, err error) {
		switch hi, nack := nacked(rs); {
		case err != nil:
			cb(err)
		case nack:
			c.observe(hi)
			cb(ErrPreempted)
		case written:
			cb(&WrittenError{Value: v})
		default:
			cb(nil)
		}
	})
}

// Read returns addr's value, or ErrUnwritten. A value accepted by
// some but not a majority of the servers read is completed (captured and
// written again) before it is returned, so a value once returned is chosen.
func (c *Paxos) Read(addr uint64, cb func([]byte, error)) {
	c.read(addr, 5, cb)
}

func (c *Paxos) read(addr uint64, tries int, cb func([]byte, error)) {
	c.broadcast(request{Op: opRead, Addr: addr}, func(rs []response, err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		var best response
		count := 0
		for _, r := range rs {
			if r.Has && (!best.Has || r.AccBallot > best.AccBallot) {
				best = r
			}
		}
		if !best.Has {
			cb(nil, ErrUnwritten)
			return
		}
		for _, r := range rs {
			if r.Has && r.AccBallot == best.AccBallot {
				count++
			}
		}
		if count == len(rs) { // a majority accepted it at one ballot: chosen
			cb(best.Value, nil)
			return
		}
		// Half-written: complete it. Whatever the capture finds wins; if it
		// finds nothing, no value was chosen and the one seen may be.
		complete(c, addr, best.Value, tries, func() { c.read(addr, tries-1, cb) }, cb)
	})
}

// statusErr turns an error status into the error callers act on.
func statusErr(err error, status byte) error {
	switch {
	case err != nil:
		return err
	case status == stErr:
		return fmt.Errorf("%w: server rejected the request", ErrMalformed)
	case status == stFull:
		return ErrStorage
	case status == stTrim:
		return ErrTrimmed
	case status == stSealed:
		return ErrSealed
	case status == stNotReady:
		return ErrNotReady
	case status == stFloor:
		return ErrCollected
	}
	return nil
}

// Trim tells every replica to forget segment seg.
func (c *Paxos) Trim(seg uint64, cb func(error)) {
	trimAll(c.node, c.replicas, c.timeout, c.stamp(request{Op: opTrim, Addr: seg}), cb)
}
