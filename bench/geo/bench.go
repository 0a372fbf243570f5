package geo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/geo"
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
		return geo.Problem{}, fmt.Errorf("bench geo: least read latency of %s for %v: %w", c.Protocol, access, err)
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
				return geo.Problem{}, fmt.Errorf("bench geo: least write latency of %s for %v: %w", c.Protocol, access, err)
			}
			p.WriteBound = math.Ceil(w.WriteMs * 1.1)
		} else if err != nil {
			return geo.Problem{}, fmt.Errorf("bench geo: %s for %v: %w", c, access, err)
		}
	}
	if _, err := geo.Solve(ctx, p); err != nil {
		return geo.Problem{}, fmt.Errorf("bench geo: %s for %v with its bounds: %w", c, access, err)
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
	TimeLimit float64 // per HiGHS solve, seconds (0: none)
	// PeerDir holds highs_plan.py and requirements.txt ("" = bench/geo
	// found from the working directory); Venv is the Python venv with
	// highspy, created if absent.
	PeerDir, Venv string
	// CampaignSets is the Table 1 campaign's access sets per type (0: no
	// campaign).
	CampaignSets int
	Progress     io.Writer
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
	// Per round, in round order (the pairs behind the ratios).
	StrataRoundsMs []float64 `json:"strata_rounds_ms"` // geo.Solve wall time
	HighsRoundsS   []float64 `json:"highs_rounds_s"`   // HiGHS run() time
	StrataMs       float64   `json:"strata_ms"`        // median geo.Solve wall time
	StrataMaxMs    float64   `json:"strata_max_ms"`    // slowest round
	HighsS         float64   `json:"highs_s"`          // median HiGHS run() time
	HighsWallS     float64   `json:"highs_wall_s"`     // median process wall time
	Ratio          float64   `json:"ratio"`            // median per-round HiGHS run() / Strata
	RatioLo        float64   `json:"ratio_min"`        //
	RatioHi        float64   `json:"ratio_max"`        //
	StrataValue    float64   `json:"strata_value"`     // Strata's optimum
	HighsValue     float64   `json:"highs_value"`      // recomputed from HiGHS's plan
	HighsMIP       float64   `json:"highs_mip"`        // HiGHS's objective value
	HighsStatus    string    `json:"highs_status"`     //
	Same           bool      `json:"same_optimum"`     //
	Problem        string    `json:"problem,omitempty"`
	HighsNodes     int64     `json:"highs_nodes"`
	StrataPlan     string    `json:"strata_plan"` // k/n/quorums summary
	HighsPlan      string    `json:"highs_plan"`
	Variables      int       `json:"mip_variables"`
	Constraints    int       `json:"mip_constraints"`
}

// Results are the report's results: every plan, and the campaign if run.
type Results struct {
	Plans      []Result `json:"plans"`
	Mismatches int      `json:"mismatches"`
	// MismatchDir holds the instances of the mismatches.
	MismatchDir string    `json:"mismatch_dir,omitempty"`
	Campaign    *Campaign `json:"campaign,omitempty"`
}

// Campaign is the Table 1 campaign's outcome (Strata only).
type Campaign struct {
	SetsPerType int                           `json:"sets_per_type"`
	WallS       float64                       `json:"wall_s"`
	MedianGap   map[string]map[string]float64 `json:"median_gap"`
	Paper       map[string]map[string]float64 `json:"paper"`
}

func summary(k, n, q1a, q2 int, sites []string) string {
	return fmt.Sprintf("k=%d n=%d q1a=%d q2=%d %s", k, n, q1a, q2, strings.Join(sites, ","))
}

