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
	// (The fast path's CCP requires fresh+1 < gossipAfter and freshB plus
	// the cast's bytes < gossipAfterBytes.)
	if s.fresh != 0 || s.freshB != 0 {
		t.Fatalf("after a threshold with nothing to gossip, the count did not start again (%d casts, %d bytes): the next cast would fail the fast path's CCP", s.fresh, s.freshB)
	}
}

// Gossip goes Unreliable (a lost one is followed by the next); a member
// answers gossip that is behind what it delivered only when it gossips
// on nothing of its own (everything it delivered is stable), since
// otherwise its own gossip follows within GossipEvery anyway; and a
// quarter of CastBytes delivered makes a member gossip, as a quarter of
// CastWindow casts does.
func TestStableGossipUnreliableRepliesWhenIdleAndBytes(t *testing.T) {
	members := []stack.Addr{"a", "b", "c"}
	s := NewStable(stack.Config{Local: "a", Members: members, CastWindow: 1000, CastBytes: 400, GossipEvery: time.Hour})
	var sent []stack.Event
	out := emitFunc{down: func(ev stack.Event) {
		if ev.Type == stack.ESend {
			sent = append(sent, ev)
		}
	}, up: func(stack.Event) {}}
	up := func(from stack.Addr, kind byte, seq uint64, body []byte) {
		m := stack.NewMsg(body)
		m.Push(stableHdr)[0] = kind
		s.Up(stack.Event{Type: stack.EDeliver, Peer: from, Seq: seq, Msg: stack.Received(m.AppendTo(nil))}, out)
	}
	gossipFrom := func(from stack.Addr, delivered, stable [3]uint64) {
		body := make([]byte, 8+16*3)
		binary.BigEndian.PutUint64(body, 1) // view 1
		for i := range 3 {
			binary.BigEndian.PutUint64(body[8+8*i:], delivered[i])
			binary.BigEndian.PutUint64(body[8+24+8*i:], stable[i])
		}
		up(from, stableGossip, 0, body)
	}
	// One cast from b of 150 bytes as stable counts it (149 and its
	// header): a quarter of CastBytes (100) and more, so a gossips to b
	// and c at once, unreliably.
	up("b", stableData, 1, make([]byte, 149))
	if len(sent) != 2 {
		t.Fatalf("a quarter of CastBytes delivered: %d gossip sends, want 2", len(sent))
	}
	for _, ev := range sent {
		if !ev.Unreliable {
			t.Fatalf("gossip to %s is reliable", ev.Peer)
		}
	}
	// b's gossip is behind (its stable vector says nothing of b's cast
	// 1, which a delivered): a still has cast 1 of b unstable, so it
	// gossips on its own and does not answer.
	sent = nil
	gossipFrom("b", [3]uint64{0, 1, 0}, [3]uint64{})
	if len(sent) != 0 {
		t.Fatalf("a member with unstable casts answered gossip: %d sends", len(sent))
	}
	// c reports cast 1 of b too: everything a delivered is stable, and
	// a behind gossip from b is answered.
	gossipFrom("c", [3]uint64{0, 1, 0}, [3]uint64{})
	sent = nil
	gossipFrom("b", [3]uint64{0, 1, 0}, [3]uint64{})
	if len(sent) != 1 || sent[0].Peer != "b" || !sent[0].Unreliable {
		t.Fatalf("an idle member's answer to behind gossip: %v", sent)
	}
}
