package layers

import (
	"encoding/binary"
	"slices"
	"time"

	"strata/stack"
)

// Stable header: kind u8 (0 data, 1 gossip, 2 gossip reply). A gossip
// message carries, as its body, the view ID, then two u64 per member: how
// many of that member's casts the sender has delivered, then the sender's
// stable vector. Gossip of another view is dropped.
//
// Stable detects stability: a cast is stable once every member of the view
// has delivered it (own casts count when the local layer below delivers
// them back). Each member gossips its delivery vector to the others
// every Config.GossipEvery while it has seen casts that are not yet
// stable, and also as soon as it has delivered a quarter of
// Config.CastWindow casts since it last gossiped (JGroups' STABLE does
// the same after max_bytes received): under load, stability, which is
// what returns cast credit to mflow's senders, then keeps pace with the
// traffic instead of with the timer. It keeps the latest vector heard
// from each member; the element-wise minimum over all members is the
// stable vector, sent down (EStable, so that mnak drops what it keeps for
// retransmission) and up (for the application) whenever it grows. A
// member that receives gossip whose stable vector is behind what it has
// itself delivered answers at once with its own vector, so a member that
// stopped gossiping (it sees everything stable) still lets the others
// catch up.
//
// Guarantees: Stable[i] never exceeds what any member has delivered of
// member i's casts, and never decreases. Assumes Mnak below (Event.Seq on
// cast deliveries) and a static view.
type Stable struct {
	cfg       stack.Config
	view      uint64
	self      int
	members   []stack.Addr
	rank      ranks
	delivered []uint64   // what this member delivered, per origin (own: sent)
	heard     [][]uint64 // latest vector from each member
	stable    []uint64
	fresh     int    // casts delivered since this member last gossiped
	freshB    uint64 // their bytes (as mflow counts them, and this header)
	timer     periodic
	c         struct{ gossipSent, gossipRecv, updates, malformed, otherView uint64 }
}

const (
	stableHdr    = 1
	stableData   = 0
	stableGossip = 1 // periodic: answered by a member that knows more
	stableReply  = 2 // an answer: never answered
)

// StableSpec describes Stable.
var StableSpec = stack.Spec{
	Name: "stable", Doc: "stability detection: gossiped delivery vectors, EStable when all members delivered",
	Requires: []stack.Prop{stack.Multicast, stack.SelfDelivery},
	Provides: []stack.Prop{stack.Stability},
	// Its gossip goes Unreliable.
	SendsUnreliable: true,
	New:             func(c stack.Config) stack.Layer { return NewStable(c) },
}

// NewStable builds the layer for the initial view (cfg.Members, or just
// cfg.Local).
func NewStable(cfg stack.Config) *Stable {
	s := &Stable{cfg: cfg.WithDefaults()}
	s.install(initialView(cfg))
	return s
}

// install starts view v with nothing delivered.
func (s *Stable) install(v *stack.View) {
	n := len(v.Members)
	s.view, s.self, s.members, s.rank = v.ID, -1, slices.Clone(v.Members), newRanks(v.Members)
	s.fresh, s.freshB = 0, 0
	s.delivered, s.heard, s.stable = make([]uint64, n), make([][]uint64, n), make([]uint64, n)
	for i, a := range s.members {
		if a == s.cfg.Local {
			s.self = i
		}
		s.heard[i] = make([]uint64, n)
	}
}

func (s *Stable) Down(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.ECast:
		// Own casts are counted when local delivers them back up.
		ev.Msg.Push(stableHdr)[0] = stableData
	case stack.ESend:
		ev.Msg.Push(stableHdr)[0] = stableData
	}
	out.Down(ev)
}

func (s *Stable) Up(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.ETimer:
		if s.timer.due(ev, out) {
			s.tick(ev.Time, out)
		}
		out.Up(ev)
		return
	case stack.EDeliver:
	case stack.EView:
		s.install(ev.View)
		out.Up(ev)
		return
	default:
		out.Up(ev)
		return
	}
	size := ev.Msg.Len()
	h, err := ev.Msg.Pop(stableHdr)
	if err != nil || h[0] > stableReply {
		s.c.malformed++
		ev.Msg.Free()
		return
	}
	r, member := s.rank.of(ev.Peer)
	if kind := h[0]; kind != stableData {
		body := ev.Msg.Body()
		ev.Msg.Free()
		n := len(s.members)
		if !member || len(body) != 8+16*n {
			s.c.malformed++
			return
		}
		if binary.BigEndian.Uint64(body) != s.view {
			s.c.otherView++
			return
		}
		body = body[8:]
		s.c.gossipRecv++
		behind := false
		for i := range s.members {
			s.heard[r][i] = max(s.heard[r][i], binary.BigEndian.Uint64(body[8*i:]))
			if binary.BigEndian.Uint64(body[8*(n+i):]) < s.delivered[i] {
				behind = true
			}
		}
		s.update(ev.Now, out)
		if behind && kind == stableGossip && s.self >= 0 && !s.pending() {
			s.gossip(ev.Peer, stableReply, ev.Now, out)
		}
		return
	}
	if ev.Seq > 0 && member {
		s.delivered[r] = max(s.delivered[r], ev.Seq)
		s.arm(ev.Now, out)
		s.fresh++
		s.freshB += uint64(size)
		if s.fresh >= s.gossipAfter() || s.freshB >= s.gossipAfterBytes() {
			now := ev.Now
			out.Up(ev)
			s.tick(now, out)
			return
		}
	}
	out.Up(ev)
}

