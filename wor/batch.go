package wor

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"strata/stack"
)

// Segment batches (WormSpace §3: seg_capture and seg_write) and
// notifications (seg_listen), for every engine.

// takeSeg resolves the ballot and values of a segment write, as take does
// for one register: each register's value is replaced by what its capture
// found, if anything.
func (b *ballots) takeSeg(seg, start uint64, values [][]byte, cid CaptureID) (uint64, [][]byte, error) {
	if len(values) == 0 || len(values) > MaxSegBatch {
		return 0, nil, fmt.Errorf("wor: segment write of %d values (want 1..%d)", len(values), MaxSegBatch)
	}
	out := make([][]byte, len(values))
	var ballot uint64
	for i, v := range values {
		bi, vi, _, err := b.take(Addr(seg, start+uint64(i)), v, cid)
		if err != nil {
			return 0, nil, err
		}
		ballot, out[i] = bi, vi
	}
	return ballot, out, nil
}

func countBytes(n uint64) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

// segPriors reads prepare replies: whether any register was nacked (and
// the highest promise seen), and per register the value accepted at the
// highest ballot.
func segPriors(rs []response) (hi uint64, nack bool, priors map[uint32]prior, err error) {
	priors = map[uint32]prior{}
	best := map[uint32]uint64{}
	for _, r := range rs {
		es, derr := decodeSegEntries(r.Value)
		if derr != nil {
			return 0, false, nil, derr
		}
		for _, e := range es {
			switch {
			case e.nack:
				nack, hi = true, max(hi, e.promised)
			case e.has && (!priors[e.off].has || e.acc > best[e.off]):
				priors[e.off], best[e.off] = prior{has: true, value: e.value}, e.acc
			}
		}
	}
	return hi, nack, priors, nil
}

func checkBatch(start, end uint64) error {
	if end <= start || end-start > MaxSegBatch || end > MaxOffset {
		return fmt.Errorf("wor: segment batch [%d, %d): want 1..%d registers below offset %d", start, end, MaxSegBatch, uint64(MaxOffset))
	}
	return nil
}

// SegCapture runs phase 1 on registers [start, end) of seg in one round
// trip: one CaptureID for all of them.
func (c *Paxos) SegCapture(seg, start, end uint64, cb func(CaptureID, error)) {
	if err := checkBatch(start, end); err != nil {
		cb(0, err)
		return
	}
	c.segCapture(seg, start, end, 3, cb)
}

func (c *Paxos) segCapture(seg, start, end uint64, tries int, cb func(CaptureID, error)) {
	segCaptureVia(c.ballots, c.broadcast, seg, start, end, tries, cb)
}

// segCaptureVia runs a segment capture whose prepare goes out through send
// (to a majority, or to a chain's head), retrying above a higher promise.
func segCaptureVia(b *ballots, send func(request, func([]response, error)), seg, start, end uint64, tries int, cb func(CaptureID, error)) {
	ballot := b.next()
	send(request{Op: opSegPrepare, Addr: Addr(seg, start), Ballot: ballot, Value: countBytes(end - start)}, func(rs []response, err error) {
		if err != nil {
			cb(0, err)
			return
		}
		hi, nack, priors, err := segPriors(rs)
		switch {
		case err != nil:
			cb(0, err)
			return
		case nack:
			b.observe(hi)
			if tries > 1 {
				segCaptureVia(b, send, seg, start, end, tries-1, cb)
				return
			}
			cb(0, ErrPreempted)
			return
		}
		for i := start; i < end; i++ {
			b.remember(Addr(seg, i), CaptureID(ballot), priors[uint32(i-start)])
		}
		cb(CaptureID(ballot), nil)
	})
}

// SegWrite writes values to consecutive registers from (seg, start) in one
// round trip, with a capture from SegCapture (or 0: unsafe). cb gets the
// values now held: a register whose capture found an earlier value holds
// that one instead.
func (c *Paxos) SegWrite(seg, start uint64, values [][]byte, cid CaptureID, cb func([][]byte, error)) {
	b, vals, err := c.takeSeg(seg, start, values, cid)
	if err != nil {
		cb(nil, err)
		return
	}
	c.segWriteAt(seg, start, b, vals, func(err error) { cb(vals, err) })
}

func (c *Paxos) segWriteAt(seg, start, b uint64, vals [][]byte, cb func(error)) {
	c.broadcast(request{Op: opSegAccept, Addr: Addr(seg, start), Ballot: b, Value: encodeValues(vals)}, func(rs []response, err error) {
		if err != nil {
			cb(err)
			return
		}
		hi, nack, _, err := segPriors(rs)
		switch {
		case err != nil:
			cb(err)
		case nack:
			c.observe(hi)
			cb(ErrPreempted)
		default:
			cb(nil)
		}
	})
}

// SegCapture runs phase 1 on the registers at the head.
func (c *Chain) SegCapture(seg, start, end uint64, cb func(CaptureID, error)) {
	if err := checkBatch(start, end); err != nil {
		cb(0, err)
		return
	}
	c.segCapture(seg, start, end, 3, cb)
}

