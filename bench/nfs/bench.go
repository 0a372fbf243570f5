// Package nfsbench is `strata bench nfs`: the GoJournal paper's NFS
// workloads (smallfile, largefile, app) through one RPC-level client driver
// (load.go) against Strata's NFS server in both durability modes, the peers
// NFS-Ganesha and GoNFS (peers.go), and a null server that stores nothing
// (null.go), the largefile ceiling of this machine's RPC path. Run measures
// them side by side in rounds whose order rotates and reports the median of
// per-round ratios between systems of like durability, and the targets.
package nfsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/internal/plot"
)

// The systems, by the names the report uses.
const (
	Strata      = "strata"       // strata nfs serve: RFC 1813 synchronous metadata
	StrataAsync = "strata-async" // strata nfs serve --async
	Ganesha     = "ganesha"      // NFS-Ganesha, VFS FSAL
	GoNFS       = "gonfs"        // go-nfsd v0.6.0
	Null        = "null"         // stores nothing: the largefile ceiling
)

// Peers are the systems that are not Strata's code.
var Peers = []string{Ganesha, GoNFS}

// Config is one run of the benchmark.
type Config struct {
	// Systems run every round, in this order in round 1 (kit.Order
	// rotates it).
	Systems  []string
	Clients  []int         // smallfile and app client counts
	Duration time.Duration // smallfile's measured window
	Rounds   int
	Large    int64  // largefile bytes
	Dir      string // data folder on the project disk
	Plot     string // smallfile plot ("" to skip)
	Clnt     bool   // also run go-nfsd's clnt-smallfile against each server but null
	AppSrc   string // source tree the app workload copies ("" or "none": no app)
	Fio      bool   // measure the disk with fio every round (information)
	// CellTimeout, if positive, is every cell's deadline instead of
	// CellDeadline's.
	CellTimeout time.Duration
	// Self is the strata binary: its `nfs serve` is Strata's server, its
	// `bench nfs --serve-null` the null server.
	Self     string
	Progress io.Writer

	// host starts the systems; nil means the real ones (tests replace it).
	host *host
}

// host is how Run gets its systems.
type host struct {
	// prepare readies what the systems need before round 1 (rpcbind,
	// Ganesha's packages, the go-nfsd build) and fills in their versions;
	// its error names what failed and how to skip it. The returned func
	// runs at the end.
	prepare func(ctx context.Context, cfg *Config, rep *kit.Report) (func(), error)
	// start starts one system on a fresh disk or export.
	start func(ctx context.Context, cfg *Config, name string) (*system, error)
}

// system is a running server under test.
type system struct {
	server Server
	stop   func()
	// dumpStacks, if not nil, saves the server's log with its goroutine
	// stacks to a file (Peer.DumpStacks); it ends the server.
	dumpStacks func(dst string) error
}

// Results are what the report holds under "results".
type Results struct {
	Runs    []Result `json:"runs"`    // every cell of every round that measured something
	Medians []Median `json:"medians"` // per system and cell, over rounds
	Targets []Target `json:"targets"`
}

// Median is one cell's median over the rounds that measured it.
type Median struct {
	Server   string  `json:"server"`
	Workload string  `json:"workload"`
	Clients  int     `json:"clients,omitempty"`
	Median   float64 `json:"median"`
	Unit     string  `json:"unit"`
	Rounds   int     `json:"rounds"`
}

// Target is one of the targets, judged on a ratio of the report.
type Target struct {
	Ratio    string  `json:"ratio"` // the key in the report's ratios
	What     string  `json:"what"`
	Min      float64 `json:"min"`                // met when the ratio is at least this
	Measured float64 `json:"measured,omitempty"` // the ratio's median (absent: not measured)
	Met      bool    `json:"met"`
}

// StrataFailedError is Run's error when a cell of Strata (either mode) or
// of the null server, which is Strata's RPC path, failed: the report is
// complete otherwise.
type StrataFailedError struct{ Cells int }

func (e *StrataFailedError) Error() string {
	return fmt.Sprintf("%d cell(s) of Strata or the null server FAILED (listed above)", e.Cells)
}

// perClients says whether a workload runs at each client count (the
// others run once per server and round).
func perClients(workload string) bool { return workload == "smallfile" || workload == "app" }

