package layers

import (
	"encoding/binary"
	"slices"
	"time"

	"strata/stack"
)

// Pt2pt header (49 bytes): kind u8 (1 data, 2 ack), from u64, seq u64,
// base u64, ackEpoch u64, ackNext u64, sack u64; or the kind alone (1
// byte): 3 pass, an ESend marked Unreliable (a multicast layer's copy of a
// cast: it recovers losses itself), delivered as it comes, unnumbered;
// accepted only in a stack with such a layer (Config.Unreliable), else
// malformed.
//
//	from      the sender's incarnation (a change tells a peer that this
//	          side restarted and lost what it had buffered)
//	seq       data: the message number (ack: 0)
//	base      data: the sender's lowest unacknowledged seq, where a
//	          receiver that lost its state resumes (ack: 0)
//	ackEpoch  the incarnation of the peer being acknowledged; 0 = no ack
//	ackNext   cumulative: every seq below it arrived
//	sack      bit i: seq ackNext+1+i arrived out of order
//
// Acknowledgements ride on data going the other way when there is some
// (a request's ack travels with its response); otherwise a bare ack goes
// after Config.AckDelay, or at once for every ackEvery-th message (a
// sixteenth of the window, 8 to 64), a duplicate or a gap.
//
// Peers come and go (every short-lived client is a new address): a peer
// that acknowledges nothing for Config.PeerTimeout while messages to it
// are unacknowledged is given up on: they are dropped (counted as
// abandoned) and the window's base moves past them, so that the peer, if
// it comes back, resumes after them. A peer silent for twice that with
// nothing in flight either way is forgotten altogether; a peer met again
// later starts its sequence numbers above every number used with a
// forgotten one, which a receiver that still remembers this sender takes
// as a jump of its base.
const (
	p2pData   = 1
	p2pAck    = 2
	p2pPass   = 3
	pt2ptHdr  = 49
	sackWidth = 64
)

// ackEvery is how many in-order messages a receiver takes before it
// acknowledges at once rather than after AckDelay: a sixteenth of the
// window, at least 8 and at most 64. Acks free the sender's window, which
// a sixteenth of it leaves ample room for; more often, a one-way stream
// of bundled messages paid a bare ack (and a trip through the full stack)
// every 8 messages.
func ackEvery(window int) int { return min(max(window/16, 8), 64) }

// Pt2pt is reliable FIFO point-to-point delivery: a sliding window of
// numbered messages per peer, cumulative and selective acks, retransmission
// with exponential backoff, duplicate suppression and in-order delivery.
// An incarnation number (epoch) per sender lets a receiver tell a restarted
// sender from an old one's late packets.
//
// Guarantees (between live peers, over a transport that may lose,
// duplicate, delay and reorder): every message sent is delivered exactly
// once, in send order; but a send marked Unreliable is passed as the
// transport carries it (lost, duplicated or reordered), outside the
// numbering. Assumes Config.Now-style time from events only.
type Pt2pt struct {
	ready    []*stack.Msg  // in-order messages to deliver at the end of receive
	timerAt  time.Duration // the retransmission timer requested and not yet seen
	timerSet bool
	cfg      stack.Config
	epoch    uint64
	peers    map[stack.Addr]*p2pPeer
	// memo: the peers last looked up by a fast path, most recent first
	// (a cache, not state; cleared when a peer is forgotten). A cast fans
	// out to every other member in turn, so one entry would always miss.
	memo [p2pMemo]p2pMemoEntry
	// seqFloor is above every sequence number used with a forgotten peer;
	// swept is when forgotten peers were last looked for.
	seqFloor uint64
	swept    time.Duration
	c        struct {
		data, retrans, acksSent, acksRecv, delivered, dups, ooo, malformed, stalls, stale uint64
		abandoned, forgotten, passed, passedUp                                            uint64
	}
}

// p2pOut is a message in flight, kept for retransmission. It lives in the
// peer's ring by value and keeps small headers inline, so the common path
// allocates nothing.
type p2pOut struct {
	hdr      [112]byte // every header from this layer up, copied (if they fit)
	hlen     int
	hbig     []byte // the headers, when longer than hdr
	p0, p1   []byte // the payload: two parts inline, the rest (rare) in more
	more     [][]byte
	deadline time.Duration
	rto      time.Duration
	live     bool // unacknowledged
	sacked   bool // selectively acknowledged: not retransmitted unless the receiver restarts
}

