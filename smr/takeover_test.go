package smr

import (
	"fmt"
	"testing"
	"time"

	"strata/stack/sim"
)

// TestSlowTakeover: a new leader with slow links to the wormservers
// (until it leads) takes several election timeouts to junk-fill the log, and a follower with
// fast links sees the log's tail stand still meanwhile. It must leave the
// new leader to finish (takeoverPatience) rather than allocate a newer
// segment and start a fill of its own, which the next silent replica
// could depose in turn: after the leader is killed, exactly one campaign
// takes over.
func TestSlowTakeover(t *testing.T) {
	eachEngine(t, func(t *testing.T, seed uint64, engine string) {
		c := newWorCluster(t, seed, engine, false)
		cfg := testConfig()
		// Segments of two fill batches: the fill of the old leader's
		// segment is up to two capture-and-write steps.
		cfg.SegmentSize = 2 * fillBatch
		g, ctx := ledGroup(t, c, cfg, 40*time.Second)
		for i := range 10 {
			if _, err := g.propose(ctx, []byte(fmt.Sprintf("add x-%d", i))); err != nil {
				t.Fatalf("propose: %v", err)
			}
		}
		_, _, before, _ := g.member(1).rep.Leader()
		r2, r3 := g.member(2), g.member(3)
		// Replica 2's links to and from the wormservers take 80 ms each
		// way: one fill step (a capture, then a write) is at least 640 ms,
		// over four times the 150 ms election timeout.
		c.rt.Do(func(n *sim.Net) {
			for _, s := range c.servers {
				n.SetLink(r2.addr, s, sim.Link{Delay: 80 * time.Millisecond})
				n.SetLink(s, r2.addr, sim.Link{Delay: 80 * time.Millisecond})
			}
		})
		// Replica 3 is cut off until replica 2 has won its segment, so
		// that replica 2 is the one taking over.
		c.isolate(r3.addr)
		g.kill(1)
		start := time.Now()
		won := make(chan error, 1)
		go func() { won <- r2.rep.Campaign(ctx) }()
		for !r2.candidate() {
			if !sleep(ctx, 5*time.Millisecond) {
				t.Fatalf("replica 2 did not win a segment; state:%s", g.dump())
			}
		}
		c.isolate()
		if err := <-won; err != nil {
			t.Fatalf("replica 2's campaign: %v; state:%s", err, g.dump())
		}
		// Leading, replica 2 gets fast links back: a leader whose writes
		// take longer than the election timeout is deposed, rightly.
		c.rt.Do(func(n *sim.Net) {
			for _, s := range c.servers {
				n.SetLink(r2.addr, s, n.LinkOf(r3.addr, s))
				n.SetLink(s, r2.addr, n.LinkOf(s, r3.addr))
			}
		})
		if _, err := g.propose(ctx, []byte("add after")); err != nil {
			t.Fatalf("after the leader's crash: %v; state:%s", err, g.dump())
		}
		m, err := g.leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, _, after, _ := m.rep.Leader()
		t.Logf("seed %d: replica %d leads epoch %d (was %d), %v after the crash", seed, m.id, after, before, time.Since(start).Round(time.Millisecond))
		if m.id != 2 || after != before+1 {
			t.Fatalf("replica %d leads epoch %d after the crash of the leader of epoch %d and replica 2's campaign: another replica deposed it; state:%s", m.id, after, before, g.dump())
		}
	})
}

// candidate: the member has won a segment and is junk-filling the log.
func (m *member) candidate() bool {
	r := m.rep.r
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.role == candidate
}
