// Package wor is `strata bench wor`: Strata's write-once registers
// (WormSpace) against etcd, three members each on loopback.
//
// Strata runs three `strata wor serve` processes (persistent on the
// project disk, and in memory) and measures from the harness process,
// with increasing numbers of concurrent clients, a read, the full
// single-register write (capture+write) and a write on registers captured
// beforehand, for the paxos and chain engines; a sweep measures the
// pre-captured write's latency against replica sets of several sizes. The
// peer is etcd v3.6.16 (bench/etcd, three embedded members, fsync on),
// measured by its own client with the same value sizes and concurrency:
// a create-if-absent transaction and a linearizable get. Persistent paxos
// is compared with etcd, round by round: the pre-captured write and
// capture+write each with create-if-absent, the read with the get.
package wor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/internal/freeport"
	"strata/internal/plot"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
	wormspace "strata/wor"
)

// Config is one run of the benchmark.
type Config struct {
	// Strata is the strata binary whose `wor serve` the servers run
	// (default: this executable).
	Strata   string
	Dir      string // data of the persistent servers and of etcd (emptied first)
	Clients  []int
	Sizes    []int
	Engines  []string // paxos, chain
	Modes    []string // persistent, memory
	Warmup   time.Duration
	Measure  time.Duration
	Rounds   int
	Lengths  []int  // replica-set sizes of the chain-length sweep (none: no sweep)
	Plot     string // the sweep's plot (PNG; "": none)
	Etcd     bool   // run the etcd peer
	Progress io.Writer
}

// Engines and Modes are the values Config accepts.
var (
	Engines = []string{"paxos", "chain"}
	Modes   = []string{"persistent", "memory"}
)

// Settings of the Strata side that the report prints and the cells use.
const (
	// props is the protocol stack of `strata wor serve` and its clients.
	props = "Reliable,Fragment,RPC"
	// journalBlocks sizes each persistent server's journal file (4 KiB
	// blocks): every captured register takes one until its segment is
	// trimmed.
	journalBlocks = 262144
	// requestTimeout is the wor client's per-request timeout.
	requestTimeout = 2 * time.Second
	// Pre-captured writes per second a cell provisions registers for.
	precapturePersistent = 4000
	precaptureMemory     = 20000
)

// etcdOps pairs each etcd operation with the Strata operations compared
// with it: the etcd bench's -op, its name in results, in ratio keys.
var etcdOps = []struct {
	op, name, key string
	strata        []string
}{
	{"create", "create-if-absent", "create-if-absent", []string{"write-precaptured", "capture+write"}},
	{"get", "linearizable-get", "linearizable get", []string{"read"}},
}

// comparedMode and comparedEngine are the Strata cells compared with etcd:
// persistent (durable before the reply, as etcd is) Paxos over 3 servers.
const (
	comparedMode   = "persistent"
	comparedEngine = "paxos"
)

// ErrStrataFailed is returned, with the complete report, when a Strata
// cell failed: a failing Strata cell is a bug worth seeing.
var ErrStrataFailed = errors.New("failed Strata cells")

func (cfg *Config) check() error {
	if cfg.Rounds < 1 {
		return fmt.Errorf("rounds must be at least 1, not %d", cfg.Rounds)
	}
	if cfg.Measure <= 0 || cfg.Warmup < 0 {
		return fmt.Errorf("the measured window must be positive and the warm-up not negative (%v, %v)", cfg.Measure, cfg.Warmup)
	}
	if len(cfg.Clients) == 0 || len(cfg.Sizes) == 0 {
		return errors.New("need at least one client count and one value size")
	}
	for _, e := range cfg.Engines {
		if !slices.Contains(Engines, e) {
			return fmt.Errorf("unknown engine %q (want %s)", e, strings.Join(Engines, " or "))
		}
	}
	for _, m := range cfg.Modes {
		if !slices.Contains(Modes, m) {
			return fmt.Errorf("unknown mode %q (want %s)", m, strings.Join(Modes, " or "))
		}
	}
	for _, s := range cfg.Sizes {
		if s < 1 || s > wormspace.MaxPersistentValue {
			return fmt.Errorf("value size %d out of [1,%d] (a persistent register holds one journal block)", s, wormspace.MaxPersistentValue)
		}
	}
	if cfg.Dir == "" {
		return errors.New("no data folder")
	}
	return nil
}