// Run sets up the HiGHS peer, builds the instances and times both
// planners on each, the order alternating round by round, then runs the
// campaign if asked.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if cfg.Rounds < 1 || cfg.Instances < 1 || len(cfg.Cases) == 0 {
		return nil, errors.New("bench geo: need rounds >= 1, instances >= 1 and at least one case")
	}
	logf := func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format, a...)
		}
	}
	log := cfg.Progress
	if log == nil {
		log = io.Discard
	}
	dir, err := FindPeerDir(cfg.PeerDir)
	if err != nil {
		return nil, err
	}
	peer, err := SetupVenv(ctx, cfg.Venv, dir, log)
	if err != nil {
		return nil, err
	}
	pv, err := peer.Versions(ctx)
	if err != nil {
		return nil, err
	}
	var cases []string
	for _, c := range cfg.Cases {
		cases = append(cases, c.String())
	}
	rep := kit.NewReport("geo", kit.Settings{
		"rounds":        cfg.Rounds,
		"order":         "Strata and HiGHS alternate which goes first, round by round (kit.Order)",
		"instances":     fmt.Sprintf("%d random access sets of 3-5 front-ends (types cycling %s), seed %d, over the 25 Azure candidate sites", cfg.Instances, strings.Join(geo.AccessTypes, ", "), cfg.Seed),
		"f":             cfg.F,
		"cases":         cases,
		"bounds":        fmt.Sprintf("read <= %.2f x the protocol's least read latency at storage %d (rounded up to 5 ms); min-write: storage <= %d; min-storage: writes <= %d ms (or 1.1 x the least feasible)", readSlack, figStorageBound, figStorageBound, figWriteBound),
		"campaign_sets": cfg.CampaignSets,
	})
	rep.System("strata", kit.Settings{
		"planner": "geo.Solve (exact search of the latency model, docs/geo.md), in this process",
		"timed":   "geo.Solve's wall time",
		"threads": 1,
	})
	limit := "none"
	if cfg.TimeLimit > 0 {
		limit = fmt.Sprintf("%gs", cfg.TimeLimit)
	}
	rep.System("highs", kit.Settings{
		"planner":    "bench/geo/highs_plan.py: the same model as a MIP, solved by HiGHS",
		"highspy":    pv.Highspy,
		"python":     pv.Python,
		"venv":       peer.Python,
		"timed":      "HiGHS run() alone (no Python start, no model building); process wall time in results",
		"time_limit": limit,
		"threads":    "HiGHS default",
	})
	m := geo.Default()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	res := &Results{MismatchDir: cfg.MismatchDir}
	for i := range cfg.Instances {
		typ := geo.AccessTypes[i%len(geo.AccessTypes)]
		access, err := geo.RandomAccessSet(rng, m, typ)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%s-%d", typ, i/len(geo.AccessTypes)+1)
		for _, c := range cfg.Cases {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			p, err := Bounds(ctx, m, access, cfg.F, c)
			if err != nil {
				return nil, err
			}
			r, err := runOne(ctx, cfg, peer, name, c, p, logf)
			if err != nil {
				return nil, err
			}
			if !r.Same {
				res.Mismatches++
				rep.Note("MISMATCH %s %s: %s", r.Instance, r.Case, r.Problem)
			}
			res.Plans = append(res.Plans, r)
		}
	}
	ratios(res.Plans).Summarize(rep)
	if cfg.CampaignSets > 0 {
		logf("bench geo: Table 1 campaign, %d access sets per type\n", cfg.CampaignSets)
		t1 := time.Now()
		last := time.Now()
		r, err := geo.Campaign(ctx, geo.CampaignOptions{Sets: cfg.CampaignSets, Seed: 1, F: 1, Progress: func(done, total int) {
			if time.Since(last) > 10*time.Second || done == total {
				last = time.Now()
				logf("bench geo: campaign %d/%d access sets\n", done, total)
			}
		}})
		if err != nil {
			return nil, fmt.Errorf("bench geo: campaign: %w", err)
		}
		res.Campaign = &Campaign{SetsPerType: cfg.CampaignSets, WallS: time.Since(t1).Seconds(), MedianGap: r.Median, Paper: PaperTable1}
	}
	rep.Results = res
	return rep, nil
}

// ratios pairs each plan's rounds: per case and over all plans, HiGHS's
// run() time over Strata's (above 1: Strata is faster).
func ratios(plans []Result) kit.Ratios {
	rs := kit.Ratios{}
	for _, r := range plans {
		for i := range min(len(r.StrataRoundsMs), len(r.HighsRoundsS)) {
			s, h := r.StrataRoundsMs[i]/1e3, r.HighsRoundsS[i]
			rs.Lower("plan-time strata/highs "+r.Case, s, h)
			rs.Lower("plan-time strata/highs all", s, h)
		}
	}
	return rs
}

