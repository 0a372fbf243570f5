package stackbench

import (
	"fmt"
	"time"

	"strata/stack"
	"strata/stack/layers"
)

// framesBoundary keeps every message a stack puts on the wire until taken.
// The copy that stands for the wire (wire) is made between the timed steps,
// as a transport would make it after the stack's code returned, into
// buffers set aside beforehand (topUp), so it allocates nothing in the
// measured steps either; a buffer carried to a receiver is the receiver's
// from then on (a stack may keep a received datagram), so buffers are never
// reused.
type framesBoundary struct {
	frames, alt  []frame
	small, large [][]byte // set-aside buffers: smallFrame bytes, and a full cast's
	got          int
}

// frame is one datagram: m until wire copies it into b.
type frame struct {
	to stack.Addr
	m  *stack.Msg
	b  []byte
}

func (f *framesBoundary) Top(ev stack.Event)    { f.TopRef(&ev) }
func (f *framesBoundary) Bottom(ev stack.Event) { f.BottomRef(&ev) }

// TopRef and BottomRef implement stack.RefBoundary, as Node does.
func (f *framesBoundary) TopRef(ev *stack.Event) {
	if ev.Type == stack.EDeliver {
		f.got++
	}
	if ev.Msg != nil {
		ev.Msg.Free()
	}
}

func (f *framesBoundary) BottomRef(ev *stack.Event) {
	if ev.Type == stack.ESend {
		// Grown, then filled in place (a literal copied in would stall
		// on its fields just stored; this is timed with the stack).
		f.frames = append(f.frames, frame{})
		fr := &f.frames[len(f.frames)-1]
		fr.to, fr.m = ev.Peer, ev.Msg
	}
}

// wire copies the messages of the frames taken so far into datagrams.
func (f *framesBoundary) wire() {
	for i := range f.frames {
		fr := &f.frames[i]
		if fr.m == nil {
			continue
		}
		// As the transports do, leave stack.RxSpare behind the datagram,
		// in a buffer about its size: a header-only datagram gets a small
		// one (the transports allocate each the datagram's length plus
		// the spare; one of a cast's size for every datagram would make
		// several times their garbage, and the collections it drives
		// would be measured with the stacks).
		need := fr.m.Len() + stack.RxSpare
		var b []byte
		if n := len(f.small); need <= smallFrame && n > 0 {
			b, f.small = f.small[n-1][:0], f.small[:n-1]
		} else if n := len(f.large); n > 0 && cap(f.large[n-1]) >= need {
			b, f.large = f.large[n-1][:0], f.large[:n-1]
		} else {
			b = make([]byte, 0, need)
		}
		fr.b = fr.m.AppendTo(b)
		fr.m.Free()
		fr.m = nil
	}
}

// topUp sets aside n small buffers and n of size bytes for the next
// frames.
func (f *framesBoundary) topUp(n, size int) {
	for len(f.small) < n {
		f.small = append(f.small, make([]byte, 0, smallFrame))
	}
	for len(f.large) < n {
		f.large = append(f.large, make([]byte, 0, size))
	}
}

// frameRoom bounds the headers of the datagrams the group stacks send here
// (wire copies a longer one into a buffer of its own).
const frameRoom = 96

// smallFrame is the buffer for a datagram of headers alone (an order
// entry, an acknowledgement, gossip) and the spare behind it.
const smallFrame = frameRoom + stack.RxSpare

// member is one process of a hand-carried group.
type member struct {
	addr stack.Addr
	r    stack.Runner
	out  *framesBoundary
}

// carry delivers every frame m sent to its destination.
func carry(m *member, all []*member, now time.Duration) {
	m.out.wire()
	frames := m.out.frames
	m.out.frames = m.out.alt[:0]
	for _, fr := range frames {
		for _, to := range all {
			if to.addr == fr.to {
				to.r.Inject(stack.Up, stack.Event{Type: stack.EDeliver, Peer: m.addr, Msg: stack.Received(fr.b), Now: now})
			}
		}
	}
	clear(frames)
	m.out.alt = frames[:0]
}

// GroupStacks are the group stacks GroupCodeLatency measures.
var GroupStacks = []string{"mcast4", "vsync"}

