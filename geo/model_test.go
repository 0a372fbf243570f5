package geo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// fig4 is a small deployment in the spirit of the paper's Figure 4(b–d):
// a front-end "fe", two data sites a and b close to it, a central site d
// and a far site c. One-way delays in ms (round trips are twice these):
//
//	fe–a 10, fe–b 10, fe–d 30, fe–c 50
//	d–a 20, d–b 20, d–c 20, a–b 5, a–c 70, b–c 70
func fig4(t *testing.T) *Matrix {
	t.Helper()
	names := []string{"fe", "a", "b", "c", "d"}
	oneWay := map[[2]string]float64{
		{"fe", "a"}: 10, {"fe", "b"}: 10, {"fe", "d"}: 30, {"fe", "c"}: 50,
		{"d", "a"}: 20, {"d", "b"}: 20, {"d", "c"}: 20, {"a", "b"}: 5, {"a", "c"}: 70, {"b", "c"}: 70,
	}
	rtt := make([][]float64, len(names))
	for i, x := range names {
		rtt[i] = make([]float64, len(names))
		for j, y := range names {
			if i != j {
				v, ok := oneWay[[2]string{x, y}]
				if !ok {
					v = oneWay[[2]string{y, x}]
				}
				rtt[i][j] = 2 * v
			}
		}
	}
	m, err := NewMatrix(names, rtt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFigure4HandComputed(t *testing.T) {
	m := fig4(t)
	p := Problem{Matrix: m, Access: []string{"fe"}, Candidates: []string{"a", "b", "c", "d"}, F: 1,
		Protocol: Pando, Objective: MinWrite}
	in, err := newInst(p)
	if err != nil {
		t.Fatal(err)
	}
	all := in.full()
	d := in.indexOfCand("d")
	// Four replicas (k = 1), Phase 1 quorum 2, Phase 2 quorum 3.
	small := cfg{k: 1, n: 4, q1a: 2, q1b: 2, q2: 3}
	classic := cfg{k: 1, n: 4, q1a: 3, q1b: 3, q2: 3}
	// Round trips from fe: a 20, b 20, d 60, c 100.
	// Classic Paxos from the front-end, quorum 3 in both phases: 60 + 60.
	if w, _ := in.pandoWrite(0, all, classic, -1); w != 120 {
		t.Errorf("classic two-phase write = %v, want 120", w)
	}
	// Small Phase 1 (2 nearest: 20) then Phase 2 (3rd nearest: 60).
	if w, _ := in.pandoWrite(0, all, small, -1); w != 80 {
		t.Errorf("small-Phase-1 write = %v, want 80", w)
	}
	// Partial delegation to d: promises reach d via a, b (10+20) and d
	// itself (30+0): the 2nd is at 30, and fe's value arrives at 30; Phase
	// 2 acks reach fe from a, b (20+10) and d (0+30): the 3rd at 30.
	w, wq := in.pandoWrite(0, all, small, d)
	if w != 60 {
		t.Errorf("partially delegated write = %v, want 60", w)
	}
	if pc(wq) != 3 || wq&(1<<in.indexOfCand("c")) != 0 {
		t.Errorf("Phase 2 quorum %b should be a, b, d", wq)
	}
	ev := in.eval(Pando, all, small, -1)
	if ev[0].write != 60 || ev[0].del != d || ev[0].read != 20 {
		t.Errorf("eval picks write %v via %d, read %v; want 60 via d, read 20", ev[0].write, ev[0].del, ev[0].read)
	}
	// EPaxos with the same 4 replicas, R = 2, W = 3: the best command
	// leader is a (or b): 20 + third-nearest from a (a 0, b 10, d 40).
	ep := in.eval(EPaxos, all, cfg{k: 1, n: 4, q1a: 2, q1b: 2, q2: 3}, -1)
	if ep[0].write != 60 || ep[0].read != 20 {
		t.Errorf("epaxos write/read = %v/%v, want 60/20", ep[0].write, ep[0].read)
	}
	// The one-round lower bound with a single front-end needs no
	// write-write intersection: full copies at a and b give reads and
	// writes of 20 ms (one write quorum {a, b} still holds a copy after
	// one failure) at storage 2.
	lb, err := Solve(context.Background(), Problem{Matrix: m, Access: []string{"fe"}, Candidates: []string{"a", "b", "c", "d"},
		F: 1, Protocol: LowerBound, Objective: MinWrite, ReadBound: 20, StorageBound: 4})
	if err != nil {
		t.Fatal(err)
	}
	if lb.WriteMs != 20 || math.Abs(lb.Storage-2) > 1e-9 {
		t.Errorf("lower-bound write = %v at storage %v, want 20 at 2", lb.WriteMs, lb.Storage)
	}
}

// TestLowerBoundBelowProtocols: on planar (metric) matrices, the bound
// is at or below every protocol's optimum for every query.
func TestLowerBoundBelowProtocols(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var cands []string
	for i := range 9 {
		cands = append(cands, fmt.Sprintf("c%d", i))
	}
	checked := 0
	for n := range 6 {
		m := randomInstance(rng, 9, 3, true)
		access := []string{"x0", "x1", "c2"}[:2+n%2]
		for q := range 6 {
			obj := []Objective{MinRead, MinWrite, MinStorage}[q%3]
			rb, wb, sb := 60+rng.Float64()*150, 150+rng.Float64()*300, []float64{2, 3, 5}[rng.IntN(3)]
			switch obj {
			case MinRead:
				rb = 0
			case MinWrite:
				wb = 0
			case MinStorage:
				sb = 0
			}
			base := Problem{Matrix: m, Access: access, Candidates: cands, F: 1, ReadBound: rb, WriteBound: wb, StorageBound: sb, Objective: obj}
			lp := base
			lp.Protocol = LowerBound
			lb, lbErr := Solve(context.Background(), lp)
			if lbErr == nil {
				if err := lb.Check(lp); err != nil {
					t.Errorf("lower-bound plan fails its check: %v", err)
				}
			}
			for _, proto := range []Protocol{Pando, EPaxos, RSPaxos, MultiPaxos} {
				pp := base
				pp.Protocol = proto
				pl, err := Solve(context.Background(), pp)
				if errors.Is(err, ErrInfeasible) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if lbErr != nil {
					t.Errorf("%s %s feasible (%+v) but the lower bound is not: %v", proto, obj, pl, lbErr)
					continue
				}
				checked++
				if objValue(lb, obj) > objValue(pl, obj)+1e-9 {
					t.Errorf("%s %s: lower bound %.3f above the protocol's %.3f", proto, obj, objValue(lb, obj), objValue(pl, obj))
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d comparisons", checked)
	}
}

// TestCoverLPAgainstGrid: the LP optimum is feasible and no grid point
// (fractions in multiples of 1/12) does better.
func TestCoverLPAgainstGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 30 {
		const m = 4
		var rows []uint64
		for range 1 + rng.IntN(5) {
			r := uint64(rng.IntN(15) + 1)
			rows = append(rows, r)
		}
		v, c, err := coverLP(rows, m)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, x := range c {
			sum += x
		}
		if math.Abs(sum-v) > 1e-9 {
			t.Errorf("rows %v: LP value %v but fractions sum to %v", rows, v, sum)
		}
		for _, r := range rows {
			s := 0.0
			for j := range m {
				if r&(1<<j) != 0 {
					s += c[j]
				}
			}
			if s < 1-1e-9 {
				t.Errorf("rows %v: row %b covered %.4f by %v", rows, r, s, c)
			}
		}
		best := math.Inf(1)
		var g [m]int
		for x := range 13 * 13 * 13 * 13 {
			for j := range m {
				g[j] = x % 13
				x /= 13
			}
			ok := true
			for _, r := range rows {
				s := 0
				for j := range m {
					if r&(1<<j) != 0 {
						s += g[j]
					}
				}
				if s < 12 {
					ok = false
					break
				}
			}
			if ok {
				best = math.Min(best, float64(g[0]+g[1]+g[2]+g[3])/12)
			}
		}
		if v > best+1e-9 {
			t.Errorf("rows %v: LP %.4f above the grid's %.4f", rows, v, best)
		}
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	ok := Problem{Access: []string{"az_eastus", "az_westeurope"}, F: 1, Protocol: Pando, Objective: MinRead, StorageBound: 3}
	cases := map[string]func(p *Problem){
		"unknown region":    func(p *Problem) { p.Access = []string{"az_nowhere"} },
		"unknown candidate": func(p *Problem) { p.Candidates = []string{"az_eastus", "mars"} },
		"f too big":         func(p *Problem) { p.F = 13 },
		"negative f":        func(p *Problem) { p.F = -1 },
		"storage below 1":   func(p *Problem) { p.StorageBound = 0.5 },
		"no protocol":       func(p *Problem) { p.Protocol = "" },
		"bad objective":     func(p *Problem) { p.Objective = "speed" },
		"cost no prices":    func(p *Problem) { p.Objective = MinCost },
		"empty access":      func(p *Problem) { p.Access = nil },
		"duplicate access":  func(p *Problem) { p.Access = []string{"az_eastus", "az_eastus"} },
	}
	for name, mut := range cases {
		p := ok
		mut(&p)
		if _, err := Solve(ctx, p); !errors.Is(err, ErrBadProblem) {
			t.Errorf("%s: got %v, want ErrBadProblem", name, err)
		}
	}
	if _, err := Solve(ctx, ok); err != nil {
		t.Fatalf("the unmodified problem fails: %v", err)
	}
	// Contradictory bounds: 1 ms reads are impossible.
	p := ok
	p.ReadBound, p.Objective = 1, MinStorage
	if _, err := Solve(ctx, p); !errors.Is(err, ErrInfeasible) {
		t.Errorf("1 ms read bound: got %v, want ErrInfeasible", err)
	}
	for name, files := range map[string][2]string{
		"short line":    {"a 0\nb 1\n", "0 1 GET 50\n"},
		"unknown index": {"a 0\nb 1\n", "0 7 GET 50 3\n"},
		"bad method":    {"a 0\nb 1\n", "0 1 POST 50 3\n"},
		"bad number":    {"a 0\nb 1\n", "0 1 GET 50 x\n"},
		"dup index":     {"a 0\nb 0\n", "0 0 GET 50 3\n"},
		"no median":     {"a 0\nb 1\n", "0 1 GET 99 3\n"},
		"empty map":     {"", "0 1 GET 50 3\n"},
	} {
		if _, err := LoadMatrix(strings.NewReader(files[0]), strings.NewReader(files[1])); err == nil {
			t.Errorf("%s: malformed matrix accepted", name)
		}
	}
	m, err := LoadMatrix(strings.NewReader("a 0\nb 1\n"), strings.NewReader("0 1 GET 50 3\n1 0 PUT 50 4\n"))
	if err != nil || m.RTT[0][1] != 3 || m.RTT[1][0] != 4 {
		t.Errorf("small matrix: %v %v", m, err)
	}
}

func TestDefaultMatrix(t *testing.T) {
	m := Default()
	if len(m.Names) != 46 || len(AzureRegions(m)) != 25 {
		t.Fatalf("%d regions, %d Azure", len(m.Names), len(AzureRegions(m)))
	}
	// Spot values from the data file: Tokyo to Seoul is 35 ms.
	if v := m.RTT[m.Index("aws_ap-northeast-1")][m.Index("aws_ap-northeast-2")]; v != 35 {
		t.Errorf("Tokyo -> Seoul %v ms", v)
	}
	if !math.IsInf(m.RTT[m.Index("aws_eu-west-2")][m.Index("az_eastasia")], 1) {
		t.Errorf("a pair missing from the file should be unreachable")
	}
}

// TestPlansCheckOnRealData solves a few problems on the embedded matrix
// with f = 1 and f = 2 and checks every plan.
func TestPlansCheckOnRealData(t *testing.T) {
	access := []string{"az_eastus", "az_westeurope", "az_southeastasia"}
	for _, f := range []int{1, 2} {
		for _, proto := range Protocols {
			for _, obj := range []Objective{MinRead, MinWrite, MinStorage} {
				p := Problem{Access: access, F: f, Protocol: proto, Objective: obj}
				switch obj {
				case MinRead:
					p.WriteBound, p.StorageBound = 400, 4
				case MinWrite:
					p.ReadBound, p.StorageBound = 200, 4
				case MinStorage:
					p.ReadBound, p.WriteBound = 200, 400
				}
				pl, err := Solve(context.Background(), p)
				if errors.Is(err, ErrInfeasible) {
					continue
				}
				if err != nil {
					t.Fatalf("f=%d %s %s: %v", f, proto, obj, err)
				}
				if err := pl.Check(p); err != nil {
					t.Errorf("f=%d %s %s: %v", f, proto, obj, err)
				}
				// Check must notice a tampered plan.
				bad := pl
				bad.FrontEnds = append([]FrontEnd(nil), pl.FrontEnds...)
				bad.FrontEnds[0].WriteMs -= 5
				if bad.Check(p) == nil {
					t.Errorf("f=%d %s %s: tampered plan passes", f, proto, obj)
				}
			}
		}
	}
}
