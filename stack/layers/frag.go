package layers

import (
	"encoding/binary"

	"strata/stack"
)

// Frag header: kind u8 (0 whole, 1 fragment), id u32, idx u16, n u16.
const (
	fragWhole = 0
	fragPart  = 1
	fragHdr   = 9
	// lowerHeaders is the header room reserved for the layers below frag
	// (pt2pt and bottom, with room to spare). Derived from their sizes so
	// that a header change cannot make fragments overflow the datagram.
	lowerHeaders = pt2ptHdr + bottomHdr + 13
)

// Frag splits messages larger than the transport's datagram into
// fragments and reassembles them. The split aliases the message's buffers
// (no copy on send); reassembly copies once into the delivered buffer.
//
// Requires a reliable FIFO channel below, so fragments of one message
// arrive complete and in order, and fragments of different messages from
// one sender never interleave (a message's fragments are emitted together).
// A whole message marked Unreliable (stack.Event) stays so; the fragments
// of any message go reliably.
type Frag struct {
	chunk int
	id    uint32
	peers map[stack.Addr]*fragRx
	c     struct{ whole, split, frags, reassembled, malformed, tooBig uint64 }
}

type fragRx struct {
	id       uint32
	next, n  uint16
	buf      []byte
	inFlight bool
}

// FragSpec describes Frag.
var FragSpec = stack.Spec{
	Name: "frag", Doc: "fragmentation and reassembly",
	Requires: []stack.Prop{stack.Reliable, stack.FIFO},
	Provides: []stack.Prop{stack.Fragment},
	New:      func(c stack.Config) stack.Layer { return NewFrag(c) },
}

// NewFrag builds the layer for cfg.MTU.
func NewFrag(cfg stack.Config) *Frag {
	cfg = cfg.WithDefaults()
	return &Frag{chunk: max(cfg.MTU-lowerHeaders-fragHdr, 1), peers: map[stack.Addr]*fragRx{}}
}

func (f *Frag) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type != stack.ESend {
		out.Down(ev)
		return
	}
	m := ev.Msg
	total := m.Len()
	if total <= f.chunk {
		h := m.Push(fragHdr)
		clear(h)
		f.c.whole++
		out.Down(ev)
		return
	}
	n := (total + f.chunk - 1) / f.chunk
	if n > 0xffff {
		f.c.tooBig++ // over 4 GiB at the default MTU: refused, not truncated
		return
	}
	f.id++
	f.c.split++
	vec := m.Vec(nil)
	for i := 0; i < n; i++ {
		// Take the next chunk bytes from vec, as sub-slices.
		var parts [][]byte
		need := f.chunk
		for need > 0 && len(vec) > 0 {
			take := min(need, len(vec[0]))
			parts = append(parts, vec[0][:take])
			if take == len(vec[0]) {
				vec = vec[1:]
			} else {
				vec[0] = vec[0][take:]
			}
			need -= take
		}
		// Fragments go reliably even if the message did not ask to:
		// reassembly needs every one, in order.
		fm := stack.NewMsg(parts...)
		h := fm.Push(fragHdr)
		h[0] = fragPart
		binary.BigEndian.PutUint32(h[1:], f.id)
		binary.BigEndian.PutUint16(h[5:], uint16(i))
		binary.BigEndian.PutUint16(h[7:], uint16(n))
		f.c.frags++
		out.Down(stack.Event{Type: stack.ESend, Peer: ev.Peer, Msg: fm, Now: ev.Now})
	}
}

func (f *Frag) Up(ev stack.Event, out stack.Emitter) {
	if ev.Type != stack.EDeliver {
		out.Up(ev)
		return
	}
	h, err := ev.Msg.Pop(fragHdr)
	if err != nil || h[0] > fragPart {
		f.c.malformed++
		return
	}
	if h[0] == fragWhole {
		out.Up(ev)
		return
	}
	id := binary.BigEndian.Uint32(h[1:])
	idx := binary.BigEndian.Uint16(h[5:])
	n := binary.BigEndian.Uint16(h[7:])
	rx := f.peers[ev.Peer]
	if rx == nil {
		rx = &fragRx{}
		f.peers[ev.Peer] = rx
	}
	if idx == 0 {
		if n < 2 {
			f.c.malformed++
			return
		}
		rx.id, rx.next, rx.n, rx.inFlight = id, 0, n, true
		rx.buf = make([]byte, 0, int(n)*f.chunk)
	}
	if !rx.inFlight || id != rx.id || idx != rx.next || n != rx.n {
		// Impossible over a reliable FIFO channel from a correct sender.
		f.c.malformed++
		rx.inFlight = false
		return
	}
	rx.buf = append(rx.buf, ev.Msg.Body()...)
	ev.Msg.Free()
	rx.next++
	if rx.next == rx.n {
		rx.inFlight = false
		f.c.reassembled++
		out.Up(stack.Event{Type: stack.EDeliver, Peer: ev.Peer, Msg: stack.Received(rx.buf), Now: ev.Now})
		rx.buf = nil
	}
}

// Counters implements stack.Counted.
func (f *Frag) Counters() []stack.Counter {
	return []stack.Counter{stack.C("whole", f.c.whole), stack.C("split", f.c.split), stack.C("fragments_sent", f.c.frags),
		stack.C("reassembled", f.c.reassembled), stack.C("malformed", f.c.malformed), stack.C("too_big", f.c.tooBig)}
}

// fragWholeFields: a whole message's header is all zeros.
var fragWholeFields = []stack.Field{stack.Const("kind", 1, fragWhole), stack.Const("id", 4, 0), stack.Const("idx", 2, 0), stack.Const("n", 2, 0)}

// FastPath implements stack.Fast. CCP (down): the message fits in one
// datagram. Up, a whole message passes. Sends and casts alike (below the
// multicast layer, a cast's copies are unreliable sends).
func (f *Frag) FastPath(c stack.Case) *stack.Path {
	if c == stack.SendDown || c == stack.CastDown {
		return &stack.Path{Hdr: fragWholeFields, CCP: f.fastWholeCCP, Apply: f.fastWhole}
	}
	return &stack.Path{Hdr: fragWholeFields}
}

func (f *Frag) fastWholeCCP(_ *stack.Event, fr *stack.Frame) bool { return fr.Len() <= f.chunk }
func (f *Frag) fastWhole(*stack.Event, *stack.Frame)              { f.c.whole++ }
