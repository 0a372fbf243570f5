package stackbench

import (
	"time"

	"strata/stack"
	"strata/stack/layers"
)

// framesBoundary keeps every frame a stack puts on the wire until taken.
type framesBoundary struct {
	frames [][]byte
	spare  [][]byte
	got    int
}

func (f *framesBoundary) Top(ev stack.Event) {
	if ev.Type == stack.EDeliver {
		f.got++
	}
	if ev.Msg != nil {
		ev.Msg.Free()
	}
}

func (f *framesBoundary) Bottom(ev stack.Event) {
	if ev.Type == stack.ESend {
		var b []byte
		if n := len(f.spare); n > 0 {
			b, f.spare = f.spare[n-1][:0], f.spare[:n-1]
		}
		f.frames = append(f.frames, ev.Msg.AppendTo(b))
		ev.Msg.Free()
	}
}

// carry delivers every frame from one stack to the other.
func (f *framesBoundary) carry(from stack.Addr, to stack.Runner, now time.Duration) {
	frames := f.frames
	f.frames = nil
	for _, fr := range frames {
		to.Inject(stack.Up, stack.Event{Type: stack.EDeliver, Peer: from, Msg: stack.Received(fr), Now: now})
	}
	f.spare = append(f.spare, frames...)
}

// GroupCodeLatency casts n messages of size bytes from a to b through the
// virtually synchronous total-order stack (Total,Membership: top, total,
// stable, gms, local, mnak, frag, pt2pt, bottom), hand-carrying frames,
// with a virtual clock that advances 10 µs per cast and timers every 100
// casts, so that the stability gossip runs and buffers are collected. a is the sequencer: its cast
// down includes delivering the cast to itself and casting the order entry;
// b's up includes delivering it in order; the last step is a processing
// b's acknowledgements. Times are per cast.
func GroupCodeLatency(size, n int, functional bool) CodeResult {
	ch, err := layers.Configure([]stack.Prop{stack.Total, stack.Membership})
	if err != nil {
		panic(err) // a fixed, valid property set
	}
	members := []stack.Addr{"a", "b"}
	mk := func(self stack.Addr, bd stack.Boundary) stack.Runner {
		// A cast window far above what is in flight here: the code path,
		// not flow control, is measured.
		ls := layers.Build(ch.Specs, stack.Config{Local: self, Members: members, Epoch: 1, Window: 1 << 20, CastWindow: 1 << 20,
			Heartbeat: time.Second, SuspectAfter: time.Hour, GossipEvery: 5 * time.Millisecond, StatusEvery: 5 * time.Millisecond})
		if functional {
			return stack.Compose(ls, bd, nil)
		}
		return stack.NewScheduler(ls, bd, nil)
	}
	fa, fb := &framesBoundary{}, &framesBoundary{}
	a, b := mk("a", fa), mk("b", fb)
	payload := make([]byte, size)
	var now time.Duration
	tick := func() {
		a.Inject(stack.Up, stack.Event{Type: stack.ETimer, Time: now, Now: now})
		b.Inject(stack.Up, stack.Event{Type: stack.ETimer, Time: now, Now: now})
		for len(fa.frames)+len(fb.frames) > 0 {
			fa.carry("a", b, now)
			fb.carry("b", a, now)
		}
	}
	round := func(i int) (d, u, k time.Duration) {
		now += 10 * time.Microsecond
		t0 := time.Now()
		a.Inject(stack.Down, stack.Event{Type: stack.ECast, Msg: stack.NewMsg(payload), Now: now})
		t1 := time.Now()
		fa.carry("a", b, now)
		t2 := time.Now()
		fb.carry("b", a, now)
		t3 := time.Now()
		if i%100 == 0 {
			tick()
		}
		return t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)
	}
	tick()
	before := fb.got
	r := measure(n, round)
	// Delivered counts the measured rounds only; the warm-up delivered
	// n/10+100 before them.
	r.Stack, r.Size, r.Functional, r.Delivered = "group", size, functional, fb.got-before-(n/10+100)
	return r
}