// keepPayload refers to the payload's parts (not copied: the sender's
// buffers stay unchanged until acknowledged).
func (o *p2pOut) keepPayload(pl [][]byte) {
	switch len(pl) {
	case 0:
	case 1:
		o.p0 = pl[0]
	default:
		o.p0, o.p1 = pl[0], pl[1]
		if len(pl) > 2 {
			o.more = slices.Clone(pl[2:])
		}
	}
}

func (o *p2pOut) headers() []byte {
	if o.hbig != nil {
		return o.hbig
	}
	return o.hdr[:o.hlen]
}

type p2pPeer struct {
	// sending
	nextSeq   uint64
	base      uint64        // lowest unacknowledged seq
	win       []p2pOut      // ring of in-flight messages: seq s at win[s % len(win)]
	inflight  int           // live entries in win
	queue     []*stack.Msg  // waiting for window space
	peerEpoch uint64        // the receiver's incarnation, from its acks
	owedSince time.Duration // when the oldest unacknowledged message was sent, or an ack last freed some
	heard     time.Duration // when a datagram from the peer last arrived
	used      time.Duration // when the peer was last sent to or heard from
	// receiving
	ackDue   bool          // something arrived that the peer has not seen acknowledged
	ackAt    time.Duration // when a bare ack goes if no data carries it first
	unackedN int           // messages received since the last ack sent
	rEpoch   uint64
	next     uint64
	ooo      map[uint64]*stack.Msg
}

// Pt2ptSpec describes Pt2pt.
var Pt2ptSpec = stack.Spec{
	Name: "pt2pt", Doc: "reliable FIFO: window, sacks, retransmission",
	Requires: []stack.Prop{stack.Datagram},
	Provides: []stack.Prop{stack.Reliable, stack.FIFO},
	New:      func(c stack.Config) stack.Layer { return NewPt2pt(c) },
}

// NewPt2pt builds the layer. cfg.Epoch must grow across restarts of the
// same address (the node passes its start time).
func NewPt2pt(cfg stack.Config) *Pt2pt {
	cfg = cfg.WithDefaults()
	return &Pt2pt{cfg: cfg, epoch: cfg.Epoch, peers: map[stack.Addr]*p2pPeer{}}
}

// peer returns a's state, made now (fresh) if a was unknown.
func (p *Pt2pt) peer(a stack.Addr) (q *p2pPeer, fresh bool) {
	q = p.peers[a]
	if q == nil {
		q = &p2pPeer{win: make([]p2pOut, 16), ooo: map[uint64]*stack.Msg{}, nextSeq: p.seqFloor, base: p.seqFloor}
		p.peers[a] = q
		fresh = true
	}
	return q, fresh
}

// armSweep makes sure the timer runs while there are peers to forget:
// the sweep runs from it, and a receiver whose acknowledgements all went
// at once (duplicates, gaps, every ackEvery-th message) would otherwise
// never arm it, and never forget its peers (TestPt2ptForgottenPeers
// found one). A sender arms it for its retransmissions, and once it runs
// it re-arms itself while peers remain.
func (p *Pt2pt) armSweep(now time.Duration, out stack.Emitter) {
	if pt := p.cfg.PeerTimeout; pt > 0 && !p.timerSet {
		p.timerSet, p.timerAt = true, max(now, p.swept+pt/4)
		out.Down(stack.Event{Type: stack.ETimerReq, Time: p.timerAt, Now: now})
	}
}

