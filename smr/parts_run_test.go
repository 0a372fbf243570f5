package smr

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/wor"
)

// TestLargeCommands: commands many times larger than a log entry, mixed
// with small ones, from concurrent proposers on a lossy network, in
// segments of 16 registers (so parts cross segment boundaries) with
// snapshots every few dozen commands; the leader is cut off mid-run,
// while it is writing parts, and comes back; another replica restarts
// with a fresh state, three times, and a fourth joins. Every replica
// applies the same commands, each once and whole; an acknowledged
// command is applied at the index its result names; one refused with
// ErrNotLeader (the partial commands a deposed leader leaves) is applied
// nowhere (the harness retries it, so it would be applied twice);
// replicas started later restore a snapshot and apply the rest alike
// (with snapshots allowed between a command's parts, this fails about
// every other run: the restored replicas skip a command).
func TestLargeCommands(t *testing.T) {
	eachEngine(t, largeRun)
}

func largeRun(t *testing.T, seed uint64, engine string) {
	c := newWorCluster(t, seed, engine, true)
	cfg := testConfig()
	cfg.SegmentSize = 16
	cfg.MaxEntry = 256 // a 3 KB command is 15 parts
	cfg.SnapshotEvery = 30
	cfg.Pipeline = 3
	g, ctx := ledGroup(t, c, cfg, 60*time.Second)
	var mu sync.Mutex
	var outs []outcome
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := range 3 {
		rng := rand.New(rand.NewPCG(seed, uint64(k)))
		wg.Go(func() {
			for i := 0; i < 400; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// "add" and one field: the test state machine counts it.
				// Every other command is large, its pad unique to it.
				name := fmt.Sprintf("c%d-%d", k, i)
				if i%2 == 1 {
					name += "-" + strings.Repeat(string(rune('a'+rng.IntN(26))), 300+rng.IntN(2000))
				}
				cmd := "add " + name
				octx, ocancel := context.WithTimeout(ctx, 3*time.Second)
				res, err := g.propose(octx, []byte(cmd))
				ocancel()
				mu.Lock()
				outs = append(outs, classify(cmd, res, err))
				mu.Unlock()
			}
		})
	}
	sleep(ctx, 400*time.Millisecond)
	old, err := g.leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.isolate(old.addr)
	sleep(ctx, 800*time.Millisecond)
	c.isolate()
	parts := old.rep.Stats().PartCommands
	// Once the log's first segment is trimmed (a snapshot covers it),
	// replicas that start fresh must restore a snapshot.
	probe := c.client("sim:probe")
	for i := 0; ; i++ {
		if _, err := probe.Read(ctx, cfg.Log, 0); errors.Is(err, wor.ErrTrimmed) {
			break
		}
		if i == 200 {
			t.Fatalf("the log's first segment not trimmed 10 s after the partition healed; state:%s", g.dump())
		}
		sleep(ctx, 50*time.Millisecond)
	}
	// Replicas that start fresh while commands go on restore whatever
	// snapshot is newest: one taken between the parts of a command would
	// make them skip it (and disagree at converge).
	other := old.id%3 + 1
	var restarted []*member
	for range 3 {
		g.kill(other)
		restarted = append(restarted, g.start(other))
		sleep(ctx, 250*time.Millisecond)
	}
	restarted = append(restarted, g.start(4))
	sleep(ctx, 250*time.Millisecond)
	close(stop)
	wg.Wait()
	applied := converge(t, ctx, g)
	seen := noDuplicates(t, applied)
	okN, refused, unknown := checkOutcomes(t, seen, outs)
	large := 0
	for cmd := range seen {
		if len(cmd) > cfg.MaxEntry {
			large++
		}
	}
	for _, m := range restarted {
		if m.sm.restores() == 0 {
			t.Fatalf("replica %d started after snapshots and restored none", m.id)
		}
	}
	dropped := old.rep.Stats().DroppedParts
	if parts == 0 || large < 5 || okN < 10 {
		t.Fatalf("the run shows little: the first leader wrote %d commands as parts; %d large commands applied, %d acknowledged", parts, large, okN)
	}
	t.Logf("seed %d %s: %d commands applied (%d larger than an entry), %d acknowledged, %d refused, %d unknown; the first leader, cut off, had written %d as parts, and dropped %d partial ones from the log", seed, engine, len(seen), large, okN, refused, unknown, parts, dropped)
}
