package layers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"strata/stack"
)

func simMembers(n int) []stack.Addr {
	out := make([]stack.Addr, n)
	for i := range out {
		out[i] = stack.Addr(fmt.Sprintf("sim:%c", 'a'+i))
	}
	return out
}

// groupRun casts random messages from every member of a static view over a
// faulty simulated network and checks, at every member: each cast is
// delivered exactly once and intact, each origin's casts in cast order,
// and with total order the same sequence everywhere; afterwards every
// cast is stable and no origin keeps any for retransmission.
func groupRun(t *testing.T, seed uint64, props string, total bool, opts stack.NodeOptions) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	n := 2 + rng.IntN(4)
	members := simMembers(n)
	cfg := stack.Config{Members: members, StatusEvery: time.Duration(5+rng.IntN(20)) * time.Millisecond,
		GossipEvery: time.Duration(10+rng.IntN(50)) * time.Millisecond}
	c := newCluster(t, seed, n, props, cfg, opts)
	c.net.SetDefault(randomFaults(rng))
	order := map[stack.Addr][][]byte{} // per receiver, every delivery in order
	for _, a := range members {
		a := a
		c.nodes[a].OnDeliver(func(from stack.Addr, b []byte) {
			order[a] = append(order[a], bytes.Clone(b))
		})
	}
	sent := make([][][]byte, n)
	casts := 20 + rng.IntN(60)
	for i := 0; i < casts; i++ {
		from := rng.IntN(n)
		b := body(rng, from, len(sent[from]), 200)
		sent[from] = append(sent[from], b)
		if err := c.nodes[members[from]].Cast(b); err != nil {
			return err
		}
		c.net.Run(time.Duration(rng.IntN(4)) * time.Millisecond)
	}
	done := func() bool {
		for _, a := range members {
			if len(order[a]) < casts {
				return false
			}
		}
		return true
	}
	if !c.net.RunUntil(done, 10*time.Minute) {
		for _, a := range members {
			t.Logf("%s delivered %d of %d; counters %v", a, len(order[a]), casts, c.nodes[a].Counters())
		}
		return fmt.Errorf("not every member delivered every cast")
	}
	c.net.Run(5 * time.Second) // duplicates and late retransmissions: none may deliver; stability settles
	for _, a := range members {
		got := order[a]
		if len(got) != casts {
			return fmt.Errorf("%s delivered %d casts, %d were sent", a, len(got), casts)
		}
		next := make([]int, n)
		for _, b := range got {
			from, i := checkBody(b)
			if from < 0 || from >= n || i != next[from] || !bytes.Equal(b, sent[from][i]) {
				return fmt.Errorf("%s: delivery of cast %d from %d is out of FIFO order, duplicated or corrupt (expected %d)", a, i, from, next[max(0, min(from, n-1))])
			}
			next[from]++
		}
		if total {
			for k, b := range order[members[0]] {
				if !bytes.Equal(got[k], b) {
					return fmt.Errorf("%s and %s disagree on delivery %d: total order broken", a, members[0], k)
				}
			}
		}
		for _, lc := range c.nodes[a].Counters() {
			if lc.Layer != "mnak" {
				continue
			}
			for _, ctr := range lc.Counters {
				if ctr.Name == "unstable" && ctr.Value != 0 {
					return fmt.Errorf("%s still keeps %d casts that every member delivered long ago", a, ctr.Value)
				}
			}
		}
	}
	return nil
}

// checkBody reads the sender and index of a body made by body().
func checkBody(b []byte) (from, i int) {
	if len(b) < 16 {
		return -1, -1
	}
	return int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])),
		int(uint32(b[4])<<24 | uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7]))
}

// TestMulticastUnderFaults: reliable FIFO multicast with self delivery and
// stability, under loss, duplication, reordering and jitter.
func TestMulticastUnderFaults(t *testing.T) {
	for seed := range seeds(t, 20) {
		if err := groupRun(t, seed, "Multicast,SelfDelivery", false, stack.NodeOptions{}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestTotalOrderUnderFaults: the same with total order, in both
// compositions.
func TestTotalOrderUnderFaults(t *testing.T) {
	for seed := range seeds(t, 15) {
		for _, functional := range []bool{false, true} {
			if err := groupRun(t, seed, "Total", true, stack.NodeOptions{Imperative: !functional}); err != nil {
				t.Fatalf("seed %d functional=%v: %v", seed, functional, err)
			}
		}
	}
}

// TestGroupCompositionsAgree: both compositions emit identical boundary
// traces for the total-order stack.
func TestGroupCompositionsAgree(t *testing.T) {
	for seed := range seeds(t, 8) {
		var traces [2][]string
		for i, functional := range []bool{false, true} {
			var tr []string
			nl := len(mustConfigure(t, "Total").Specs)
			opts := stack.NodeOptions{Imperative: !functional, Trace: func(layer int, dir stack.Dir, ev stack.Event) {
				if layer < 0 || layer >= nl {
					tr = append(tr, fmt.Sprintf("%d %s %s seq=%d", layer, dir, ev, ev.Seq))
				}
			}}
			if err := groupRun(t, seed, "Total", true, opts); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			traces[i] = tr
		}
		if len(traces[0]) != len(traces[1]) {
			t.Fatalf("seed %d: imperative emitted %d boundary events, functional %d", seed, len(traces[0]), len(traces[1]))
		}
		for k := range traces[0] {
			if traces[0][k] != traces[1][k] {
				t.Fatalf("seed %d: boundary event %d differs:\n imperative %s\n functional %s", seed, k, traces[0][k], traces[1][k])
			}
		}
	}
}
