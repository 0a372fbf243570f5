package layers

import "strata/stack"

// Local delivers a member's own casts to itself: each ECast goes down and
// a copy comes back up at once as an EDeliver from Config.Local (with Seq
// set to the member's own cast number). No header.
//
// Guarantees: the member delivers its own casts exactly once, in the order
// it cast them, before any later event of its own. Assumes nothing below
// delivers a member's casts back to it (mnak does not).
type Local struct {
	cfg   stack.Config
	sent  uint64
	c     struct{ looped uint64 }
	arena arena // the copies of small casts (scratch memory, not state)
}

// LocalSpec describes Local.
var LocalSpec = stack.Spec{
	Name: "local", Doc: "delivers a member's own casts to itself",
	Requires: []stack.Prop{stack.Multicast},
	Provides: []stack.Prop{stack.SelfDelivery},
	New:      func(c stack.Config) stack.Layer { return &Local{cfg: c} },
}

func (l *Local) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.EView {
		l.sent = 0 // casts are numbered per view, as mnak numbers them
	}
	if ev.Type != stack.ECast {
		out.Down(ev)
		return
	}
	// The copy is taken before the cast goes down, where it is freed.
	own := stack.Received(ev.Msg.AppendTo(l.arena.take(ev.Msg.Len())[:0]))
	l.sent++
	l.c.looped++
	now := ev.Now
	seq := l.sent
	out.Down(ev)
	out.Up(stack.Event{Type: stack.EDeliver, Peer: l.cfg.Local, Msg: own, Now: now, Seq: seq})
}

func (l *Local) Up(ev stack.Event, out stack.Emitter) { out.Up(ev) }

// Counters implements stack.Counted.
func (l *Local) Counters() []stack.Counter {
	return []stack.Counter{stack.C("looped_back", l.c.looped)}
}

// FastPath implements stack.Fast: a cast goes down and loops back up.
func (l *Local) FastPath(c stack.Case) *stack.Path {
	if c != stack.CastDown {
		return stack.Pass
	}
	return &stack.Path{Apply: l.fastCast, Loop: l.fastLoop}
}

func (l *Local) fastCast(*stack.Event, *stack.Frame) { l.sent++; l.c.looped++ }

func (l *Local) fastLoop(ev, up *stack.Event) {
	up.Type, up.Peer, up.Now, up.Seq = stack.EDeliver, l.cfg.Local, ev.Now, l.sent
}
