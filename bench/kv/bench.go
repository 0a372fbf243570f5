// Package kv is `strata bench kv`: Strata's replicated key-value service
// against etcd under the YCSB core workloads A–F (bench/ycsb), three
// servers each on one machine, both durable on every commit.
//
// Strata runs three persistent wormservers and three `strata kv serve`
// processes over them, as `strata up` does, and is driven from the
// harness process by a kv.Client; etcd v3.6.16 runs three members (the
// launcher of bench/wor, bench/etcd, its defaults: fsync on every
// commit), driven by etcd's own client in a process per phase
// (bench/etcd/ycsb). Both run the same generator and measurement code.
//
// For every record count (a phase: load up to it, then measure), round
// and system, in an order that rotates every round, it runs each workload
// with each client count for a warm-up and a measured window, and pairs
// the two systems round by round: throughput strata/etcd and p50 latency
// etcd/strata, both > 1 when Strata is better, median and range over the
// rounds, each beside issue 27's target. For Strata it also measures,
// once per phase, the failover time (the kv leader's process killed with
// SIGKILL while a client writes) and the killed server's recovery after a
// restart, and across phases whether throughput at the largest record
// count stays within 20% of the smallest's.
//
// Only one system runs at a time: while one system's loads, cells and
// trials run, every other system's server processes are stopped with
// SIGSTOP (checked stopped in /proc), so that an idle peer's background
// work (Strata's leader writes a heartbeat entry every 50 ms, each a
// journal fdatasync at every wormserver) costs the measured system no
// disk syncs or CPU. Before its own work a system is resumed with SIGCONT
// and probed until healthy, outside the measurement; every resume's time
// to healthy and each system's idle sync rate are in the report. Stop
// resumes a paused system before it stops it: no server is left stopped
// when the run ends, fails or is interrupted. Pausing needs Linux.
//
// Guarantees: every figure comes from operations that succeeded and were
// checked (bench/ycsb); a cell that failed has no figure and adds no
// ratio, and a failed Strata cell makes Run return ErrStrataFailed with
// the complete report. Nothing is simulated: if Strata's service cannot
// start, Run fails with ErrStrataStart and no report.
package kv

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	worbench "strata/bench/wor"
	"strata/bench/ycsb"
)

// Config is one run of the benchmark.
type Config struct {
	// Strata is the strata binary whose `wor serve` and `kv serve` the
	// servers run (default: this executable).
	Strata string
	// Dir holds both systems' data (emptied first): Strata's journals in
	// Dir/strata, etcd's members in Dir/etcd, one file system.
	Dir string
	// Records are the phases' record counts, ascending: each phase loads
	// the records up to its count, then measures.
	Records   []int64
	Workloads []string // core workloads, A..F
	Clients   []int
	ValueSize int // bytes of a record's one field
	Warmup    time.Duration
	Measure   time.Duration
	Rounds    int
	// LoadClients insert the records of a load phase.
	LoadClients int
	Seed        uint64
	OpTimeout   time.Duration // per request (default ycsb.DefaultOpTimeout)
	Etcd        bool          // run the peer (else no ratios)
	Failover    bool          // measure Strata's failover and recovery once per phase
	// Drain bounds the wait after each load for the loaded system's
	// background work (snapshots, compaction) to end before its cells:
	// until its disk sync rate is back near its idle rate (0: no wait).
	Drain time.Duration
	// WorBlocks sizes each wormserver's journal in 4 KiB blocks (0: enough
	// for four copies of the largest phase's data).
	WorBlocks uint64
	Progress  io.Writer
}

// Targets of issue 27, as ratios oriented > 1 when Strata is better.
const (
	// TargetThroughput: ops/s at least 1.5x etcd's on A, B, C, D and F.
	TargetThroughput = 1.5
	// TargetThroughputScan: ops/s at least etcd's on E.
	TargetThroughputScan = 1.0
	// TargetP50: p50 at one client at most 0.8x etcd's: etcd/strata at
	// least 1/0.8.
	TargetP50 = 1.25
	// TargetGrowth: throughput at the largest record count at least 0.8x
	// (within 20% of) the smallest's.
	TargetGrowth = 0.8
)