func runOne(ctx context.Context, cfg Config, peer Peer, name string, c Case, p geo.Problem, logf func(string, ...any)) (Result, error) {
	in, err := NewInstance(name+" "+c.String(), p)
	if err != nil {
		return Result{}, err
	}
	in.TimeLimit = cfg.TimeLimit
	if !in.Finite() {
		return Result{}, fmt.Errorf("bench geo: %s has unmeasured latencies, which highs_plan.py refuses", in.Name)
	}
	res := Result{
		Instance: name, Case: c.String(), Access: p.Access,
		ReadBound: p.ReadBound, WriteBound: p.WriteBound, StorageBound: p.StorageBound,
	}
	var hw, rr []float64
	var first geo.Plan
	var ans Answer
	for r := range cfg.Rounds {
		logf("bench geo: %s %s (%s) round %d/%d\n", name, c, strings.Join(p.Access, ","), r+1, cfg.Rounds)
		var sd time.Duration
		var pl geo.Plan
		var a Answer
		var wall time.Duration
		for _, sys := range kit.Order(r, []string{"strata", "highs"}) {
			var err error
			if sys == "strata" {
				t0 := time.Now()
				pl, err = geo.Solve(ctx, p)
				sd = time.Since(t0)
				if err != nil {
					return res, fmt.Errorf("bench geo: strata on %s: %w", in.Name, err)
				}
			} else if a, wall, err = peer.Solve(ctx, in); err != nil {
				return res, err
			}
		}
		if r == 0 {
			first, ans = pl, a
		} else if !Same(Value(c.Objective, pl), Value(c.Objective, first)) {
			return res, fmt.Errorf("bench geo: strata gave %v then %v on %s", Value(c.Objective, first), Value(c.Objective, pl), in.Name)
		}
		res.StrataRoundsMs = append(res.StrataRoundsMs, sd.Seconds()*1e3)
		res.HighsRoundsS = append(res.HighsRoundsS, a.SolveSeconds)
		hw = append(hw, wall.Seconds())
		rr = append(rr, a.SolveSeconds/math.Max(sd.Seconds(), 1e-9))
		res.HighsNodes = a.Nodes
	}
	res.StrataMs, res.StrataMaxMs = kit.Median(res.StrataRoundsMs), slices.Max(res.StrataRoundsMs)
	res.HighsS, res.HighsWallS = kit.Median(res.HighsRoundsS), kit.Median(hw)
	res.Ratio = kit.Median(rr)
	res.RatioLo, res.RatioHi = slices.Min(rr), slices.Max(rr)
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

// Print writes the plans' table, the ratios' summary lines, any mismatch
// and the campaign's table, then the settings and the ratios.
func Print(w io.Writer, rep *kit.Report) error {
	res, ok := rep.Results.(*Results)
	if !ok {
		return fmt.Errorf("bench geo: report results are %T, not geo results", rep.Results)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "instance\tcase\tStrata ms\tHiGHS s\tHiGHS/Strata\tsame optimum\toptimum\t")
	maxMs := 0.0
	for _, r := range res.Plans {
		same := "yes"
		if !r.Same {
			same = "NO"
		}
		maxMs = max(maxMs, r.StrataMaxMs)
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.2f\t%.0f\t%s\t%.4g\t\n", r.Instance, r.Case, r.StrataMs, r.HighsS, r.Ratio, same, r.StrataValue)
	}
	tw.Flush()
	fmt.Fprintf(w, "slowest Strata plan: %.1f ms; optima agree on %d of %d plans\n", maxMs, len(res.Plans)-res.Mismatches, len(res.Plans))
	for _, r := range res.Plans {
		if !r.Same {
			fmt.Fprintf(w, "MISMATCH %s %s (%s; read<=%g write<=%g storage<=%g): %s\n  strata: %s\n  highs:  %s\n",
				r.Instance, r.Case, strings.Join(r.Access, ","), r.ReadBound, r.WriteBound, r.StorageBound, r.Problem, r.StrataPlan, r.HighsPlan)
		}
	}
	if c := res.Campaign; c != nil {
		fmt.Fprintf(w, "Table 1 campaign (%d access sets per type, seed 1; Strata only): %s wall\n", c.SetsPerType, time.Duration(c.WallS*float64(time.Second)).Round(time.Second))
		WriteTable1(w, c.MedianGap)
	}
	fmt.Fprintln(w)
	rep.PrintConfig(w)
	rep.PrintRatios(w)
	return nil
}

// Check fails when any plan's optima disagree (the table says which).
func Check(rep *kit.Report) error {
	res, ok := rep.Results.(*Results)
	if !ok {
		return fmt.Errorf("bench geo: report results are %T, not geo results", rep.Results)
	}
	if res.Mismatches > 0 {
		where := ""
		if res.MismatchDir != "" {
			where = " (instances in " + res.MismatchDir + ")"
		}
		return fmt.Errorf("bench geo: %d of %d plans disagree between Strata and HiGHS%s", res.Mismatches, len(res.Plans), where)
	}
	return nil
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