func (c *Chain) segCapture(seg, start, end uint64, tries int, cb func(CaptureID, error)) {
	head := func(req request, cb func([]response, error)) {
		c.one(c.chain[0], req, func(r response, err error) { cb([]response{r}, err) })
	}
	segCaptureVia(c.ballots, head, seg, start, end, tries, cb)
}

// SegWrite sends the values down the chain in one message per server.
func (c *Chain) SegWrite(seg, start uint64, values [][]byte, cid CaptureID, cb func([][]byte, error)) {
	b, vals, err := c.takeSeg(seg, start, values, cid)
	if err != nil {
		cb(nil, err)
		return
	}
	c.segWriteAt(seg, start, b, vals, func(err error) { cb(vals, err) })
}

func (c *Chain) segWriteAt(seg, start, b uint64, vals [][]byte, cb func(error)) {
	body := request{Op: opSegAccept, Addr: Addr(seg, start), Ballot: b, Value: encodeValues(vals)}
	var step func(i int)
	step = func(i int) {
		if i == len(c.chain) {
			cb(nil)
			return
		}
		c.one(c.chain[i], body, func(r response, err error) {
			if err == nil {
				var hi uint64
				var nack bool
				if hi, nack, _, err = segPriors([]response{r}); err == nil && nack {
					c.observe(hi)
					err = ErrPreempted
				}
			}
			if err != nil {
				cb(err)
				return
			}
			step(i + 1)
		})
	}
	step(0)
}

// notifyHub routes a node's incoming notifications to the subscribers of
// their segments. It owns the node's OnDeliver, so one engine per node
// (a Cluster counts as one) receives notifications.
type notifyHub struct {
	once sync.Once
	mu   sync.Mutex
	subs map[uint64]map[*noteFunc]bool // guarded by mu: segment -> callbacks
	// Forwarded replies (partial delegation, ecdelegate.go): those of a
	// proposal a front end waits for go to its callback in fwd; the
	// others to other (a delegate's table), or nowhere.
	fwd   map[fwdKey]func(from stack.Addr, r response) // guarded by mu
	other func(from stack.Addr, f forwarded)           // guarded by mu
}

// fwdKey names a proposal: a register and the ballot it is proposed at.
type fwdKey struct{ addr, ballot uint64 }

// onForward sends the forwarded replies of proposal k to f until cancel.
func (h *notifyHub) onForward(node *stack.Node, k fwdKey, f func(from stack.Addr, r response)) (cancel func()) {
	h.start(node)
	h.mu.Lock()
	h.fwd[k] = f
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.fwd, k)
		h.mu.Unlock()
	}
}

// onOtherForwards sends the forwarded replies no onForward asked for to f.
func (h *notifyHub) onOtherForwards(node *stack.Node, f func(from stack.Addr, fw forwarded)) {
	h.start(node)
	h.mu.Lock()
	h.other = f
	h.mu.Unlock()
}

func (h *notifyHub) forward(from stack.Addr, body []byte) {
	fw, err := decodeForwarded(body)
	if err != nil {
		return // garbled: as if lost
	}
	h.mu.Lock()
	f, other := h.fwd[fwdKey{fw.Addr, fw.Ballot}], h.other
	h.mu.Unlock()
	switch {
	case f != nil:
		f(from, fw.Resp)
	case other != nil:
		other(from, fw)
	}
}

// noteFunc receives a notification and the server it came from.
type noteFunc func(from stack.Addr, n notification)

// start installs the hub as node's OnDeliver, once.
func (h *notifyHub) start(node *stack.Node) {
	h.once.Do(func() {
		h.mu.Lock()
		h.subs = map[uint64]map[*noteFunc]bool{}
		h.fwd = map[fwdKey]func(stack.Addr, response){}
		h.mu.Unlock()
		node.OnDeliver(func(from stack.Addr, body []byte) {
			if len(body) > 0 && body[0] == forwardMagic {
				h.forward(from, body)
				return
			}
			n, err := decodeNotification(body)
			if err != nil {
				return // not a notification, or garbled: nothing to act on
			}
			h.mu.Lock()
			var fs []noteFunc
			for f := range h.subs[n.Addr>>offsetBits] {
				fs = append(fs, *f)
			}
			h.mu.Unlock()
			for _, f := range fs {
				f(from, n)
			}
		})
	})
}

func (h *notifyHub) add(seg uint64, f *noteFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[seg] == nil {
		h.subs[seg] = map[*noteFunc]bool{}
	}
	h.subs[seg][f] = true
}

func (h *notifyHub) remove(seg uint64, f *noteFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[seg], f)
	if len(h.subs[seg]) == 0 {
		delete(h.subs, seg)
	}
}

// subscribe registers notify (if not nil) with the hub and asks every
// server to notify node of accepts in seg for ttl; cb reports success once
// a majority has the registration. cancel removes notify.
func subscribe(h *notifyHub, node *stack.Node, servers []stack.Addr, timeout time.Duration, req request, seg uint64, notify noteFunc, cb func(error)) (cancel func()) {
	cancel = func() {}
	if notify != nil {
		h.start(node)
		f := &notify
		h.add(seg, f)
		cancel = func() { h.remove(seg, f) }
	}
	trimAll(node, servers, timeout, req, cb) // same shape as a trim: every server, a majority suffices
	return cancel
}