var (
	// ErrStrataStart: Strata's servers did not start (or its kv client
	// cannot reach them).
	ErrStrataStart = errors.New("the Strata key-value service did not start")
	// ErrStrataFailed is returned, with the complete report, when a
	// Strata cell or trial failed: a failing Strata cell is a bug worth
	// seeing.
	ErrStrataFailed = errors.New("failed Strata cells")
)

func (cfg *Config) check() error {
	if cfg.Rounds < 1 {
		return fmt.Errorf("rounds must be at least 1, not %d", cfg.Rounds)
	}
	if cfg.Measure <= 0 || cfg.Warmup < 0 {
		return fmt.Errorf("the measured window must be positive and the warm-up not negative (%v, %v)", cfg.Measure, cfg.Warmup)
	}
	if len(cfg.Clients) == 0 || len(cfg.Records) == 0 || len(cfg.Workloads) == 0 {
		return errors.New("need at least one client count, record count and workload")
	}
	for _, c := range cfg.Clients {
		if c < 1 {
			return fmt.Errorf("client count %d: must be at least 1", c)
		}
	}
	if !slices.IsSorted(cfg.Records) || cfg.Records[0] < ycsb.MinRecords {
		return fmt.Errorf("record counts %v: must ascend from at least %d", cfg.Records, ycsb.MinRecords)
	}
	for _, w := range cfg.Workloads {
		if _, err := ycsb.Lookup(w); err != nil {
			return err
		}
	}
	if cfg.ValueSize < 1 || cfg.LoadClients < 1 {
		return fmt.Errorf("value size (%d) and load clients (%d) must be at least 1", cfg.ValueSize, cfg.LoadClients)
	}
	if cfg.Dir == "" {
		return errors.New("no data folder")
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = ycsb.DefaultOpTimeout
	}
	return nil
}

// journalBlocks sizes a wormserver's journal: four copies of the largest
// phase's records (a snapshot, the log since it, the next snapshot while
// it is written, margin) plus the default 64 Ki blocks.
func (cfg *Config) journalBlocks() uint64 {
	if cfg.WorBlocks > 0 {
		return cfg.WorBlocks
	}
	most := cfg.Records[len(cfg.Records)-1]
	return 65536 + uint64(most)*uint64(cfg.ValueSize+64)*4/4096
}

// Cell is one measured workload of one system.
type Cell struct {
	System    string  `json:"system"`
	Records   int64   `json:"records"` // the phase's record count
	Round     int     `json:"round"`   // 1-based
	Workload  string  `json:"workload"`
	Clients   int     `json:"clients"`
	Ops       int     `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	OpsTotal  int     `json:"ops_total"`
	// RecordsAtStart counts the records when the cell started (the
	// phase's plus inserts of earlier cells).
	RecordsAtStart int64                   `json:"records_at_start"`
	PerOp          map[string]ycsb.OpStats `json:"per_op,omitempty"`
	// Syncs are the servers' disk syncs during the cell, warm-up
	// included: Strata's journal barriers, etcd's WAL fdatasyncs and
	// backend commits.
	Syncs uint64 `json:"syncs"`
}

// SyncsPerOp is Syncs over OpsTotal (0 when either is unknown).
func (c Cell) SyncsPerOp() float64 {
	if c.OpsTotal == 0 {
		return 0
	}
	return float64(c.Syncs) / float64(c.OpsTotal)
}

// Load is one load phase of one system.
type Load struct {
	System    string  `json:"system"`
	From      int64   `json:"from"`
	To        int64   `json:"to"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Syncs     uint64  `json:"syncs"`
	// DrainSeconds is the wait after the load for the system's
	// background work to end (Config.Drain); Drained is false if it was
	// still going when the wait ended.
	DrainSeconds float64 `json:"drain_seconds"`
	Drained      bool    `json:"drained"`
}

// Check is a ratio against a target of the issue.
type Check struct {
	Key    string     `json:"key"`
	Ratio  float64    `json:"ratio"`
	Spread [2]float64 `json:"spread"`
	Target float64    `json:"target"`
	Met    bool       `json:"met"`
}

