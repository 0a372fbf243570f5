package smr

import (
	"context"
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
		// Replica 2's links to and from the wormservers take 50 ms each
		// way: one fill step (a capture, then a write) takes at least
		// 400 ms, over twice the 150 ms election timeout (a follower that
		// stood down once would depose it), within the 1.2 s patience.
		c.rt.Do(func(n *sim.Net) {
			for _, s := range c.servers {
				n.SetLink(r2.addr, s, sim.Link{Delay: 50 * time.Millisecond})
				n.SetLink(s, r2.addr, sim.Link{Delay: 50 * time.Millisecond})
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

// TestStaleTermYields: a replica whose term ended without its noticing
// (its writer and preparer stuck, as when every capture of its segment
// fails with an error it retries, or its segment is trimmed under it)
// must still follow the log that a newer leader writes. The stale term is
// planted on a follower directly: an old epoch's term covering the
// follower's position, with no goroutines. The follower must step it down
// when it meets the newer leader's segment, and apply what that leader
// writes meanwhile.
func TestStaleTermYields(t *testing.T) {
	eachEngine(t, func(t *testing.T, seed uint64, engine string) {
		c := newWorCluster(t, seed, engine, false)
		cfg := testConfig()
		g, ctx := ledGroup(t, c, cfg, 40*time.Second)
		for i := range 5 {
			if _, err := g.propose(ctx, []byte(fmt.Sprintf("add a-%d", i))); err != nil {
				t.Fatalf("propose: %v", err)
			}
		}
		if err := g.member(2).rep.Campaign(ctx); err != nil {
			t.Fatalf("replica 2's campaign: %v", err)
		}
		_, _, epoch, _ := g.member(2).rep.Leader()
		for i := range 5 {
			if _, err := g.propose(ctx, []byte(fmt.Sprintf("add b-%d", i))); err != nil {
				t.Fatalf("propose: %v", err)
			}
		}
		// Replica 3, a follower, gets a term of epoch-1 covering its
		// position and everything after it.
		r := g.member(3).rep.r
		tctx, tcancel := context.WithCancel(r.ctx)
		r.mu.Lock()
		stale := &term{ctx: tctx, cancel: tcancel, epoch: epoch - 1, first: r.cursor.seg, next: r.cursor, ready: true,
			kick: make(chan struct{}, 1), prep: make(chan struct{}, 1), caps: map[uint64][]segCapture{}, capEnd: map[uint64]uint64{},
			allocated: map[uint64]bool{r.cursor.seg: true}}
		r.term, r.role = stale, leading
		at := r.cursor
		r.mu.Unlock()
		// The leader writes on, through its next segments.
		n := 3 * cfg.SegmentSize
		for i := range n {
			if _, err := g.propose(ctx, []byte(fmt.Sprintf("add c-%d", i))); err != nil {
				t.Fatalf("propose: %v", err)
			}
		}
		want := g.member(2).rep.Applied()
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		for g.member(3).rep.Applied() < want {
			if !sleep(wctx, 5*time.Millisecond) {
				t.Fatalf("replica 3 with a stale term planted at %v applied %d of %d commands; state:%s", at, g.member(3).rep.Applied(), want, g.dump())
			}
		}
		r.mu.Lock()
		still := r.term == stale
		r.mu.Unlock()
		if still {
			t.Fatalf("replica 3 caught up but kept its stale term of epoch %d (the leader's is %d)", epoch-1, epoch)
		}
	})
}
