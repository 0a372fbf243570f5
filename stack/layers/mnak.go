package layers

import (
	"encoding/binary"
	"slices"
	"time"

	"strata/stack"
)

// Mnak header (25 bytes): kind u8, view u64, a u64, b u64.
//
//	view    the ID of the view the cast belongs to; casts, statuses and
//	        naks of another view are dropped (counted as stale)
//	kind 0  point-to-point pass-through (a, b unused): ESend below the
//	        group layers, as unreliable as the transport
//	kind 1  cast data: a = the origin's cast number (1, 2, ...)
//	kind 2  status: a = the number of casts the origin has sent (so a
//	        receiver can see it missed the last ones)
//	kind 3  nak: a request to the origin to resend its casts [a, b)
//
// Casts travel from their origin to every other member of the view as
// datagrams; a receiver delivers each origin's casts in order, buffers
// those that arrive early, and asks the origin again (a nak) for what it
// misses, at most every Config.StatusEvery per origin. An origin keeps
// every cast it sent until the stable layer reports (EStable down) that
// every member delivered it, and says how many it has sent every
// StatusEvery while any is unstable.
const (
	mnakHdr    = 25
	mnakP2P    = 0
	mnakData   = 1
	mnakStatus = 2
	mnakNak    = 3
	// maxAhead bounds how far past the next expected cast a receiver
	// believes an origin to be (more is garbage, not a lagging receiver:
	// an origin keeps every unstable cast, and stability lags by a few
	// gossip rounds).
	maxAhead = 1 << 20
)

// Mnak is reliable FIFO multicast with negative acknowledgements within a
// view: Config.Members, or just Config.Local (view ID 1, initialView),
// until an EView comes down from the membership layer, which starts a new
// cast numbering for its members.
//
// Guarantees, between members that stay up, over a transport that may
// lose, duplicate, delay and reorder: every cast is delivered exactly once
// at every other member, in its origin's order, with Event.Seq set to its
// cast number. Assumes members do not restart within the view (the
// membership layer gives each incarnation a new view).
type Mnak struct {
	cfg     stack.Config
	view    uint64
	self    int // own rank in Members, -1 if not a member
	members []stack.Addr
	others  []stack.Addr // members but this one: where casts go
	rank    ranks
	// sending
	sent    uint64   // casts sent; cast n is out.at(n-1-outBase)
	out     mnakOuts // casts not yet stable, as sent
	outBase uint64   // casts below outBase+1 are stable and dropped
	// receiving, per origin rank
	in    []mnakIn
	timer periodic
	c     struct{ casts, delivered, dups, ooo, naksSent, naksRecv, resent, status, malformed, stranger, stale uint64 }
}

// mnakOut is a cast kept for retransmission: the headers of the layers
// above, copied into the queue's arena, and the payload, not copied: the
// sender's buffer, which Node.Cast's contract leaves unchanged while the
// stack holds it. Arena bytes are never overwritten once written, so
// slices of the headers handed to the layers below and, on the bypass, to
// the layers above stay valid after the entry is dropped.
type mnakOut struct {
	hdr, body []byte
}

// keepPayload keeps msg's payload: the sender's buffer, joined if it
// came in parts.
func (o *mnakOut) keepPayload(msg *stack.Msg) {
	switch len(msg.Payload) {
	case 0:
	case 1:
		o.body = msg.Payload[0]
	default:
		o.body = make([]byte, 0, msg.Len()-len(msg.Headers()))
		for _, p := range msg.Payload {
			o.body = append(o.body, p...)
		}
	}
}

// mnakOuts is a queue of mnakOut in a ring that doubles when full: a cast
// costs no copying of the entries before it (as a slice that drops from
// the front and appends at the back would) and no fresh memory but its
// headers' bytes in the arena (entries kept in chunks that were never
// reused, a fresh 100 KiB every 1,024 casts, took about 20 ns a cast in
// a CPU profile of the cast-down fast path; an end-to-end A/B could not
// tell the two apart).
type mnakOuts struct {
	ring  []mnakOut // its length is zero or a power of two
	head  int       // the oldest entry's index in ring
	n     int       // entries
	arena arena     // the entries' headers
}

// at returns entry i (0: the oldest).
func (q *mnakOuts) at(i int) *mnakOut { return &q.ring[(q.head+i)&(len(q.ring)-1)] }