// Results are the report's results.
type Results struct {
	Cells      []Cell     `json:"cells"`
	Loads      []Load     `json:"loads"`
	Failovers  []Failover `json:"failovers,omitempty"`
	Recoveries []Recovery `json:"recoveries,omitempty"`
	// Resumes are every resume of a paused system, with how long it took
	// to be healthy; Idle are the systems' disk syncs with no load.
	Resumes []Resume `json:"resumes,omitempty"`
	Idle    []Idle   `json:"idle,omitempty"`
	// Checks are every ratio with a target: strata/etcd per workload and
	// client count, and Strata's throughput at the largest record count
	// over the smallest's.
	Checks []Check `json:"checks"`
}

// system is one side: Strata or etcd.
type system interface {
	Name() string
	Load(ctx context.Context, lc ycsb.LoadConfig) (ycsb.LoadResult, uint64, error)
	Run(ctx context.Context, rc ycsb.RunConfig) (ycsb.Result, uint64, error)
	Settings() kit.Settings
	// Stop resumes the servers if they are paused, then stops them.
	Stop() error
	// Pause stops every server process (SIGSTOP) and returns once all are
	// stopped; Resume resumes them (SIGCONT) and returns once all run.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	// Processes counts the server processes Pause stops.
	Processes() int
	// Probe writes a key, reads it back linearizably and returns the
	// servers' common view of the leadership ("leader X term Y"), or an
	// error if a step failed or the servers disagree.
	Probe(ctx context.Context) (string, error)
	// Settle is how long a view must hold after a resume for the system
	// to count as healthy: the longest a server waits before an election.
	Settle() time.Duration
	// Syncs are the servers' disk syncs so far.
	Syncs(ctx context.Context) (uint64, error)
}

// failoverSystem is a system with a failover trial (Strata).
type failoverSystem interface {
	system
	failover(ctx context.Context, records int64, valueSize int) (Failover, Recovery, error)
}

// harness is one run's state; only Run's goroutine touches it.
type harness struct {
	cfg     Config
	rep     *kit.Report
	res     Results
	failed  int              // Strata cells and trials that failed
	records map[string]int64 // each system's record count now
	systems []system
	timing  timing
	// active is the system whose servers run and were found healthy (""
	// none yet, or its activation failed); pausedAt holds when each
	// paused system was paused; viewBefore is each system's view of its
	// leadership probed just before its last pause.
	active     string
	pausedAt   map[string]time.Time
	viewBefore map[string]string
}

func newHarness(cfg Config, rep *kit.Report, systems []system) *harness {
	return &harness{cfg: cfg, rep: rep, records: map[string]int64{}, systems: systems, timing: defaultTiming,
		pausedAt: map[string]time.Time{}, viewBefore: map[string]string{}}
}