func cellName(workload string, clients int) string {
	if perClients(workload) {
		return fmt.Sprintf("%s clients=%d", workload, clients)
	}
	return workload
}

// CellDeadline bounds one cell of workload: generous (a slow but working
// server finishes far sooner), only there so that a server that stops
// answering cannot hang the benchmark.
func (cfg *Config) CellDeadline(workload string) time.Duration {
	if cfg.CellTimeout > 0 {
		return cfg.CellTimeout
	}
	switch workload {
	case "smallfile": // warm-up d/5, window d, then StallGrace
		return cfg.Duration + cfg.Duration/5 + 2*time.Minute
	case "largefile": // 100 MiB: 4 min 40 s
		return 3*time.Minute + time.Duration(cfg.Large>>20)*time.Second
	case "clnt-smallfile": // ClntSmallfile also bounds it
		return cfg.Duration + 3*time.Minute
	default: // app: src/net is some 400 files, 10 MB
		return 5 * time.Minute
	}
}

// app reports whether the app workload runs.
func (cfg *Config) app() bool { return cfg.AppSrc != "" && cfg.AppSrc != "none" }

func (cfg *Config) validate() error {
	if len(cfg.Systems) == 0 {
		return errors.New("no systems to run")
	}
	for _, s := range cfg.Systems {
		if !slices.Contains([]string{Strata, StrataAsync, Ganesha, GoNFS, Null}, s) {
			return fmt.Errorf("unknown system %q", s)
		}
	}
	if cfg.Rounds < 1 || cfg.Large < 1<<20 || cfg.Large%(64<<10) != 0 || cfg.Duration <= 0 || len(cfg.Clients) == 0 {
		return fmt.Errorf("rounds %d, largefile %d bytes (at least 1 MiB, whole 64 KiB writes), duration %v, clients %v: all must be positive",
			cfg.Rounds, cfg.Large, cfg.Duration, cfg.Clients)
	}
	if cfg.CellTimeout < 0 {
		return errors.New("the cell timeout must not be negative")
	}
	return nil
}

// skipHint says how to run without system name.
func skipHint(name string, systems []string) string {
	switch name {
	case Ganesha, GoNFS:
		var others []string
		for _, s := range systems {
			if s != name && slices.Contains(Peers, s) {
				others = append(others, s)
			}
		}
		if len(others) == 0 {
			return "skip it with --no-peers"
		}
		return fmt.Sprintf("skip it with --peers %s, or all peers with --no-peers", strings.Join(others, ","))
	case StrataAsync:
		return "skip it with --async=false"
	case Null:
		return "skip it with --null=false"
	}
	return ""
}

// startError is a system that did not start: the run stops, the command
// fails.
func startError(name string, systems []string, err error) error {
	if h := skipHint(name, systems); h != "" {
		return fmt.Errorf("%s did not start (%s): %w", name, h, err)
	}
	return fmt.Errorf("%s did not start: %w", name, err)
}

// Run runs the benchmark. A system that cannot be prepared or started
// ends the run with an error naming it and how to skip it (and no report).
// A cell that fails or passes its deadline is recorded in the report's
// failures and left out of the medians and ratios; the error is then a
// *StrataFailedError if the cell was Strata's or the null server's, and
// nil for a peer's (a peer's known bugs, such as go-nfsd v0.6.0's deadlock,
// do not invalidate the other figures).
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	// Child processes' output and the cells' lines arrive from several
	// goroutines.
	cfg.Progress = &lockedWriter{w: cfg.Progress}
	h := cfg.host
	if h == nil {
		h = realHost()
	}
	progress := cfg.Progress
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	rep := kit.NewReport("nfs", runSettings(&cfg))
	for _, s := range cfg.Systems {
		rep.System(s, systemSettings(&cfg, s))
	}
	cleanup, err := h.prepare(ctx, &cfg, rep)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	res := &Results{Runs: []Result{}}
	strataFailed := 0
	for round := 1; round <= cfg.Rounds; round++ {
		if cfg.Fio {
			// The disk's own sequential write bandwidth, for the reader:
			// the same bytes in the same 64 KiB writes, fsync at the
			// end, on the same disk.
			if mb, err := FioSeqWrite(ctx, cfg.Dir, cfg.Large, 64<<10, progress); err != nil {
				fmt.Fprintf(progress, "round %d fio: %v (no disk figure this round)\n", round, err)
			} else {
				res.Runs = append(res.Runs, Result{Server: "fio", Workload: "sequential-write", Clients: 1, Round: round, Ops: cfg.Large, PerSec: mb})
				fmt.Fprintf(progress, "round %d %-12s sequential write %.1f MB/s (64 KiB writes, fsync at the end)\n", round, "fio", mb)
			}
		}
		for _, name := range kit.Order(round-1, cfg.Systems) {
			rs, fails, err := runSystem(ctx, h, &cfg, name, round)
			res.Runs = append(res.Runs, rs...)
			for _, f := range fails {
				rep.Fail("%s", f)
				if name != Ganesha && name != GoNFS {
					strataFailed++
				}
			}
			if err != nil {
				return nil, err
			}
		}
	}
	pairRatios(res.Runs).Summarize(rep)
	res.Medians = medians(res.Runs, append(slices.Clone(cfg.Systems), "fio"))
	res.Targets = judge(rep)
	rep.Results = res
	notes(rep, &cfg)
	if cfg.Plot != "" {
		if err := plotSmallfile(res.Runs, cfg.Systems, cfg.Plot); err != nil {
			return rep, err
		}
		fmt.Fprintf(progress, "wrote %s\n", cfg.Plot)
	}
	if strataFailed > 0 {
		return rep, &StrataFailedError{strataFailed}
	}
	return rep, nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// cell is one measurement on one server.