// push adds an entry, empty, and returns it.
func (q *mnakOuts) push() *mnakOut {
	if q.n == len(q.ring) {
		ring := make([]mnakOut, max(64, 2*len(q.ring)))
		for i := range q.n {
			ring[i] = *q.at(i)
		}
		q.ring, q.head = ring, 0
	}
	q.n++
	return q.at(q.n - 1)
}

// room returns where an entry's n bytes of headers go: the caller appends
// them and keeps the result as the entry's hdr.
func (q *mnakOuts) room(n int) []byte { return q.arena.take(n)[:0] }

// drop removes the oldest entry.
func (q *mnakOuts) drop() {
	*q.at(0) = mnakOut{}
	q.head = (q.head + 1) & (len(q.ring) - 1)
	q.n--
}

type mnakIn struct {
	next  uint64 // the next cast number to deliver
	known uint64 // the origin has sent at least this many
	ooo   map[uint64]*stack.Msg
	nakAt time.Duration // no nak to this origin before then
}

// MnakSpec describes Mnak.
var MnakSpec = stack.Spec{
	Name: "mnak", Doc: "reliable FIFO multicast: numbered casts, naks, retransmission from the origin",
	Requires: []stack.Prop{stack.Datagram},
	Provides: []stack.Prop{stack.Multicast},
	// Its casts' copies, statuses and naks go Unreliable.
	SendsUnreliable: true,
	New:             func(c stack.Config) stack.Layer { return NewMnak(c) },
}

// NewMnak builds the layer for the initial view (cfg.Members, or just
// cfg.Local).
func NewMnak(cfg stack.Config) *Mnak {
	cfg = cfg.WithDefaults()
	m := &Mnak{cfg: cfg}
	m.install(initialView(cfg))
	return m
}

// install starts view v: fresh numbering, nothing buffered.
func (m *Mnak) install(v *stack.View) {
	for _, in := range m.in {
		for _, msg := range in.ooo {
			msg.Free()
		}
	}
	m.view, m.self, m.members, m.rank = v.ID, -1, slices.Clone(v.Members), newRanks(v.Members)
	m.others = m.others[:0:0]
	for i, a := range m.members {
		if a == m.cfg.Local {
			m.self = i
		} else {
			m.others = append(m.others, a)
		}
	}
	m.in = make([]mnakIn, len(m.members))
	for i := range m.in {
		m.in[i] = mnakIn{next: 1, ooo: map[uint64]*stack.Msg{}}
	}
	m.sent, m.out, m.outBase = 0, mnakOuts{}, 0
}

func (m *Mnak) put(h []byte, kind byte, a, b uint64) {
	h[0] = kind
	binary.BigEndian.PutUint64(h[1:], m.view)
	binary.BigEndian.PutUint64(h[9:], a)
	binary.BigEndian.PutUint64(h[17:], b)
}

func (m *Mnak) Down(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.ECast:
		m.cast(ev, out)
	case stack.ESend:
		m.put(ev.Msg.Push(mnakHdr), mnakP2P, 0, 0)
		out.Down(ev)
	case stack.EView:
		m.install(ev.View)
	case stack.EStable:
		// Every member has delivered our casts up to Stable[self].
		if st := ev.Stability(); m.self >= 0 && m.self < len(st) {
			upto := min(st[m.self], m.sent)
			for m.outBase < upto {
				m.out.drop()
				m.outBase++
			}
		}
	default:
		out.Down(ev)
	}
}

func (m *Mnak) cast(ev stack.Event, out stack.Emitter) {
	if m.self < 0 {
		ev.Msg.Free() // not a member: nothing to cast to
		m.c.stranger++
		return
	}
	m.sent++
	m.c.casts++
	h := ev.Msg.Headers()
	o := m.out.push()
	o.hdr = append(m.out.room(len(h)), h...)
	o.keepPayload(ev.Msg)
	ev.Msg.Free()
	for i, a := range m.members {
		if i != m.self {
			m.emitData(a, m.sent, o, ev.Now, out)
		}
	}
	m.arm(ev.Now, out)
}

func (m *Mnak) emitData(to stack.Addr, seq uint64, o *mnakOut, now time.Duration, out stack.Emitter) {
	msg := stack.NewMsg(o.hdr, o.body)
	m.put(msg.Push(mnakHdr), mnakData, seq, 0)
	out.Down(stack.Event{Type: stack.ESend, Peer: to, Msg: msg, Now: now, Unreliable: true})
}