// Run runs the benchmark and returns its report. If a Strata cell or
// trial failed, it returns the complete report and an error wrapping
// ErrStrataFailed; if Strata's service did not start, ErrStrataStart; if
// etcd did not start, an error wrapping bench/wor's ErrEtcdStart.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Strata == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Strata = self
	}
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	var wl []string
	for _, w := range cfg.Workloads {
		x, _ := ycsb.Lookup(w)
		wl = append(wl, x.Name+": "+x.Describe())
	}
	rep := kit.NewReport("kv", kit.Settings{
		"records":      cfg.Records,
		"workloads":    wl,
		"clients":      cfg.Clients,
		"value_size":   cfg.ValueSize,
		"rounds":       cfg.Rounds,
		"warmup":       cfg.Warmup.String(),
		"measure":      cfg.Measure.String(),
		"load_clients": cfg.LoadClients,
		"drain":        fmt.Sprintf("after each load, up to %v until the loaded system's disk sync rate is within max(2x, +10/s) of its idle rate for %d one-second samples in a row (the same rule for every system; 0s: no wait)", cfg.Drain, drainCalm),
		"seed":         cfg.Seed,
		"op_timeout":   cfg.OpTimeout.String(),
		"dir":          cfg.Dir,
		"ycsb": "bench/ycsb (YCSB 0.17 core workloads): keys \"user\"+FNV-64 of the record number, one field of value_size random bytes, zipfian 0.99 " +
			"(scrambled; D: latest), scan length uniform 1..100 (E), reads among acknowledged inserts; the same generator, seeds and checks on both sides",
		"schedule": "per record count: load both systems to it, then rounds; each round runs every workload and client count on each system, " +
			"the system that goes first rotating every round; ratios pair the two systems within a round",
	})
	if cfg.Etcd && !pauseSupported {
		return nil, errNoPause
	}
	fmt.Fprintf(cfg.Progress, "starting Strata (3 wormservers, 3 kv servers) in %s/strata\n", cfg.Dir)
	st, err := startStrata(ctx, cfg.Dir+"/strata", &cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStrataStart, err)
	}
	// Stop resumes a paused system's servers before it stops them: nothing
	// is left stopped, whether the run ends, fails or is interrupted.
	defer st.Stop()
	systems := []system{st}
	if cfg.Etcd {
		fmt.Fprintf(cfg.Progress, "starting etcd (3 members) in %s/etcd\n", cfg.Dir)
		ec, err := startEtcd(ctx, cfg.Dir+"/etcd", &cfg)
		if err != nil {
			return nil, err
		}
		defer ec.Stop()
		systems = append(systems, ec)
	} else {
		rep.Note("etcd skipped (--no-etcd): no ratios")
	}
	for _, s := range systems {
		set := s.Settings()
		if len(systems) > 1 {
			set["pausing"] = pausing
		}
		rep.System(s.Name(), set)
	}
	h := newHarness(cfg, rep, systems)
	if err := h.run(ctx); err != nil {
		return nil, err
	}
	rs := ratios(h.res.Cells)
	rs.Summarize(rep)
	h.res.Checks = checks(rep, growth(h.res.Cells))
	rep.Results = h.res
	rep.Note("every ratio is > 1 when Strata is better: ops/s strata/etcd, p50 etcd/strata; medians of per-round ratios, with the lowest and highest round")
	rep.Note("targets (issue 27): ops/s >= %.1fx etcd on A, B, C, D, F and >= %.1fx on E; p50 at 1 client <= 0.8x etcd's (ratio >= %.2f); Strata's ops/s at the largest record count >= %.1fx the smallest's",
		TargetThroughput, TargetThroughputScan, TargetP50, TargetGrowth)
	rep.Note("syncs/op: disk syncs of the 3 servers during a cell over its operations: Strata's wormserver journal barriers (fdatasync), etcd's WAL fdatasyncs and backend commits")
	if len(systems) > 1 {
		rep.Note("the other system's processes are stopped with SIGSTOP during a system's cells (and loads and trials), and resumed with SIGCONT, then probed healthy outside the measurement, before its own")
	}
	if h.failed > 0 {
		return rep, fmt.Errorf("%w: %d (listed under FAILED cells)", ErrStrataFailed, h.failed)
	}
	if len(rep.Failures) > 0 {
		return rep, fmt.Errorf("%w: %d (listed under FAILED cells)", kit.ErrPeerFailed, len(rep.Failures))
	}
	return rep, nil
}

// pausing is the pausing rule, in both systems' settings.
const pausing = "the other system's processes are stopped with SIGSTOP during a system's cells, loads and trials (all of them, one signal right after another, " +
	"then checked stopped in /proc); before a system's own, its processes are resumed with SIGCONT and it is probed until healthy, outside the measurement: " +
	"a probe write, a linearizable read of it and every server naming the same leader and term, confirmed by a second probe twice the election timeout later " +
	"(a resumed Strata follower that saw the leader's silence by wall time campaigns at once); the same rule for both systems, in both directions"

// run measures the idle sync rates, then runs every phase.
func (h *harness) run(ctx context.Context) error {
	h.idle(ctx)
	for _, target := range h.cfg.Records {
		if err := ctx.Err(); err != nil {
			return err
		}
		h.phase(ctx, target)
	}
	return ctx.Err()
}

