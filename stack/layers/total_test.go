package layers

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"strata/stack"
)

// totalFIFORun: a static group of 2-4 members with total order and cast
// flow control (Total,Membership) on a faulty network, every member
// casting several windows' worth as fast as flow control lets it, with a
// 256-cast window (the default then) or a narrow one. Checks: every
// member delivers every cast once, each origin's in its cast order, and
// all in one order.
// (The sequencer's order casts can leave it out of the order it made them
// in; applied in arrival order they delivered its own casts out of order,
// at every member: 3 seeds of 6 at a 256-cast window.)
func totalFIFORun(t *testing.T, seed uint64, window int, opts stack.NodeOptions) error {
	rng := rand.New(rand.NewPCG(seed, 23))
	n := 2 + rng.IntN(3)
	members := simMembers(n)
	cfg := stack.Config{Members: members, Group: "g", CastWindow: window, Heartbeat: 10 * time.Millisecond, SuspectAfter: time.Minute,
		StatusEvery: 10 * time.Millisecond, GossipEvery: 20 * time.Millisecond, RTO: 10 * time.Millisecond, MaxRTO: 100 * time.Millisecond}
	c := newCluster(t, seed, n, "Total,Membership", cfg, opts)
	faults := randomFaults(rng)
	faults.Loss /= 3
	c.net.SetDefault(faults)
	order := map[stack.Addr][]string{}
	var bad error
	for _, a := range members {
		last := map[string]int{}
		c.nodes[a].OnDeliver(func(_ stack.Addr, b []byte) {
			order[a] = append(order[a], string(b))
			o, num, _ := strings.Cut(string(b), "#")
			k, _ := strconv.Atoi(num)
			if k != last[o]+1 && bad == nil {
				bad = fmt.Errorf("%s delivered %s's cast %d where %d was due", a, o, k, last[o]+1)
			}
			last[o] = k
		})
	}
	per := 4*window + rng.IntN(window)
	for i := 1; i <= per; i++ {
		for _, a := range members {
			if err := c.nodes[a].Cast([]byte(fmt.Sprintf("%s#%d", a, i))); err != nil {
				return err
			}
		}
		c.net.Run(time.Duration(rng.IntN(2)) * time.Millisecond)
	}
	all := func() bool {
		for _, a := range members {
			if len(order[a]) < n*per {
				return false
			}
		}
		return true
	}
	if !c.net.RunUntil(all, 5*time.Minute) {
		for _, a := range members {
			t.Logf("%s delivered %d of %d; counters %v", a, len(order[a]), n*per, c.nodes[a].Counters())
		}
		return fmt.Errorf("not every member delivered every cast")
	}
	c.net.Run(time.Second)
	if bad != nil {
		return bad
	}
	for _, a := range members[1:] {
		if len(order[a]) != len(order[members[0]]) {
			return fmt.Errorf("%s delivered %d casts, %s %d", a, len(order[a]), members[0], len(order[members[0]]))
		}
		for i := range order[a] {
			if order[a][i] != order[members[0]][i] {
				return fmt.Errorf("delivery %d: %q at %s, %q at %s", i, order[a][i], a, order[members[0]][i], members[0])
			}
		}
	}
	return nil
}

// TestTotalFIFO runs totalFIFORun in both compositions.
func TestTotalFIFO(t *testing.T) {
	for seed := range seeds(t, 4) {
		for _, opts := range []stack.NodeOptions{{}, {Imperative: true}} {
			for _, w := range []int{1 + int(seed%8), 256} {
				if err := totalFIFORun(t, seed, w, opts); err != nil {
					t.Fatalf("seed %d imperative=%v window %d: %v", seed, opts.Imperative, w, err)
				}
			}
		}
	}
}