func (p *Pt2pt) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.EFlush {
		// The node stops: delayed acknowledgements go now, or the peers
		// would retransmit to an address nobody reads until PeerTimeout
		// (a client process that exits right after its last reply).
		for _, a := range p.sortedPeers(func(q *p2pPeer) bool { return q.ackDue }) {
			p.sendAck(a, p.peers[a], ev.Now, out)
		}
	}
	if ev.Type != stack.ESend {
		out.Down(ev)
		return
	}
	// Passed unnumbered only where receivers accept it (the same stack:
	// Config.Unreliable); elsewhere an Unreliable send goes reliably.
	if ev.Unreliable && p.cfg.Unreliable {
		ev.Msg.Push(1)[0] = p2pPass
		p.c.passed++
		out.Down(ev)
		return
	}
	q, _ := p.peer(ev.Peer) // sending arms the timer (transmit)
	if q.nextSeq-q.base >= uint64(p.cfg.Window) {
		p.c.stalls++
		q.queue = append(q.queue, ev.Msg)
		return
	}
	p.transmit(ev.Peer, q, ev.Msg, ev.Now, out)
}

func (p *Pt2pt) transmit(to stack.Addr, q *p2pPeer, m *stack.Msg, now time.Duration, out stack.Emitter) {
	seq := q.nextSeq
	q.nextSeq++
	h := m.Push(pt2ptHdr)
	h[0] = p2pData
	binary.BigEndian.PutUint64(h[1:], p.epoch)
	binary.BigEndian.PutUint64(h[9:], seq)
	p.fillAck(h, q)
	if q.nextSeq-q.base > uint64(len(q.win)) {
		q.grow()
	}
	o := &q.win[seq%uint64(len(q.win))]
	*o = p2pOut{rto: p.cfg.RTO, live: true}
	if hs := m.Headers(); len(hs) <= len(o.hdr) {
		o.hlen = copy(o.hdr[:], hs)
	} else {
		o.hbig = slices.Clone(hs)
	}
	o.keepPayload(m.Payload)
	o.deadline = now + o.rto
	if q.inflight == 0 {
		q.owedSince = now
	}
	q.inflight++
	q.used = now
	p.c.data++
	out.Down(stack.Event{Type: stack.ESend, Peer: to, Msg: m, Now: now})
	if !p.timerSet || o.deadline < p.timerAt {
		p.timerSet, p.timerAt = true, o.deadline
		out.Down(stack.Event{Type: stack.ETimerReq, Time: o.deadline, Now: now})
	}
}

// grow doubles the ring, keeping each in-flight entry at its new slot.
func (q *p2pPeer) grow() {
	nw := make([]p2pOut, 2*len(q.win))
	for s := q.base; s < q.nextSeq-1; s++ {
		nw[s%uint64(len(nw))] = q.win[s%uint64(len(q.win))]
	}
	q.win = nw
}

// out returns the live in-flight entry for seq, or nil.
func (q *p2pPeer) out(seq uint64) *p2pOut {
	if seq < q.base || seq >= q.nextSeq {
		return nil
	}
	if o := &q.win[seq%uint64(len(q.win))]; o.live {
		return o
	}
	return nil
}

func (q *p2pPeer) drop(seq uint64) {
	if o := q.out(seq); o != nil {
		*o = p2pOut{} // release the payload references
		q.inflight--
	}
}

func (p *Pt2pt) Up(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.EDeliver:
		p.receive(ev, out)
	case stack.ETimer:
		p.timer(ev.Time, out)
		out.Up(ev)
	default:
		out.Up(ev)
	}
}