// phase loads every system up to target records, runs the rounds, and
// measures Strata's failover and recovery; each system runs with the
// others paused.
func (h *harness) phase(ctx context.Context, target int64) {
	systems := h.systems
	live := map[string]bool{}
	for _, s := range systems {
		from := h.records[s.Name()]
		if from >= target {
			live[s.Name()] = true
			continue
		}
		if err := h.activate(ctx, s, fmt.Sprintf("load records=%d", target)); err != nil {
			if ctx.Err() == nil {
				h.fail(s.Name(), "records=%d %s load: %v", target, s.Name(), firstLine(err))
			}
			continue
		}
		fmt.Fprintf(h.cfg.Progress, "%s: loading records %d..%d (%d clients)\n", s.Name(), from, target-1, h.cfg.LoadClients)
		lr, syncs, err := s.Load(ctx, ycsb.LoadConfig{From: from, To: target, Clients: h.cfg.LoadClients, ValueSize: h.cfg.ValueSize,
			Seed: h.cfg.Seed + uint64(target), OpTimeout: h.cfg.OpTimeout})
		if err != nil {
			if ctx.Err() == nil {
				h.fail(s.Name(), "records=%d %s load: %v", target, s.Name(), firstLine(err))
			}
			continue
		}
		h.records[s.Name()] = target
		live[s.Name()] = true
		fmt.Fprintf(h.cfg.Progress, "%s: loaded %d records in %.1f s (%.0f inserts/s)\n", s.Name(), lr.Records, lr.Seconds, lr.OpsPerSec)
		ld := Load{System: s.Name(), From: from, To: target, Seconds: lr.Seconds, OpsPerSec: lr.OpsPerSec, Syncs: syncs}
		if h.cfg.Drain > 0 {
			d, ok := h.drain(ctx, s, h.cfg.Drain)
			ld.DrainSeconds, ld.Drained = d.Seconds(), ok
			state := "ended"
			if !ok {
				state = "still going; measuring anyway"
			}
			fmt.Fprintf(h.cfg.Progress, "%s: background work after the load %s after %.0f s\n", s.Name(), state, d.Seconds())
		}
		h.res.Loads = append(h.res.Loads, ld)
	}
	byName := map[string]system{}
	var names []string
	for _, s := range systems {
		byName[s.Name()] = s
		names = append(names, s.Name())
	}
	for r := range h.cfg.Rounds {
		for _, n := range kit.Order(r, names) {
			s := byName[n]
			if !live[n] || ctx.Err() != nil {
				continue
			}
			if err := h.activate(ctx, s, fmt.Sprintf("round %d records=%d", r+1, target)); err != nil {
				if ctx.Err() == nil {
					h.fail(n, "records=%d round %d %s: its cells did not run: %v", target, r+1, n, firstLine(err))
				}
				continue
			}
			for _, wn := range h.cfg.Workloads {
				w, _ := ycsb.Lookup(wn)
				for _, cl := range h.cfg.Clients {
					if ctx.Err() != nil {
						return
					}
					h.cell(ctx, s, target, r+1, w, cl)
				}
			}
		}
	}
	for _, s := range systems {
		st, ok := s.(failoverSystem)
		if !ok || !h.cfg.Failover || !live[st.Name()] || ctx.Err() != nil {
			continue
		}
		if err := h.activate(ctx, st, fmt.Sprintf("failover records=%d", target)); err != nil {
			if ctx.Err() == nil {
				h.fail(st.Name(), "records=%d %s failover/recovery: did not run: %v", target, st.Name(), firstLine(err))
			}
			continue
		}
		fmt.Fprintf(h.cfg.Progress, "%s: failover (kill -9 of the kv leader while a client writes), then the killed server's recovery\n", st.Name())
		fo, rec, err := st.failover(ctx, target, h.cfg.ValueSize)
		// The trial moved the leadership and restarted a server: the
		// system's next work waits for it to be healthy again, as after a
		// resume.
		h.active = ""
		if err != nil {
			h.fail(st.Name(), "records=%d %s failover/recovery: %v", target, st.Name(), firstLine(err))
			continue
		}
		h.res.Failovers = append(h.res.Failovers, fo)
		h.res.Recoveries = append(h.res.Recoveries, rec)
		fmt.Fprintf(h.cfg.Progress, "strata: failover %.0f ms (longest pause between writes %.0f ms; killed server %d, new leader %s); recovery of server %d: ready after %.0f ms, at revision %d after %.0f ms\n",
			fo.FailoverMs, fo.GapMs, fo.Killed, fo.NewLeader, rec.Server, rec.ReadyMs, rec.Revision, rec.CaughtUpMs)
	}
}