type cell struct {
	workload string
	clients  int // smallfile and app
	run      func(ctx context.Context, s Server) ([]Result, error)
	show     func([]Result) string // the progress line of a result
}

// cells are the cells system name runs in round.
func cells(cfg *Config, name string, round int) []cell {
	tag := fmt.Sprintf("r%d", round)
	var cs []cell
	// The null server stores nothing: smallfile and app, which measure
	// metadata work and read back what they wrote, mean nothing on it.
	if name != Null {
		for _, n := range cfg.Clients {
			cs = append(cs, cell{"smallfile", n,
				func(ctx context.Context, s Server) ([]Result, error) {
					r, err := Smallfile(ctx, s, n, cfg.Duration, fmt.Sprintf("%s-c%d", tag, n))
					return []Result{r}, err
				},
				func(r []Result) string {
					return fmt.Sprintf("smallfile clients=%-3d %8.0f files/s", n, r[0].PerSec)
				}})
		}
		if cfg.app() {
			for _, n := range cfg.Clients {
				cs = append(cs, cell{"app", n,
					func(ctx context.Context, s Server) ([]Result, error) {
						r, err := App(ctx, s, cfg.AppSrc, n, fmt.Sprintf("%s-c%d", tag, n))
						return []Result{r}, err
					},
					func(r []Result) string {
						return fmt.Sprintf("app clients=%-3d %8.0f files/s (%d files copied and read back)", n, r[0].PerSec, r[0].Ops)
					}})
			}
		}
	}
	cs = append(cs, cell{"largefile", 0,
		func(ctx context.Context, s Server) ([]Result, error) {
			w, rd, err := Largefile(ctx, s, cfg.Large, tag)
			return []Result{w, rd}, err
		},
		func(r []Result) string {
			return fmt.Sprintf("largefile write %.1f MB/s, read %.1f MB/s", r[0].PerSec, r[1].PerSec)
		}})
	if cfg.Clnt && name != Null {
		cs = append(cs, cell{"clnt-smallfile", 4,
			func(ctx context.Context, _ Server) ([]Result, error) {
				fs, err := ClntSmallfile(ctx, 4, cfg.Duration, cfg.Progress)
				return []Result{{Server: name, Workload: "clnt-smallfile", Clients: 4, PerSec: fs}}, err
			},
			func(r []Result) string {
				return fmt.Sprintf("clnt-smallfile 4 threads %8.0f files/s", r[0].PerSec)
			}})
	}
	return cs
}

