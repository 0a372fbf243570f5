package layers

import (
	"encoding/binary"
	"testing"
	"time"

	"strata/stack"
)

// TestStableGossipsUnderLoad checks that a member gossips once it has
// delivered a quarter of the cast window since it last gossiped, without
// waiting for its timer, and that the gossip carries its delivery vector.
func TestStableGossipsUnderLoad(t *testing.T) {
	members := []stack.Addr{"a", "b", "c"}
	s := NewStable(stack.Config{Local: "a", Members: members, CastWindow: 8, GossipEvery: time.Hour})
	rec := &recorder{}
	var sent []stack.Event
	out := emitFunc{down: func(ev stack.Event) {
		if ev.Type == stack.ESend {
			sent = append(sent, ev)
		}
		rec.Down(ev)
	}, up: rec.Up}
	deliver := func(from stack.Addr, seq uint64) {
		m := stack.NewMsg([]byte("x"))
		m.Push(stableHdr)[0] = stableData
		s.Up(stack.Event{Type: stack.EDeliver, Peer: from, Seq: seq, Msg: stack.Received(m.AppendTo(nil))}, out)
	}
	// gossipAfter = 8/4 = 2: the first delivery only arms the timer.
	deliver("b", 1)
	if len(sent) != 0 {
		t.Fatalf("gossip after one delivery: %v", rec.lines)
	}
	deliver("c", 1)
	if len(sent) != 2 {
		t.Fatalf("after two deliveries (a quarter of the window): %d gossip sends, want 2 (to b and c); events %v", len(sent), rec.lines)
	}
	for _, ev := range sent {
		wire := ev.Msg.AppendTo(nil)
		if wire[0] != stableGossip {
			t.Fatalf("gossip to %s has kind %d", ev.Peer, wire[0])
		}
		body := wire[stableHdr:]
		if len(body) != 8+16*3 {
			t.Fatalf("gossip body %d bytes", len(body))
		}
		got := []uint64{binary.BigEndian.Uint64(body[8:]), binary.BigEndian.Uint64(body[16:]), binary.BigEndian.Uint64(body[24:])}
		if got[0] != 0 || got[1] != 1 || got[2] != 1 {
			t.Fatalf("gossip to %s carries delivered %v, want [0 1 1]", ev.Peer, got)
		}
	}
	// The count starts again: one more delivery does not gossip, two do.
	sent = nil
	deliver("b", 2)
	if len(sent) != 0 {
		t.Fatalf("gossip one delivery after the last: %v", rec.lines)
	}
	deliver("b", 3)
	if len(sent) != 2 {
		t.Fatalf("second round: %d gossip sends, want 2", len(sent))
	}
}

type emitFunc struct{ down, up func(stack.Event) }

func (e emitFunc) Down(ev stack.Event) { e.down(ev) }
func (e emitFunc) Up(ev stack.Event)   { e.up(ev) }

// When a member reaches its gossip threshold but everything it delivered
// is already stable (the others reported more), it has nothing to gossip;
// its count must still start again, or every later cast would fail the
// fast path's CCP and take the full stack.
func TestStableCountRestartsWithNothingToGossip(t *testing.T) {
	members := []stack.Addr{"a", "b", "c"}
	s := NewStable(stack.Config{Local: "a", Members: members, CastWindow: 8, GossipEvery: time.Hour})
	out := emitFunc{down: func(stack.Event) {}, up: func(stack.Event) {}}
	up := func(from stack.Addr, kind byte, seq uint64, body []byte) {
		m := stack.NewMsg(body)
		m.Push(stableHdr)[0] = kind
		s.Up(stack.Event{Type: stack.EDeliver, Peer: from, Seq: seq, Msg: stack.Received(m.AppendTo(nil))}, out)
	}
	// b and c report having delivered 10 casts from each of them.
	for _, from := range []stack.Addr{"b", "c"} {
		body := make([]byte, 8+16*3)
		binary.BigEndian.PutUint64(body, 1) // view 1
		binary.BigEndian.PutUint64(body[16:], 10)
		binary.BigEndian.PutUint64(body[24:], 10)
		up(from, stableGossip, 0, body)
	}
	up("b", stableData, 1, []byte("x"))
	up("c", stableData, 1, []byte("x")) // the threshold (8/4): nothing unstable
	ccp := s.FastPath(stack.CastUp).CCP
	if !ccp(&stack.Event{Type: stack.EDeliver, Peer: "b", Seq: 2}, nil) {
		t.Fatalf("after a threshold with nothing to gossip, the next cast fails the fast path's CCP (count %d)", s.fresh)
	}
}