// cellSeed is the seed of a cell, the same for both systems.
func cellSeed(base uint64, records int64, round int, workload string, clients int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%s/%d", records, round, workload, clients)
	return base ^ h.Sum64()
}

func (h *harness) cell(ctx context.Context, s system, target int64, round int, w ycsb.Workload, clients int) {
	name := s.Name()
	rc := ycsb.RunConfig{Workload: w, Records: h.records[name], Clients: clients, ValueSize: h.cfg.ValueSize, Warmup: h.cfg.Warmup, Measure: h.cfg.Measure,
		Seed: cellSeed(h.cfg.Seed, target, round, w.Name, clients), OpTimeout: h.cfg.OpTimeout}
	res, syncs, err := s.Run(ctx, rc)
	if err != nil {
		if ctx.Err() == nil {
			h.fail(name, "records=%d round %d %s %s clients=%d: %v", target, round, name, w.Name, clients, firstLine(err))
		}
		return
	}
	h.records[name] = res.After
	c := Cell{System: name, Records: target, Round: round, Workload: w.Name, Clients: clients, Ops: res.Ops, Seconds: res.Seconds,
		OpsPerSec: res.OpsPerSec, P50us: res.P50us, P99us: res.P99us, OpsTotal: res.OpsTotal, RecordsAtStart: res.Records, PerOp: res.PerOp, Syncs: syncs}
	h.res.Cells = append(h.res.Cells, c)
	fmt.Fprintf(h.cfg.Progress, "records=%d round %d %-6s %s clients=%-3d %8.0f ops/s  p50 %7.0f µs  p99 %7.0f µs  syncs/op %.2f\n",
		target, round, name, w.Name, clients, c.OpsPerSec, c.P50us, c.P99us, c.SyncsPerOp())
}

// fail records a failed cell or trial of system sys.
func (h *harness) fail(sys, format string, args ...any) {
	if sys == "strata" {
		h.failed++
	}
	h.rep.Fail(format, args...)
	fmt.Fprintf(h.cfg.Progress, "FAILED: "+format+"\n", args...)
}

// ratioKey names a comparison: "ops/s strata/etcd A clients=16
// records=100000" or "p50 etcd/strata ...".
func ratioKey(metric, workload string, clients int, records int64) string {
	orient := "strata/etcd"
	if metric == "p50" {
		orient = "etcd/strata"
	}
	return fmt.Sprintf("%s %s %s clients=%d records=%d", metric, orient, workload, clients, records)
}

// ratios pairs, round by round, each Strata cell with etcd's of the same
// phase, workload and client count: ops/s strata/etcd and p50
// etcd/strata (> 1: Strata better). A failed cell has no row, so its
// round adds no ratio.
func ratios(cells []Cell) kit.Ratios {
	type key struct {
		records       int64
		round, client int
		workload      string
	}
	etcd := map[key]Cell{}
	for _, c := range cells {
		if c.System == "etcd" {
			etcd[key{c.Records, c.Round, c.Clients, c.Workload}] = c
		}
	}
	out := kit.Ratios{}
	for _, s := range cells {
		if s.System != "strata" {
			continue
		}
		e, ok := etcd[key{s.Records, s.Round, s.Clients, s.Workload}]
		if !ok {
			continue
		}
		out.Higher(ratioKey("ops/s", s.Workload, s.Clients, s.Records), s.OpsPerSec, e.OpsPerSec)
		out.Lower(ratioKey("p50", s.Workload, s.Clients, s.Records), s.P50us, e.P50us)
	}
	return out
}

