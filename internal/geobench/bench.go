package geobench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"strata/geo"
	"strata/internal/stats"
)

// Case is one kind of plan: a protocol and an objective.
type Case struct {
	Protocol  geo.Protocol
	Objective geo.Objective
}

func (c Case) String() string { return string(c.Protocol) + " min-" + string(c.Objective) }

// ParseCase reads "pando/write", "epaxos/storage", ...
func ParseCase(s string) (Case, error) {
	p, o, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Case{}, fmt.Errorf("case %q: want protocol/objective, e.g. pando/write", s)
	}
	c := Case{geo.Protocol(p), geo.Objective(o)}
	switch c.Protocol {
	case geo.Pando, geo.EPaxos, geo.RSPaxos:
	default:
		return Case{}, fmt.Errorf("case %q: protocol must be pando, epaxos or rspaxos", s)
	}
	switch c.Objective {
	case geo.MinRead, geo.MinWrite, geo.MinStorage:
	default:
		return Case{}, fmt.Errorf("case %q: objective must be read, write or storage", s)
	}
	return c, nil
}

// The bounds of the paper's Figure 2: min storage with writes within
// 300 ms, min write latency with storage overhead at most 6, each under a
// read-latency bound.
const (
	figWriteBound   = 300
	figStorageBound = 6
	// readSlack scales the protocol's least feasible read latency (at
	// storage 6) into the instance's read bound.
	readSlack = 1.25
)

// Bounds picks feasible bounds for a case on an access set: the read bound
// is readSlack times the protocol's minimum read latency at storage 6
// (rounded up to 5 ms); min-write plans keep storage ≤ 6; min-storage
// and min-read plans keep writes ≤ 300 ms, or 1.1 times the least
// feasible write latency when 300 ms is out of reach. The returned
// problem is feasible (it was solved).
func Bounds(ctx context.Context, m *geo.Matrix, access []string, f int, c Case) (geo.Problem, error) {
	base := geo.Problem{Matrix: m, Access: access, F: f, Protocol: c.Protocol}
	p := base
	p.Objective, p.StorageBound = geo.MinRead, figStorageBound
	pl, err := geo.Solve(ctx, p)
	if err != nil {
		return geo.Problem{}, fmt.Errorf("geobench: least read latency of %s for %v: %w", c.Protocol, access, err)
	}
	rb := math.Ceil(pl.ReadMs*readSlack/5) * 5
	p = base
	p.Objective, p.ReadBound = c.Objective, rb
	switch c.Objective {
	case geo.MinWrite:
		p.StorageBound = figStorageBound
	default:
		if c.Objective == geo.MinRead {
			p.ReadBound, p.StorageBound = 0, figStorageBound
		}
		p.WriteBound = figWriteBound
		if _, err := geo.Solve(ctx, p); errors.Is(err, geo.ErrInfeasible) {
			q := base
			q.Objective, q.ReadBound, q.StorageBound = geo.MinWrite, p.ReadBound, p.StorageBound
			w, err := geo.Solve(ctx, q)
			if err != nil {
				return geo.Problem{}, fmt.Errorf("geobench: least write latency of %s for %v: %w", c.Protocol, access, err)
			}
			p.WriteBound = math.Ceil(w.WriteMs * 1.1)
		} else if err != nil {
			return geo.Problem{}, fmt.Errorf("geobench: %s for %v: %w", c, access, err)
		}
	}
	if _, err := geo.Solve(ctx, p); err != nil {
		return geo.Problem{}, fmt.Errorf("geobench: %s for %v with its bounds: %w", c, access, err)
	}
	return p, nil
}

// Config configures a run.
type Config struct {
	Instances int     // access sets (cycling through geo.AccessTypes)
	Rounds    int     // each round times Strata and HiGHS once per plan
	Seed      uint64  // access-set seed
	F         int     // failures tolerated (the paper: 1)
	Cases     []Case  // protocol/objective pairs
	Peer      Peer    // the HiGHS side
	TimeLimit float64 // per HiGHS solve, seconds (0: none)
	Progress  io.Writer
	// MismatchDir receives the instance JSON of every disagreement
	// ("" = not saved).
	MismatchDir string
}

