package geo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"strata/bench/kit"
	"strata/geo"
)

func testProblem() geo.Problem {
	return geo.Problem{
		Access: []string{"az_eastus", "az_westeurope", "az_southeastasia"},
		F:      1, ReadBound: 150, StorageBound: 3,
		Objective: geo.MinWrite, Protocol: geo.Pando,
	}
}

func TestInstanceRoundTrip(t *testing.T) {
	in, err := NewInstance("t1", testProblem())
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Sites) != 25 || len(in.FeToSite) != 3 || len(in.SiteToSite) != 25 || in.MaxSplits != 6 {
		t.Fatalf("shape: %d sites, %d rows, %d, max splits %d", len(in.Sites), len(in.FeToSite), len(in.SiteToSite), in.MaxSplits)
	}
	m := geo.Default()
	i, j := m.Index("az_westeurope"), m.Index(in.Sites[3])
	if float64(in.FeToSite[1][3]) != m.RTT[i][j] || float64(in.SiteToFe[1][3]) != m.RTT[j][i] {
		t.Fatalf("fe_to_site/site_to_fe do not follow the matrix's direction")
	}
	in.TimeLimit, in.Threads = 12.5, 2
	var buf bytes.Buffer
	if err := in.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	out, err := DecodeInstance(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the instance")
	}
}