// growthKey names Strata's throughput at the largest record count over
// the smallest's.
func growthKey(workload string, clients int, small, large int64) string {
	return fmt.Sprintf("ops/s strata records=%d/records=%d %s clients=%d", large, small, workload, clients)
}

// growth pairs, round by round, Strata's cells at the largest record
// count with those at the smallest (nothing with one record count).
func growth(cells []Cell) kit.Ratios {
	small, large := int64(-1), int64(-1)
	for _, c := range cells {
		if c.System != "strata" {
			continue
		}
		if small < 0 || c.Records < small {
			small = c.Records
		}
		large = max(large, c.Records)
	}
	out := kit.Ratios{}
	if small == large {
		return out
	}
	type key struct {
		round, clients int
		workload       string
	}
	base := map[key]Cell{}
	for _, c := range cells {
		if c.System == "strata" && c.Records == small {
			base[key{c.Round, c.Clients, c.Workload}] = c
		}
	}
	for _, c := range cells {
		if c.System != "strata" || c.Records != large {
			continue
		}
		if b, ok := base[key{c.Round, c.Clients, c.Workload}]; ok {
			out.Higher(growthKey(c.Workload, c.Clients, small, large), c.OpsPerSec, b.OpsPerSec)
		}
	}
	return out
}

// target returns the target for a strata/etcd ratio key, if it
// has one: throughput on every workload and client count, p50 at one
// client.
func target(key string) (float64, bool) {
	f := strings.Fields(key)
	if len(f) < 4 {
		return 0, false
	}
	switch f[0] {
	case "ops/s":
		if f[1] != "strata/etcd" {
			return 0, false
		}
		if f[2] == "E" {
			return TargetThroughputScan, true
		}
		return TargetThroughput, true
	case "p50":
		if f[3] == "clients=1" {
			return TargetP50, true
		}
	}
	return 0, false
}