// Result is one plan's medians and the cross-check.
type Result struct {
	Instance     string   `json:"instance"`
	Case         string   `json:"case"`
	Access       []string `json:"access"`
	ReadBound    float64  `json:"read_bound"`
	WriteBound   float64  `json:"write_bound"`
	StorageBound float64  `json:"storage_bound"`
	StrataMs     float64  `json:"strata_ms"`     // median geo.Solve wall time
	StrataMaxMs  float64  `json:"strata_max_ms"` // slowest round
	HighsS       float64  `json:"highs_s"`       // median HiGHS run() time
	HighsWallS   float64  `json:"highs_wall_s"`  // median process wall time
	Ratio        float64  `json:"ratio"`         // median per-round HiGHS run() / Strata
	RatioLo      float64  `json:"ratio_min"`     //
	RatioHi      float64  `json:"ratio_max"`     //
	StrataValue  float64  `json:"strata_value"`  // Strata's optimum
	HighsValue   float64  `json:"highs_value"`   // recomputed from HiGHS's plan
	HighsMIP     float64  `json:"highs_mip"`     // HiGHS's objective value
	HighsStatus  string   `json:"highs_status"`  //
	Same         bool     `json:"same_optimum"`  //
	Problem      string   `json:"problem,omitempty"`
	HighsNodes   int64    `json:"highs_nodes"`
	StrataPlan   string   `json:"strata_plan"` // k/n/quorums summary
	HighsPlan    string   `json:"highs_plan"`
	Variables    int      `json:"mip_variables"`
	Constraints  int      `json:"mip_constraints"`
}

// Report is a whole run.
type Report struct {
	Results    []Result `json:"results"`
	Mismatches int      `json:"mismatches"`
}

func summary(k, n, q1a, q2 int, sites []string) string {
	return fmt.Sprintf("k=%d n=%d q1a=%d q2=%d %s", k, n, q1a, q2, strings.Join(sites, ","))
}

// Run builds the instances and times both planners on each, alternating
// which goes first, round by round.
func Run(ctx context.Context, cfg Config) (Report, error) {
	m := geo.Default()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	logf := func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format, a...)
		}
	}
	var rep Report
	for i := range cfg.Instances {
		typ := geo.AccessTypes[i%len(geo.AccessTypes)]
		access, err := geo.RandomAccessSet(rng, m, typ)
		if err != nil {
			return rep, err
		}
		name := fmt.Sprintf("%s-%d", typ, i/len(geo.AccessTypes)+1)
		for _, c := range cfg.Cases {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			p, err := Bounds(ctx, m, access, cfg.F, c)
			if err != nil {
				return rep, err
			}
			r, err := runOne(ctx, cfg, name, c, p, logf)
			if err != nil {
				return rep, err
			}
			if !r.Same {
				rep.Mismatches++
			}
			rep.Results = append(rep.Results, r)
		}
	}
	return rep, nil
}

func runOne(ctx context.Context, cfg Config, name string, c Case, p geo.Problem, logf func(string, ...any)) (Result, error) {
	in, err := NewInstance(name+" "+c.String(), p)
	if err != nil {
		return Result{}, err
	}
	in.TimeLimit = cfg.TimeLimit
	if !in.Finite() {
		return Result{}, fmt.Errorf("geobench: %s has unmeasured latencies, which highs_plan.py refuses", in.Name)
	}
	res := Result{
		Instance: name, Case: c.String(), Access: p.Access,
		ReadBound: p.ReadBound, WriteBound: p.WriteBound, StorageBound: p.StorageBound,
	}
	var st, hs, hw, ratios []float64
	var first geo.Plan
	var ans Answer
	for r := range cfg.Rounds {
		logf("bench geo: %s %s (%s) round %d/%d\n", name, c, strings.Join(p.Access, ","), r+1, cfg.Rounds)
		var sd time.Duration
		var pl geo.Plan
		strata := func() error {
			t0 := time.Now()
			var err error
			pl, err = geo.Solve(ctx, p)
			sd = time.Since(t0)
			if err != nil {
				return fmt.Errorf("geobench: strata on %s: %w", in.Name, err)
			}
			return nil
		}
		var a Answer
		var wall time.Duration
		highs := func() error {
			var err error
			a, wall, err = cfg.Peer.Solve(ctx, in)
			return err
		}
		steps := []func() error{strata, highs}
		if r%2 == 1 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return res, err
			}
		}
		if r == 0 {
			first, ans = pl, a
		} else if !Same(Value(c.Objective, pl), Value(c.Objective, first)) {
			return res, fmt.Errorf("geobench: strata gave %v then %v on %s", Value(c.Objective, first), Value(c.Objective, pl), in.Name)
		}
		st = append(st, sd.Seconds()*1e3)
		hs = append(hs, a.SolveSeconds)
		hw = append(hw, wall.Seconds())
		ratios = append(ratios, a.SolveSeconds/math.Max(sd.Seconds(), 1e-9))
		res.HighsNodes = a.Nodes
	}
	res.StrataMs, res.StrataMaxMs = stats.Median(st), slices.Max(st)
	res.HighsS, res.HighsWallS = stats.Median(hs), stats.Median(hw)
	res.Ratio = stats.Median(ratios)
	res.RatioLo, res.RatioHi = stats.Range(ratios)
	res.StrataValue = Value(c.Objective, first)
	res.StrataPlan = summary(first.K, len(first.Sites), first.Q1a, first.Q2, first.Sites)
	res.HighsStatus = ans.Status
	res.HighsValue, res.HighsMIP = ans.EvalObjective, ans.Objective
	res.HighsPlan = summary(ans.K, ans.N, ans.Q1a, ans.Q2, ans.Sites)
	res.Variables, res.Constraints = ans.Variables, ans.Constraints
	problems := crossCheck(c, p, in, first, ans)
	res.Same = len(problems) == 0
	if !res.Same {
		res.Problem = strings.Join(problems, "; ")
		logf("bench geo: MISMATCH on %s: %s\n  strata: %s\n  highs:  %s\n", in.Name, res.Problem, res.StrataPlan, res.HighsPlan)
		if cfg.MismatchDir != "" {
			if f, err := saveInstance(cfg.MismatchDir, in); err == nil {
				logf("  instance saved to %s\n", f)
			} else {
				logf("  could not save the instance: %v\n", err)
			}
		}
	}
	return res, nil
}

