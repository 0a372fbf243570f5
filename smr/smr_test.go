package smr

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
)

var engines = []string{"paxos", "chain"}

// testConfig is a group configuration that exercises segment crossings
// and failover quickly.
func testConfig() Config {
	return Config{Log: 1000, SegmentSize: 64, Heartbeat: 20 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond}
}

// converge waits until every live replica has applied everything a
// linearizable read sees, and checks that they applied the same sequence
// (the same commands at the same indexes), with no Apply-contract
// violations. It returns the common applied list.
func converge(t *testing.T, ctx context.Context, g *group) []string {
	t.Helper()
	var ref []string
	var refID uint64
	for _, m := range g.live() {
		if err := m.rep.Read(ctx, Linearizable, func() {}); err != nil {
			t.Fatalf("replica %d: linearizable read: %v", m.id, err)
		}
	}
	// A second round: every replica now sees at least what any saw.
	for _, m := range g.live() {
		if err := m.rep.Read(ctx, Linearizable, func() {}); err != nil {
			t.Fatalf("replica %d: linearizable read: %v", m.id, err)
		}
		from, applied, errs := m.sm.log()
		if len(errs) > 0 {
			t.Fatalf("replica %d: %v", m.id, errs)
		}
		if from != 0 {
			continue // restored from a snapshot: compared by state below
		}
		if ref == nil {
			ref, refID = applied, m.id
			continue
		}
		n := min(len(ref), len(applied))
		if !slices.Equal(ref[:n], applied[:n]) {
			for i := range n {
				if ref[i] != applied[i] {
					t.Fatalf("replicas %d and %d differ at position %d: %q vs %q", refID, m.id, i, ref[i], applied[i])
				}
			}
		}
		if len(applied) > len(ref) {
			ref, refID = applied, m.id
		}
	}
	var idx uint64
	var hash uint64
	for i, m := range g.live() {
		mi, _, mh := m.sm.state()
		if i > 0 && (mi != idx || mh != hash) {
			// Applied may differ only if writes continue; the callers have stopped writing.
			t.Fatalf("replica %d at index %d hash %x, another at %d hash %x", m.id, mi, mh, idx, hash)
		}
		idx, hash = mi, mh
	}
	return ref
}

// noDuplicates checks that no command appears twice in an applied list.
func noDuplicates(t *testing.T, applied []string) map[string]uint64 {
	t.Helper()
	seen := map[string]uint64{}
	for _, a := range applied {
		idx, cmd, _ := strings.Cut(a, " ")
		i, _ := strconv.ParseUint(idx, 10, 64)
		if j, ok := seen[cmd]; ok {
			t.Fatalf("command %q applied twice, at %d and %d", cmd, j, i)
		}
		seen[cmd] = i
	}
	return seen
}

// TestReplicatedCounter: three replicas, six concurrent proposers of
// unique increments on a lossy network; every increment returns a
// distinct counter value 1..N, and every replica applies the same
// sequence of N commands, each once.
func TestReplicatedCounter(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Fresh(1)...) {
				counterRun(t, seed, engine)
			}
		})
	}
}

func counterRun(t *testing.T, seed uint64, engine string) {
	c := newWorCluster(t, seed, engine, true)
	g := newGroup(t, c, testConfig())
	for id := uint64(1); id <= 3; id++ {
		g.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.member(1).rep.Campaign(ctx); err != nil {
		t.Fatalf("campaign: %v", err)
	}
	const clients, each = 6, 25
	var mu sync.Mutex
	got := map[int64]string{}
	var wg sync.WaitGroup
	for k := range clients {
		wg.Go(func() {
			for i := range each {
				cmd := fmt.Sprintf("add c%d-%d", k, i)
				res, err := g.propose(ctx, []byte(cmd))
				if err != nil {
					t.Errorf("%s: %v", cmd, err)
					return
				}
				v, err := strconv.ParseInt(string(res), 10, 64)
				if err != nil {
					t.Errorf("%s: result %q", cmd, res)
					return
				}
				mu.Lock()
				if prev, ok := got[v]; ok {
					t.Errorf("%s and %s both returned %d", prev, cmd, v)
				}
				got[v] = cmd
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		buf := make([]byte, 1<<24)
		n := runtime.Stack(buf, true)
		os.WriteFile("/tmp/smr-stack.txt", buf[:n], 0o644)
		t.Fatalf("state:%s", g.dump())
	}
	for v := int64(1); v <= clients*each; v++ {
		if _, ok := got[v]; !ok {
			t.Fatalf("no increment returned %d", v)
		}
	}
	applied := converge(t, ctx, g)
	if len(applied) != clients*each {
		t.Fatalf("applied %d commands, want %d", len(applied), clients*each)
	}
	seen := noDuplicates(t, applied)
	for v, cmd := range got {
		if seen[cmd] != uint64(v) {
			t.Fatalf("%s returned %d but was applied at index %d", cmd, v, seen[cmd])
		}
	}
}