// checks evaluates the report's ratios that have a target, and Strata's
// growth ratios (summarized here: they compare Strata with itself, so
// they are not among the report's strata/etcd ratios).
func checks(rep *kit.Report, gr kit.Ratios) []Check {
	var out []Check
	for k, v := range rep.Ratios {
		if t, ok := target(k); ok {
			out = append(out, Check{Key: k, Ratio: v, Spread: rep.Spread[k], Target: t, Met: v >= t})
		}
	}
	g := &kit.Report{Ratios: map[string]float64{}, Spread: map[string][2]float64{}}
	gr.Summarize(g)
	for k, v := range g.Ratios {
		out = append(out, Check{Key: k, Ratio: v, Spread: g.Spread[k], Target: TargetGrowth, Met: v >= TargetGrowth})
	}
	slices.SortFunc(out, func(a, b Check) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Print writes the report's tables, its settings, then the ratios with
// their targets, failures and notes.
func Print(w io.Writer, rep *kit.Report) {
	res, _ := rep.Results.(Results)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "records\tround\tsystem\tworkload\tclients\tops/s\tp50 µs\tp99 µs\tsyncs/op\t")
	for _, c := range res.Cells {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t\n", c.Records, c.Round, c.System, c.Workload, c.Clients, c.OpsPerSec, c.P50us, c.P99us, c.SyncsPerOp())
	}
	tw.Flush()
	if len(res.Loads) > 0 {
		fmt.Fprintln(w, "\nloads:")
		for _, l := range res.Loads {
			drain := ""
			switch {
			case l.Drained:
				drain = fmt.Sprintf("; background work then ended after %.0f s", l.DrainSeconds)
			case l.DrainSeconds > 0:
				drain = fmt.Sprintf("; background work still going after %.0f s (measured anyway)", l.DrainSeconds)
			}
			fmt.Fprintf(w, "  %-6s records %d..%d: %.1f s, %.0f inserts/s%s\n", l.System, l.From, l.To-1, l.Seconds, l.OpsPerSec, drain)
		}
	}
	if len(res.Failovers) > 0 {
		fmt.Fprintln(w, "\nStrata failover (kill -9 of the kv leader's process -> first write issued after it completes) and recovery (restart -> ready, -> applied the leader's revision):")
		for i, f := range res.Failovers {
			fmt.Fprintf(w, "  records=%d: failover %.0f ms (longest pause between writes %.0f ms; killed server %d, new leader %s)", f.Records, f.FailoverMs, f.GapMs, f.Killed, f.NewLeader)
			if i < len(res.Recoveries) {
				r := res.Recoveries[i]
				fmt.Fprintf(w, "; recovery of server %d: ready %.0f ms, caught up to revision %d in %.0f ms", r.Server, r.ReadyMs, r.Revision, r.CaughtUpMs)
			}
			fmt.Fprintln(w)
		}
	}
	if len(res.Idle) > 0 {
		others := ""
		if len(res.Idle) > 1 {
			others = ", the other system paused"
		}
		fmt.Fprintf(w, "\nidle disk syncs (no client load%s; measured once, before the first phase):\n", others)
		for _, i := range res.Idle {
			fmt.Fprintf(w, "  %-6s %.1f syncs/s (%d in %.1f s)\n", i.System, i.PerSec, i.Syncs, i.Seconds)
		}
	}
	if len(res.Resumes) > 0 {
		fmt.Fprintln(w, "\nresumes (SIGCONT -> healthy: the first probe, a write and a linearizable read with every server naming the same leader, of the view a probe a settle time later confirmed; waited: to that confirmation):")
		for _, r := range res.Resumes {
			moved := ""
			if r.LeaderChanged() {
				moved = fmt.Sprintf("; leadership moved: %s -> %s", r.LeaderBefore, r.LeaderAfter)
			}
			fmt.Fprintf(w, "  %-6s for %s, paused %.1f s: healthy after %.0f ms, waited %.0f ms (%d probes, %d failed)%s\n",
				r.System, r.For, r.PausedS, r.HealthyMs, r.WaitMs, r.Probes, r.Failed, moved)
		}
		for _, sys := range []string{"strata", "etcd"} {
			var hs []float64
			moved := 0
			for _, r := range res.Resumes {
				if r.System == sys {
					hs = append(hs, r.HealthyMs)
					if r.LeaderChanged() {
						moved++
					}
				}
			}
			if len(hs) > 0 {
				fmt.Fprintf(w, "  %-6s %d resumes: healthy after %.0f ms median, %.0f ms at most; leadership moved in %d\n", sys, len(hs), kit.Median(hs), slices.Max(hs), moved)
			}
		}
	}
	fmt.Fprintln(w)
	rep.PrintConfig(w)
	if len(rep.Ratios) > 0 || len(res.Checks) > 0 {
		fmt.Fprintln(w, "ratios (> 1: Strata better; median of the per-round ratios, min-max over rounds; target from issue 27):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		byKey := map[string]Check{}
		for _, c := range res.Checks {
			byKey[c.Key] = c
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range rep.Ratios {
				if !yield(k) {
					return
				}
			}
		})
		for _, c := range res.Checks {
			if _, ok := rep.Ratios[c.Key]; !ok {
				keys = append(keys, c.Key) // the growth checks, last
			}
		}
		for _, k := range keys {
			v, sp := rep.Ratios[k], rep.Spread[k]
			verdict := ""
			if c, ok := byKey[k]; ok {
				v, sp = c.Ratio, c.Spread
				verdict = fmt.Sprintf(">= %.2f\tmet", c.Target)
				if !c.Met {
					verdict = fmt.Sprintf(">= %.2f\tNOT MET", c.Target)
				}
			}
			fmt.Fprintf(tw, "  %s\t%.3f\t(%.2f-%.2f)\t%s\n", k, v, sp[0], sp[1], verdict)
		}
		tw.Flush()
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintln(w, "FAILED cells (no figure; not in the medians and ratios):")
		for _, f := range rep.Failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// firstLine is an error's first line (child processes append their
// output's last lines to theirs).
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// ErrEtcdStart is bench/wor's: the etcd peer did not build or start.
var ErrEtcdStart = worbench.ErrEtcdStart
