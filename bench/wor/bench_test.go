package wor

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"strata/bench/kit"
)

// cell is a result row for the ratio tests.
func cell(system, mode, engine, op string, round int, opsPerSec, p50 float64) Result {
	return Result{System: system, Mode: mode, Engine: engine, Op: op, Round: round, Clients: 4, Size: 8, OpsPerSec: opsPerSec, P50us: p50}
}

const (
	keyPre    = "strata/etcd write-precaptured vs create-if-absent clients=4 size=8"
	keyCW     = "strata/etcd capture+write vs create-if-absent clients=4 size=8"
	keyRead   = "strata/etcd read vs linearizable get clients=4 size=8"
	keyPreP50 = "etcd/strata write-precaptured vs create-if-absent clients=4 size=8"
	keyCWP50  = "etcd/strata capture+write vs create-if-absent clients=4 size=8"
	keyRdP50  = "etcd/strata read vs linearizable get clients=4 size=8"
)

// Both sides measured in both rounds: the three comparisons have a
// throughput and a p50 ratio per round, paired within the round (not
// across), oriented so that > 1 means Strata is better.
func TestRatiosPairPerRound(t *testing.T) {
	rs := []Result{
		// Round 1: Strata 2x etcd's throughput, half its latency.
		cell("strata", "persistent", "paxos", "write-precaptured", 1, 2000, 100),
		cell("strata", "persistent", "paxos", "capture+write", 1, 500, 400),
		cell("strata", "persistent", "paxos", "read", 1, 4000, 50),
		cell("etcd", "persistent", "raft", "create-if-absent", 1, 1000, 200),
		cell("etcd", "persistent", "raft", "linearizable-get", 1, 1000, 200),
		// Round 2: the machine is slower for everyone. Dividing by round
		// 1's etcd figures would give other ratios.
		cell("strata", "persistent", "paxos", "write-precaptured", 2, 1000, 200),
		cell("strata", "persistent", "paxos", "capture+write", 2, 250, 800),
		cell("strata", "persistent", "paxos", "read", 2, 2000, 100),
		cell("etcd", "persistent", "raft", "create-if-absent", 2, 500, 400),
		cell("etcd", "persistent", "raft", "linearizable-get", 2, 500, 400),
		// Cells not compared with etcd: other mode or engine.
		cell("strata", "memory", "paxos", "write-precaptured", 1, 1e6, 1),
		cell("strata", "persistent", "chain", "write-precaptured", 1, 1e6, 1),
	}
	got := ratios(rs)
	want := map[string]float64{
		"ops/s " + keyPre: 2, "p50 " + keyPreP50: 2,
		"ops/s " + keyCW: 0.5, "p50 " + keyCWP50: 0.5,
		"ops/s " + keyRead: 4, "p50 " + keyRdP50: 4,
	}
	if len(got) != len(want) {
		t.Fatalf("keys %v, want %d keys", keysOf(got), len(want))
	}
	for k, v := range want {
		xs := got[k]
		if len(xs) != 2 || xs[0] != v || xs[1] != v {
			t.Errorf("%s: %v, want [%v %v]", k, xs, v, v)
		}
	}
	rep := kit.NewReport("wor", nil)
	got.Summarize(rep)
	if rep.Ratios["ops/s "+keyRead] != 4 || rep.Spread["ops/s "+keyRead] != [2]float64{4, 4} {
		t.Errorf("summary %v %v", rep.Ratios, rep.Spread)
	}
}

