package layers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/sim"
)

// peerPair is two nodes on the simulated network with their own configs.
type peerPair struct {
	net  *sim.Net
	a, b *stack.Node
	got  [][]byte // what b delivered from a
}

func newPeerPair(t *testing.T, seed uint64, cfgA, cfgB stack.Config) *peerPair {
	t.Helper()
	specs, err := Named("top,pt2pt,bottom")
	if err != nil {
		t.Fatal(err)
	}
	pp := &peerPair{net: sim.New(seed)}
	mk := func(addr stack.Addr, cfg stack.Config) *stack.Node {
		tr, err := pp.net.Endpoint(addr)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Local, cfg.Epoch = addr, uint64(pp.net.Now())+1
		return stack.NewNode(tr, pp.net.Clock(), Build(specs, cfg), stack.NodeOptions{})
	}
	pp.a, pp.b = mk("sim:a", cfgA), mk("sim:b", cfgB)
	pp.b.OnDeliver(func(_ stack.Addr, body []byte) { pp.got = append(pp.got, bytes.Clone(body)) })
	return pp
}

// TestPt2ptGivesUpOnSilentPeer: messages to a peer that never answers are
// retransmitted until PeerTimeout, then dropped and counted; the sender
// stops sending to it, and later forgets it.
func TestPt2ptGivesUpOnSilentPeer(t *testing.T) {
	for seed := range seeds(t, 5) {
		cfg := stack.Config{RTO: 10 * time.Millisecond, MaxRTO: 200 * time.Millisecond, PeerTimeout: 5 * time.Second}
		pp := newPeerPair(t, seed, cfg, cfg)
		pp.b.Close()
		pp.net.Crash("sim:b") // gone for good, as a client process that exited
		for i := 0; i < 20; i++ {
			if err := pp.a.Send("sim:b", []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		pp.net.Run(4 * time.Second)
		if n := counter(pp.a, "pt2pt", "abandoned"); n != 0 {
			t.Fatalf("seed %d: %d messages abandoned before PeerTimeout", seed, n)
		}
		retrans := counter(pp.a, "pt2pt", "retransmissions")
		if retrans == 0 {
			t.Fatalf("seed %d: nothing retransmitted to the silent peer before giving up", seed)
		}
		pp.net.Run(4 * time.Second)
		if n := counter(pp.a, "pt2pt", "abandoned"); n != 20 {
			t.Fatalf("seed %d: %d messages abandoned after PeerTimeout, want all 20", seed, n)
		}
		after := counter(pp.a, "pt2pt", "retransmissions")
		pp.net.Run(time.Minute)
		if n := counter(pp.a, "pt2pt", "retransmissions"); n != after {
			t.Fatalf("seed %d: %d retransmissions to a peer given up on", seed, n-after)
		}
		if n := counter(pp.a, "pt2pt", "peers_forgotten"); n != 1 {
			t.Fatalf("seed %d: peers forgotten = %d after a minute of silence, want 1", seed, n)
		}
	}
}

// TestPt2ptForgottenPeers: peers that forget each other after a silence
// (either side, or both) go on exchanging messages afterwards, each
// delivered once and in order, under loss, duplication and reordering.
func TestPt2ptForgottenPeers(t *testing.T) {
	for seed := range seeds(t, 12) {
		rng := rand.New(rand.NewPCG(seed, 77))
		short := stack.Config{RTO: 10 * time.Millisecond, MaxRTO: 100 * time.Millisecond, PeerTimeout: time.Second}
		never := short
		never.PeerTimeout = -1
		cfgA, cfgB := short, short
		switch seed % 3 {
		case 1:
			cfgB = never // only the sender forgets
		case 2:
			cfgA = never // only the receiver forgets
		}
		pp := newPeerPair(t, seed, cfgA, cfgB)
		pp.net.SetDefault(randomFaults(rng))
		var sent [][]byte
		burst := func(n int) {
			for i := 0; i < n; i++ {
				b := body(rng, 0, len(sent), 200)
				sent = append(sent, b)
				if err := pp.a.Send("sim:b", b); err != nil {
					t.Fatal(err)
				}
				pp.net.Run(time.Duration(rng.IntN(5)) * time.Millisecond)
			}
		}
		for round := 0; round < 3; round++ {
			burst(10 + rng.IntN(20))
			pp.net.Run(10 * time.Second) // delivered, acknowledged, then silent for long
		}
		if len(pp.got) != len(sent) {
			t.Fatalf("seed %d: delivered %d of %d messages", seed, len(pp.got), len(sent))
		}
		for i := range sent {
			if !bytes.Equal(pp.got[i], sent[i]) {
				t.Fatalf("seed %d: delivery %d is not message %d (out of order, duplicated or lost)", seed, i, i)
			}
		}
		forgotten := counter(pp.a, "pt2pt", "peers_forgotten") + counter(pp.b, "pt2pt", "peers_forgotten")
		if forgotten == 0 {
			t.Fatalf("seed %d: nobody forgot anybody: the test checks nothing", seed)
		}
		if n := counter(pp.a, "pt2pt", "abandoned"); n != 0 {
			t.Fatalf("seed %d: %d messages abandoned between live peers", seed, n)
		}
	}
}