// GroupCodeLatency casts n messages of size bytes through a group stack,
// hand-carrying frames, with a virtual clock that advances 10 µs per cast
// and timers every 100 casts (stability gossip runs, buffers are
// collected).
//
//   - mcast4: reliable multicast, top, mnak, pt2pt, bottom; a casts to b.
//     down: a's cast; up: b receives it; ack: a processes b's frames.
//   - vsync: the virtually synchronous total-order stack (Total,
//     Membership, 13 layers: top, total, mflow, stable, sync, gms, elect,
//     suspect, local, mnak, frag, pt2pt, bottom), three members; a sequences, b casts, c receives. down: b's
//     cast (to a and c, and its delivery to itself, which total holds for
//     its order entry); up: c receives the cast (total holds it); ack: the
//     rest of the protocol per cast — a sequencing it, c and b receiving
//     the order entry and delivering, and every acknowledgement.
func GroupCodeLatency(stackName string, size, n int, mode string) CodeResult {
	var specs []stack.Spec
	var names []stack.Addr
	switch stackName {
	case "mcast4":
		s, err := layers.Named("top,mnak,pt2pt,bottom")
		if err != nil {
			panic(err)
		}
		specs, names = s, []stack.Addr{"a", "b"}
	case "vsync":
		ch, err := layers.Configure([]stack.Prop{stack.Total, stack.Membership})
		if err != nil {
			panic(err) // a fixed, valid property set
		}
		specs, names = ch.Specs, []stack.Addr{"a", "b", "c"}
	default:
		panic(fmt.Sprintf("unknown group stack %q", stackName))
	}
	var ms []*member
	for i, a := range names {
		// A cast window far above what is in flight here: the code path,
		// not flow control, is measured.
		ls := layers.Build(specs, stack.Config{Local: a, Members: names, Epoch: uint64(i + 1), Window: 1 << 20, CastWindow: 1 << 20, CastBytes: 1 << 40,
			Heartbeat: time.Second, SuspectAfter: time.Hour, GossipEvery: 5 * time.Millisecond, StatusEvery: 5 * time.Millisecond})
		fb := &framesBoundary{}
		ms = append(ms, &member{addr: a, r: runner(ls, fb, mode), out: fb})
	}
	caster, receiver := ms[0], ms[1]
	if stackName == "vsync" {
		caster, receiver = ms[1], ms[2]
	}
	payload := make([]byte, size)
	var now time.Duration
	wire := 0
	settle := func() {
		for busy := true; busy; {
			busy = false
			for _, m := range ms {
				if len(m.out.frames) > 0 {
					busy = true
					carry(m, ms, now)
				}
			}
		}
	}
	tick := func() {
		for _, m := range ms {
			m.r.Inject(stack.Up, stack.Event{Type: stack.ETimer, Time: now, Now: now})
		}
		settle()
	}
	var rest []frame
	round := func(i int, at func(step int)) {
		now += 10 * time.Microsecond
		for _, m := range ms {
			// Room for the largest datagram here (a cast in full
			// format) and the spare behind it; no more, as the garbage
			// the harness makes slows everything measured alike.
			m.out.topUp(64, size+frameRoom+stack.RxSpare)
		}
		// The timed steps are the stacks' code alone: wrapping the payload
		// (the application's part) or a datagram (the transport's) in a
		// Msg, and finding the receiver's frame, come before them.
		m := stack.NewMsg(payload)
		at(0)
		caster.r.Inject(stack.Down, stack.Event{Type: stack.ECast, Msg: m, Now: now})
		at(1)
		caster.out.wire()
		// The receiver's copy first, then everything else.
		rest = rest[:0]
		m = nil
		for _, fr := range caster.out.frames {
			if fr.to == receiver.addr && m == nil {
				wire = len(fr.b)
				m = stack.Received(fr.b)
			} else {
				rest = append(rest, fr)
			}
		}
		caster.out.frames = append(caster.out.frames[:0], rest...)
		at(2)
		if m != nil {
			receiver.r.Inject(stack.Up, stack.Event{Type: stack.EDeliver, Peer: caster.addr, Msg: m, Now: now})
		}
		at(3)
		settle()
		at(4)
		if i%100 == 0 {
			tick()
		}
	}
	tick()
	before := receiver.out.got
	r := measure(n, round)
	// Delivered counts the measured rounds only; the warm-up delivered
	// n/10+100 before them and the allocation pass allocRounds(n) after.
	r.Stack, r.Size, r.Mode, r.Delivered = stackName, size, mode, receiver.out.got-before-(n/10+100)-allocRounds(n)
	rs := make([]stack.Runner, len(ms))
	for i, m := range ms {
		rs[i] = m.r
	}
	r.Hits, r.WireBytes = hitRate(rs...), wire
	return r
}
