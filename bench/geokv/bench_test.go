package geokv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"strata/bench/kit"
	"strata/geo"
	"strata/internal/geolayout"
)

// Every access set's regions are in the matrix, and each protocol's plan
// (f=1, storage <= 3) is one the ec engine takes, stores at most 3x and
// lays out on loopback hosts; the replication plan has k=1.
func TestPlans(t *testing.T) {
	m := geo.Default()
	delegated := 0
	for _, s := range AccessSets {
		for _, r := range s.Regions {
			if m.Index(r) < 0 {
				t.Fatalf("%s: region %s not in the matrix", s.Name, r)
			}
		}
		for _, p := range Protocols {
			pl, slo, _, err := PlanFor(context.Background(), s, p, 1, 3)
			if err != nil {
				t.Fatalf("%s %s: %v", s.Name, p, err)
			}
			if pl.Storage > 3+1e-9 {
				t.Errorf("%s %s: storage %g > 3", s.Name, p, pl.Storage)
			}
			if slo != 0 && pl.WriteMs > slo {
				t.Errorf("%s %s: write %g over the SLO %g", s.Name, p, pl.WriteMs, slo)
			}
			if p == geo.EPaxos && pl.K != 1 {
				t.Errorf("%s epaxos: k = %d", s.Name, pl.K)
			}
			l, err := geolayout.New(pl, s.Regions)
			if err != nil {
				t.Fatalf("%s %s: %v", s.Name, p, err)
			}
			for _, r := range s.Regions {
				fe, ok := l.FrontEnd(r)
				if !ok || l.Hosts[r] == "" {
					t.Errorf("%s %s: front end %s has no figures or host", s.Name, p, r)
				}
				// The delegated write path's model is the planner's: the
				// bench's engine prediction and the plan agree.
				if p == geo.Pando && fe.Delegate != "" {
					delegated++
					oneway := func(a, b string) float64 { return m.RTT[m.Index(a)][m.Index(b)] / 2 }
					if got := DelegatedWriteModel(pl.Sites, pl.Q1a, pl.Q2, r, fe.Delegate, oneway); math.Abs(got-fe.WriteMs) > 0.01 {
						t.Errorf("%s %s: delegated write model %.3f ms, planner %.3f ms", s.Name, r, got, fe.WriteMs)
					}
				}
			}
		}
	}
	if delegated == 0 {
		t.Error("no Pando front end has a delegate: the delegated write model was not compared")
	}
	t.Logf("%d Pando front ends delegate their writes", delegated)
	if _, err := SelectSets([]string{"na-as", "GL"}); err != nil {
		t.Fatal(err)
	}
	if _, err := SelectSets([]string{"EU"}); err == nil {
		t.Fatal("unknown access set accepted")
	}
}

func TestPercentileWithinModel(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {95, 10}, {10, 1}, {100, 10}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("p%g = %g, want %g", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("percentile of nothing is not NaN")
	}
	if !Within(115, 100) || Within(116, 100) || !Within(0, 4) || Within(20, 10) {
		t.Error("Within")
	}
	rtt := map[string]float64{"a": 30, "b": 10, "c": 50, "d": 20}
	r, w := EngineModel([]string{"a", "b", "c", "d"}, 2, 3, func(s string) float64 { return rtt[s] })
	if r != 20 || w != 20+30 {
		t.Errorf("engine model read %g write %g, want 20 and 50", r, w)
	}
	fe := Summarize("x", []op{{read: true, ms: 10}, {read: true, ms: 20}, {ms: 100}, {ms: 5, err: errors.New("no")}})
	if fe.Reads != 2 || fe.Writes != 1 || fe.Errors != 1 || fe.ReadP50 != 10 || fe.ReadP95 != 20 || fe.WriteP95 != 100 {
		t.Errorf("summary %+v", fe)
	}
}