func (p *Pt2pt) receive(ev stack.Event, out stack.Emitter) {
	if k, err := ev.Msg.Peek(1); err == nil && k[0] == p2pPass {
		if !p.cfg.Unreliable { // no layer here sends such datagrams
			p.c.malformed++
			ev.Msg.Free()
			return
		}
		ev.Msg.Pop(1)
		p.c.passedUp++
		out.Up(ev)
		return
	}
	h, err := ev.Msg.Pop(pt2ptHdr)
	if err != nil || (h[0] != p2pData && h[0] != p2pAck) {
		p.c.malformed++
		ev.Msg.Free()
		return
	}
	from := binary.BigEndian.Uint64(h[1:])
	seq := binary.BigEndian.Uint64(h[9:])
	base := binary.BigEndian.Uint64(h[17:])
	q, fresh := p.peer(ev.Peer)
	if fresh {
		p.armSweep(ev.Now, out)
	}
	q.heard, q.used = ev.Now, ev.Now
	if ackEpoch := binary.BigEndian.Uint64(h[25:]); ackEpoch != 0 {
		p.ack(ev.Peer, q, ackEpoch, binary.BigEndian.Uint64(h[33:]), binary.BigEndian.Uint64(h[41:]), from, ev.Now, out)
	}
	if h[0] == p2pAck {
		ev.Msg.Free()
		return
	}
	switch {
	case from < q.rEpoch:
		p.c.stale++ // a late packet from an earlier incarnation of the sender
		ev.Msg.Free()
		return
	case from > q.rEpoch:
		// A new sender incarnation (or the first contact): start where its
		// window starts; anything below was acknowledged to someone else.
		q.rEpoch, q.next = from, base
		clear(q.ooo)
	}
	if base > q.next {
		// The sender has seen acknowledgements up to base, so nothing below
		// it will ever come again: this receiver lost its state (it
		// restarted) after acknowledging them. Never normal operation: the
		// sender's base only moves on this receiver's acks.
		for s := range q.ooo {
			if s < base {
				delete(q.ooo, s)
			}
		}
		q.next = base
		p.collectBuffered(q)
	}
	// All state changes come before any event is emitted, and deliveries
	// go up last: a layer above may send in reaction (a response carrying
	// this ack), and it must find the same state whichever composition
	// runs the stack.
	now := false // acknowledge at once: the sender is missing information
	switch {
	case seq < q.next:
		p.c.dups++
		ev.Msg.Free()
		now = true
	case seq == q.next:
		q.next++
		p.ready = append(p.ready, ev.Msg)
		now = p.collectBuffered(q) // a gap just closed
	case seq-q.next <= 4*uint64(p.cfg.Window):
		if _, dup := q.ooo[seq]; dup {
			p.c.dups++
			ev.Msg.Free()
		} else {
			q.ooo[seq] = ev.Msg
			p.c.ooo++
		}
		now = true
	default:
		p.c.malformed++ // far beyond any window the sender could have
		ev.Msg.Free()
		p.flushReady(ev.Peer, ev.Now, out)
		return
	}
	q.unackedN++
	if now || q.unackedN >= ackEvery(p.cfg.Window) || p.cfg.AckDelay < 0 {
		p.sendAck(ev.Peer, q, ev.Now, out)
	} else if !q.ackDue {
		q.ackDue, q.ackAt = true, ev.Now+p.cfg.AckDelay
		if !p.timerSet || q.ackAt < p.timerAt {
			p.timerSet, p.timerAt = true, q.ackAt
			out.Down(stack.Event{Type: stack.ETimerReq, Time: q.ackAt, Now: ev.Now})
		}
	}
	p.flushReady(ev.Peer, ev.Now, out)
}

// collectBuffered moves the buffered messages that are now in order to
// p.ready and reports whether there were any.
func (p *Pt2pt) collectBuffered(q *p2pPeer) bool {
	any := false
	for {
		m, ok := q.ooo[q.next]
		if !ok {
			return any
		}
		any = true
		delete(q.ooo, q.next)
		q.next++
		p.ready = append(p.ready, m)
	}
}

// flushReady delivers p.ready upwards, in order.
func (p *Pt2pt) flushReady(from stack.Addr, now time.Duration, out stack.Emitter) {
	ready := p.ready
	p.ready = p.ready[:0:0] // a nested receive (none today) would start afresh
	for i, m := range ready {
		ready[i] = nil
		p.c.delivered++
		out.Up(stack.Event{Type: stack.EDeliver, Peer: from, Msg: m, Now: now})
	}
	p.ready = ready[:0]
}

// sortedPeers lists the peers that pass keep in address order, so that
// what is sent for them comes out in the same order on every run.
func (p *Pt2pt) sortedPeers(keep func(*p2pPeer) bool) []stack.Addr {
	addrs := make([]stack.Addr, 0, len(p.peers))
	for a, q := range p.peers {
		if keep(q) {
			addrs = append(addrs, a)
		}
	}
	slices.Sort(addrs)
	return addrs
}