// harness is one run's state.
type harness struct {
	cfg     Config
	rep     *kit.Report
	ec      *EtcdCluster
	results []Result
	failed  int // Strata cells that failed
	seg     uint64
}

// Run runs the benchmark and returns its report. If a Strata cell failed,
// it returns the complete report and an error wrapping ErrStrataFailed; if
// etcd did not start, an error wrapping ErrEtcdStart.
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
	// Fresh journals: every capture+write takes a register slot.
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	rep := kit.NewReport("wor", kit.Settings{
		"rounds":  cfg.Rounds,
		"warmup":  cfg.Warmup.String(),
		"measure": cfg.Measure.String(),
		"clients": cfg.Clients,
		"sizes":   cfg.Sizes,
		"engines": cfg.Engines,
		"modes":   cfg.Modes,
		"lengths": cfg.Lengths,
		"dir":     fmt.Sprintf("%s (%s)", cfg.Dir, fsType(cfg.Dir)),
		"schedule": "round 1 measures every cell; later rounds repeat the cells compared with etcd (persistent paxos read, capture+write, write-precaptured; " +
			"etcd create-if-absent and get); which system goes first rotates every round",
	})
	rep.System("strata", strataSettings(cfg))
	h := &harness{cfg: cfg, rep: rep}
	systems := []string{"strata"}
	if cfg.Etcd {
		ec, err := StartEtcd(ctx, filepath.Join(cfg.Dir, "etcd"), cfg.Progress)
		if err != nil {
			return nil, err
		}
		defer ec.Stop()
		h.ec = ec
		set := kit.Settings{}
		for k, v := range ec.Settings {
			set[k] = v
		}
		set["client"] = "one clientv3 client in the peer's bench process (a separate process); N goroutines, one request outstanding each (closed loop); no rate limit"
		set["ops"] = "create-if-absent: Txn(If Version(key)=0, Then Put(key, value)) on a fresh key; linearizable-get: Get (linearizable, etcd's default) of one of 1000 prefilled keys"
		rep.System("etcd", set)
		systems = append(systems, "etcd")
	} else {
		rep.Note("etcd skipped (--no-etcd): no ratios")
	}
	for r := range cfg.Rounds {
		for _, sys := range kit.Order(r, systems) {
			if sys == "etcd" {
				h.etcdRound(ctx, r+1)
			} else {
				h.strataRound(ctx, r+1)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	if len(cfg.Lengths) > 0 {
		lr := h.sweep(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if cfg.Plot != "" && len(lr) > 0 {
			if err := plotLengths(lr, cfg.Plot); err != nil {
				return nil, err
			}
			fmt.Fprintf(cfg.Progress, "wrote %s\n", cfg.Plot)
		}
	}
	ratios(h.results).Summarize(rep)
	rep.Results = h.results
	rep.Note("transport: each system's own; Strata's wor client speaks UDP on loopback (stack %s), etcd's clientv3 gRPC over TCP on loopback", props)
	rep.Note("write-precaptured times only the Write (phase 2) on registers captured before the timer (WormPaxos's steady state); capture+write is the full single-register operation, Capture (phase 1) then Write; both are compared with etcd's create-if-absent, each with its own ratio")
	rep.Note("syncs/op: disk syncs of the 3 servers from the start of the warm-up to the end of the last operation, over the operations in that span: Strata's journal barriers (fdatasync), etcd's WAL fdatasyncs and backend commits; concurrent operations share syncs on both sides")
	if h.failed > 0 {
		return rep, fmt.Errorf("%w: %d (listed under FAILED cells)", ErrStrataFailed, h.failed)
	}
	if len(rep.Failures) > 0 {
		return rep, fmt.Errorf("%w: %d (listed under FAILED cells)", kit.ErrPeerFailed, len(rep.Failures))
	}
	return rep, nil
}

// strataSettings are the Strata side's settings as the report prints them.
func strataSettings(cfg Config) kit.Settings {
	return kit.Settings{
		"version":    kit.StrataVersion(),
		"servers":    fmt.Sprintf("3 `%s wor serve` processes, 127.0.0.1, fresh per mode, engine and round", filepath.Base(cfg.Strata)),
		"transport":  fmt.Sprintf("UDP loopback, protocol stack %s (the wor client's own transport)", props),
		"persistent": fmt.Sprintf("journal file per server (%s/ENGINE-rROUND/N/wor.img, %d blocks of 4 KiB); a reply leaves only after a journal flush that ends in fdatasync (group commit: replies queued during one flush wait for the next); --metrics on, to count the barriers", cfg.Dir, journalBlocks),
		"memory":     "acceptor state in memory, no disk",
		"compared":   fmt.Sprintf("%s %s: majority quorums, thrifty (asks 2 of the 3 servers, the third only when one is slow)", comparedMode, comparedEngine),
		"client":     fmt.Sprintf("one wor.Client (one UDP socket) in the harness process; N goroutines, one operation outstanding each (closed loop); no rate limit; request timeout %v", requestTimeout),
		"precapture": fmt.Sprintf("write-precaptured: registers captured by SegCapture in batches of %d before the timer, provisioned for %d writes/s (persistent) or %d (memory); a client that outruns it captures its next batch inside the timer; not a throttle", precaptureBatch, precapturePersistent, precaptureMemory),
		"read":       "Read: a linearizable quorum read of one of 64 written registers per client",
	}
}

// strataRound measures Strata's cells of round r: all of them in round
// 1, the ones compared with etcd later.
func (h *harness) strataRound(ctx context.Context, r int) {
	modes, engines, ops := h.cfg.Modes, h.cfg.Engines, Ops
	if r > 1 {
		modes, engines = []string{comparedMode}, []string{comparedEngine}
	}
	for _, mode := range modes {
		for _, engine := range engines {
			if r > 1 && (!slices.Contains(h.cfg.Modes, mode) || !slices.Contains(h.cfg.Engines, engine)) {
				continue // not asked for: nothing to repeat
			}
			h.strataCells(ctx, r, mode, engine, ops)
		}
	}
}

// etcdRound measures etcd's cells of round r.
func (h *harness) etcdRound(ctx context.Context, r int) {
	for _, eo := range etcdOps {
		for _, size := range h.cfg.Sizes {
			for _, cl := range h.cfg.Clients {
				if ctx.Err() != nil {
					return
				}
				er, err := h.ec.Run(ctx, EtcdLoad{Op: eo.op, Clients: cl, Size: size, Warmup: h.cfg.Warmup, Measure: h.cfg.Measure,
					Prefix: fmt.Sprintf("r%d-%s-%d-%d", r, eo.op, size, cl)})
				if err != nil {
					h.rep.Fail("round %d etcd %s size=%d clients=%d: %v", r, eo.name, size, cl, firstLine(err))
					fmt.Fprintf(h.cfg.Progress, "round %d etcd %s size=%d clients=%d: FAILED: %v\n", r, eo.name, size, cl, err)
					continue
				}
				res := Result{System: "etcd", Engine: "raft", Mode: "persistent", Op: eo.name, Clients: cl, Size: size, Ops: er.Ops,
					Seconds: er.Seconds, OpsPerSec: er.OpsPerSec, P50us: er.P50us, P99us: er.P99us, Round: r, OpsTotal: er.OpsTotal, Syncs: er.Syncs}
				h.results = append(h.results, res)
				h.progress(res, "")
			}
		}
	}
}

func (h *harness) progress(r Result, extra string) {
	fmt.Fprintf(h.cfg.Progress, "round %d %-6s %-10s %-5s %-17s size=%-4d clients=%-3d %8.0f ops/s  p50 %7.0f µs  p99 %7.0f µs  syncs/op %.2f%s\n",
		r.Round, r.System, r.Mode, r.Engine, r.Op, r.Size, r.Clients, r.OpsPerSec, r.P50us, r.P99us, r.SyncsPerOp(), extra)
}

// fail records a failed Strata cell.
func (h *harness) fail(format string, args ...any) {
	h.failed++
	h.rep.Fail(format, args...)
	fmt.Fprintf(h.cfg.Progress, "FAILED: "+format+"\n", args...)
}

// Servers are n wormserver processes.
type Servers struct {
	procs   []*kit.Proc
	Addrs   []stack.Addr // where they listen
	metrics []string     // Prometheus URLs of persistent servers
}

// StartServers starts n wormserver processes of the strata binary bin
// (persistent in dir/N when dir != "", with metrics), ready to serve.
func StartServers(ctx context.Context, bin string, n int, dir string) (*Servers, error) {
	return StartServersOn(ctx, bin, n, dir, "udp", nil)
}

// StartServersOn is StartServers on network (udp or tcp), with env added
// to the servers' environment (e.g. STRATA_TLS_DIR).
func StartServersOn(ctx context.Context, bin string, n int, dir, network string, env []string) (*Servers, error) {
	s := &Servers{}
	for i := range n {
		args := []string{bin, "wor", "serve", "--listen", network + ":127.0.0.1:0"}
		if dir != "" {
			port, err := freeport.TCP(1)
			if err != nil {
				s.Stop()
				return nil, err
			}
			m := fmt.Sprintf("127.0.0.1:%d", port[0])
			args = append(args, "--dir", filepath.Join(dir, fmt.Sprint(i)), "--blocks", fmt.Sprint(journalBlocks), "--metrics", m)
			s.metrics = append(s.metrics, "http://"+m+"/metrics")
		}
		p, err := kit.Start(ctx, kit.Cmd{
			Name:  fmt.Sprintf("wormserver %d", i),
			Argv:  args,
			Env:   env,
			Ready: func(line string) bool { return strings.HasPrefix(line, "listening on ") },
		})
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.procs = append(s.procs, p)
		s.Addrs = append(s.Addrs, stack.Addr(strings.TrimPrefix(p.Ready, "listening on ")))
	}
	return s, nil
}

// Syncs sums the persistent servers' journal barriers so far.
func (s *Servers) Syncs(ctx context.Context) (uint64, error) {
	var sum uint64
	for _, u := range s.metrics {
		v, err := kit.ScrapeCounter(ctx, u, "strata_wor_journal_barriers_total")
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// Tails are the servers' last lines, for a failure's message.
func (s *Servers) Tails() string {
	var b strings.Builder
	for i, p := range s.procs {
		if t := strings.TrimSpace(p.Tail(5)); t != "" {
			fmt.Fprintf(&b, "server %d:\n%s\n", i, t)
		}
	}
	return b.String()
}

// Stop stops the servers.
func (s *Servers) Stop() {
	for _, p := range s.procs {
		p.Stop()
	}
}

// Dial opens a WOR client of engine (paxos or chain) on the servers, on
// a node of its own.
func Dial(addrs []stack.Addr, engine string) (*wormspace.Client, *stack.Node, error) {
	return DialOn(addrs, engine, "udp", transport.Options{})
}

// DialOn is Dial with a node on network (udp or tcp) opened with o.
func DialOn(addrs []stack.Addr, engine, network string, o transport.Options) (*wormspace.Client, *stack.Node, error) {
	n, err := layers.ListenOpts(network+":127.0.0.1:0", props, o)
	if err != nil {
		return nil, nil, err
	}
	e, err := wormspace.NewEngine(engine, n, addrs, 1+rand.Uint64N(1<<32-1), requestTimeout)
	if err != nil {
		n.Close()
		return nil, nil, err
	}
	return wormspace.NewClient(e), n, nil
}

// strataCells starts 3 fresh wormservers of a mode and measures ops with
// an engine's client, every size and client count.
func (h *harness) strataCells(ctx context.Context, r int, mode, engine string, ops []string) {
	dir := ""
	if mode == "persistent" {
		// Fresh journals per round and engine: every capture takes a
		// register slot.
		dir = filepath.Join(h.cfg.Dir, fmt.Sprintf("%s-r%d", engine, r))
	}
	srv, err := StartServers(ctx, h.cfg.Strata, 3, dir)
	if err != nil {
		h.fail("round %d strata %s %s: servers did not start: %v", r, mode, engine, firstLine(err))
		return
	}
	defer srv.Stop()
	wc, node, err := Dial(srv.Addrs, engine)
	if err != nil {
		h.fail("round %d strata %s %s: client: %v", r, mode, engine, err)
		return
	}
	defer node.Close()
	rate := precaptureMemory
	if mode == "persistent" {
		rate = precapturePersistent
	}
	for _, op := range ops {
		for _, size := range h.cfg.Sizes {
			for _, cl := range h.cfg.Clients {
				if ctx.Err() != nil {
					return
				}
				h.seg++
				q0, _ := wc.QuorumStats()
				// The servers' syncs from the warm-up to the last
				// operation (persistent servers; none in memory).
				var marks []uint64
				var markErr error
				mark := func() {
					v, err := srv.Syncs(ctx)
					markErr = errors.Join(markErr, err)
					marks = append(marks, v)
				}
				res, err := Measure(ctx, wc, Cell{Seg: h.seg, Op: op, Clients: cl, Size: size, Warmup: h.cfg.Warmup, Measure: h.cfg.Measure, Precapture: rate, Mark: mark})
				if err != nil {
					// One failed cell (e.g. a timeout under overload) is
					// recorded and the run goes on; the exit status says so.
					h.fail("round %d strata %s %s %s size=%d clients=%d: %v", r, mode, engine, op, size, cl, err)
					if t := srv.Tails(); t != "" {
						fmt.Fprint(h.cfg.Progress, t)
					}
					continue
				}
				res.Engine, res.Mode, res.Round = engine, mode, r
				if markErr != nil {
					fmt.Fprintf(h.cfg.Progress, "round %d strata %s %s %s: syncs not counted: %v\n", r, mode, engine, op, markErr)
				} else if len(marks) == 2 {
					res.Syncs = marks[1] - marks[0]
				}
				hedged := ""
				if q1, ok := wc.QuorumStats(); ok && q1.Requests > q0.Requests {
					res.Hedged, res.QuorumRequests = q1.Hedged-q0.Hedged, q1.Requests-q0.Requests
					hedged = fmt.Sprintf("  hedged %.2f%%", 100*float64(res.Hedged)/float64(res.QuorumRequests))
				}
				h.results = append(h.results, res)
				h.progress(res, hedged)
			}
		}
	}
}

// sweep measures the pre-captured write latency of one client against
// replica sets of each size (in-memory servers), for both engines: chain
// replication writes the servers one after another, Paxos in parallel.
func (h *harness) sweep(ctx context.Context) []Result {
	var out []Result
	seg := uint64(1 << 30)
	for _, n := range h.cfg.Lengths {
		srv, err := StartServers(ctx, h.cfg.Strata, n, "")
		if err != nil {
			h.fail("sweep: %d servers did not start: %v", n, firstLine(err))
			continue
		}
		for _, engine := range Engines {
			if ctx.Err() != nil {
				break
			}
			wc, node, err := Dial(srv.Addrs, engine)
			if err != nil {
				h.fail("sweep: %s client of %d servers: %v", engine, n, err)
				continue
			}
			seg++
			res, err := Measure(ctx, wc, Cell{Seg: seg, Op: "write-precaptured", Clients: 1, Size: 8, Warmup: h.cfg.Warmup, Measure: h.cfg.Measure, Precapture: precaptureMemory})
			node.Close()
			if err != nil {
				h.fail("sweep: %s write-precaptured with %d servers: %v", engine, n, err)
				continue
			}
			res.Engine, res.Mode = engine, fmt.Sprintf("memory-%d", n)
			out = append(out, res)
			h.results = append(h.results, res)
			fmt.Fprintf(h.cfg.Progress, "sweep %d servers %-5s write-precaptured p50 %7.0f µs\n", n, engine, res.P50us)
		}
		srv.Stop()
	}
	return out
}

// ratios pairs, round by round, each etcd cell with the persistent paxos
// cells of the same round, value size and client count that it is
// compared with: throughput strata/etcd, p50 latency etcd/strata (both
// > 1 when Strata is better). A cell that failed has no row, so its round
// adds no ratio.
func ratios(rs []Result) kit.Ratios {
	type key struct {
		round, clients, size int
		op                   string
	}
	strata := map[key]Result{}
	for _, r := range rs {
		if r.System == "strata" && r.Mode == comparedMode && r.Engine == comparedEngine {
			strata[key{r.Round, r.Clients, r.Size, r.Op}] = r
		}
	}
	out := kit.Ratios{}
	for _, e := range rs {
		if e.System != "etcd" {
			continue
		}
		for _, eo := range etcdOps {
			if eo.name != e.Op {
				continue
			}
			for _, sop := range eo.strata {
				s, ok := strata[key{e.Round, e.Clients, e.Size, sop}]
				if !ok {
					continue
				}
				what := fmt.Sprintf("%s vs %s clients=%d size=%d", sop, eo.key, e.Clients, e.Size)
				out.Higher("ops/s strata/etcd "+what, s.OpsPerSec, e.OpsPerSec)
				out.Lower("p50 etcd/strata "+what, s.P50us, e.P50us)
			}
		}
	}
	return out
}

// Print writes the report's table, then its settings and ratios.
func Print(w io.Writer, rep *kit.Report) {
	rs, _ := rep.Results.([]Result)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tsystem\tmode\tengine\top\tsize\tclients\tops/s\tp50 µs\tp99 µs\tsyncs/op\thedged %\t")
	for _, r := range rs {
		syncs, hedged := "-", "-"
		if r.Syncs > 0 || r.Mode == "persistent" {
			syncs = fmt.Sprintf("%.2f", r.SyncsPerOp())
		}
		if r.QuorumRequests > 0 {
			hedged = fmt.Sprintf("%.2f", 100*float64(r.Hedged)/float64(r.QuorumRequests))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t%s\t%s\t\n", r.Round, r.System, r.Mode, r.Engine, r.Op, r.Size, r.Clients, r.OpsPerSec, r.P50us, r.P99us, syncs, hedged)
	}
	tw.Flush()
	fmt.Fprintln(w)
	rep.PrintConfig(w)
	rep.PrintRatios(w)
}

func plotLengths(rs []Result, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	p := plot.Panel{Title: "pre-captured write, 1 client, in-memory servers", XLabel: "servers in the replica set", YLabel: "p50 us",
		Series: []plot.Series{{Name: "paxos", Color: plot.Palette[0]}, {Name: "chain", Color: plot.Palette[1]}}}
	for _, r := range rs {
		var n int
		fmt.Sscanf(r.Mode, "memory-%d", &n)
		i := 0
		if r.Engine == "chain" {
			i = 1
		}
		p.Series[i].X = append(p.Series[i].X, float64(n))
		p.Series[i].Y = append(p.Series[i].Y, r.P50us)
	}
	return plot.Render(path, []plot.Panel{p}, 1)
}

// firstLine is an error's first line (child processes append their
// output's last lines to theirs).
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
