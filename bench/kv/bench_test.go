package kv

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"strata/bench/kit"
)

func cell(system string, records int64, round int, workload string, clients int, opsPerSec, p50 float64) Cell {
	return Cell{System: system, Records: records, Round: round, Workload: workload, Clients: clients, OpsPerSec: opsPerSec, P50us: p50}
}

// Ratios pair the systems within a round (not across rounds) and are
// oriented so that > 1 means Strata is better: throughput strata/etcd,
// latency etcd/strata.
func TestRatiosPairPerRoundAndOrient(t *testing.T) {
	cells := []Cell{
		// Round 1: Strata has twice etcd's throughput and half its p50.
		cell("strata", 100, 1, "A", 1, 2000, 100),
		cell("etcd", 100, 1, "A", 1, 1000, 200),
		// Round 2: the machine is slower for both; dividing by round 1's
		// etcd figures would give 1 and 0.5.
		cell("strata", 100, 2, "A", 1, 1000, 200),
		cell("etcd", 100, 2, "A", 1, 500, 400),
		// Strata worse on B: below 1.
		cell("strata", 100, 1, "B", 16, 500, 800),
		cell("etcd", 100, 1, "B", 16, 1000, 400),
		// A cell whose peer failed (no etcd row) adds no ratio.
		cell("strata", 100, 1, "C", 1, 9999, 1),
	}
	rs := ratios(cells)
	rep := &kit.Report{Ratios: map[string]float64{}, Spread: map[string][2]float64{}}
	rs.Summarize(rep)
	want := map[string]float64{
		"ops/s strata/etcd A clients=1 records=100":  2,
		"p50 etcd/strata A clients=1 records=100":    2,
		"ops/s strata/etcd B clients=16 records=100": 0.5,
		"p50 etcd/strata B clients=16 records=100":   0.5,
	}
	if len(rep.Ratios) != len(want) {
		t.Fatalf("ratios %v, want %v", rep.Ratios, want)
	}
	for k, v := range want {
		if rep.Ratios[k] != v {
			t.Errorf("%s = %v, want %v", k, rep.Ratios[k], v)
		}
	}
	if got := len(rs["ops/s strata/etcd A clients=1 records=100"]); got != 2 {
		t.Errorf("workload A: %d per-round ratios, want 2", got)
	}
}

// The targets: throughput 1.5x on every workload but E (1.0x),
// p50 at one client only (etcd/strata >= 1.25), growth 0.8x; a ratio
// just below its target is not met, at it is.
func TestTargetsAndChecks(t *testing.T) {
	for key, want := range map[string]float64{
		"ops/s strata/etcd A clients=16 records=100000": TargetThroughput,
		"ops/s strata/etcd D clients=64 records=100000": TargetThroughput,
		"ops/s strata/etcd F clients=1 records=1000000": TargetThroughput,
		"ops/s strata/etcd E clients=1 records=100000":  TargetThroughputScan,
		"p50 etcd/strata C clients=1 records=100000":    TargetP50,
	} {
		got, ok := target(key)
		if !ok || got != want {
			t.Errorf("target(%q) = %v, %v; want %v", key, got, ok, want)
		}
	}
	for _, key := range []string{"p50 etcd/strata A clients=16 records=100000", "nonsense", growthKey("A", 1, 100, 1000)} {
		if v, ok := target(key); ok {
			t.Errorf("target(%q) = %v, want none", key, v)
		}
	}

	rep := &kit.Report{Ratios: map[string]float64{
		"ops/s strata/etcd A clients=1 records=100": 1.5,   // at the target: met
		"ops/s strata/etcd B clients=1 records=100": 1.499, // just below: not met
		"ops/s strata/etcd E clients=1 records=100": 1.0,
		"p50 etcd/strata A clients=1 records=100":   1.2, // p50 0.83x etcd's: not met
		"p50 etcd/strata A clients=16 records=100":  0.1, // no target
	}, Spread: map[string][2]float64{}}
	gr := kit.Ratios{}
	gr.Higher(growthKey("A", 1, 100, 1000), 790, 1000)  // 0.79: not met
	gr.Higher(growthKey("B", 1, 100, 1000), 1000, 1000) // 1.0: met
	cs := checks(rep, gr)
	want := map[string]bool{
		"ops/s strata/etcd A clients=1 records=100": true,
		"ops/s strata/etcd B clients=1 records=100": false,
		"ops/s strata/etcd E clients=1 records=100": true,
		"p50 etcd/strata A clients=1 records=100":   false,
		growthKey("A", 1, 100, 1000):                false,
		growthKey("B", 1, 100, 1000):                true,
	}
	if len(cs) != len(want) {
		t.Fatalf("checks %+v, want the %d keys of %v", cs, len(want), want)
	}
	for _, c := range cs {
		met, ok := want[c.Key]
		if !ok || c.Met != met {
			t.Errorf("check %+v: want met=%v (known %v)", c, met, ok)
		}
	}

	var b bytes.Buffer
	rep.Results = Results{Checks: cs}
	Print(&b, rep)
	out := b.String()
	for _, line := range []string{"ops/s strata/etcd B clients=1 records=100", "ops/s strata/etcd A clients=1 records=100"} {
		if !strings.Contains(out, line) {
			t.Errorf("Print does not show %q:\n%s", line, out)
		}
	}
	if strings.Count(out, "NOT MET") != 3 {
		t.Errorf("Print shows %d NOT MET, want 3:\n%s", strings.Count(out, "NOT MET"), out)
	}

	// --json carries the checks with the ratios.
	b.Reset()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Ratios  map[string]float64 `json:"ratios"`
		Results struct {
			Checks []Check `json:"checks"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back.Results.Checks) != len(cs) || len(back.Ratios) != len(rep.Ratios) {
		t.Fatalf("JSON report %s: %v", b.String(), err)
	}
}

// Growth pairs Strata's cells at the largest record count with the
// smallest's, round by round (etcd's are not compared with themselves).
func TestGrowthPairsStrataAcrossRecordCounts(t *testing.T) {
	cells := []Cell{
		cell("strata", 100, 1, "A", 1, 1000, 1),
		cell("strata", 1000, 1, "A", 1, 900, 1),
		cell("strata", 100, 2, "A", 1, 500, 1), // a slow round for both
		cell("strata", 1000, 2, "A", 1, 350, 1),
		cell("etcd", 100, 1, "A", 1, 1, 1),
		cell("etcd", 1000, 1, "A", 1, 1e6, 1),
	}
	g := growth(cells)
	xs := g[growthKey("A", 1, 100, 1000)]
	if len(g) != 1 || len(xs) != 2 || xs[0] != 0.9 || xs[1] != 0.7 {
		t.Fatalf("growth = %v", g)
	}
	if len(growth(cells[:1])) != 0 {
		t.Error("growth with one record count")
	}
}