// runSystem starts server name, runs its cells of round, and stops it.
// Every cell runs under its deadline (CellDeadline). A cell that fails or
// times out is returned as a failure line and the server is restarted on
// a fresh disk for the next cell: a failed cell leaves it in an unknown
// state (dead, hung, holding locks). If it does not restart, its remaining
// cells are failures too ("not run"). The error is a server that did not
// start at the beginning of its cells, or ctx's (the run was interrupted).
func runSystem(ctx context.Context, h *host, cfg *Config, name string, round int) ([]Result, []string, error) {
	progress := cfg.Progress
	var results []Result
	var failures []string
	fail := func(c cell, reason string) {
		fmt.Fprintf(progress, "round %d %-12s %s: FAILED: %s\n", round, name, cellName(c.workload, c.clients), reason)
		failures = append(failures, fmt.Sprintf("round %d %s %s: %s", round, name, cellName(c.workload, c.clients), reason))
	}
	sys, err := h.start(ctx, cfg, name)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, startError(name, cfg.Systems, err)
	}
	defer func() {
		if sys != nil {
			sys.stop()
		}
	}()
	cs := cells(cfg, name, round)
	var notRun string // why the remaining cells do not run
	for i, c := range cs {
		if notRun != "" {
			fail(c, notRun)
			continue
		}
		bound := cfg.CellDeadline(c.workload)
		cctx, cancel := context.WithTimeoutCause(ctx, bound, fmt.Errorf("timed out: no result within the cell's deadline of %v", bound))
		t0 := time.Now()
		rs, err := c.run(cctx, sys.server)
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
		cancel()
		if ctx.Err() != nil {
			return results, failures, ctx.Err()
		}
		if err == nil {
			for j := range rs {
				rs[j].Round = round
			}
			results = append(results, rs...)
			fmt.Fprintf(progress, "round %d %-12s %s\n", round, name, c.show(rs))
			continue
		}
		fail(c, fmt.Sprintf("%v (after %v)", err, time.Since(t0).Round(time.Millisecond)))
		if timedOut && sys.dumpStacks != nil {
			dst, _ := filepath.Abs(filepath.Join(cfg.Dir, cellFile(name, round, c)))
			if err := sys.dumpStacks(dst); err != nil {
				fmt.Fprintf(progress, "round %d %-12s saving its log and goroutine stacks: %v\n", round, name, err)
			} else {
				fmt.Fprintf(progress, "round %d %-12s saved its log and goroutine stacks to %s\n", round, name, dst)
			}
		}
		sys.stop()
		sys = nil
		if i == len(cs)-1 {
			break
		}
		fmt.Fprintf(progress, "round %d %-12s restarting the server on a fresh disk for its remaining cells\n", round, name)
		if sys, err = h.start(ctx, cfg, name); err != nil {
			sys = nil
			if ctx.Err() != nil {
				return results, failures, ctx.Err()
			}
			notRun = fmt.Sprintf("not run: the server did not restart after the failed %s: %v", cellName(c.workload, c.clients), err)
		}
	}
	return results, failures, nil
}

// cellFile names the file a cell's server log is saved to.
func cellFile(name string, round int, c cell) string {
	if perClients(c.workload) {
		return fmt.Sprintf("%s-r%d-%s-c%d.log", name, round, c.workload, c.clients)
	}
	return fmt.Sprintf("%s-r%d-%s.log", name, round, c.workload)
}

// pair is a comparison the report makes: subject (a Strata system) over
// peer on the workloads listed, under ratio keys naming label.
type pair struct {
	subject, peer, label string
	workloads            []string
}

var (
	everyWorkload      = []string{"smallfile", "app", "largefile-write", "largefile-read", "clnt-smallfile"}
	largefileWorkloads = []string{"largefile-write", "largefile-read"}
)

// pairs are the only comparisons the report makes. Like durability:
// strata-async with Ganesha (metadata not durable at the reply, data
// durable at COMMIT) and strata with GoNFS (metadata durable at the
// reply, data at COMMIT). On largefile, whose timed part is UNSTABLE
// WRITEs, COMMIT and READs (the one CREATE precedes the clock), both Strata
// modes have Ganesha's durability, so strata is compared with Ganesha there
// too; strata-async is never compared with GoNFS. One cross-durability
// comparison is the issue's own target: synchronous Strata against Ganesha
// with Ganesha's own durability on smallfile, under a key that says so.
// The null server is the largefile ceiling of both modes.
var pairs = []pair{
	{StrataAsync, Ganesha, Ganesha, everyWorkload},
	{Strata, GoNFS, GoNFS, everyWorkload},
	{Strata, Ganesha, Ganesha, largefileWorkloads},
	{Strata, Ganesha, "ganesha-own-durability", []string{"smallfile"}},
	{Strata, Null, Null, largefileWorkloads},
	{StrataAsync, Null, Null, largefileWorkloads},
}

