package layers

import (
	"encoding/binary"
	"time"

	"strata/stack"
)

// Suspect header: kind u8 (0 pass, 1 heartbeat). A heartbeat's body names
// the view it is for: its ID (u64) and maker.
//
// Suspect is the heartbeat failure detector. Every Config.Heartbeat it
// sends each other member of the current view a heartbeat naming the view;
// a member from which no heartbeat for this very view arrived for
// Config.SuspectAfter is suspected: an ESuspect goes up, once per view.
// Only a heartbeat for the receiver's view counts, so a process that
// lost the view (it went through a merge elsewhere) is suspected even if
// it keeps sending other messages. The view comes from the membership layer
// above (EView down); until one does, it is Config.Members (ID 1).
//
// Heartbeats are Unreliable sends (not held by the reliable layer's
// window or FIFO order behind data and its retransmissions).
//
// Guarantees: a member that stops sending heartbeats for the view, or
// whose heartbeats stop arriving, is suspected within SuspectAfter plus
// one heartbeat interval; a member is never suspected while its heartbeats
// arrive at least every SuspectAfter (the timer, not the arrival of
// messages, decides: a process whose CPU is saturated still reads its
// heartbeats, in arrival order, before its timer fires). Assumes time only
// from events, as every layer.
type Suspect struct {
	cfg      stack.Config
	view     *stack.View
	self     int
	heard    map[stack.Addr]time.Duration
	suspects map[stack.Addr]bool
	timer    periodic
	c        struct{ beatsSent, beatsRecv, otherView, suspicions, malformed uint64 }
}

const (
	suspectPass = 0
	suspectBeat = 1
)

// SuspectSpec describes Suspect.
var SuspectSpec = stack.Spec{
	Name: "suspect", Doc: "heartbeat failure detector: ESuspect for members silent longer than SuspectAfter",
	Requires: []stack.Prop{stack.Datagram},
	Provides: []stack.Prop{stack.FailureDetection},
	// Its heartbeats go Unreliable.
	SendsUnreliable: true,
	New:             func(c stack.Config) stack.Layer { return NewSuspect(c) },
}

// NewSuspect builds the layer for the view cfg.Members (or just
// cfg.Local).
func NewSuspect(cfg stack.Config) *Suspect {
	cfg = cfg.WithDefaults()
	s := &Suspect{cfg: cfg}
	s.install(initialView(cfg), 0)
	return s
}

func (s *Suspect) install(v *stack.View, now time.Duration) {
	s.view, s.self = v, v.Rank(s.cfg.Local)
	s.heard, s.suspects = map[stack.Addr]time.Duration{}, map[stack.Addr]bool{}
	for _, m := range v.Members {
		s.heard[m] = now
	}
}

func (s *Suspect) Down(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.ESend, stack.ECast:
		ev.Msg.Push(1)[0] = suspectPass
	case stack.EView:
		s.install(ev.View, ev.Now)
	}
	out.Down(ev)
}

func (s *Suspect) Up(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.ETimer:
		switch {
		case s.timer.due(ev, out):
			s.tick(ev.Time, out)
		case !s.timer.on:
			s.timer.arm(ev.Time, s.cfg.Heartbeat, out) // the node's first event
		}
		out.Up(ev)
		return
	case stack.EDeliver:
	default:
		out.Up(ev)
		return
	}
	h, err := ev.Msg.Pop(1)
	if err != nil || h[0] > suspectBeat {
		s.c.malformed++
		ev.Msg.Free()
		return
	}
	if h[0] == suspectPass {
		out.Up(ev)
		return
	}
	body := ev.Msg.Body()
	ev.Msg.Free()
	s.c.beatsRecv++
	if string(body) != string(s.beatBody()) {
		s.c.otherView++
		return
	}
	if _, ok := s.heard[ev.Peer]; ok {
		s.heard[ev.Peer] = ev.Now
	}
}

// tick suspects the silent and sends heartbeats to the others.
func (s *Suspect) tick(now time.Duration, out stack.Emitter) {
	s.timer.arm(now, s.cfg.Heartbeat, out)
	if s.self < 0 {
		return
	}
	for _, m := range s.view.Members {
		if m == s.cfg.Local || s.suspects[m] {
			continue
		}
		if now-s.heard[m] > s.cfg.SuspectAfter {
			s.suspects[m] = true
			s.c.suspicions++
			out.Up(stack.Event{Type: stack.ESuspect, Peer: m, Now: now})
			continue
		}
		msg := stack.NewMsg(s.beatBody())
		msg.Push(1)[0] = suspectBeat
		s.c.beatsSent++
		// Unreliable: a heartbeat sent reliably waits behind the data
		// in the point-to-point window and, with FIFO delivery, behind
		// every retransmission of it, so a member saturated with casts
		// could look silent for SuspectAfter and be removed (seen in
		// bench mcast --tuned on a loaded machine). A lost heartbeat
		// needs no retransmission: the next follows in Heartbeat.
		out.Down(stack.Event{Type: stack.ESend, Peer: m, Msg: msg, Now: now, Unreliable: true})
	}
}

// beatBody names the view: its ID and maker.
func (s *Suspect) beatBody() []byte {
	return append(binary.BigEndian.AppendUint64(nil, s.view.ID), s.view.By...)
}

// Counters implements stack.Counted.
func (s *Suspect) Counters() []stack.Counter {
	return []stack.Counter{stack.C("heartbeats_sent", s.c.beatsSent), stack.C("heartbeats_received", s.c.beatsRecv),
		stack.C("other_view_heartbeats", s.c.otherView), stack.C("suspicions", s.c.suspicions), stack.C("malformed", s.c.malformed)}
}

var suspectPassFields = []stack.Field{stack.Const("kind", 1, suspectPass)}

// FastPath implements stack.Fast: messages pass under a constant header.
func (s *Suspect) FastPath(c stack.Case) *stack.Path {
	return &stack.Path{Hdr: suspectPassFields}
}
