package layers

import "strata/stack"

// Mflow is multicast flow control: a member may have at most
// Config.CastWindow of its own casts, and Config.CastBytes of their bytes
// (plus one cast), outstanding, that is sent in the current view and not
// yet stable (delivered by every member); further casts wait in the
// layer, in order, until stability reports progress (EStable) or a new
// view starts (EView: counting starts again, so a view change cannot lose
// credit — the JGroups bug where credits vanished across a view change
// and senders stalled for ever). No header. Bytes bound what every member
// keeps of a member's casts until they are stable (the origin for
// retransmission, every member for flushes), whatever their size; the
// count bounds the per-cast bookkeeping of small casts. A cast's bytes
// are its payload and the headers of the layers above (Event.Msg.Len()
// here).
//
// A member alone in its view is not limited: flow control bounds what the
// other members must receive and buffer, and there are none; its casts
// are stable as soon as it delivers them (stable below reports them every
// quarter window). Limiting it would also break the order of its casts:
// stability then grows while a cast this layer released is still on its
// way down (the local layer below delivers it back), so that the casts a
// window's growth releases at that point would overtake the rest of the
// ones released before it.
//
// Guarantees: the member's casts leave in the order made; at most
// CastWindow casts, and CastBytes bytes plus one cast (plus those the
// membership layer held back over a view change), are unstable at once
// while the view has other members; a cast waits only while that many
// are unstable. Assumes Stability below (EStable up, own casts counted by
// their number in the view).
type Mflow struct {
	cfg     stack.Config
	self    stack.Addr
	rank    int
	alone   bool   // the view is this member alone: no window
	sent    uint64 // own casts passed down in this view
	stable  uint64 // of those, stable
	bytes   uint64 // their bytes
	sbytes  uint64 // the bytes of the stable ones
	ends    ring   // ends.at(k): bytes once cast stable+1+k was passed down
	waiting []stack.Event
	c       struct{ waited, released, maxWaiting uint64 }
}

// MflowSpec describes Mflow.
var MflowSpec = stack.Spec{
	Name: "mflow", Doc: "multicast flow control: at most CastWindow own casts, CastBytes bytes, unstable at once",
	Requires: []stack.Prop{stack.Multicast, stack.Stability},
	Provides: []stack.Prop{stack.CastFlow},
	New:      func(c stack.Config) stack.Layer { return NewMflow(c) },
}

// NewMflow builds the layer.
func NewMflow(cfg stack.Config) *Mflow {
	cfg = cfg.WithDefaults()
	m := &Mflow{cfg: cfg, self: cfg.Local}
	m.setView(initialView(cfg))
	return m
}

func (m *Mflow) setView(v *stack.View) {
	m.rank = v.Rank(m.self)
	m.alone = len(v.Members) == 1 && m.rank == 0
}

// room reports whether a cast may go now, as far as the window goes.
func (m *Mflow) room() bool {
	return m.alone || m.sent-m.stable < uint64(m.cfg.CastWindow) && m.bytes-m.sbytes < uint64(m.cfg.CastBytes)
}

// pass counts a cast of n bytes that goes down.
func (m *Mflow) pass(n int) {
	m.sent++
	m.bytes += uint64(n)
	m.ends.push(m.bytes)
}

// stabilize counts own casts up to s stable.
func (m *Mflow) stabilize(s uint64) {
	if s <= m.stable {
		return
	}
	m.sbytes = m.ends.at(int(s - m.stable - 1))
	m.ends.drop(int(s - m.stable))
	m.stable = s
}

func (m *Mflow) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type != stack.ECast {
		out.Down(ev)
		return
	}
	if len(m.waiting) > 0 || !m.room() {
		m.waiting = append(m.waiting, ev)
		m.c.waited++
		m.c.maxWaiting = max(m.c.maxWaiting, uint64(len(m.waiting)))
		return
	}
	m.pass(ev.Msg.Len())
	out.Down(ev)
}

func (m *Mflow) Up(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.EStable:
		if st := ev.Stability(); m.rank >= 0 && m.rank < len(st) {
			m.stabilize(min(st[m.rank], m.sent))
		}
		out.Up(ev)
		m.release(out)
	case stack.EView:
		m.setView(ev.View)
		m.sent, m.stable, m.bytes, m.sbytes = 0, 0, 0, 0
		m.ends.drop(m.ends.n)
		out.Up(ev)
		m.release(out)
	default:
		out.Up(ev)
	}
}

// release sends waiting casts while the window has room.
func (m *Mflow) release(out stack.Emitter) {
	n := 0
	for n < len(m.waiting) && m.room() {
		m.pass(m.waiting[n].Msg.Len())
		n++
	}
	if n == 0 {
		return
	}
	ready := m.waiting[:n:n]
	m.waiting = m.waiting[n:]
	m.c.released += uint64(n)
	for _, ev := range ready {
		out.Down(ev)
	}
}

// Counters implements stack.Counted.
func (m *Mflow) Counters() []stack.Counter {
	return []stack.Counter{stack.C("waited", m.c.waited), stack.C("released", m.c.released),
		stack.C("waiting", uint64(len(m.waiting))), stack.C("max_waiting", m.c.maxWaiting), stack.C("outstanding", m.sent-m.stable),
		stack.C("outstanding_bytes", m.bytes-m.sbytes)}
}

// FastPath implements stack.Fast. A cast goes at once (CCP: nothing
// waiting and the window has room).
func (m *Mflow) FastPath(c stack.Case) *stack.Path {
	if c != stack.CastDown {
		return stack.Pass
	}
	return &stack.Path{CCP: m.fastCastCCP, Apply: m.fastCast}
}

func (m *Mflow) fastCastCCP(*stack.Event, *stack.Frame) bool {
	return len(m.waiting) == 0 && m.room()
}

func (m *Mflow) fastCast(_ *stack.Event, f *stack.Frame) { m.pass(f.Len()) }

// ring is a queue of numbers in a ring that doubles when full.
type ring struct {
	buf  []uint64 // its length is zero or a power of two
	head int
	n    int
}

func (r *ring) at(i int) uint64 { return r.buf[(r.head+i)&(len(r.buf)-1)] }

func (r *ring) push(x uint64) {
	if r.n == len(r.buf) {
		buf := make([]uint64, max(64, 2*len(r.buf)))
		for i := range r.n {
			buf[i] = r.at(i)
		}
		r.buf, r.head = buf, 0
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = x
	r.n++
}

// drop removes the oldest k.
func (r *ring) drop(k int) {
	if k >= r.n {
		r.head, r.n = 0, 0
		return
	}
	r.head = (r.head + k) & (len(r.buf) - 1)
	r.n -= k
}
