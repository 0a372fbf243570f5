package log

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"strata/bench/kit"
	"strata/wormlog"
)

func TestCurvePlan(t *testing.T) {
	cfg := CurveConfig{Appenders: []int{1, 4}, Servers: []int{3, 5}, Records: 1000, ServerRecords: 200}
	var got []string
	for _, p := range cfg.plan() {
		got = append(got, fmt.Sprint(p.fig, " ", p.engine, " ", p.servers, " ", p.appenders, " ", p.records))
	}
	// Both engines at every point, the one that goes first alternating.
	want := []string{
		"latency-throughput paxos 3 1 1000", "latency-throughput chain 3 1 1000",
		"latency-throughput chain 3 4 1000", "latency-throughput paxos 3 4 1000",
		"latency-servers paxos 3 1 200", "latency-servers chain 3 1 200",
		"latency-servers chain 5 1 200", "latency-servers paxos 5 1 200",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := (&CurveConfig{Servers: []int{7}, ServerRecords: 10}).plan(); len(p) != 2 || p[0].fig != FigServers {
		t.Fatalf("servers only: %+v", p)
	}
}

func TestCurveConfigCheck(t *testing.T) {
	ok := CurveConfig{Strata: "/bin/true", Dir: "d", ValueSize: 1024, Appenders: []int{1, 64}, Servers: []int{3, 9}, Records: 100, ServerRecords: 10}
	if err := ok.check(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*CurveConfig){
		"nothing":      func(c *CurveConfig) { c.Appenders, c.Servers = nil, nil },
		"0 appenders":  func(c *CurveConfig) { c.Appenders = []int{0} },
		"0 servers":    func(c *CurveConfig) { c.Servers = []int{0} },
		"few records":  func(c *CurveConfig) { c.ServerRecords = 5 },
		"huge values":  func(c *CurveConfig) { c.ValueSize = wormlog.MaxEntry + 1 },
		"no data dir":  func(c *CurveConfig) { c.Dir = "" },
		"many servers": func(c *CurveConfig) { c.Servers = []int{16} },
	} {
		c := ok
		mod(&c)
		if err := c.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A journal has room for every captured register: whole segments of
// the appends, the one captured ahead, and the journal's own log.
func TestJournalBlocksFor(t *testing.T) {
	seg := wormlog.DefaultSegmentSize
	for _, n := range []int{1, 10, seg - 1, seg, seg + 1, 11000, 55000} {
		need := 4098 + ((n+seg-1)/seg+2)*seg
		if b := journalBlocksFor(n); b < need+512 {
			t.Errorf("%d appends: %d blocks, want at least %d", n, b, need+512)
		}
	}
	if journalBlocksFor(100) > 16384 {
		t.Errorf("100 appends: %d blocks: a point's journal should stay small", journalBlocksFor(100))
	}
}

var testPoints = []Point{
	{Figure: FigThroughput, Engine: "chain", Servers: 3, Appenders: 16, PerSec: 5000, P50us: 3000, P99us: 9000},
	{Figure: FigThroughput, Engine: "paxos", Servers: 3, Appenders: 16, PerSec: 7000, P50us: 2000, P99us: 6000},
	{Figure: FigThroughput, Engine: "paxos", Servers: 3, Appenders: 1, PerSec: 1000, P50us: 900, P99us: 2000},
	{Figure: FigThroughput, Engine: "chain", Servers: 3, Appenders: 1, PerSec: 600, P50us: 1500, P99us: 4000},
	{Figure: FigServers, Engine: "paxos", Servers: 5, Appenders: 1, P50us: 1000, P99us: 3000},
	{Figure: FigServers, Engine: "chain", Servers: 5, Appenders: 1, P50us: 2500, P99us: 7000},
	{Figure: FigServers, Engine: "chain", Servers: 3, Appenders: 1, P50us: 1500, P99us: 4000},
	{Figure: FigServers, Engine: "paxos", Servers: 3, Appenders: 1, P50us: 1000, P99us: 2500},
	{Figure: FigServers, Engine: "paxos", Servers: 7, Appenders: 1, P50us: 1100, P99us: 3100},
}

func TestCurveSeries(t *testing.T) {
	s := curveSeries(testPoints, FigThroughput, false)
	if len(s) != 2 || s[0].Name != "paxos" || s[1].Name != "chain" {
		t.Fatalf("series %+v", s)
	}
	// Sorted by appenders; x the throughput, y the p50.
	if !slices.Equal(s[0].X, []float64{1000, 7000}) || !slices.Equal(s[0].Y, []float64{900, 2000}) ||
		!slices.Equal(s[1].X, []float64{600, 5000}) || !slices.Equal(s[1].Y, []float64{1500, 3000}) {
		t.Fatalf("latency-throughput p50 series %+v", s)
	}
	s = curveSeries(testPoints, FigServers, true)
	// x the servers, y the p99; chain has no 7-server point.
	if !slices.Equal(s[0].X, []float64{3, 5, 7}) || !slices.Equal(s[0].Y, []float64{2500, 3000, 3100}) ||
		!slices.Equal(s[1].X, []float64{3, 5}) || !slices.Equal(s[1].Y, []float64{4000, 7000}) {
		t.Fatalf("latency-servers p99 series %+v", s)
	}
	if s := curveSeries(testPoints[:4], FigServers, false); len(s) != 0 {
		t.Fatalf("no points, series %+v", s)
	}
	panels := curvePanels(testPoints, FigServers)
	if len(panels) != 2 || panels[0].YLabel != "p50 us" || panels[1].YLabel != "p99 us" || panels[0].XLabel != "wormservers" {
		t.Fatalf("panels %+v", panels)
	}
}

func TestPrintCurves(t *testing.T) {
	rep := kit.NewReport("log", kit.Settings{})
	rep.Results = testPoints
	var b bytes.Buffer
	Print(&b, rep)
	out := b.String()
	lines := strings.Split(out, "\n")
	idx := func(sub string) int {
		return slices.IndexFunc(lines, func(l string) bool { return strings.Join(strings.Fields(l), " ") == sub })
	}
	// Figure 11: by engine (paxos first), then appenders.
	p1, p16, c1 := idx("paxos 1 1000 900 2000"), idx("paxos 16 7000 2000 6000"), idx("chain 1 600 1500 4000")
	if p1 < 0 || p16 < p1 || c1 < p16 {
		t.Fatalf("Figure 11 rows out of order or missing:\n%s", out)
	}
	// Figure 12: one row per server count, chain's p50 over paxos's.
	r3, r5, r7 := idx("3 1000 2500 1500 4000 1.50"), idx("5 1000 3000 2500 7000 2.50"), idx("7 1100 3100 - - -")
	if r3 < 0 || r5 < r3 || r7 < r5 {
		t.Fatalf("Figure 12 rows out of order or missing:\n%s", out)
	}
	if !strings.Contains(out, "Figure 11 shape") || !strings.Contains(out, "Figure 12 shape") {
		t.Fatalf("no figure headings:\n%s", out)
	}
}
