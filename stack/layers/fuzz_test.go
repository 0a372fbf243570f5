package layers

import (
	"fmt"
	"testing"
	"time"

	"strata/stack"
)

type capture struct{ top, bottom []string }

func (c *capture) Top(ev stack.Event)    { c.top = append(c.top, ev.String()) }
func (c *capture) Bottom(ev stack.Event) { c.bottom = append(c.bottom, ev.String()) }

func fullStack(t testing.TB) []stack.Spec {
	ch, err := Configure([]stack.Prop{stack.Reliable, stack.FIFO, stack.Fragment, stack.Flow, stack.RPC})
	if err != nil {
		t.Fatal(err)
	}
	return ch.Specs
}

// validFrames returns datagrams a real sender emits: data, fragments,
// acks, credit grants, requests, responses.
func validFrames(t testing.TB) [][]byte {
	specs := fullStack(t)
	var frames [][]byte
	b := &frameSink{out: &frames}
	s := stack.NewScheduler(Build(specs, stack.Config{MTU: 200, Epoch: 1, Credit: 400}), b, nil)
	s.Inject(stack.Down, stack.Event{Type: stack.ESend, Peer: "p", Msg: stack.NewMsg([]byte("hello"))})
	s.Inject(stack.Down, stack.Event{Type: stack.ESend, Peer: "p", Msg: stack.NewMsg(make([]byte, 500))})
	s.Inject(stack.Down, stack.Event{Type: stack.ECall, Peer: "p", ID: 3, Time: time.Second, Msg: stack.NewMsg([]byte("q"))})
	s.Inject(stack.Down, stack.Event{Type: stack.EResponse, Peer: "p", ID: 9, Msg: stack.NewMsg([]byte("r"))})
	// Feed the frames back to get acks and grants too.
	r := stack.NewScheduler(Build(specs, stack.Config{MTU: 200, Epoch: 2, Credit: 400}), b, nil)
	for _, f := range append([][]byte(nil), frames...) {
		r.Inject(stack.Up, stack.Event{Type: stack.EDeliver, Peer: "q", Msg: stack.Received(append([]byte(nil), f...))})
	}
	return frames
}

type frameSink struct{ out *[][]byte }

func (f *frameSink) Top(stack.Event) {}
func (f *frameSink) Bottom(ev stack.Event) {
	if ev.Type == stack.ESend {
		*f.out = append(*f.out, ev.Msg.AppendTo(nil))
	}
}

// FuzzDatagram feeds arbitrary datagrams to a full stack: no panic, each
// one is counted by the bottom layer (received or malformed), and the
// imperative and functional compositions react identically.
func FuzzDatagram(f *testing.F) {
	for _, fr := range validFrames(f) {
		f.Add(fr, []byte{})
		if len(fr) > 3 {
			f.Add(fr[:len(fr)/2], fr)
			g := append([]byte(nil), fr...)
			g[len(g)/2] ^= 0xff
			f.Add(g, fr)
		}
	}
	f.Add([]byte{}, []byte{0x53})
	f.Fuzz(func(t *testing.T, d1, d2 []byte) {
		fuzzBothCompositions(t, fullStack(t), stack.Config{MTU: 200, Epoch: 5, Credit: 400}, d1, d2)
	})
}

// fuzzBothCompositions feeds d1, d2, d1 from "x" and a late timer to the
// stack in both compositions: each datagram is counted by the bottom
// layer, and both compositions emit the same events.
func fuzzBothCompositions(t *testing.T, specs []stack.Spec, cfg stack.Config, d1, d2 []byte) {
	var outs [2]capture
	var bottoms [2]*Bottom
	for i, functional := range []bool{false, true} {
		ls := Build(specs, cfg)
		bottoms[i] = ls[0].(*Bottom)
		var r stack.Runner
		if functional {
			r = stack.Compose(ls, &outs[i], nil)
		} else {
			r = stack.NewScheduler(ls, &outs[i], nil)
		}
		for _, d := range [][]byte{d1, d2, d1} {
			r.Inject(stack.Up, stack.Event{Type: stack.EDeliver, Peer: "x", Msg: stack.Received(append([]byte(nil), d...))})
		}
		r.Inject(stack.Up, stack.Event{Type: stack.ETimer, Time: time.Hour, Now: time.Hour})
	}
	if n := bottoms[0].received + bottoms[0].malformed; n != 3 {
		t.Fatalf("bottom counted %d of 3 datagrams", n)
	}
	if fmt.Sprint(outs[0]) != fmt.Sprint(outs[1]) {
		t.Fatalf("compositions differ on garbage:\n%v\n%v", outs[0], outs[1])
	}
}

func groupStack(t testing.TB) []stack.Spec {
	ch, err := Configure([]stack.Prop{stack.Total})
	if err != nil {
		t.Fatal(err)
	}
	return ch.Specs
}

var fuzzView = []stack.Addr{"x", "y", "z"}

// FuzzGroupDatagram feeds arbitrary datagrams from a member (the
// sequencer, so order entries are believed) to the total-order group
// stack: no panic, each is counted by the bottom layer, and both
// compositions react identically.
func FuzzGroupDatagram(f *testing.F) {
	var frames [][]byte
	s := stack.NewScheduler(Build(groupStack(f), stack.Config{Members: fuzzView, Local: "x"}), &frameSink{out: &frames}, nil)
	s.Inject(stack.Down, stack.Event{Type: stack.ECast, Msg: stack.NewMsg([]byte("cast"))})
	s.Inject(stack.Down, stack.Event{Type: stack.ESend, Peer: "y", Msg: stack.NewMsg([]byte("p2p"))})
	s.Inject(stack.Up, stack.Event{Type: stack.ETimer, Time: time.Hour, Now: time.Hour})
	for _, fr := range frames {
		f.Add(fr, []byte{})
	}
	f.Add([]byte{0x53, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, []byte{0x53, 1, 2})
	f.Fuzz(func(t *testing.T, d1, d2 []byte) {
		fuzzBothCompositions(t, groupStack(t), stack.Config{Members: fuzzView, Local: "y"}, d1, d2)
	})
}
