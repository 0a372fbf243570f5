package layers

import "strata/stack"

// Sync blocks the casts of the layers above during a view change
// (Ensemble's sync/block layer). No header.
//
// When the membership layer below starts flushing the view it raises
// EBlock; from then on every cast coming down waits here, in order, and
// goes down after the next view has gone up, so it is sent, and delivered
// by its sender too, in that view. A process that joins a group is blocked
// until its first view. An EView with Peer set (the member rejoins the
// group elsewhere, after a partition healed) keeps it blocked until the
// view it joins there; a view without this member is followed by EExit,
// and what waits is dropped then.
//
// Guarantees: casts reach the layer below only while the member is in a
// view that is not being flushed, in the order they came down. Together
// with gms below (which gives the members that stay the same casts of the
// view that ends) this is virtual synchrony: a cast is delivered in the
// view it was sent in. Assumes gms raises EBlock before it answers a flush.
type Sync struct {
	cfg     stack.Config
	blocked bool
	exited  bool
	queue   []stack.Event
	c       struct{ blocks, held, maxHeld uint64 }
}

// SyncSpec describes Sync.
var SyncSpec = stack.Spec{
	Name: "sync", Doc: "blocks casts during a view change; they go out in the next view (virtual synchrony)",
	Requires: []stack.Prop{stack.Membership},
	Provides: []stack.Prop{stack.Vsync},
	New:      func(c stack.Config) stack.Layer { return NewSync(c) },
}

// NewSync builds the layer: blocked if the process joins through
// Config.Contact.
func NewSync(cfg stack.Config) *Sync { return &Sync{cfg: cfg, blocked: cfg.Contact != ""} }

func (s *Sync) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type != stack.ECast {
		out.Down(ev)
		return
	}
	switch {
	case s.exited:
		ev.Msg.Free()
	case s.blocked:
		s.queue = append(s.queue, ev)
		s.c.held++
		s.c.maxHeld = max(s.c.maxHeld, uint64(len(s.queue)))
	default:
		out.Down(ev)
	}
}

func (s *Sync) Up(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.EBlock:
		s.blocked = true
		s.c.blocks++
		out.Up(ev)
	case stack.EView:
		out.Up(ev)
		if ev.Peer != "" || ev.View.Rank(s.cfg.Local) < 0 {
			return // rejoining elsewhere, or leaving: still blocked
		}
		s.blocked = false
		queued := s.queue
		s.queue = nil
		for _, q := range queued {
			q.Now = ev.Now
			out.Down(q)
		}
	case stack.EExit:
		s.exited = true
		for _, q := range s.queue {
			q.Msg.Free()
		}
		s.queue = nil
		out.Up(ev)
	default:
		out.Up(ev)
	}
}

// Counters implements stack.Counted.
func (s *Sync) Counters() []stack.Counter {
	return []stack.Counter{stack.C("blocks", s.c.blocks), stack.C("casts_held", s.c.held), stack.C("max_held", s.c.maxHeld), stack.C("holding", uint64(len(s.queue)))}
}

// FastPath implements stack.Fast. CCP (cast down): not blocked.
func (s *Sync) FastPath(c stack.Case) *stack.Path {
	if c != stack.CastDown {
		return stack.Pass
	}
	return &stack.Path{CCP: s.fastCastCCP}
}

func (s *Sync) fastCastCCP(*stack.Event, *stack.Frame) bool { return !s.blocked && !s.exited }