// gossipAfter and gossipAfterBytes are how many deliveries, and how many
// bytes delivered, make a member gossip before its timer: a quarter of a
// sender's cast window, so that credit comes back while the sender still
// has three quarters of it to spend.
func (s *Stable) gossipAfter() int { return max(1, s.cfg.CastWindow/4) }

func (s *Stable) gossipAfterBytes() uint64 { return uint64(max(1, s.cfg.CastBytes/4)) }

// update recomputes the stable vector and reports growth.
func (s *Stable) update(now time.Duration, out stack.Emitter) {
	if s.self >= 0 {
		copy(s.heard[s.self], s.delivered)
	}
	grew := false
	for i := range s.members {
		lo := s.heard[0][i]
		for m := range s.members {
			lo = min(lo, s.heard[m][i])
		}
		if lo > s.stable[i] {
			s.stable[i] = lo
			grew = true
		}
	}
	if grew {
		s.c.updates++
		// One copy for both events: every layer only reads it (mnak and
		// gms going down, mflow going up), and it is not s.stable, which
		// changes.
		v := slices.Clone(s.stable)
		out.Down(stack.Event{Type: stack.EStable, Stable: &v, Now: now})
		out.Up(stack.Event{Type: stack.EStable, Stable: &v, Now: now})
	}
}

func (s *Stable) arm(now time.Duration, out stack.Emitter) { s.timer.arm(now, s.cfg.GossipEvery, out) }

// pending reports whether this member delivered casts not yet stable: it
// then gossips on its own (its timer is armed), at the latest
// GossipEvery from now.
func (s *Stable) pending() bool {
	for i := range s.members {
		if s.delivered[i] > s.stable[i] {
			return true
		}
	}
	return false
}

// tick gossips the delivery vector while something seen is not stable.
func (s *Stable) tick(now time.Duration, out stack.Emitter) {
	s.update(now, out)
	// The count starts again even when there is nothing to gossip: left
	// at its threshold, every later delivery would come back here and
	// take the full stack (the fast path's CCP requires it below).
	s.fresh, s.freshB = 0, 0
	if !s.pending() || s.self < 0 {
		return
	}
	for i, a := range s.members {
		if i != s.self {
			s.gossip(a, stableGossip, now, out)
		}
	}
	s.arm(now, out)
}

// gossip sends this member's delivery and stable vectors to a.
func (s *Stable) gossip(a stack.Addr, kind byte, now time.Duration, out stack.Emitter) {
	n := len(s.members)
	body := make([]byte, 8+16*n)
	binary.BigEndian.PutUint64(body, s.view)
	for i := range s.members {
		binary.BigEndian.PutUint64(body[8+8*i:], s.delivered[i])
		binary.BigEndian.PutUint64(body[8+8*(n+i):], s.stable[i])
	}
	msg := stack.NewMsg(body)
	msg.Push(stableHdr)[0] = kind
	// Unreliable: a lost gossip needs no retransmission, the next one
	// (GossipEvery later at the latest, while anything is unstable)
	// carries newer vectors; sent reliably, each cost pt2pt an ack and a
	// retransmission timer, and under load its retransmissions.
	out.Down(stack.Event{Type: stack.ESend, Peer: a, Msg: msg, Now: now, Unreliable: true})
	s.c.gossipSent++
}

// Counters implements stack.Counted.
func (s *Stable) Counters() []stack.Counter {
	return []stack.Counter{stack.C("gossip_sent", s.c.gossipSent), stack.C("gossip_received", s.c.gossipRecv),
		stack.C("stable_updates", s.c.updates), stack.C("malformed", s.c.malformed), stack.C("other_view", s.c.otherView)}
}

var stableDataFields = []stack.Field{stack.Const("kind", 1, stableData)}

// FastPath implements stack.Fast. A received cast is counted (CCP: from a
// member, gossip timer pending, and it does not make this member gossip).
func (s *Stable) FastPath(c stack.Case) *stack.Path {
	if c != stack.CastUp {
		return &stack.Path{Hdr: stableDataFields}
	}
	return &stack.Path{Hdr: stableDataFields, CCP: s.fastRecvCCP, Apply: s.fastRecv}
}

func (s *Stable) fastRecvCCP(ev *stack.Event, f *stack.Frame) bool {
	_, member := s.rank.of(ev.Peer)
	return member && s.timer.on && ev.Seq > 0 && s.fresh+1 < s.gossipAfter() && s.freshB+uint64(f.Len()) < s.gossipAfterBytes()
}

func (s *Stable) fastRecv(ev *stack.Event, f *stack.Frame) {
	r, _ := s.rank.of(ev.Peer)
	s.delivered[r] = max(s.delivered[r], ev.Seq)
	s.fresh++
	s.freshB += uint64(f.Len())
}