// crossCheck lists every disagreement between Strata's plan and HiGHS's
// answer; both plans are also verified by geo's independent Plan.Check.
func crossCheck(c Case, p geo.Problem, in Instance, pl geo.Plan, a Answer) []string {
	var out []string
	sv := Value(c.Objective, pl)
	if err := pl.Check(p); err != nil {
		out = append(out, fmt.Sprintf("Strata's plan fails Check: %v", err))
	}
	if !a.Optimal() {
		return append(out, fmt.Sprintf("HiGHS status %q (Strata %.4f)", a.Status, sv))
	}
	hp, err := a.Plan(in)
	if err != nil {
		return append(out, err.Error())
	}
	if err := hp.Check(p); err != nil {
		out = append(out, fmt.Sprintf("HiGHS's plan fails Check: %v", err))
	}
	if !Same(sv, a.EvalObjective) {
		who := "HiGHS's plan is better: Strata missed the optimum (geo bug?)"
		if a.EvalObjective > sv {
			who = "Strata's plan is better: the MIP missed it (formulation bug?)"
		}
		out = append(out, fmt.Sprintf("optimum: Strata %.6f, HiGHS %.6f (%s)", sv, a.EvalObjective, who))
	}
	if !SameMIP(a.EvalObjective, a.Objective) {
		out = append(out, fmt.Sprintf("HiGHS's MIP value %.6f differs from its plan's recomputed value %.6f", a.Objective, a.EvalObjective))
	}
	return out
}

func saveInstance(dir string, in Instance) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := strings.NewReplacer(" ", "_", "/", "_").Replace(in.Name) + ".json"
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := in.Encode(f); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// Ratios gives, per case and over all plans, the median of the per-plan
// ratios HiGHS/Strata (above 1: Strata is faster), and their range.
func (r Report) Ratios() (keys []string, med, lo, hi map[string]float64) {
	by := map[string][]float64{}
	var order []string
	for _, x := range r.Results {
		if _, ok := by[x.Case]; !ok {
			order = append(order, x.Case)
		}
		by[x.Case] = append(by[x.Case], x.Ratio)
		by["all"] = append(by["all"], x.Ratio)
	}
	med, lo, hi = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, k := range append(order, "all") {
		if len(by[k]) == 0 {
			continue
		}
		keys = append(keys, k)
		med[k] = stats.Median(by[k])
		lo[k], hi[k] = stats.Range(by[k])
	}
	return keys, med, lo, hi
}

// PaperTable1 is the Pando paper's Table 1 (median GapVolume).
var PaperTable1 = map[string]map[string]float64{
	string(geo.Pando):   {"NA": 0.06, "NA-EU": 0.07, "NA-AS": 0.04, "GL": 0.07},
	geo.EPRSP:           {"NA": 0.37, "NA-EU": 0.40, "NA-AS": 0.34, "GL": 0.34},
	string(geo.EPaxos):  {"NA": 0.44, "NA-EU": 0.48, "NA-AS": 0.44, "GL": 0.49},
	string(geo.RSPaxos): {"NA": 0.52, "NA-EU": 0.59, "NA-AS": 0.53, "GL": 0.48},
}

// Table1Rows lists the approaches in the paper's order.
var Table1Rows = []string{string(geo.Pando), geo.EPRSP, string(geo.EPaxos), string(geo.RSPaxos)}

// WriteTable1 prints the campaign's medians beside the paper's.
func WriteTable1(w io.Writer, med map[string]map[string]float64) {
	fmt.Fprintf(w, "%-9s", "ours/paper")
	for _, t := range geo.AccessTypes {
		fmt.Fprintf(w, " %13s", t)
	}
	fmt.Fprintln(w)
	for _, a := range Table1Rows {
		fmt.Fprintf(w, "%-10s", a)
		for _, t := range geo.AccessTypes {
			fmt.Fprintf(w, "   %.2f / %.2f", med[t][a], PaperTable1[a][t])
		}
		fmt.Fprintln(w)
	}
}

// MarshalIndent is json.MarshalIndent with context on errors.
func MarshalIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("geobench: %w", err)
	}
	return b, nil
}