func listenReq(seg uint64, ttl time.Duration) request {
	return request{Op: opListen, Addr: seg, Ballot: uint64(max(ttl.Milliseconds(), 1))}
}

// Subscribe implements Engine.
func (c *Paxos) Subscribe(seg uint64, ttl time.Duration, notify func(addr uint64), cb func(error)) (cancel func()) {
	return subscribe(c.hub, c.node, c.replicas, c.timeout, c.stamp(listenReq(seg, ttl)), seg, addrOnly(notify), cb)
}

// addrOnly adapts a Subscribe callback to the hub's (nil stays nil).
func addrOnly(notify func(uint64)) noteFunc {
	if notify == nil {
		return nil
	}
	return func(_ stack.Addr, n notification) { notify(n.Addr) }
}

// Learner is an engine that tells, from the servers' reports of accepts
// alone, that a value is chosen: Paxos once a majority of its servers
// report accepting the register's value at one ballot, the chain once
// its tail reports it (a write reaches the tail last). A learner knows a
// value one message delay after the accepts, without the read a
// Subscribe report needs; the servers report an accept only once it is
// durable. Learn registers with the servers for ttl (call it again to
// renew) and calls learned once per register, for registers of seg
// accepted after the registration (a report delayed while tens of
// thousands of other registers are learned may learn one again, with the
// same value: the learner's memory is bounded); a register whose reports
// were lost is not learned (read it). cancel stops the calls.
type Learner interface {
	Learn(seg uint64, ttl time.Duration, learned func(addr uint64, value []byte), cb func(error)) (cancel func())
}

// Learn implements Learner: a majority of the replicas at one ballot.
func (c *Paxos) Learn(seg uint64, ttl time.Duration, learned func(addr uint64, value []byte), cb func(error)) (cancel func()) {
	return subscribe(c.hub, c.node, c.replicas, c.timeout, c.stamp(listenReq(seg, ttl)), seg, learnQuorum(c.replicas, len(c.replicas)/2+1, learned), cb)
}

// Learn implements Learner: the chain's tail.
func (c *Chain) Learn(seg uint64, ttl time.Duration, learned func(addr uint64, value []byte), cb func(error)) (cancel func()) {
	return subscribe(c.hub, c.node, c.chain, c.timeout, c.stamp(listenReq(seg, ttl)), seg, learnQuorum(c.chain[len(c.chain)-1:], 1, learned), cb)
}

// learnWindow bounds a learner's memory: it remembers the registers it
// learned (so that late reports do not learn one twice) and those
// reported but not yet learned, in two generations of at most
// learnWindow entries each; the older is dropped when the newer fills.
// A report delayed past two generations of other registers may learn a
// register again, with the same value (registers are written once).
const learnWindow = 1 << 15

// learnQuorum counts reports per register and ballot from the servers
// of voters, and calls learned when need of them report one ballot.
// Its state is the registers reported but not yet learned, and the set
// of registers learned, both bounded (learnWindow).
func learnQuorum(voters []stack.Addr, need int, learned func(uint64, []byte)) noteFunc {
	return learnQuorumWindow(voters, need, learnWindow, learned)
}

func learnQuorumWindow(voters []stack.Addr, need, window int, learned func(uint64, []byte)) noteFunc {
	var mu sync.Mutex
	type reports = map[uint64]map[stack.Addr]bool // ballot -> reporters
	// Guarded by mu: the current and the previous generation.
	seen, oldSeen := map[uint64]reports{}, map[uint64]reports{}
	done, oldDone := map[uint64]bool{}, map[uint64]bool{}
	return func(from stack.Addr, n notification) {
		if !slices.Contains(voters, from) {
			return
		}
		mu.Lock()
		if done[n.Addr] || oldDone[n.Addr] {
			mu.Unlock()
			return
		}
		byBallot := seen[n.Addr]
		if byBallot == nil {
			if byBallot = oldSeen[n.Addr]; byBallot != nil {
				delete(oldSeen, n.Addr)
			} else {
				byBallot = reports{}
			}
			if len(seen) >= window {
				oldSeen, seen = seen, map[uint64]reports{}
			}
			seen[n.Addr] = byBallot
		}
		if byBallot[n.Ballot] == nil {
			byBallot[n.Ballot] = map[stack.Addr]bool{}
		}
		byBallot[n.Ballot][from] = true
		if len(byBallot[n.Ballot]) < need {
			mu.Unlock()
			return
		}
		if len(done) >= window {
			oldDone, done = done, map[uint64]bool{}
		}
		done[n.Addr] = true
		delete(seen, n.Addr)
		mu.Unlock()
		learned(n.Addr, append([]byte(nil), n.Value...))
	}
}

// Subscribe implements Engine.
func (c *Chain) Subscribe(seg uint64, ttl time.Duration, notify func(addr uint64), cb func(error)) (cancel func()) {
	return subscribe(c.hub, c.node, c.chain, c.timeout, c.stamp(listenReq(seg, ttl)), seg, addrOnly(notify), cb)
}