// ratioKey is the report's key for subject over label on a cell.
func ratioKey(workload, subject, label string, clients int) string {
	k := fmt.Sprintf("%s %s/%s", workload, subject, label)
	if perClients(workload) {
		k += fmt.Sprintf(" clients=%d", clients)
	}
	return k
}

// pairRatios pairs the results round by round: a ratio for every pair
// whose both sides measured the same cell in the same round (a failed
// cell has no result, so no ratio that round). Higher is better for every
// workload (files/s, MB/s).
func pairRatios(rs []Result) kit.Ratios {
	type cellKey struct {
		server, workload string
		clients, round   int
	}
	by := map[cellKey]float64{}
	for _, r := range rs {
		by[cellKey{r.Server, r.Workload, r.Clients, r.Round}] = r.PerSec
	}
	out := kit.Ratios{}
	for _, p := range pairs {
		for _, r := range rs {
			if r.Server != p.subject || !slices.Contains(p.workloads, r.Workload) {
				continue
			}
			peer, ok := by[cellKey{p.peer, r.Workload, r.Clients, r.Round}]
			if !ok {
				continue
			}
			out.Higher(ratioKey(r.Workload, p.subject, p.label, r.Clients), r.PerSec, peer)
		}
	}
	return out
}

// targets are the targets for this benchmark.
var targets = []Target{
	{Ratio: "largefile-write strata/null", Min: 0.8, What: "largefile write, fraction of the null server (this machine's ceiling)"},
	{Ratio: "largefile-read strata/null", Min: 0.8, What: "largefile read, fraction of the null server"},
	{Ratio: "largefile-write strata-async/ganesha", Min: 1.2, What: "largefile write vs Ganesha (both: data durable at COMMIT)"},
	{Ratio: "largefile-read strata-async/ganesha", Min: 1.2, What: "largefile read vs Ganesha"},
	{Ratio: "smallfile strata/ganesha-own-durability clients=4", Min: 1.0, What: "synchronous Strata vs Ganesha with its own (weaker) durability"},
	{Ratio: "smallfile strata/ganesha-own-durability clients=16", Min: 1.0, What: "synchronous Strata vs Ganesha with its own (weaker) durability"},
	{Ratio: "app strata-async/ganesha clients=4", Min: 1.3, What: "app vs Ganesha (like durability)"},
	{Ratio: "app strata-async/ganesha clients=16", Min: 1.3, What: "app vs Ganesha (like durability)"},
}

// judge checks the targets against the report's ratios.
func judge(rep *kit.Report) []Target {
	out := slices.Clone(targets)
	for i := range out {
		if v, ok := rep.Ratios[out[i].Ratio]; ok {
			out[i].Measured, out[i].Met = v, v >= out[i].Min
		}
	}
	return out
}

// unit is a workload's unit.
func unit(workload string) string {
	if strings.HasPrefix(workload, "largefile") || workload == "sequential-write" {
		return "MB/s"
	}
	return "files/s"
}

var workloadOrder = []string{"smallfile", "app", "largefile-write", "largefile-read", "clnt-smallfile", "sequential-write"}

// medians are every cell's median over the rounds that measured it
// (kit.Median), by system in the order given, then workload and clients.
func medians(rs []Result, systems []string) []Median {
	type key struct {
		server, workload string
		clients          int
	}
	vals := map[key][]float64{}
	var keys []key
	for _, r := range rs {
		k := key{r.Server, r.Workload, r.Clients}
		if !perClients(r.Workload) {
			k.clients = 0
		}
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = append(vals[k], r.PerSec)
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		if c := slices.Index(systems, a.server) - slices.Index(systems, b.server); c != 0 {
			return c
		}
		if c := slices.Index(workloadOrder, a.workload) - slices.Index(workloadOrder, b.workload); c != 0 {
			return c
		}
		return a.clients - b.clients
	})
	out := []Median{}
	for _, k := range keys {
		xs := vals[k]
		out = append(out, Median{Server: k.server, Workload: k.workload, Clients: k.clients, Median: kit.Round3(kit.Median(xs)), Unit: unit(k.workload), Rounds: len(xs)})
	}
	return out
}