// Ratios are replication's (and RS-Paxos's) slowest p95 over Pando's,
// per round, and the report prints and encodes with them.
func TestRatiosAndReport(t *testing.T) {
	cell := func(p string, rd, wr float64) Cell {
		c := Cell{Set: "GL", Protocol: p, Round: 1, FE: []FrontEnd{{Name: "az_westus", ReadP95: rd, WriteP95: wr}, {Name: "az_northeurope", ReadP95: rd / 2, WriteP95: wr / 2}}}
		c.fill()
		return c
	}
	rs := kit.Ratios{}
	got := map[string]Cell{"pando": cell("pando", 100, 300), "epaxos": cell("epaxos", 150, 240)}
	AddRatios(rs, "GL", got)
	AddRatios(rs, "NA", map[string]Cell{"epaxos": cell("epaxos", 1, 1)}) // no Pando: no ratio
	rep := kit.NewReport("geo-kv", nil)
	rs.Summarize(rep)
	if rep.Ratios[RatioKey("read-p95", "GL", "epaxos")] != 1.5 || rep.Ratios[RatioKey("write-p95", "GL", "epaxos")] != 0.8 || len(rep.Ratios) != 2 {
		t.Fatalf("ratios %v", rep.Ratios)
	}
	if c := got["pando"]; c.ReadP95Min != 50 || c.ReadP95Max != 100 {
		t.Fatalf("min-max %+v", c)
	}
	rep.Results = []any{got["pando"], got["epaxos"], TputResult{Figure: "14", System: "ec-k2r3", N: 5, K: 2, Op: "write", Bytes: 10 << 10, Round: 1, OpsPerSec: 500, PerServer: 100},
		ContResult{Figure: "13", Mode: "leader", Writers: 3, Round: 1, Trials: 10, P50: 400, MaxAttempts: 1, MaxAttemptsAll: 2}}
	var b bytes.Buffer
	Print(&b, rep)
	if !strings.Contains(b.String(), "read-p95/GL: epaxos/pando") || !strings.Contains(b.String(), "az_northeurope") || !strings.Contains(b.String(), "ec-k2r3  5  2  write  10 KiB") ||
		!strings.Contains(b.String(), "Figure 13") {
		t.Fatalf("printed:\n%s", b.String())
	}
	b.Reset()
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var o map[string]any
	if err := json.Unmarshal(b.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bench", "config", "results", "ratios"} {
		if _, ok := o[k]; !ok {
			t.Errorf("JSON without %q", k)
		}
	}
	if o["bench"] != "geo-kv" {
		t.Errorf("bench %v", o["bench"])
	}
}

// Figure 12's series take the median over rounds of each cell's slowest
// p95, x the access set's position; and the PNG is written.
func TestFig12Plot(t *testing.T) {
	cells := []Cell{
		{Set: "NA-AS", Protocol: "pando", Round: 1, ReadP95Max: 20, WriteP95Max: 200},
		{Set: "NA-AS", Protocol: "pando", Round: 2, ReadP95Max: 30, WriteP95Max: 220},
		{Set: "NA-AS", Protocol: "pando", Round: 3, ReadP95Max: 25, WriteP95Max: 210},
		{Set: "GL", Protocol: "epaxos", Round: 1, ReadP95Max: 150, WriteP95Max: 300},
	}
	sets, _ := SelectSets([]string{"NA-AS", "GL"})
	ss := Fig12Series(cells, sets, false)
	if len(ss) != len(Protocols) || len(ss[0].Y) != 1 || ss[0].X[0] != 1 || ss[0].Y[0] != 25 {
		t.Fatalf("pando series %+v", ss[0])
	}
	if w := Fig12Series(cells, sets, true); w[2].X[0] != 2 || w[2].Y[0] != 300 {
		t.Fatalf("epaxos write series %+v", w[2])
	}
	path := t.TempDir() + "/fig12.png"
	if err := plotFig12(path, cells, sets); err != nil {
		t.Fatal(err)
	}
}