// sweep gives up on peers that owe acknowledgements for longer than
// PeerTimeout and forgets peers silent for twice that with nothing in
// flight. The outcome does not depend on the map's order.
func (p *Pt2pt) sweep(now time.Duration) {
	p.swept = now
	pt := p.cfg.PeerTimeout
	for a, q := range p.peers {
		if (q.inflight > 0 || len(q.queue) > 0) && now-max(q.heard, q.owedSince) > pt {
			for s := q.base; s < q.nextSeq; s++ {
				if q.out(s) != nil {
					q.drop(s)
					p.c.abandoned++
				}
			}
			for i, m := range q.queue {
				m.Free()
				q.queue[i] = nil
				p.c.abandoned++
			}
			q.queue = q.queue[:0:0]
			q.base = q.nextSeq
		}
		if q.inflight == 0 && len(q.queue) == 0 && len(q.ooo) == 0 && !q.ackDue && now-q.used > 2*pt {
			p.seqFloor = max(p.seqFloor, q.nextSeq)
			delete(p.peers, a)
			p.memo = [p2pMemo]p2pMemoEntry{}
			p.c.forgotten++
		}
	}
}

// fillAck writes the base and the acknowledgement fields of a header for q.
func (p *Pt2pt) fillAck(h []byte, q *p2pPeer) {
	binary.BigEndian.PutUint64(h[17:], q.base)
	epoch, next, sack := q.ackFields()
	binary.BigEndian.PutUint64(h[25:], epoch)
	binary.BigEndian.PutUint64(h[33:], next)
	binary.BigEndian.PutUint64(h[41:], sack)
}

// ackFields returns the acknowledgement a message to q carries (all zero
// if nothing was received from it) and notes it as sent.
func (q *p2pPeer) ackFields() (epoch, next, sack uint64) {
	if q.rEpoch == 0 {
		return 0, 0, 0 // nothing received from this peer: no ack
	}
	for s := range q.ooo {
		if d := s - q.next - 1; s > q.next && d < sackWidth {
			sack |= 1 << d
		}
	}
	q.ackDue, q.unackedN = false, 0
	return q.rEpoch, q.next, sack
}

func (p *Pt2pt) sendAck(to stack.Addr, q *p2pPeer, now time.Duration, out stack.Emitter) {
	m := stack.NewMsg()
	h := m.Push(pt2ptHdr)
	h[0] = p2pAck
	binary.BigEndian.PutUint64(h[1:], p.epoch)
	binary.BigEndian.PutUint64(h[9:], 0)
	p.fillAck(h, q)
	binary.BigEndian.PutUint64(h[17:], 0)
	p.c.acksSent++
	out.Down(stack.Event{Type: stack.ESend, Peer: to, Msg: m, Now: now})
}

func (p *Pt2pt) ack(from stack.Addr, q *p2pPeer, epoch, cum, sack, repoch uint64, now time.Duration, out stack.Emitter) {
	if epoch != p.epoch || cum > q.nextSeq {
		p.c.stale++
		return
	}
	p.c.acksRecv++
	if repoch != q.peerEpoch {
		if repoch < q.peerEpoch {
			p.c.stale++ // from the receiver's previous incarnation
			return
		}
		// A new incarnation of a receiver we knew: what it had buffered
		// out of order is gone, so selectively acknowledged messages must
		// go again, now.
		reset := false
		for s := q.base; s < q.nextSeq && q.peerEpoch != 0; s++ {
			if o := q.out(s); o != nil && o.sacked {
				o.sacked, o.deadline, reset = false, now, true
			}
		}
		q.peerEpoch = repoch
		if reset {
			p.timerSet, p.timerAt = true, now
			out.Down(stack.Event{Type: stack.ETimerReq, Time: now, Now: now})
		}
	}
	if cum > q.base {
		q.owedSince = now
	}
	q.acked(cum, sack)
	for len(q.queue) > 0 && q.nextSeq-q.base < uint64(p.cfg.Window) {
		m := q.queue[0]
		q.queue[0] = nil
		q.queue = q.queue[1:]
		p.transmit(from, q, m, now, out)
	}
}

