package smr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/wor"
)

var engines = []string{"paxos", "chain"}

// testConfig is a group configuration that exercises segment crossings
// and failover quickly.
func testConfig() Config {
	return Config{Log: 1000, SegmentSize: 64, Heartbeat: 20 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
		Logger: testLogger()}
}

// testLogger logs at Info, or Debug with STRATA_SMR_DEBUG set.
func testLogger() *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("STRATA_SMR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
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
//
// In the persistent variants the wormservers keep their registers in
// journals on crash-simulating disks (so entries must fit
// wor.MaxPersistentValue), and one of them crashes mid-run, keeping a
// random subset of its unbarriered writes, and recovers from its journal.
func TestReplicatedCounter(t *testing.T) {
	for _, v := range []struct {
		engine     string
		persistent bool
	}{{"paxos", false}, {"chain", false}, {"paxos", true}, {"chain", true}} {
		name := v.engine
		if v.persistent {
			name += "-persistent"
		}
		t.Run(name, func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Fresh(1)...) {
				counterRun(t, seed, v.engine, v.persistent)
			}
		})
	}
}

func counterRun(t *testing.T, seed uint64, engine string, persistent bool) {
	c := newWorClusterOpt(t, seed, engine, true, persistent)
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
	// A persistent server crashes and recovers once a random number of
	// increments have completed.
	rng := rand.New(rand.NewPCG(seed, 5))
	crashAt := 10 + rng.IntN(100)
	var crashed sync.WaitGroup
	crashed.Add(1)
	crashOnce := sync.OnceFunc(func() {
		go func() {
			defer crashed.Done()
			c.crashServer(rng.IntN(3), rng)
		}()
	})
	if !persistent {
		crashed.Done()
	}
	t0 := time.Now()
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
				if persistent && len(got) == crashAt {
					crashOnce()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	crashed.Wait()
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
	t1 := time.Now()
	applied := converge(t, ctx, g)
	t.Logf("seed %d: %d proposals in %v, replicas converged in %v (server crash and recovery: %v, after %d increments); faults %+v", seed, clients*each, t1.Sub(t0), time.Since(t1), persistent, crashAt, c.f)
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

// outcome is what a proposer learned of one command.
type outcome struct {
	cmd  string
	kind string // "ok", "notleader", "unknown"
	val  string
	err  error
}

func classify(cmd string, res []byte, err error) outcome {
	switch {
	case err == nil:
		return outcome{cmd: cmd, kind: "ok", val: string(res)}
	case errors.Is(err, ErrNotLeader):
		return outcome{cmd: cmd, kind: "notleader", err: err}
	}
	return outcome{cmd: cmd, kind: "unknown", err: err}
}

// checkOutcomes: every command acknowledged with a counter value was
// applied at that index; every command refused with ErrNotLeader was not
// applied at all.
func checkOutcomes(t *testing.T, applied map[string]uint64, outs []outcome) (ok, refused, unknown int) {
	t.Helper()
	for _, o := range outs {
		idx, in := applied[o.cmd]
		switch o.kind {
		case "ok":
			ok++
			if !in || strconv.FormatUint(idx, 10) != o.val {
				t.Errorf("%s acknowledged with %s, applied at %d (present %v)", o.cmd, o.val, idx, in)
			}
		case "notleader":
			refused++
			if in {
				t.Errorf("%s refused (%v) but applied at %d", o.cmd, o.err, idx)
			}
		default:
			unknown++
		}
	}
	return ok, refused, unknown
}

// TestLeaderFailover: clients keep proposing while the leader crashes
// (its node drops off the network and the replica stops) or is
// partitioned away and later comes back. A new leader must apply a
// command within a bounded time; no acknowledged command is lost or
// applied twice; proposals the old leader refused with ErrNotLeader were
// never applied; and after the partition heals the old leader steps down
// and converges on the same log.
func TestLeaderFailover(t *testing.T) {
	for _, engine := range engines {
		for _, how := range []string{"crash", "partition"} {
			t.Run(engine+"-"+how, func(t *testing.T) {
				for seed := range testseed.Each(t, testseed.Fresh(1)...) {
					failoverRun(t, seed, engine, how)
				}
			})
		}
	}
}

func failoverRun(t *testing.T, seed uint64, engine, how string) {
	c := newWorCluster(t, seed, engine, true)
	g := newGroup(t, c, testConfig())
	for id := uint64(1); id <= 3; id++ {
		g.start(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	old := g.member(1)
	if err := old.rep.Campaign(ctx); err != nil {
		t.Fatalf("campaign: %v", err)
	}
	var mu sync.Mutex
	var outs []outcome
	var killedAt, firstAfter time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Clients through the router, and one that talks to the old leader
	// only (to see how its in-flight proposals end).
	for k := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cmd := fmt.Sprintf("add c%d-%d", k, i)
				octx, ocancel := context.WithTimeout(ctx, 3*time.Second)
				var res []byte
				var err error
				var via uint64 = 1
				if k == 0 {
					res, err = old.rep.Propose(octx, []byte(cmd))
				} else {
					res, via, err = g.proposeVia(octx, []byte(cmd))
				}
				ocancel()
				o := classify(cmd, res, err)
				mu.Lock()
				outs = append(outs, o)
				mu.Unlock()
				_ = via
				if k == 0 && errors.Is(err, ErrClosed) {
					return
				}
				if k == 0 && err != nil {
					sleep(ctx, 10*time.Millisecond)
				}
			}
		})
	}
	sleep(ctx, 300*time.Millisecond)
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	switch how {
	case "crash":
		g.kill(1)
	case "partition":
		c.isolate(old.addr)
	}
	// The failover time: from the fault to the first command a new
	// leader applies, as a client retrying through the router sees it.
	for i := 0; firstAfter.IsZero(); i++ {
		cmd := fmt.Sprintf("add probe-%d", i)
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		res, via, err := g.proposeVia(pctx, []byte(cmd))
		pcancel()
		o := classify(cmd, res, err)
		mu.Lock()
		outs = append(outs, o)
		if o.kind == "ok" && via != 1 {
			firstAfter = time.Now()
		}
		mu.Unlock()
		if ctx.Err() != nil {
			t.Fatalf("no new leader; state:%s", g.dump())
		}
	}
	newLeader, err := g.leaderOtherThan(ctx, 1)
	if err != nil {
		t.Fatalf("%v; state:%s", err, g.dump())
	}
	sleep(ctx, 500*time.Millisecond)
	if how == "partition" {
		c.isolate() // heal: the old leader finds the junk fill and steps down
		sleep(ctx, 500*time.Millisecond)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	failover := firstAfter.Sub(killedAt)
	mu.Unlock()
	if firstAfter.IsZero() || failover > 10*time.Second {
		t.Fatalf("no command applied within 10 s of the leader's %s (new leader %d); state:%s", how, newLeader.id, g.dump())
	}
	if how == "partition" {
		// Healed, the old leader meets the junk fill in its segment at its
		// next write (a heartbeat, at the latest) and steps down.
		for i := 0; ; i++ {
			if id, _, _, ok := old.rep.Leader(); !ok || id != 1 {
				break
			}
			if i == 200 {
				t.Fatalf("the old leader still leads 10 s after the partition healed; state:%s", g.dump())
			}
			sleep(ctx, 50*time.Millisecond)
		}
	}
	applied := converge(t, ctx, g)
	seen := noDuplicates(t, applied)
	okN, refused, unknown := checkOutcomes(t, seen, outs)
	t.Logf("seed %d %s: failover %v (to replica %d); %d applied, %d acknowledged, %d refused (not applied), %d unknown", seed, how, failover, newLeader.id, len(applied), okN, refused, unknown)
}

// leaderOtherThan waits for a leader other than replica id.
func (g *group) leaderOtherThan(ctx context.Context, id uint64) (*member, error) {
	for {
		for _, m := range g.live() {
			if lid, _, _, ok := m.rep.Leader(); ok && lid == m.id && m.id != id {
				return m, nil
			}
		}
		if !sleep(ctx, 5*time.Millisecond) {
			return nil, fmt.Errorf("no new leader: %w", ctx.Err())
		}
	}
}

// TestSnapshotAndTrim: with small segments, small entries and frequent
// snapshots, many commands leave the old log segments trimmed (their
// registers answer ErrTrimmed); a follower cut off meanwhile finds its
// next segment trimmed and catches up from a snapshot; a brand-new replica
// and a restarted one start from the latest snapshot plus the log after
// it; all reach the same state.
func TestSnapshotAndTrim(t *testing.T) {
	eachEngine(t, snapshotRun)
}

func snapshotRun(t *testing.T, seed uint64, engine string) {
	c := newWorCluster(t, seed, engine, true)
	cfg := testConfig()
	cfg.SegmentSize = 16
	cfg.SnapshotEvery = 40
	cfg.MaxEntry = 256 // snapshots span a dozen chunks; batches hold a few commands
	cfg.Pipeline = 2   // so that commands queue and go out in SegWrites of several entries too
	g, ctx := ledGroup(t, c, cfg, 60*time.Second)
	lagging := g.member(3)
	c.isolate(lagging.addr)
	load := func(prefix string, clients, each int) {
		var wg sync.WaitGroup
		for k := range clients {
			wg.Go(func() {
				for i := range each {
					cmd := fmt.Sprintf("add %s%d-%d", prefix, k, i)
					if _, err := g.propose(ctx, []byte(cmd)); err != nil {
						t.Errorf("%s: %v", cmd, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.Fatalf("state:%s", g.dump())
		}
	}
	load("a", 4, 100)
	snaps := 0 // only leaders snapshot; leadership may have moved
	for _, m := range g.live() {
		snaps += m.sm.snapshots()
	}
	if snaps < 2 {
		t.Fatalf("%d snapshots taken after 400 commands", snaps)
	}
	// The first log segment and the first snapshot are gone from the WOR
	// space (trims run in the background after a snapshot's pointer is
	// applied, and a trim that times out waits for the next snapshot).
	probe := c.client("sim:probe")
	var logErr, snapErr error
	for range 50 {
		_, logErr = probe.Read(ctx, cfg.Log, 0)
		_, snapErr = probe.Metadata(ctx, cfg.Log+MaxLogSegments)
		if errors.Is(logErr, wor.ErrTrimmed) && errors.Is(snapErr, wor.ErrTrimmed) {
			break
		}
		if _, err := g.propose(ctx, []byte("add trim-nudge")); err != nil {
			t.Fatal(err)
		}
		sleep(ctx, 50*time.Millisecond)
	}
	if !errors.Is(logErr, wor.ErrTrimmed) || !errors.Is(snapErr, wor.ErrTrimmed) {
		t.Fatalf("first log segment: %v; first snapshot segment: %v; want ErrTrimmed", logErr, snapErr)
	}
	// The cut-off follower comes back behind the trim.
	c.isolate()
	// A brand-new replica, and replica 2 restarted with a fresh state.
	fresh := g.start(4)
	g.kill(2)
	restarted := g.start(2)
	load("b", 2, 20)
	converge(t, ctx, g)
	for _, m := range []*member{lagging, fresh, restarted} {
		if m.sm.restores() == 0 {
			t.Fatalf("replica %d did not restore a snapshot", m.id)
		}
	}
	idx, counter, _ := g.live()[0].sm.state() // converge made them all equal
	if counter < 440 || uint64(counter) != idx {
		t.Fatalf("replicas at index %d with counter %d, want 440 or more (a few nudges)", idx, counter)
	}
	t.Logf("seed %d: %d snapshots taken during the first load; lagging, new and restarted replicas restored one", seed, snaps)
}

// TestBatching: one client's proposals each go out at once, one entry per
// command; many concurrent clients behind a one-request pipeline get
// packed, several commands per entry and several entries per SegWrite,
// and every command is still applied once with its own result.
func TestBatching(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Fresh(1)...) {
		c := newWorCluster(t, seed, "paxos", false)
		cfg := testConfig()
		cfg.Pipeline = 1
		cfg.MaxEntry = 128          // a few commands per entry
		cfg.Heartbeat = time.Second // no heartbeats in the counts
		cfg.ElectionTimeout = 5 * time.Second
		g := newGroup(t, c, cfg)
		for id := uint64(1); id <= 3; id++ {
			g.start(id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		leader := g.member(1)
		if err := leader.rep.Campaign(ctx); err != nil {
			t.Fatalf("campaign: %v", err)
		}
		// Let the term's first no-op go out.
		if _, err := g.propose(ctx, []byte("add warmup")); err != nil {
			t.Fatal(err)
		}
		before := leader.rep.Stats()
		for i := range 20 {
			if _, err := g.propose(ctx, []byte(fmt.Sprintf("add one-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		one := leader.rep.Stats()
		if d := one.Entries - before.Entries; d != 20 || one.Commands-before.Commands != 20 || one.SegWrites != before.SegWrites {
			t.Fatalf("one client, 20 commands: %d entries, %d SegWrites (before %+v, after %+v)", d, one.SegWrites-before.SegWrites, before, one)
		}
		var wg sync.WaitGroup
		const clients, each = 32, 10
		for k := range clients {
			wg.Go(func() {
				for i := range each {
					cmd := fmt.Sprintf("add many%d-%d", k, i)
					if _, err := g.propose(ctx, []byte(cmd)); err != nil {
						t.Errorf("%s: %v", cmd, err)
						return
					}
				}
			})
		}
		wg.Wait()
		many := leader.rep.Stats()
		entries, cmds := many.Entries-one.Entries, many.Commands-one.Commands
		if cmds != clients*each || entries*2 > cmds || many.SegWrites == one.SegWrites {
			t.Fatalf("%d clients: %d commands in %d entries, %d SegWrites", clients, cmds, entries, many.SegWrites-one.SegWrites)
		}
		applied := converge(t, ctx, g)
		noDuplicates(t, applied)
		if len(applied) != 1+20+clients*each {
			t.Fatalf("applied %d commands", len(applied))
		}
		// Concurrent linearizable reads share tail probes, at the leader
		// and at a follower.
		for _, m := range []*member{leader, g.member(2)} {
			before := m.rep.Stats()
			for range clients {
				wg.Go(func() {
					for range each {
						if err := m.rep.Read(ctx, Linearizable, func() {}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			st := m.rep.Stats()
			reads, probes := st.Reads-before.Reads, st.Probes-before.Probes
			if reads != clients*each || probes*2 > reads {
				t.Fatalf("replica %d: %d linearizable reads took %d probes", m.id, reads, probes)
			}
			t.Logf("replica %d: %d concurrent linearizable reads shared %d probes", m.id, reads, probes)
		}
		t.Logf("seed %d: one client: 1 command per entry; %d clients: %d commands in %d entries, %d SegWrites", seed, clients, cmds, entries, many.SegWrites-one.SegWrites)
	}
}

// TestCampaignRace: every replica campaigns at once, four times, while a
// client proposes. Several may win in turn (a later winner fences the
// earlier one with its junk fill), but the log stays the same everywhere,
// a leader emerges each round, every acknowledged command is applied once
// at the index it returned, and refused ones never.
func TestCampaignRace(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Fresh(1)...) {
				c := newWorCluster(t, seed, engine, true)
				g := newGroup(t, c, testConfig())
				for id := uint64(1); id <= 3; id++ {
					g.start(id)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var mu sync.Mutex
				var outs []outcome
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						cmd := fmt.Sprintf("add p-%d", i)
						octx, ocancel := context.WithTimeout(ctx, 2*time.Second)
						res, err := g.propose(octx, []byte(cmd))
						ocancel()
						mu.Lock()
						outs = append(outs, classify(cmd, res, err))
						mu.Unlock()
					}
				})
				won := 0
				for round := range 4 {
					var cw sync.WaitGroup
					var wins sync.Map
					for _, m := range g.live() {
						cw.Go(func() {
							if err := m.rep.Campaign(ctx); err == nil {
								wins.Store(m.id, true)
							}
						})
					}
					cw.Wait()
					n := 0
					wins.Range(func(any, any) bool { n++; return true })
					won += n
					if _, err := g.leader(ctx); err != nil {
						t.Fatalf("round %d: %v; state:%s", round, err, g.dump())
					}
					sleep(ctx, 100*time.Millisecond)
				}
				close(stop)
				wg.Wait()
				applied := converge(t, ctx, g)
				seen := noDuplicates(t, applied)
				okN, refused, unknown := checkOutcomes(t, seen, outs)
				if okN == 0 {
					t.Fatalf("no command acknowledged")
				}
				t.Logf("seed %d: %d campaigns returned leading over 4 rounds; %d applied, %d acknowledged, %d refused, %d unknown", seed, won, len(applied), okN, refused, unknown)
			}
		})
	}
}

// TestGroupRestart: every replica stops; started again with empty state
// machines, they recover the log (the replica named leader campaigns at
// once) and reach the state they had, and the group takes new commands.
func TestGroupRestart(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Fresh(1)...) {
		c := newWorCluster(t, seed, "paxos", true)
		g := newGroup(t, c, testConfig())
		for id := uint64(1); id <= 3; id++ {
			g.start(id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := g.member(2).rep.Campaign(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			if _, err := g.propose(ctx, []byte(fmt.Sprintf("add first-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		converge(t, ctx, g)
		_, _, hash := g.member(1).sm.state()
		for id := uint64(1); id <= 3; id++ {
			g.kill(id)
		}
		t0 := time.Now()
		for id := uint64(1); id <= 3; id++ {
			g.start(id)
		}
		for _, m := range g.live() {
			if idx, _, h := m.sm.state(); idx != 40 || h != hash {
				t.Fatalf("replica %d restarted at index %d, hash %x; want 40, %x", m.id, idx, h, hash)
			}
		}
		leader, err := g.leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := g.propose(ctx, []byte(fmt.Sprintf("add second-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		applied := converge(t, ctx, g)
		if len(applied) != 50 { // no snapshot yet: the restarted replicas replayed the whole log
			t.Fatalf("applied %d commands, want 50", len(applied))
		}
		noDuplicates(t, applied)
		t.Logf("seed %d: restarted group led by %d within %v", seed, leader.id, time.Since(t0))
	}
}