// etcd failed in round 2 (no etcd rows): round 2 adds no ratio, round 1's
// stay. etcd failed in every round, or was skipped: no ratio at all.
func TestRatiosSkipFailedRounds(t *testing.T) {
	strata := func(r int) []Result {
		return []Result{
			cell("strata", "persistent", "paxos", "write-precaptured", r, 2000, 100),
			cell("strata", "persistent", "paxos", "capture+write", r, 500, 400),
			cell("strata", "persistent", "paxos", "read", r, 4000, 50),
		}
	}
	rs := append(strata(1), strata(2)...)
	if got := ratios(rs); len(got) != 0 {
		t.Fatalf("no etcd rows, yet ratios %v", got)
	}
	rs = append(rs, cell("etcd", "persistent", "raft", "create-if-absent", 1, 1000, 200), cell("etcd", "persistent", "raft", "linearizable-get", 1, 1000, 200))
	got := ratios(rs)
	if len(got) != 6 {
		t.Fatalf("keys %v, want 6", keysOf(got))
	}
	for k, xs := range got {
		if len(xs) != 1 {
			t.Errorf("%s: %v, want round 1's ratio only", k, xs)
		}
	}
	// A Strata cell that failed in round 1 (no row): its comparison has no
	// ratio, the others do.
	rs = rs[1:]
	got = ratios(rs)
	if _, ok := got["ops/s "+keyPre]; ok {
		t.Errorf("a ratio for a failed Strata cell: %v", got["ops/s "+keyPre])
	}
	if len(got["ops/s "+keyCW]) != 1 || len(got["ops/s "+keyRead]) != 1 {
		t.Errorf("the cells that ran lost their ratios: %v", keysOf(got))
	}
}

func keysOf(m kit.Ratios) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestConfigChecks(t *testing.T) {
	good := Config{Dir: t.TempDir(), Clients: []int{1}, Sizes: []int{8}, Engines: Engines, Modes: Modes, Measure: time.Second, Rounds: 1}
	for name, mut := range map[string]func(*Config){
		"rounds":  func(c *Config) { c.Rounds = 0 },
		"engine":  func(c *Config) { c.Engines = []string{"raft"} },
		"mode":    func(c *Config) { c.Modes = []string{"disk"} },
		"size":    func(c *Config) { c.Sizes = []int{1 << 20} },
		"measure": func(c *Config) { c.Measure = 0 },
		"clients": func(c *Config) { c.Clients = nil },
		"dir":     func(c *Config) { c.Dir = "" },
	} {
		c := good
		mut(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: bad config accepted", name)
		}
	}
	if err := good.check(); err != nil {
		t.Errorf("good config refused: %v", err)
	}
}

// The table, every system's settings and the ratios are printed.
func TestPrint(t *testing.T) {
	rep := kit.NewReport("wor", kit.Settings{"rounds": 1})
	rep.System("strata", strataSettings(Config{Strata: "/bin/strata", Dir: "d"}))
	rep.System("etcd", kit.Settings{"unsafe_no_fsync": false})
	rs := []Result{
		cell("strata", "persistent", "paxos", "write-precaptured", 1, 2000, 100),
		cell("etcd", "persistent", "raft", "create-if-absent", 1, 1000, 200),
	}
	rs[0].Syncs, rs[0].OpsTotal = 30, 10
	ratios(rs).Summarize(rep)
	rep.Results = rs
	var b bytes.Buffer
	Print(&b, rep)
	for _, s := range []string{"write-precaptured", "create-if-absent", "3.00", "unsafe_no_fsync=false", "fdatasync", "ops/s " + keyPre, "2.000"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
}

// A failure to start etcd is told apart, so that the command can name
// --no-etcd (here: a cancelled context stops it before anything starts).
func TestEtcdStartErrorIsTyped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := StartEtcd(ctx, t.TempDir(), nil)
	if err == nil {
		c.Stop()
		t.Fatal("etcd started with a cancelled context")
	}
	if !errors.Is(err, ErrEtcdStart) {
		t.Fatalf("%v does not wrap ErrEtcdStart", err)
	}
}

// Wormservers that do not start make failed Strata cells: the report is
// complete (the failure listed) and Run's error says so, so that the
// command exits non-zero.
func TestRunStrataFailureIsAnError(t *testing.T) {
	rep, err := Run(context.Background(), Config{Strata: "/bin/false", Dir: t.TempDir(), Clients: []int{1}, Sizes: []int{8},
		Engines: []string{"paxos"}, Modes: []string{"memory"}, Measure: time.Second, Rounds: 1, Lengths: []int{1}})
	if !errors.Is(err, ErrStrataFailed) {
		t.Fatalf("error %v, want ErrStrataFailed", err)
	}
	if rep == nil || len(rep.Failures) != 2 || len(rep.Ratios) != 0 {
		t.Fatalf("report %+v: want the cells' and the sweep's failures, no ratios", rep)
	}
}