func (m *Mnak) emitCtl(to stack.Addr, kind byte, a, b uint64, now time.Duration, out stack.Emitter) {
	msg := stack.NewMsg()
	m.put(msg.Push(mnakHdr), kind, a, b)
	out.Down(stack.Event{Type: stack.ESend, Peer: to, Msg: msg, Now: now, Unreliable: true})
}

// arm asks for a timer StatusEvery from now if none is pending.
func (m *Mnak) arm(now time.Duration, out stack.Emitter) { m.timer.arm(now, m.cfg.StatusEvery, out) }

func (m *Mnak) Up(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.ETimer:
		if m.timer.due(ev, out) {
			m.tick(ev.Time, out)
		}
		out.Up(ev)
		return
	case stack.EDeliver:
	default:
		out.Up(ev)
		return
	}
	h, err := ev.Msg.Pop(mnakHdr)
	if err != nil {
		m.c.malformed++
		ev.Msg.Free()
		return
	}
	kind, view, a, b := h[0], binary.BigEndian.Uint64(h[1:]), binary.BigEndian.Uint64(h[9:]), binary.BigEndian.Uint64(h[17:])
	if kind == mnakP2P {
		out.Up(ev)
		return
	}
	if view != m.view {
		m.c.stale++ // another view's: its origin resends it if it matters
		ev.Msg.Free()
		return
	}
	r, ok := m.rank.of(ev.Peer)
	if !ok || r == m.self {
		m.c.stranger++
		ev.Msg.Free()
		return
	}
	switch kind {
	case mnakData:
		m.receive(r, a, ev, out)
	case mnakStatus:
		m.c.status++
		ev.Msg.Free()
		if a > m.in[r].known && a-m.in[r].next <= maxAhead {
			m.in[r].known = a
			m.nak(r, ev.Now, out)
		}
	case mnakNak:
		m.c.naksRecv++
		ev.Msg.Free()
		// Resend what is still buffered of [a, b).
		for seq := max(a, m.outBase+1); seq < b && seq <= m.sent; seq++ {
			m.c.resent++
			m.emitData(ev.Peer, seq, m.out.at(int(seq-1-m.outBase)), ev.Now, out)
		}
	default:
		m.c.malformed++
		ev.Msg.Free()
	}
}

func (m *Mnak) receive(r int, seq uint64, ev stack.Event, out stack.Emitter) {
	in := &m.in[r]
	if seq == 0 || seq-in.next > maxAhead && seq > in.next {
		m.c.malformed++ // not a number a member of this view can have reached
		ev.Msg.Free()
		return
	}
	in.known = max(in.known, seq)
	switch {
	case seq < in.next:
		m.c.dups++
		ev.Msg.Free()
		return
	case seq > in.next:
		if _, dup := in.ooo[seq]; dup {
			m.c.dups++
			ev.Msg.Free()
		} else {
			m.c.ooo++
			in.ooo[seq] = ev.Msg
		}
		m.nak(r, ev.Now, out)
		return
	}
	m.deliver(r, ev, out)
	for {
		msg, ok := in.ooo[in.next]
		if !ok {
			break
		}
		delete(in.ooo, in.next)
		m.deliver(r, stack.Event{Type: stack.EDeliver, Peer: ev.Peer, Msg: msg, Now: ev.Now}, out)
	}
	if in.next <= in.known {
		m.nak(r, ev.Now, out)
	}
}

func (m *Mnak) deliver(r int, ev stack.Event, out stack.Emitter) {
	ev.Seq = m.in[r].next
	m.in[r].next++
	m.c.delivered++
	out.Up(ev)
}

// nak asks origin r for the casts it is known to have sent that have not
// arrived, unless it was asked recently; the timer asks again.
func (m *Mnak) nak(r int, now time.Duration, out stack.Emitter) {
	in := &m.in[r]
	if in.next > in.known {
		return
	}
	if now >= in.nakAt {
		// Up to the first buffered cast, or everything known.
		hi := in.known + 1
		for s := range in.ooo {
			if s > in.next && s < hi {
				hi = s
			}
		}
		m.c.naksSent++
		m.emitCtl(m.members[r], mnakNak, in.next, hi, now, out)
		in.nakAt = now + m.cfg.StatusEvery
	}
	m.arm(now, out)
}