// acked drops what an acknowledgement (cumulative cum, selective sack)
// covers and moves the window's base.
func (q *p2pPeer) acked(cum, sack uint64) {
	for s := q.base; s < cum; s++ {
		q.drop(s)
	}
	q.base = max(q.base, cum)
	for i := uint64(0); i < sackWidth && sack != 0; i++ {
		if o := q.out(cum + 1 + i); o != nil && sack&(1<<i) != 0 {
			o.sacked = true
		}
	}
	for q.base < q.nextSeq {
		if q.out(q.base) != nil {
			break
		}
		q.base++
	}
}

func (p *Pt2pt) timer(now time.Duration, out stack.Emitter) {
	if pt := p.cfg.PeerTimeout; pt > 0 && now-p.swept >= pt/4 {
		p.sweep(now)
	}
	next := time.Duration(-1)
	// Visit peers and sequence numbers in order so that runs replay exactly.
	for _, a := range p.sortedPeers(func(q *p2pPeer) bool { return q.inflight > 0 || q.ackDue }) {
		q := p.peers[a]
		if q.ackDue {
			if q.ackAt <= now {
				p.sendAck(a, q, now, out)
			} else if next < 0 || q.ackAt < next {
				next = q.ackAt
			}
		}
		for s := q.base; s < q.nextSeq; s++ {
			o := q.out(s)
			if o == nil || o.sacked {
				continue
			}
			if o.deadline <= now {
				o.rto = min(2*o.rto, p.cfg.MaxRTO)
				o.deadline = now + o.rto
				m := stack.NewMsg(o.p0, o.p1)
				m.Payload = append(m.Payload, o.more...)
				hs := o.headers()
				h := m.Push(len(hs))
				copy(h, hs)
				p.fillAck(h, q) // the current base and acknowledgement, not the first send's
				p.c.retrans++
				out.Down(stack.Event{Type: stack.ESend, Peer: a, Msg: m, Now: now})
			}
			if next < 0 || o.deadline < next {
				next = o.deadline
			}
		}
	}
	if pt := p.cfg.PeerTimeout; pt > 0 && len(p.peers) > 0 {
		// Wake to forget idle peers even when nothing else is due.
		if at := p.swept + pt/4; next < 0 || at < next {
			next = at
		}
	}
	p.timerSet = false
	if next >= 0 {
		p.timerSet, p.timerAt = true, next
		out.Down(stack.Event{Type: stack.ETimerReq, Time: next, Now: now})
	}
}

// Counters implements stack.Counted.
func (p *Pt2pt) Counters() []stack.Counter {
	return []stack.Counter{stack.C("data_sent", p.c.data), stack.C("retransmissions", p.c.retrans), stack.C("acks_sent", p.c.acksSent),
		stack.C("acks_received", p.c.acksRecv), stack.C("delivered", p.c.delivered), stack.C("duplicates", p.c.dups),
		stack.C("out_of_order", p.c.ooo), stack.C("malformed", p.c.malformed), stack.C("window_stalls", p.c.stalls), stack.C("stale", p.c.stale),
		stack.C("abandoned", p.c.abandoned), stack.C("peers_forgotten", p.c.forgotten),
		stack.C("unreliable_sent", p.c.passed), stack.C("unreliable_received", p.c.passedUp)}
}

// pt2ptDataFields is a data message's header: everything but the kind
// varies.
var pt2ptDataFields = []stack.Field{stack.Const("kind", 1, p2pData), stack.Var("from", 8), stack.Var("seq", 8),
	stack.Var("base", 8), stack.Var("ackEpoch", 8), stack.Var("ackNext", 8), stack.Var("sack", 8)}

// pt2ptPassFields is an Unreliable send's header: the kind alone.
var pt2ptPassFields = []stack.Field{stack.Const("kind", 1, p2pPass)}

// FastPath implements stack.Fast.
//
// Down CCP: the peer is known, its window has room, and the
// retransmission timer already pending fires no later than this message's
// (so no timer request). Up CCP: a data message from the peer's current
// incarnation that is the next in order, nothing buffered out of order,
// any acknowledgement it carries is current and releases nothing queued,
// and it neither completes a batch of acks nor needs a timer request.
func (p *Pt2pt) FastPath(c stack.Case) *stack.Path {
	if c == stack.SendDown || c == stack.CastDown {
		return &stack.Path{Hdr: pt2ptDataFields, CCP: p.fastSendCCP, Apply: p.fastSend,
			Unrel: &stack.Path{Hdr: pt2ptPassFields, Apply: p.fastPassDown}}
	}
	return &stack.Path{Hdr: pt2ptDataFields, CCP: p.fastRecvCCP, Apply: p.fastRecv,
		Unrel: &stack.Path{Hdr: pt2ptPassFields, Apply: p.fastPassUp}}
}

