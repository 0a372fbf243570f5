// Package geokv is `strata bench geo-kv`: Pando's prototype results
// (Uluyol et al., NSDI 2020, §5.2, Figure 12) on the emulated WAN. For
// each of the paper's four access sets, each protocol's plan (Pando,
// RS-Paxos, and replication as EPaxos plans it) is made by geo.Solve with
// f = 1 under the same storage-overhead bound, and run by the same engine
// (wor.EC): one persistent `strata wor serve` per data site of the plan,
// each on its site's loopback host behind the emulated WAN
// (internal/geolayout, internal/wan), and in this process one client per
// front end on its site's host with the WAN wrapper of its site, so that
// both directions are delayed. Each front end runs a closed loop of
// alternating writes (to fresh registers of its own segment) and reads
// (of registers already written by any front end), 1 KiB values.
package geokv

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/geo"
	"strata/internal/geolayout"
	"strata/internal/wan"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
	"strata/wor"
)

// props is the protocol stack of `strata wor serve` and its clients.
const props = "Reliable,Fragment,RPC"

// AccessSet is one of the paper's §5.2 access sets, with the write-latency
// SLO under which Figure 12(a) compares read latency.
type AccessSet struct {
	Name     string
	Regions  []string // the front ends' regions (the matrix's az_ names)
	Paper    string   // the regions as the paper names them
	WriteSLO float64  // ms: Figure 12(a)'s write SLO for this set
}

// AccessSets are the paper's four access sets (§5.2: "We consider one
// access set of each of our 4 types"), mapped to the embedded matrix's
// region names, with Figure 12(a)'s write SLOs.
var AccessSets = []AccessSet{
	{Name: "NA", Regions: []string{"az_centralus", "az_eastus", "az_northcentralus", "az_westus"},
		Paper: "Central US, East US, North Central US, West US", WriteSLO: 100},
	{Name: "NA-EU", Regions: []string{"az_canadaeast", "az_centralus", "az_northeurope", "az_westeurope"},
		Paper: "Canada East, Central US, North Europe, West Europe", WriteSLO: 150},
	{Name: "NA-AS", Regions: []string{"az_centralus", "az_japanwest", "az_koreasouth"},
		Paper: "Central US, Japan West, Korea South", WriteSLO: 300},
	{Name: "GL", Regions: []string{"az_australiaeast", "az_northeurope", "az_southeastasia", "az_westus"},
		Paper: "Australia East, North Europe, SE Asia, West US", WriteSLO: 300},
}

// Protocols are the plans compared, Pando first; each is run by wor.EC.
var Protocols = []geo.Protocol{geo.Pando, geo.RSPaxos, geo.EPaxos}

// Config is one run.
type Config struct {
	Strata    string        // the strata binary (for `strata wor serve`)
	Dir       string        // data folder (emptied first, removed after)
	Sets      []string      // access-set names (empty: all four)
	Ops       int           // measured operations per front end and cell
	Warmup    int           // preloaded registers per front end (unmeasured writes; the reads' registers)
	Rounds    int           // rounds; each alternates the protocols' order
	Storage   float64       // bound on the storage overhead (the paper's 3)
	F         int           // data-center failures tolerated (1)
	ValueSize int           // bytes per value (1024)
	Timeout   time.Duration // per-request timeout of the engine
	Blocks    int           // journal size of each wormserver, 4 KiB blocks
	Seed      uint64        // the reads' choice of register
	// Figure 14: throughput per configuration on loopback without delays
	// for TputWindow per cell (0: not measured), TputClients clients.
	TputWindow  time.Duration
	TputClients int
	// Figure 13: 1..ContWriters concurrent writers on one register,
	// ContTrials registers each (0: not measured).
	ContWriters, ContTrials int
	Progress                io.Writer // progress lines (nil: none)
	PlotPath                string    // PNG of Figure 12 (empty: none)
}