// tick: announce how many casts we sent while any is unstable, and nak
// origins we are still missing casts from.
func (m *Mnak) tick(now time.Duration, out stack.Emitter) {
	pending := false
	if m.self >= 0 && m.sent > m.outBase {
		pending = true
		for i, a := range m.members {
			if i != m.self {
				m.emitCtl(a, mnakStatus, m.sent, 0, now, out)
			}
		}
	}
	for r := range m.in {
		if r != m.self && m.in[r].next <= m.in[r].known {
			pending = true
			m.nak(r, now, out)
		}
	}
	if pending {
		m.arm(now, out)
	}
}

// Counters implements stack.Counted.
func (m *Mnak) Counters() []stack.Counter {
	return []stack.Counter{stack.C("casts", m.c.casts), stack.C("delivered", m.c.delivered), stack.C("duplicates", m.c.dups),
		stack.C("out_of_order", m.c.ooo), stack.C("naks_sent", m.c.naksSent), stack.C("naks_received", m.c.naksRecv),
		stack.C("resent", m.c.resent), stack.C("status_received", m.c.status), stack.C("malformed", m.c.malformed),
		stack.C("from_strangers", m.c.stranger), stack.C("other_view", m.c.stale), stack.C("unstable", m.sent-m.outBase)}
}

var (
	mnakP2PFields  = []stack.Field{stack.Const("kind", 1, mnakP2P), stack.Var("view", 8), stack.Const("a", 8, 0), stack.Const("b", 8, 0)}
	mnakDataFields = []stack.Field{stack.Const("kind", 1, mnakData), stack.Var("view", 8), stack.Var("seq", 8), stack.Const("b", 8, 0)}
)

// FastPath implements stack.Fast. Point-to-point messages pass (their view
// field is not checked). A cast fans out to the other members (CCP: this
// process is a member and the status timer is pending). A cast received
// (CCP: this view, from another member, the next in its origin's order,
// nothing buffered out of order from it and nothing more known to be
// missing) is delivered with its number.
func (m *Mnak) FastPath(c stack.Case) *stack.Path {
	switch c {
	case stack.SendDown:
		return &stack.Path{Hdr: mnakP2PFields, Apply: m.fastSend}
	case stack.SendUp:
		return &stack.Path{Hdr: mnakP2PFields}
	case stack.CastDown:
		return &stack.Path{Hdr: mnakDataFields, CCP: m.fastCastCCP, Fanout: m.fastFanout, Apply: m.fastCast}
	}
	return &stack.Path{Hdr: mnakDataFields, CCP: m.fastRecvCCP, Mark: m.fastMark, Apply: m.fastRecv}
}

func (m *Mnak) fastSend(_ *stack.Event, f *stack.Frame)     { f.V[0] = m.view }
func (m *Mnak) fastCastCCP(*stack.Event, *stack.Frame) bool { return m.self >= 0 && m.timer.on }
func (m *Mnak) fastFanout(*stack.Event) []stack.Addr        { return m.others }
func (m *Mnak) fastMark(ev *stack.Event, f *stack.Frame)    { ev.Seq = f.V[1] }

func (m *Mnak) fastCast(ev *stack.Event, f *stack.Frame) {
	m.sent++
	m.c.casts++
	o := m.out.push()
	o.hdr = f.AppendHeaders(m.out.room(f.HeaderLen(1)), 1)
	o.keepPayload(ev.Msg)
	f.KeepHdr, f.KeepBody = o.hdr, o.body
	f.V[0], f.V[1] = m.view, m.sent
}

func (m *Mnak) fastRecvCCP(ev *stack.Event, f *stack.Frame) bool {
	if f.V[0] != m.view {
		return false
	}
	r, ok := m.rank.of(ev.Peer)
	if !ok || r == m.self {
		return false
	}
	in := &m.in[r]
	return f.V[1] == in.next && len(in.ooo) == 0 && in.known <= in.next
}

func (m *Mnak) fastRecv(ev *stack.Event, _ *stack.Frame) {
	r, _ := m.rank.of(ev.Peer)
	in := &m.in[r]
	in.known = max(in.known, ev.Seq)
	in.next++
	m.c.delivered++
}