func TestInfinityIsNull(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	rtt := [][]float64{{0, 10, 20, 30}, {10, 0, math.Inf(1), 15}, {20, 25, 0, 5}, {30, 15, 5, 0}}
	m, err := geo.NewMatrix(names, rtt)
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewInstance("inf", geo.Problem{Matrix: m, Access: []string{"a"}, Candidates: []string{"b", "c", "d"},
		F: 1, Objective: geo.MinStorage, Protocol: geo.EPaxos})
	if err != nil {
		t.Fatal(err)
	}
	if in.Finite() {
		t.Fatal("Finite() with an unmeasured pair")
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"site_to_site":[[0,null,15]`) {
		t.Fatalf("+Inf not written as null: %s", b)
	}
	out, err := DecodeInstance(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(float64(out.SiteToSite[0][1]), 1) || !reflect.DeepEqual(in, out) {
		t.Fatalf("null did not come back as +Inf: %v", out.SiteToSite[0])
	}
	if _, err := json.Marshal(Ms(math.NaN())); err == nil {
		t.Fatal("NaN marshalled")
	}
}

// The decoded instance carries everything: solving the problem it states
// (over its own rebuilt matrix) gives the original's optimum.
func TestInstanceProblemSameOptimum(t *testing.T) {
	ctx := context.Background()
	for _, proto := range []geo.Protocol{geo.Pando, geo.EPaxos, geo.RSPaxos} {
		p := testProblem()
		p.Protocol = proto
		p.StorageBound, p.ReadBound = 5, 250
		in, err := NewInstance("t", p)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := in.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		out, err := DecodeInstance(&buf)
		if err != nil {
			t.Fatal(err)
		}
		q, err := out.Problem()
		if err != nil {
			t.Fatal(err)
		}
		a, err := geo.Solve(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := geo.Solve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !Same(a.WriteMs, b.WriteMs) {
			t.Errorf("%s: original %v ms, decoded %v ms", proto, a.WriteMs, b.WriteMs)
		}
		if err := b.Check(q); err != nil {
			t.Errorf("%s: %v", proto, err)
		}
	}
}

func TestDecodeBadInstances(t *testing.T) {
	good, err := NewInstance("g", testProblem())
	if err != nil {
		t.Fatal(err)
	}
	enc := func(mod func(*Instance)) string {
		in := good
		in.FeToSite = append([][]Ms(nil), good.FeToSite...)
		mod(&in)
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := map[string]string{
		"garbage":      "{not json",
		"empty":        "",
		"unknown key":  `{"protocol":"pando","objective":"write","front_ends":["a"],"sites":["b"],"extra":1}`,
		"protocol":     enc(func(in *Instance) { in.Protocol = "multipaxos" }),
		"objective":    enc(func(in *Instance) { in.Objective = "cost" }),
		"f":            enc(func(in *Instance) { in.F = -1 }),
		"f too big":    enc(func(in *Instance) { in.F = 13 }),
		"bound":        enc(func(in *Instance) { in.ReadBound = -1 }),
		"rows":         enc(func(in *Instance) { in.FeToSite = in.FeToSite[:2] }),
		"cols":         enc(func(in *Instance) { in.FeToSite[0] = in.FeToSite[0][:3] }),
		"negative":     enc(func(in *Instance) { in.FeToSite[0] = append([]Ms{-1}, in.FeToSite[0][1:]...) }),
		"no sites":     enc(func(in *Instance) { in.Sites = nil }),
		"string value": strings.Replace(enc(func(*Instance) {}), `"fe_to_site":[[`, `"fe_to_site":[["x",`, 1),
	}
	for name, s := range cases {
		_, err := DecodeInstance(strings.NewReader(s))
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if !errors.Is(err, ErrBadInstance) {
			t.Errorf("%s: error %v does not wrap ErrBadInstance", name, err)
		}
	}
}

// An answer built from a Strata plan passes geo's Check through Plan; a
// tampered one fails it, and an incomplete one is an error.
func TestAnswerPlan(t *testing.T) {
	p := testProblem()
	pl, err := geo.Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewInstance("a", p)
	if err != nil {
		t.Fatal(err)
	}
	a := Answer{Status: "optimal", Sites: pl.Sites, N: len(pl.Sites), K: pl.K, R: pl.R, Q1a: pl.Q1a, Q1b: pl.Q1b, Q2: pl.Q2,
		MaxReadMs: pl.ReadMs, MaxWriteMs: pl.WriteMs, Storage: pl.Storage, Objective: pl.WriteMs, EvalObjective: pl.WriteMs}
	for _, fe := range pl.FrontEnds {
		a.Delegates = append(a.Delegates, fe.Delegate)
		a.ReadMs = append(a.ReadMs, fe.ReadMs)
		a.WriteMs = append(a.WriteMs, fe.WriteMs)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(a); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeAnswer(&buf)
	if err != nil {
		t.Fatal(err)
	}
	hp, err := back.Plan(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := hp.Check(p); err != nil {
		t.Fatalf("plan from the answer fails Check: %v", err)
	}
	if probs := crossCheck(Case{p.Protocol, p.Objective}, p, in, pl, back); len(probs) != 0 {
		t.Fatalf("crossCheck of identical plans: %v", probs)
	}
	worse := back
	worse.EvalObjective, worse.Objective = pl.WriteMs+1, pl.WriteMs+1
	if probs := crossCheck(Case{p.Protocol, p.Objective}, p, in, pl, worse); len(probs) == 0 {
		t.Fatal("crossCheck missed a different optimum")
	}
	bad := back
	bad.WriteMs = append([]float64(nil), back.WriteMs...)
	bad.WriteMs[0] -= 5
	if bp, err := bad.Plan(in); err != nil || bp.Check(p) == nil {
		t.Fatalf("tampered answer: plan error %v, or Check passed", err)
	}
	if _, err := (Answer{Status: "infeasible"}).Plan(in); err == nil {
		t.Fatal("Plan of an answer without a solution")
	}
	if probs := crossCheck(Case{p.Protocol, p.Objective}, p, in, pl, Answer{Status: "time limit"}); len(probs) == 0 {
		t.Fatal("crossCheck accepted a non-optimal status")
	}
	if _, err := DecodeAnswer(strings.NewReader(`{}`)); err == nil {
		t.Fatal("answer without status accepted")
	}
}

func TestParseCaseAndRatios(t *testing.T) {
	c, err := ParseCase(" rspaxos/storage")
	if err != nil || c != (Case{geo.RSPaxos, geo.MinStorage}) || c.String() != "rspaxos min-storage" {
		t.Fatalf("ParseCase: %v %v", c, err)
	}
	for _, s := range []string{"pando", "lowerbound/write", "pando/cost", ""} {
		if _, err := ParseCase(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	// Each round pairs Strata's and HiGHS's times of one plan: ratios
	// 10 and 30 for plan a1, 20 for a2, 2 for b; a round without HiGHS's
	// time (a3) gives no pair.
	plans := []Result{
		{Case: "a", StrataRoundsMs: []float64{1, 2}, HighsRoundsS: []float64{0.010, 0.060}},
		{Case: "a", StrataRoundsMs: []float64{4}, HighsRoundsS: []float64{0.080}},
		{Case: "a", StrataRoundsMs: []float64{4}, HighsRoundsS: []float64{0}},
		{Case: "b", StrataRoundsMs: []float64{5}, HighsRoundsS: []float64{0.010}},
	}
	rep := kit.NewReport("geo", nil)
	ratios(plans).Summarize(rep)
	want := map[string]float64{"plan-time strata/highs a": 20, "plan-time strata/highs b": 2, "plan-time strata/highs all": 15}
	if !reflect.DeepEqual(rep.Ratios, want) {
		t.Fatalf("ratios %v, want %v", rep.Ratios, want)
	}
	if sp := rep.Spread["plan-time strata/highs all"]; sp != [2]float64{2, 30} {
		t.Fatalf("spread of all: %v, want 2-30", sp)
	}
}

func TestWriteTable1(t *testing.T) {
	med := map[string]map[string]float64{}
	for _, typ := range geo.AccessTypes {
		med[typ] = map[string]float64{string(geo.Pando): 0.1, geo.EPRSP: 0.3, string(geo.EPaxos): 0.4, string(geo.RSPaxos): 0.6}
	}
	var buf bytes.Buffer
	WriteTable1(&buf, med)
	if !strings.Contains(buf.String(), "0.10 / 0.06") || !strings.Contains(buf.String(), "0.60 / 0.48") {
		t.Fatalf("table:\n%s", buf.String())
	}
}

func FuzzDecodeInstance(f *testing.F) {
	in, err := NewInstance("f", testProblem())
	if err != nil {
		f.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"protocol":"pando","objective":"write","f":0,"max_splits":1,"front_ends":["a"],"sites":["b"],"fe_to_site":[[1]],"site_to_fe":[[null]],"site_to_site":[[0]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeInstance(bytes.NewReader(data))
		if err != nil {
			return
		}
		// A valid instance re-encodes and decodes to itself, and its
		// matrix is either built or refused with an error.
		var buf bytes.Buffer
		if err := in.Encode(&buf); err != nil {
			t.Fatalf("valid instance does not encode: %v", err)
		}
		if _, err := DecodeInstance(&buf); err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		_, _ = in.Problem()
	})
}