func (c *Config) defaults() {
	if c.Ops <= 0 {
		c.Ops = 200
	}
	if c.Warmup <= 0 {
		c.Warmup = 5
	}
	if c.Rounds <= 0 {
		c.Rounds = 1
	}
	if c.Storage <= 0 {
		c.Storage = 3
	}
	if c.ValueSize <= 0 {
		c.ValueSize = 1024
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.Blocks <= 0 {
		c.Blocks = 4096
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// FrontEnd is one front end's figures in one cell.
type FrontEnd struct {
	Name   string `json:"name"`
	Reads  int    `json:"reads"`
	Writes int    `json:"writes"`
	Errors int    `json:"errors"`
	// Measured latencies, ms.
	ReadP50  float64 `json:"read_p50_ms"`
	ReadP95  float64 `json:"read_p95_ms"`
	WriteP50 float64 `json:"write_p50_ms"`
	WriteP95 float64 `json:"write_p95_ms"`
	// The planner's predictions (its protocol's model: Pando's writes
	// with partial delegation, EPaxos's one-round writes).
	PlanReadMs  float64 `json:"plan_read_ms"`
	PlanWriteMs float64 `json:"plan_write_ms"`
	// Delegate is the data site whose proposer runs this front end's
	// Phase 2 (Pando plans: the planner's delegate); "" when the front
	// end runs both phases itself.
	Delegate string `json:"delegate,omitempty"`
	// What the engine does, from the same matrix: a read is one round to
	// the nearest Q1a sites; a write is Phase 1 (Q1a) then Phase 2 (Q2)
	// from the front end, or with a delegate front end → site → delegate
	// → site → front end (DelegatedWriteModel).
	EngineReadMs  float64 `json:"engine_read_ms"`
	EngineWriteMs float64 `json:"engine_write_ms"`
	// ReadWithin: measured read p95 within 10% + 5 ms of PlanReadMs;
	// WriteWithin the same for writes and PlanWriteMs.
	ReadWithin  bool `json:"read_within_10pct_5ms"`
	WriteWithin bool `json:"write_within_10pct_5ms"`
	// WriteWithinEngine: measured write p95 within 10% + 5 ms of
	// EngineWriteMs.
	WriteWithinEngine bool `json:"write_within_engine_10pct_5ms"`
}

// Cell is one access set × protocol × round.
type Cell struct {
	Figure   string     `json:"figure"` // "12"
	Set      string     `json:"set"`
	Protocol string     `json:"protocol"`
	Round    int        `json:"round"`
	Sites    []string   `json:"sites"`
	K        int        `json:"k"`
	R        int        `json:"r"`
	Q1a      int        `json:"q1a"`
	Q1b      int        `json:"q1b"`
	Q2       int        `json:"q2"`
	Storage  float64    `json:"storage_overhead"`
	WriteSLO float64    `json:"write_slo_ms"` // the write bound planned with (0: none)
	FE       []FrontEnd `json:"front_ends"`
	// Slowest front end's p95s (Figure 12 plots min and max over them).
	ReadP95Max  float64 `json:"read_p95_max_ms"`
	WriteP95Max float64 `json:"write_p95_max_ms"`
	ReadP95Min  float64 `json:"read_p95_min_ms"`
	WriteP95Min float64 `json:"write_p95_min_ms"`
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of xs.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Within reports whether measured is within 10% + 5 ms of predicted.
func Within(measured, predicted float64) bool {
	return math.Abs(measured-predicted) <= 0.1*predicted+5
}

// SelectSets returns the named access sets (all for none).
func SelectSets(names []string) ([]AccessSet, error) {
	if len(names) == 0 {
		return slices.Clone(AccessSets), nil
	}
	var out []AccessSet
	for _, n := range names {
		i := slices.IndexFunc(AccessSets, func(a AccessSet) bool { return strings.EqualFold(a.Name, n) })
		if i < 0 {
			return nil, fmt.Errorf("unknown access set %q (want NA, NA-EU, NA-AS or GL)", n)
		}
		out = append(out, AccessSets[i])
	}
	return out, nil
}

// PlanFor plans protocol for set: minimum read latency with f failures
// tolerated, storage overhead at most storage and the set's Figure 12(a)
// write SLO. If no plan meets that write SLO, it plans without it and
// says so in note.
func PlanFor(ctx context.Context, set AccessSet, p geo.Protocol, f int, storage float64) (pl geo.Plan, writeSLO float64, note string, err error) {
	prob := geo.Problem{Access: set.Regions, F: f, StorageBound: storage, WriteBound: set.WriteSLO, Objective: geo.MinRead, Protocol: p}
	pl, err = geo.Solve(ctx, prob)
	if err == nil {
		return pl, set.WriteSLO, "", nil
	}
	if !errors.Is(err, geo.ErrInfeasible) {
		return geo.Plan{}, 0, "", err
	}
	prob.WriteBound = 0
	pl, err = geo.Solve(ctx, prob)
	if err != nil {
		return geo.Plan{}, 0, "", err
	}
	return pl, 0, fmt.Sprintf("%s %s: no plan meets the write SLO %.0f ms at storage <= %g; planned without a write bound (its write prediction %.0f ms)", set.Name, p, set.WriteSLO, storage, pl.WriteMs), nil
}

// EngineModel is what wor.EC costs a front end on the emulated WAN: rtt(s)
// is the round trip to data site s; a read waits for the Q1a nearest
// sites, a write for Phase 1 (Q1a nearest) and then Phase 2 (Q2 nearest).
func EngineModel(sites []string, q1a, q2 int, rtt func(site string) float64) (read, write float64) {
	rs := make([]float64, len(sites))
	for i, s := range sites {
		rs[i] = rtt(s)
	}
	sort.Float64s(rs)
	if q1a < 1 || q2 < 1 || q1a > len(rs) || q2 > len(rs) {
		return math.NaN(), math.NaN()
	}
	return rs[q1a-1], rs[q1a-1] + rs[q2-1]
}

// DelegatedWriteModel is a write's latency from front end fe with Phase
// 2 delegated to the proposer at site d (wor.EC.Propose with a
// delegate), given one-way delays in ms: Phase 1 reaches the sites from
// fe and the promises go on to d, which starts Phase 2 once it holds
// the value (sent from fe) and Q1a promises; the acceptances go from
// the sites to fe, which is done at the Q2-th.
func DelegatedWriteModel(sites []string, q1a, q2 int, fe, d string, oneway func(from, to string) float64) float64 {
	if q1a < 1 || q2 < 1 || q1a > len(sites) || q2 > len(sites) {
		return math.NaN()
	}
	p1 := make([]float64, len(sites))
	p2 := make([]float64, len(sites))
	for i, s := range sites {
		p1[i] = oneway(fe, s) + oneway(s, d)
		p2[i] = oneway(d, s) + oneway(s, fe)
	}
	sort.Float64s(p1)
	sort.Float64s(p2)
	return max(oneway(fe, d), p1[q1a-1]) + p2[q2-1]
}

// Run runs the benchmark and returns its report. A cell that fails is
// recorded in the report's failures; the error is for a run that could
// not start at all.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	cfg.defaults()
	sets, err := SelectSets(cfg.Sets)
	if err != nil {
		return nil, err
	}
	if cfg.Strata == "" {
		return nil, errors.New("geokv: no strata binary")
	}
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(cfg.Dir)
	rep := kit.NewReport("geo-kv", kit.Settings{
		"ops_per_front_end": cfg.Ops, "preload_writes_per_front_end": cfg.Warmup, "rounds": cfg.Rounds, "value_bytes": cfg.ValueSize,
		"read_write": "1:1 (alternating, writes first)", "f": cfg.F, "storage_bound": cfg.Storage,
		"workload": "closed loop, one outstanding op per front end; writes: wor.EC.Propose (Capture+Write in one call) to a fresh register of the front end's own segment; reads: uniformly one of the registers preloaded by all front ends (written, then 1 s for Phase 3 to settle, before the measured ops)",
		"engine":   "wor.EC (Pando's erasure-coded Paxos) for every protocol's plan; Pando plans' writes with partial delegation to the planner's delegate (a proposer node on the delegate's site, in the bench process); other protocols' writes run both phases from the front end",
		"wan":      "internal/wan, embedded Azure matrix, one-way = half the round trip, no jitter; every site on its own loopback host",
	})
	var sets2 []string
	for _, s := range sets {
		sets2 = append(sets2, fmt.Sprintf("%s = %s (paper: %s; write SLO %.0f ms)", s.Name, strings.Join(s.Regions, ","), s.Paper, s.WriteSLO))
	}
	rep.Config["run"]["access_sets"] = sets2
	// Plans once: they are the same every round.
	type planned struct {
		pl       geo.Plan
		writeSLO float64
	}
	plans := map[string]map[geo.Protocol]planned{}
	for _, s := range sets {
		plans[s.Name] = map[geo.Protocol]planned{}
		for _, p := range Protocols {
			pl, slo, note, err := PlanFor(ctx, s, p, cfg.F, cfg.Storage)
			if err != nil {
				rep.Fail("%s %s: planning: %v", s.Name, p, err)
				continue
			}
			if note != "" {
				rep.Note("%s", note)
			}
			plans[s.Name][p] = planned{pl, slo}
			rep.System(fmt.Sprintf("%s/%s", s.Name, p), kit.Settings{
				"sites": strings.Join(pl.Sites, ","), "k": pl.K, "r": pl.R, "q1a": pl.Q1a, "q1b": pl.Q1b, "q2": pl.Q2,
				"storage_overhead": pl.Storage, "planned_read_ms": pl.ReadMs, "planned_write_ms": pl.WriteMs, "write_slo_ms": slo,
				"servers": fmt.Sprintf("%d x strata wor serve --dir (persistent journal, %d blocks), engine wor.EC, request timeout %s", len(pl.Sites), cfg.Blocks, cfg.Timeout),
			})
		}
	}
	var cells []Cell
	ratios := kit.Ratios{}
	protos := make([]string, len(Protocols))
	for i, p := range Protocols {
		protos[i] = string(p)
	}
	for r := 1; r <= cfg.Rounds; r++ {
		for _, s := range sets {
			got := map[string]Cell{}
			for _, p := range kit.Order(r-1, protos) {
				pp, ok := plans[s.Name][geo.Protocol(p)]
				if !ok {
					continue
				}
				if ctx.Err() != nil {
					return rep, ctx.Err()
				}
				fmt.Fprintf(cfg.Progress, "geo-kv: round %d %s %s: %d sites (k=%d r=%d q1a=%d q2=%d), %d front ends x %d ops\n",
					r, s.Name, p, len(pp.pl.Sites), pp.pl.K, pp.pl.R, pp.pl.Q1a, pp.pl.Q2, len(s.Regions), cfg.Ops)
				c, err := runCell(ctx, cfg, s, pp.pl, r)
				if err != nil {
					rep.Fail("round %d %s %s: %v", r, s.Name, p, err)
					continue
				}
				c.WriteSLO = pp.writeSLO
				cells = append(cells, c)
				got[p] = c
				fmt.Fprintf(cfg.Progress, "geo-kv: round %d %s %s: read p95 max %.1f ms, write p95 max %.1f ms\n", r, s.Name, p, c.ReadP95Max, c.WriteP95Max)
			}
			AddRatios(ratios, s.Name, got)
		}
	}
	if cfg.PlotPath != "" && len(cells) > 0 {
		if err := plotFig12(cfg.PlotPath, cells, sets); err != nil {
			rep.Note("plot %s: %v", cfg.PlotPath, err)
		} else {
			rep.Note("Figure 12 plotted to %s", cfg.PlotPath)
		}
	}
	results := make([]any, 0, len(cells))
	for _, c := range cells {
		results = append(results, c)
	}
	if cfg.TputWindow > 0 && ctx.Err() == nil {
		rep.Config["run"]["fig14"] = fmt.Sprintf("%d closed-loop clients, %s window after a tenth of it as warm-up, values %v bytes; writes to fresh registers, then reads of those", cfg.TputClients, cfg.TputWindow, TputSizes)
		for _, x := range RunThroughput(ctx, TputConfig{Strata: cfg.Strata, Dir: cfg.Dir, Window: cfg.TputWindow, Clients: cfg.TputClients, Rounds: cfg.Rounds, Progress: cfg.Progress}, rep, ratios) {
			results = append(results, x)
		}
		rep.Note("fig14: every server and the client share this one machine, so ops/s is the throughput of one machine's worth of hardware, the paper's per-machine figure; ops/s per server divides it by n. Ratios are EC/replication (> 1: erasure coding better)")
	}
	if cfg.ContTrials > 0 && cfg.ContWriters > 0 && ctx.Err() == nil {
		for _, x := range RunContention(ctx, cfg, cfg.ContWriters, cfg.ContTrials, rep, ratios) {
			results = append(results, x)
		}
		rep.Note("fig13: proposals count a writer's own captures; with the leader fallback, the leader's retries (up to 8, wor's leaderTries) are not counted. Ratios are leaderless/leader write p95 (> 1: the fallback better)")
	}
	ratios.Summarize(rep)
	rep.Results = results
	for _, s := range []string{"NA-AS", "GL"} {
		for _, peer := range []string{"epaxos", "rspaxos"} {
			k := RatioKey("read-p95", s, peer)
			if v, ok := rep.Ratios[k]; ok {
				verdict := "meets"
				if v < 1/(1-0.18) {
					verdict = "misses"
				}
				rep.Note("%s: %.3f %s the issue's target (Pando's slowest read p95 at least 18%% below %s's: ratio >= 1.22)", k, v, verdict, peer)
			}
		}
	}
	rep.Note("Pando's writes use partial delegation (the planner's model); replication plans (EPaxos's k=1) run wor.EC's two-round writes from the front end, not EPaxos's one-round fast path, so their writes exceed the planner's EPaxos prediction; engine_write_ms is what the engine's write path predicts from the same matrix")
	return rep, nil
}

// RatioKey names a ratio: metric of the slowest front end in set, peer's
// over Pando's (> 1: Pando better).
func RatioKey(metric, set, peer string) string {
	return fmt.Sprintf("%s/%s: %s/pando", metric, set, peer)
}

// AddRatios adds one round's ratios of an access set: the slowest front
// end's read and write p95, each other protocol's over Pando's.
func AddRatios(rs kit.Ratios, set string, got map[string]Cell) {
	pando, ok := got[string(geo.Pando)]
	if !ok {
		return
	}
	for _, peer := range []string{string(geo.EPaxos), string(geo.RSPaxos)} {
		c, ok := got[peer]
		if !ok {
			continue
		}
		rs.Lower(RatioKey("read-p95", set, peer), pando.ReadP95Max, c.ReadP95Max)
		rs.Lower(RatioKey("write-p95", set, peer), pando.WriteP95Max, c.WriteP95Max)
	}
}

// settle is the pause after the preload: more than any one-way delay of
// the matrix.
const settle = time.Second

// op is one measured operation.
type op struct {
	read bool
	ms   float64
	err  error
}

// runCell starts the plan's servers, runs the workload and stops them.
// geoCluster is a plan's wormservers running behind the emulated WAN.
type geoCluster struct {
	l       *geolayout.Layout
	w       *wan.Config
	dir     string
	servers []stack.Addr
	procs   []*kit.Proc
	nodes   []*stack.Node
	props   map[string]stack.Addr // delegate site -> its proposer's address
}

// startCluster lays pl out for the front ends in access under dir and
// starts a persistent wormserver per data site on its site's host.
func startCluster(ctx context.Context, cfg Config, pl geo.Plan, access []string, dir string) (_ *geoCluster, err error) {
	l, err := geolayout.New(pl, access)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &geoCluster{l: l, dir: dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	wanPath, err := filepath.Abs(filepath.Join(dir, "wan.json"))
	if err != nil {
		return nil, err
	}
	if err := l.WriteWAN(wanPath); err != nil {
		return nil, err
	}
	if c.w, err = wan.Load(wanPath); err != nil {
		return nil, err
	}
	c.servers = make([]stack.Addr, len(pl.Sites))
	for i, site := range pl.Sites {
		p, err := kit.Start(ctx, kit.Cmd{
			Name: fmt.Sprintf("wormserver %d (%s)", i+1, site),
			Argv: []string{cfg.Strata, "wor", "serve", "--listen", "udp:" + l.Hosts[site] + ":0",
				"--dir", filepath.Join(dir, fmt.Sprintf("wor-%d", i+1)), "--blocks", fmt.Sprint(cfg.Blocks)},
			Env:   []string{"STRATA_WAN=" + wanPath, "STRATA_WAN_SITE="},
			Stdin: true,
			Ready: func(line string) bool { return strings.HasPrefix(line, "listening on ") },
		})
		if err != nil {
			return nil, err
		}
		c.procs = append(c.procs, p)
		c.servers[i] = stack.Addr(strings.TrimSpace(strings.TrimPrefix(p.Ready, "listening on ")))
	}
	return c, nil
}

// node opens a node on site's host, delayed as site.
func (c *geoCluster) node(site string) (*stack.Node, error) {
	n, err := layers.ListenOpts("udp:"+c.l.Hosts[site]+":0", props, transport.Options{Wrap: c.w.Wrap(site)})
	if err != nil {
		return nil, fmt.Errorf("node in %s: %w", site, err)
	}
	c.nodes = append(c.nodes, n)
	return n, nil
}

// engine opens a wor.EC client with id on a node of its own in site.
func (c *geoCluster) engine(cfg Config, site string, id uint64) (*wor.EC, error) {
	n, err := c.node(site)
	if err != nil {
		return nil, err
	}
	return wor.NewEC(n, c.servers, id, cfg.Timeout, c.l.EC)
}

// proposer returns the address of a proposer (wor.ServeECLeader: a
// delegate for partial delegation) on site, starting it the first time.
func (c *geoCluster) proposer(cfg Config, site string) (stack.Addr, error) {
	if a, ok := c.props[site]; ok {
		return a, nil
	}
	n, err := c.node(site)
	if err != nil {
		return "", err
	}
	e, err := wor.NewEC(n, c.servers, uint64(900+len(c.props)), cfg.Timeout, c.l.EC)
	if err != nil {
		return "", err
	}
	wor.ServeECLeader(n, e)
	if c.props == nil {
		c.props = map[string]stack.Addr{}
	}
	c.props[site] = n.Local()
	return n.Local(), nil
}

// stop closes the nodes, stops the servers and removes the data.
func (c *geoCluster) stop() {
	for _, n := range c.nodes {
		n.Close()
	}
	for _, p := range c.procs {
		p.Stop()
	}
	os.RemoveAll(c.dir)
}

// runCell starts the plan's servers, runs the workload and stops them.
func runCell(ctx context.Context, cfg Config, set AccessSet, pl geo.Plan, round int) (Cell, error) {
	gc, err := startCluster(ctx, cfg, pl, set.Regions, filepath.Join(cfg.Dir, fmt.Sprintf("%s-%s-r%d", set.Name, pl.Protocol, round)))
	if err != nil {
		return Cell{}, err
	}
	defer gc.stop()
	l, w := gc.l, gc.w
	engines := make([]*wor.EC, len(set.Regions))
	for i, site := range set.Regions {
		if engines[i], err = gc.engine(cfg, site, uint64(i+1)); err != nil {
			return Cell{}, err
		}
	}
	// Pando's front ends delegate Phase 2 to the planner's delegate.
	delegate := make([]string, len(set.Regions))
	if pl.Protocol == geo.Pando {
		for i, site := range set.Regions {
			p, ok := l.FrontEnd(site)
			if !ok || p.Delegate == "" {
				continue
			}
			a, err := gc.proposer(cfg, p.Delegate)
			if err != nil {
				return Cell{}, err
			}
			engines[i].SetDelegate(a)
			delegate[i] = p.Delegate
		}
	}
	oneway := func(a, b string) float64 {
		i, _ := w.Site(a)
		j, _ := w.Site(b)
		return float64(w.OneWay(i, j)) / float64(time.Millisecond)
	}
	// The engine model's round trips, from the WAN itself.
	rtt := func(fe string) func(string) float64 {
		i, _ := w.Site(fe)
		return func(s string) float64 {
			j, _ := w.Site(s)
			return float64(w.OneWay(i, j)+w.OneWay(j, i)) / float64(time.Millisecond)
		}
	}
	wl := &workload{cfg: cfg, written: map[uint64][]byte{}, rng: mrand.New(mrand.NewPCG(cfg.Seed, uint64(round)))}
	// Preload: every front end writes cfg.Warmup registers, the ones
	// the reads pick from; then Phase 3 (the chosen markers, sent without
	// waiting) settles everywhere. A read of a register whose marker has
	// not yet reached its Q1a nearest sites takes the Phase 1b path
	// instead: the paper's low-contention workload rarely reads a value
	// written a WAN delay before.
	if err := wl.run(ctx, engines, cfg.Warmup, 0, nil); err != nil {
		return Cell{}, fmt.Errorf("preload: %w", err)
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return Cell{}, ctx.Err()
	}
	res := make([][]op, len(engines))
	if err := wl.run(ctx, engines, cfg.Ops, cfg.Warmup, res); err != nil {
		return Cell{}, err
	}
	c := Cell{Figure: "12", Set: set.Name, Protocol: string(pl.Protocol), Round: round, Sites: pl.Sites, K: pl.K, R: pl.R, Q1a: pl.Q1a, Q1b: pl.Q1b, Q2: pl.Q2, Storage: pl.Storage}
	for i, site := range set.Regions {
		fe := Summarize(site, res[i])
		if p, ok := l.FrontEnd(site); ok {
			fe.PlanReadMs, fe.PlanWriteMs = p.ReadMs, p.WriteMs
		}
		fe.EngineReadMs, fe.EngineWriteMs = EngineModel(pl.Sites, pl.Q1a, pl.Q2, rtt(site))
		if fe.Delegate = delegate[i]; fe.Delegate != "" {
			fe.EngineWriteMs = DelegatedWriteModel(pl.Sites, pl.Q1a, pl.Q2, site, fe.Delegate, oneway)
		}
		fe.ReadWithin = Within(fe.ReadP95, fe.PlanReadMs)
		fe.WriteWithin = Within(fe.WriteP95, fe.PlanWriteMs)
		fe.WriteWithinEngine = Within(fe.WriteP95, fe.EngineWriteMs)
		c.FE = append(c.FE, fe)
	}
	c.fill()
	errs := 0
	for _, fe := range c.FE {
		errs += fe.Errors
	}
	if errs > 0 {
		return c, fmt.Errorf("%d operations failed (first: %v)", errs, firstErr(res))
	}
	return c, nil
}

func firstErr(res [][]op) error {
	for _, ops := range res {
		for _, o := range ops {
			if o.err != nil {
				return o.err
			}
		}
	}
	return nil
}

// fill computes the cell's min and max p95s over front ends.
func (c *Cell) fill() {
	c.ReadP95Min, c.WriteP95Min = math.Inf(1), math.Inf(1)
	for _, fe := range c.FE {
		c.ReadP95Max = max(c.ReadP95Max, fe.ReadP95)
		c.WriteP95Max = max(c.WriteP95Max, fe.WriteP95)
		c.ReadP95Min = min(c.ReadP95Min, fe.ReadP95)
		c.WriteP95Min = min(c.WriteP95Min, fe.WriteP95)
	}
	if len(c.FE) == 0 {
		c.ReadP95Min, c.WriteP95Min = 0, 0
	}
}

// Summarize computes a front end's percentiles from its operations
// (failed ones are counted, not timed).
func Summarize(name string, ops []op) FrontEnd {
	fe := FrontEnd{Name: name}
	var rd, wr []float64
	for _, o := range ops {
		switch {
		case o.err != nil:
			fe.Errors++
		case o.read:
			rd = append(rd, o.ms)
		default:
			wr = append(wr, o.ms)
		}
	}
	fe.Reads, fe.Writes = len(rd), len(wr)
	r3 := func(x float64) float64 {
		if math.IsNaN(x) {
			return 0
		}
		return math.Round(x*10) / 10
	}
	fe.ReadP50, fe.ReadP95 = r3(Percentile(rd, 50)), r3(Percentile(rd, 95))
	fe.WriteP50, fe.WriteP95 = r3(Percentile(wr, 50)), r3(Percentile(wr, 95))
	return fe
}

// workload is the registers written so far, shared by the front ends.
type workload struct {
	cfg     Config
	mu      sync.Mutex
	written map[uint64][]byte // addr -> value
	addrs   []uint64
	rng     *mrand.Rand
}

// pick returns a register already written, uniformly.
func (w *workload) pick() (uint64, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.addrs[w.rng.IntN(len(w.addrs))]
	return a, w.written[a]
}

// wrote records a write; a preloaded register becomes one the reads pick.
func (w *workload) wrote(a uint64, v []byte, preload bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[a] = v
	if preload {
		w.addrs = append(w.addrs, a)
	}
}

// run has every front end run n operations (op j is a write if j is
// even or res is nil, else a read), offsets from off in its segment.
func (w *workload) run(ctx context.Context, engines []*wor.EC, n, off int, res [][]op) error {
	var wg sync.WaitGroup
	errs := make([]error, len(engines))
	for i, e := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				o := op{read: res != nil && j%2 == 1}
				start := time.Now()
				if o.read {
					a, want := w.pick()
					var got []byte
					got, o.err = call(func(cb func([]byte, error)) { e.Read(a, cb) })
					if o.err == nil && string(got) != string(want) {
						o.err = fmt.Errorf("read %#x: got %d bytes, not the %d written", a, len(got), len(want))
					}
				} else {
					a := wor.Addr(uint64(100+i), uint64(1+off+j))
					v := make([]byte, w.cfg.ValueSize)
					_, _ = rand.Read(v)
					_, o.err = call(func(cb func(struct{}, error)) { e.Propose(a, v, func(err error) { cb(struct{}{}, err) }) })
					if o.err == nil {
						w.wrote(a, v, res == nil)
					}
				}
				o.ms = float64(time.Since(start)) / float64(time.Millisecond)
				if res == nil {
					if o.err != nil {
						errs[i] = o.err
						return
					}
					continue
				}
				res[i] = append(res[i], o)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// call waits for an engine callback.
func call[T any](start func(func(T, error))) (T, error) {
	type r struct {
		v   T
		err error
	}
	ch := make(chan r, 1)
	start(func(v T, err error) { ch <- r{v, err} })
	x := <-ch
	return x.v, x.err
}

// Print prints the report: settings, a table per access set, ratios.
func Print(w io.Writer, rep *kit.Report) {
	rep.PrintConfig(w)
	var cells []Cell
	var tput []TputResult
	var cont []ContResult
	rs, _ := rep.Results.([]any)
	for _, x := range rs {
		switch x := x.(type) {
		case Cell:
			cells = append(cells, x)
		case TputResult:
			tput = append(tput, x)
		case ContResult:
			cont = append(cont, x)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "set\tprotocol\tround\tfront end\tread p50\tread p95\tplan read\tin 10%+5ms\twrite p50\twrite p95\tplan write\tin 10%+5ms\tdelegate\tengine write\tin 10%+5ms\t")
	for _, c := range cells {
		for _, fe := range c.FE {
			yes := func(b bool) string {
				if b {
					return "yes"
				}
				return "no"
			}
			del := fe.Delegate
			if del == "" {
				del = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.1f\t%.1f\t%.1f\t%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t%.1f\t%s\t\n", c.Set, c.Protocol, c.Round, fe.Name,
				fe.ReadP50, fe.ReadP95, fe.PlanReadMs, yes(fe.ReadWithin), fe.WriteP50, fe.WriteP95, fe.PlanWriteMs, yes(fe.WriteWithin), del, fe.EngineWriteMs, yes(fe.WriteWithinEngine))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "(ms; plan = geo.Solve's prediction for that protocol; engine write = what wor.EC's write path takes on this matrix: with a delegate, front end -> site -> delegate -> site -> front end, else Phase 1 + Phase 2 from the front end)")
	fmt.Fprintln(w, "slowest front end (Figure 12: max of the per-front-end p95):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "set\tprotocol\tround\tsites\tk+r\tstorage\tread p95 min-max\twrite p95 min-max\t")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d+%d\t%.2f\t%.1f-%.1f\t%.1f-%.1f\t\n", c.Set, c.Protocol, c.Round, len(c.Sites), c.K, c.R, c.Storage,
			c.ReadP95Min, c.ReadP95Max, c.WriteP95Min, c.WriteP95Max)
	}
	tw.Flush()
	PrintContention(w, cont)
	PrintThroughput(w, tput)
	rep.PrintRatios(w)
}