// notes are the sentences a reader needs next to the figures.
func notes(rep *kit.Report, cfg *Config) {
	rep.Note("pairs of like durability only: strata-async with ganesha (metadata not durable at the reply, data at COMMIT), strata with gonfs (metadata durable at the reply, data at COMMIT); strata-async is never compared with gonfs")
	rep.Note("largefile compares both Strata modes with ganesha: its timed part (UNSTABLE 64 KiB WRITEs, COMMIT, READs) has the same durability in both modes (data durable at COMMIT); the modes differ only in metadata operations, and its one CREATE precedes the clock")
	rep.Note("'smallfile strata/ganesha-own-durability' is the issue's one cross-durability target: synchronous Strata (every CREATE and REMOVE durable at the reply) against Ganesha, which does not sync them")
	if slices.Contains(cfg.Systems, Null) {
		rep.Note("null: Strata's RPC server (nfs/rpc, as strata nfs serve) with a back end that stores nothing; it runs only largefile (smallfile and app measure metadata work it does not do). Its READ returns the driver's data computed from the offset and the file's first aligned written word (the one word it keeps per file), so the driver's byte comparison stays on: it checks the RPC path's offsets and framing, not storage")
	}
	if slices.Contains(cfg.Systems, GoNFS) {
		rep.Note("gonfs runs with go-nfsd's default -unstable=true (UNSTABLE WRITEs go to GoJournal's in-memory log, COMMIT flushes it), as Strata and Ganesha honour UNSTABLE writes")
	}
	if cfg.Fio {
		rep.Note("fio's sequential write (64 KiB writes, fsync at the end, same bytes and disk) is information only: no ratio or target uses it; the largefile ceiling is the null server, measured in the same run over the same RPC path")
	}
	rep.Note("a FAILED peer cell (e.g. go-nfsd v0.6.0's known deadlock) is left out of the medians and ratios and does not fail the command; a FAILED Strata or null cell does; a system that does not start fails the command at once")
}

// Print writes the report's tables (medians, targets), then every
// system's settings and the ratios.
func Print(w io.Writer, rep *kit.Report) {
	res, _ := rep.Results.(*Results)
	if res != nil {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "server\tworkload\tclients\tmedian\tunit\trounds\t")
		for _, m := range res.Medians {
			server, workload, clients := m.Server, m.Workload, ""
			if perClients(m.Workload) {
				clients = fmt.Sprint(m.Clients)
			}
			if m.Server == "fio" {
				server, workload = "fio (disk, information)", "sequential write"
			}
			prec := 0
			if m.Unit == "MB/s" {
				prec = 1
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.*f\t%s\t%d\t\n", server, workload, clients, prec, m.Median, m.Unit, m.Rounds)
		}
		tw.Flush()
		fmt.Fprintln(w)
		fmt.Fprintln(w, "targets (median of the per-round ratios):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  ratio\ttarget\tmeasured\tmet?\twhat")
		for _, t := range res.Targets {
			measured, met := "not measured", "-"
			if _, ok := rep.Ratios[t.Ratio]; ok {
				measured, met = fmt.Sprintf("%.3f", t.Measured), "no"
				if sp, ok := rep.Spread[t.Ratio]; ok {
					measured += fmt.Sprintf(" (%.2f-%.2f)", sp[0], sp[1])
				}
				if t.Met {
					met = "yes"
				}
			}
			fmt.Fprintf(tw, "  %s\t>= %.1f\t%s\t%s\t%s\n", t.Ratio, t.Min, measured, met, t.What)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	rep.PrintConfig(w)
	fmt.Fprintln(w)
	rep.PrintRatios(w)
}

func plotSmallfile(rs []Result, systems []string, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	p := plot.Panel{Title: "smallfile (create, write 100 B, commit, remove)", XLabel: "clients", YLabel: "files/s", LogX: true}
	ms := medians(rs, systems)
	for i, sys := range systems {
		if sys == Null {
			continue
		}
		s := plot.Series{Name: sys, Color: plot.Palette[i%len(plot.Palette)]}
		for _, m := range ms {
			if m.Server == sys && m.Workload == "smallfile" {
				s.X = append(s.X, float64(m.Clients))
				s.Y = append(s.Y, m.Median)
			}
		}
		p.Series = append(p.Series, s)
	}
	return plot.Render(path, []plot.Panel{p}, 1)
}