func (p *Pt2pt) fastPassDown(*stack.Event, *stack.Frame) { p.c.passed++ }
func (p *Pt2pt) fastPassUp(*stack.Event, *stack.Frame)   { p.c.passedUp++ }

func (p *Pt2pt) fastSendCCP(ev *stack.Event, _ *stack.Frame) bool {
	q := p.known(ev.Peer)
	return q != nil && q.nextSeq-q.base < uint64(p.cfg.Window) && p.timerSet && ev.Now+p.cfg.RTO >= p.timerAt
}

// p2pMemo is how many peers the fast paths' lookup cache holds.
const p2pMemo = 4

type p2pMemoEntry struct {
	a stack.Addr
	q *p2pPeer
}

// known returns the peer a fast path is for, or nil.
func (p *Pt2pt) known(a stack.Addr) *p2pPeer {
	for i := range p.memo {
		if e := &p.memo[i]; e.q != nil && sameAddr(e.a, a) {
			return e.q
		}
	}
	q := p.peers[a]
	if q != nil {
		copy(p.memo[1:], p.memo[:p2pMemo-1])
		p.memo[0] = p2pMemoEntry{a, q}
	}
	return q
}

func (p *Pt2pt) fastSend(ev *stack.Event, f *stack.Frame) {
	q := p.known(ev.Peer)
	seq := q.nextSeq
	q.nextSeq++
	v := f.V
	v[0], v[1], v[2] = p.epoch, seq, q.base
	v[3], v[4], v[5] = q.ackFields()
	if q.nextSeq-q.base > uint64(len(q.win)) {
		q.grow()
	}
	o := &q.win[seq%uint64(len(q.win))]
	*o = p2pOut{rto: p.cfg.RTO, live: true}
	if n := f.HeaderLen(0); n <= len(o.hdr) {
		o.hlen = len(f.AppendHeaders(o.hdr[:0], 0))
	} else {
		o.hbig = f.AppendHeaders(make([]byte, 0, n), 0)
	}
	o.keepPayload(ev.Msg.Payload)
	o.deadline = ev.Now + o.rto
	if q.inflight == 0 {
		q.owedSince = ev.Now
	}
	q.inflight++
	q.used = ev.Now
	p.c.data++
}

func (p *Pt2pt) fastRecvCCP(ev *stack.Event, f *stack.Frame) bool {
	q := p.known(ev.Peer)
	v := f.V
	from, seq, base, ackEpoch, cum := v[0], v[1], v[2], v[3], v[4]
	if q == nil || from != q.rEpoch || seq != q.next || base > q.next || len(q.ooo) != 0 ||
		q.unackedN+1 >= ackEvery(p.cfg.Window) || p.cfg.AckDelay < 0 {
		return false
	}
	// An ack that moves the window's base releases queued messages,
	// which only the full path can send; one that does not (under load,
	// most data carries the same ack as the message before it) changes
	// what fastRecv changes.
	if ackEpoch != 0 && (ackEpoch != p.epoch || cum > q.nextSeq || from != q.peerEpoch || len(q.queue) != 0 && cum > q.base) {
		return false
	}
	return q.ackDue || p.timerSet && ev.Now+p.cfg.AckDelay >= p.timerAt
}

func (p *Pt2pt) fastRecv(ev *stack.Event, f *stack.Frame) {
	q := p.known(ev.Peer)
	q.heard, q.used = ev.Now, ev.Now
	if v := f.V; v[3] != 0 {
		p.c.acksRecv++
		if v[4] > q.base {
			q.owedSince = ev.Now
		}
		q.acked(v[4], v[5])
	}
	q.next++
	q.unackedN++
	if !q.ackDue {
		q.ackDue, q.ackAt = true, ev.Now+p.cfg.AckDelay
	}
	p.c.delivered++
}
