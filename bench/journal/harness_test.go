package journal

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/bench/kit"
)

// Ratios pair Strata with each peer in the same round; a round the peer
// failed gives no pair, and medians are over the rounds each system ran.
func TestSummarizePairsRounds(t *testing.T) {
	c := &Case{Medium: "disk", Wait: true, Goroutines: 8, Runs: []Result{
		{System: Strata, Round: 1, OpsPerSec: 200, P50us: 10},
		{System: PeerName, Round: 1, OpsPerSec: 100, P50us: 40},
		{System: Strata, Round: 2, OpsPerSec: 300, P50us: 10},
		// Round 2: the peer failed.
		{System: Strata, Round: 3, OpsPerSec: 100, P50us: 20},
		{System: PeerName, Round: 3, OpsPerSec: 400, P50us: 10},
		{System: PeerFsyncName, Round: 3, OpsPerSec: 50, P50us: 80},
	}}
	rep := kit.NewReport("journal", nil)
	summarize([]*Case{c}, []string{Strata, PeerName, PeerFsyncName}, 3).Summarize(rep)
	// go-journal: rounds 1 and 3 -> 2 and 0.25, median 1.125.
	if got := rep.Ratios["ops/s strata/go-journal disk wait G=8"]; got != 1.125 {
		t.Errorf("ops ratio %v, want 1.125 (rounds 1 and 3 only)", got)
	}
	if got := rep.Spread["ops/s strata/go-journal disk wait G=8"]; got != [2]float64{0.25, 2} {
		t.Errorf("ops spread %v, want 0.25-2", got)
	}
	// Latency is peer/strata: 40/10 = 4 and 10/20 = 0.5.
	if got := rep.Ratios["p50 latency strata/go-journal disk wait G=8"]; got != 2.25 {
		t.Errorf("latency ratio %v, want 2.25", got)
	}
	if got := rep.Ratios["ops/s strata/go-journal-fsync disk wait G=8"]; got != 2 {
		t.Errorf("fsync peer ratio %v, want 2 (round 3 alone)", got)
	}
	if m := c.Median[Strata]; m.OpsPerSec != 200 || m.Rounds != 3 {
		t.Errorf("strata median %+v, want 200 ops/s over 3 rounds", m)
	}
	if m := c.Median[PeerName]; m.OpsPerSec != 250 || m.Rounds != 2 {
		t.Errorf("peer median %+v, want 250 ops/s over 2 rounds", m)
	}
}

// The table names each peer's barrier, and a peer with no run says so
// rather than printing a zero.
func TestPrintNamesBarriersAndFailures(t *testing.T) {
	c := &Case{Medium: "tmpfs", Wait: false, Goroutines: 1, Runs: []Result{
		{System: Strata, Round: 1, OpsPerSec: 1000, P50us: 5, P99us: 9},
	}}
	rep := kit.NewReport("journal", kit.Settings{"rounds": 1, "duration": "1s"})
	rep.System(Strata, kit.Settings{"barrier": "fdatasync (journal/disk)"})
	rep.System(PeerName, kit.Settings{"barrier": "fdatasync (wrapped goose FileDisk)"})
	summarize([]*Case{c}, []string{Strata, PeerName}, 1).Summarize(rep)
	rep.Fail("go-journal tmpfs nowait G=1 round 1: exit status 1")
	rep.Results = []*Case{c}
	var buf bytes.Buffer
	if err := Print(&buf, rep); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"go-journal fdatasync (wrapped goose FileDisk)", "failed", "FAILED cells", "settings:"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if len(rep.Ratios) != 0 {
		t.Errorf("ratios without a peer run: %v", rep.Ratios)
	}
}

// The Strata worker runs the workload and reports what the log did.
func TestRunStrataWorker(t *testing.T) {
	res, err := RunStrata(context.Background(), WorkerConfig{
		File: filepath.Join(t.TempDir(), "j.img"), Goroutines: 2, Duration: 100 * time.Millisecond,
		Wait: false, FlushEvery: 4, LogBlocks: 256,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.OpsPerSec <= 0 || res.P50us <= 0 || res.P99us < res.P50us || res.Records == 0 {
		t.Fatalf("worker result %+v", res)
	}
}

func TestPercentilesNearestRank(t *testing.T) {
	var lats []time.Duration
	for i := 1; i <= 100; i++ {
		lats = append(lats, time.Duration(i)*time.Microsecond)
	}
	// Nearest rank: p50 of 1..100 is the 50th value, p99 the 99th (the
	// peer worker's definition).
	if p50, p99 := percentiles(lats); p50 != 50 || p99 != 99 {
		t.Fatalf("p50 %v p99 %v, want 50 and 99", p50, p99)
	}
}
