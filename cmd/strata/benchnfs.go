package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"strata/internal/nfsbench"
	"strata/internal/nfsload"
	"strata/internal/plot"
	"strata/nfs"
	"strata/nfs/rpc"
)

func benchNFSCmd() *cobra.Command {
	var (
		quick, asJSON, noPeers, async, clnt bool
		clientsFlag, peersFlag              string
		dir, plotPath, appSrc               string
		dur, cellTimeout                    time.Duration
		rounds, largeMB                     int
	)
	c := &cobra.Command{
		Use:   "nfs",
		Short: "NFS smallfile and largefile workloads: Strata vs NFS-Ganesha and GoNFS",
		Long: `Runs the GoJournal paper's workloads through one RPC-level client driver
(no kernel mount) against Strata's NFS server and, side by side in the same
run, NFS-Ganesha (Debian nfs-ganesha, VFS back-end, NFSv3) and GoNFS
(github.com/mit-pdos/go-nfsd v0.6.0 built in bench/gonfsd, with WRITE data
copied out of the pooled request buffer: unmodified, v0.6.0 corrupts file
data), each on a disk file or directory on the project disk:

  smallfile  per client: create, write 100 bytes, COMMIT, remove, repeated
  largefile  one client writes --large-mb MiB in 64 KiB UNSTABLE writes,
             COMMITs, and reads the file back, comparing every byte
  app        N clients copy a real source tree (--app-src, default the Go
             toolchain's src/net) in, then every file is read back and
             compared

Strata runs twice: as "strata" (RFC 1813's synchronous metadata: CREATE,
REMOVE, ... are durable before the reply) and as "strata-async" (strata nfs
serve --async: answered once committed in memory, durable with the next
group commit), which is the durability NFS-Ganesha's VFS back-end gives
(it does not sync creates and removes; only COMMIT fsyncs). --async=false
skips the second.

Every cell (one workload at one client count on one server) has a
deadline: smallfile --duration x 1.2 + 2 min, app 5 min, largefile 3 min
+ 1 s per MiB of --large-mb, clnt-smallfile --duration + 3 min
(--cell-timeout sets one deadline for all); a smallfile client still
waiting for a reply 20 s after the window fails its cell too. A cell that
fails or passes its deadline is reported as FAILED with the reason and
left out of the medians and ratios; for GoNFS a timed-out cell also saves
go-nfsd's goroutine stacks in --dir (go-nfsd v0.6.0 can deadlock when
clients create files in a directory and its subdirectory at once: a
directory cache rebuild locks the child while holding the parent, and
the child's rebuild locks ".." while holding the child). The server is
then restarted on a fresh disk for its remaining cells (if it cannot be restarted, they are reported as
not run) and the run goes on. The command exits non-zero if a Strata cell
failed; peers' failures are only reported.

Rounds alternate the order of the servers; each server runs alone (the
peers need rpcbind, which the benchmark starts if none runs). With --clnt
go-nfsd's own raw-RPC client clnt-smallfile also runs against each server
as an independent check. Each round also runs fio on the same disk (the
largefile's bytes in 64 KiB writes, fsync at the end) for the disk's
sequential write bandwidth. Ratios are median over rounds, > 1: Strata
better (largefile-write strata/fio-disk is the fraction of the disk's
bandwidth Strata reaches).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"clients": "1,4,16", "duration": "2s", "rounds": "1", "large-mb": "32"}); err != nil {
					return err
				}
			}
			clients, err := parseInts("--clients", clientsFlag, 1, 256)
			if err != nil {
				return err
			}
			if rounds < 1 || largeMB < 1 || dur <= 0 {
				return fmt.Errorf("--rounds, --large-mb and --duration must be positive")
			}
			if cellTimeout < 0 {
				return fmt.Errorf("--cell-timeout must not be negative")
			}
			systems := []string{"strata"}
			if async {
				systems = append(systems, "strata-async")
			}
			if !noPeers {
				for _, p := range strings.Split(peersFlag, ",") {
					if p != "ganesha" && p != "gonfs" {
						return fmt.Errorf("--peers: unknown peer %q (want ganesha, gonfs)", p)
					}
					systems = append(systems, p)
				}
			}
			if appSrc == "" {
				if out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output(); err == nil {
					appSrc = filepath.Join(strings.TrimSpace(string(out)), "src", "net")
				}
			}
			if appSrc != "" && appSrc != "none" {
				if st, err := os.Stat(appSrc); err != nil || !st.IsDir() {
					return fmt.Errorf("--app-src %s: not a directory (use --app-src none to skip the app workload)", appSrc)
				}
			}
			return runNFSBench(ctx, cmd, nfsBenchConfig{systems: systems, clients: clients, dur: dur, rounds: rounds, large: int64(largeMB) << 20, dir: dir, plot: plotPath, json: asJSON, clnt: clnt, appSrc: appSrc, cellTimeout: cellTimeout})
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 1, 4 and 16 clients, 2 s cells, 32 MiB largefile, 1 round")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&noPeers, "no-peers", false, "Strata only")
	f.BoolVar(&async, "async", true, "also run Strata with metadata answered before it is durable (strata nfs serve --async: Ganesha's durability)")
	f.BoolVar(&clnt, "clnt", false, "also run go-nfsd's clnt-smallfile against every server")
	f.StringVar(&clientsFlag, "clients", "1,2,4,8,16", "concurrent smallfile clients")
	f.StringVar(&peersFlag, "peers", "ganesha,gonfs", "peers")
	f.DurationVar(&dur, "duration", 5*time.Second, "measured time per smallfile cell")
	f.IntVar(&rounds, "rounds", 3, "rounds, alternating the order of the servers")
	f.DurationVar(&cellTimeout, "cell-timeout", 0, "deadline of every cell (0: smallfile duration x 1.2 + 2m, app 5m, largefile 3m + 1s per MiB, clnt-smallfile duration + 3m)")
	f.IntVar(&largeMB, "large-mb", 100, "largefile size in MiB")
	f.StringVar(&dir, "dir", "strata-data/bench-nfs", "data folder on the project disk")
	f.StringVar(&plotPath, "plot", "strata-data/bench/nfs-smallfile.png", "write the smallfile plot here ('' to skip)")
	f.StringVar(&appSrc, "app-src", "", "source tree the app workload copies (default: $(go env GOROOT)/src/net; none: skip)")
	return c
}

type nfsBenchConfig struct {
	systems []string
	clients []int
	dur     time.Duration
	rounds  int
	large   int64
	dir     string
	plot    string
	json    bool
	clnt    bool
	appSrc  string // "" or "none": no app workload
	// cellTimeout, if positive, is every cell's deadline instead of
	// cellDeadline's.
	cellTimeout time.Duration
}

// cellDeadline bounds one cell of workload: generous (a slow but working
// server finishes far sooner), only there so that a server that stops
// answering cannot hang the benchmark.
func (cfg nfsBenchConfig) cellDeadline(workload string) time.Duration {
	if cfg.cellTimeout > 0 {
		return cfg.cellTimeout
	}
	switch workload {
	case "smallfile": // warm-up d/5, window d, then nfsload.StallGrace
		return cfg.dur + cfg.dur/5 + 2*time.Minute
	case "largefile": // 100 MiB: 4 min 40 s
		return 3*time.Minute + time.Duration(cfg.large>>20)*time.Second
	case "clnt-smallfile": // nfsbench.ClntSmallfile also bounds it
		return cfg.dur + 3*time.Minute
	default: // app: src/net is some 400 files, 10 MB
		return 5 * time.Minute
	}
}

// nfsFailure is a cell that gave no result.
type nfsFailure struct {
	Server   string `json:"server"`
	Workload string `json:"workload"`
	Clients  int    `json:"clients,omitempty"`
	Round    int    `json:"round"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Reason   string `json:"reason"`
}

// nfsSystem is a running server under test.
type nfsSystem struct {
	server nfsload.Server
	stop   func()
	// dumpStacks, if not nil, saves the server's log with its goroutine
	// stacks to a file (nfsbench.Peer.DumpStacks); it ends the server.
	dumpStacks func(dst string) error
}

// startStrataNFS runs `strata nfs serve` on a fresh disk file.
func startStrataNFS(ctx context.Context, dir, name string, log io.Writer, extra ...string) (*nfsSystem, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	img := filepath.Join(dir, "strata-nfs.img")
	os.Remove(img)
	args := append([]string{"nfs", "serve", "--disk", img, "--size", "4096", "--listen", "127.0.0.1:0", "--mount-listen", "127.0.0.1:0", "--export", "/"}, extra...)
	p := exec.CommandContext(ctx, self, args...)
	p.Stderr = log
	out, err := p.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var np, mp int
	if _, serr := fmt.Sscanf(line, "serving / on nfs port %d, mount port %d", &np, &mp); err != nil || serr != nil {
		p.Process.Kill()
		p.Wait()
		return nil, fmt.Errorf("strata nfs serve did not start: %q %v", line, err)
	}
	return &nfsSystem{
		server: nfsload.Server{Name: name, NFSAddr: fmt.Sprintf("127.0.0.1:%d", np), MountAddr: fmt.Sprintf("127.0.0.1:%d", mp), Export: "/"}, // "/" as the peers, and as clnt-smallfile mounts
		stop: func() {
			// A server that does not exit within 15 s of SIGINT (hung)
			// is killed.
			exited := make(chan struct{})
			go func() { p.Wait(); close(exited) }()
			p.Process.Signal(os.Interrupt)
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				p.Process.Kill()
				<-exited
			}
			os.Remove(img)
		},
	}, nil
}

func startSystem(ctx context.Context, name, dir string, log io.Writer) (*nfsSystem, error) {
	// Only one server may be registered with rpcbind for NFS v3 at a time.
	rpc.PmapUnset(ctx, nfs.ProgNFS, nfs.VersNFS)
	rpc.PmapUnset(ctx, nfs.ProgMount, nfs.VersMount)
	var p *nfsbench.Peer
	var err error
	cleanup := func() {}
	switch name {
	case "strata":
		return startStrataNFS(ctx, dir, name, log)
	case "strata-async":
		return startStrataNFS(ctx, dir, name, log, "--async")
	case "ganesha":
		exp := filepath.Join(dir, "ganesha-export")
		os.RemoveAll(exp)
		if err := os.MkdirAll(exp, 0o777); err != nil {
			return nil, err
		}
		p, err = nfsbench.StartGanesha(ctx, exp, log)
		// What the workloads wrote (the app workload copies Go sources)
		// must not stay in the working tree, where `go vet ./...` sees it.
		cleanup = func() { os.RemoveAll(exp) }
	case "gonfs":
		p, err = nfsbench.StartGoNFS(ctx, dir, 4096, log)
	}
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &nfsSystem{server: nfsload.Server{Name: name, NFSAddr: p.NFSAddr, MountAddr: p.MountAddr, Export: p.Export},
		stop: func() { p.Stop(); cleanup() }, dumpStacks: p.DumpStacks}, nil
}

func runNFSBench(ctx context.Context, cmd *cobra.Command, cfg nfsBenchConfig) error {
	progress := cmd.ErrOrStderr()
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return err
	}
	if len(cfg.systems) > 1 || cfg.clnt {
		stopRpcbind, err := nfsbench.EnsureRpcbind(ctx, progress)
		if err != nil {
			return fmt.Errorf("rpcbind (the peers need it): %w (use --no-peers)", err)
		}
		defer stopRpcbind()
	}
	var results []nfsload.Result
	var failures []nfsFailure
	for round := 1; round <= cfg.rounds; round++ {
		order := slices.Clone(cfg.systems)
		k := (round - 1) % len(order)
		order = append(order[k:], order[:k]...)
		// The disk's own sequential write bandwidth, for the largefile
		// target: the same bytes in the same 64 KiB writes, fsync at the
		// end, on the same disk.
		if mb, err := nfsbench.FioSeqWrite(ctx, cfg.dir, cfg.large, 64<<10, progress); err != nil {
			fmt.Fprintf(progress, "round %d fio: %v (no disk figure this round)\n", round, err)
		} else {
			results = append(results, nfsload.Result{Server: "fio", Workload: "largefile-write", Clients: 1, Round: round, Ops: cfg.large, PerSec: mb})
			fmt.Fprintf(progress, "round %d fio      sequential write %.1f MB/s (64 KiB writes, fsync at the end)\n", round, mb)
		}
		for _, name := range order {
			rs, fs, err := runNFSSystem(ctx, cfg, name, round, progress)
			results, failures = append(results, rs...), append(failures, fs...)
			if err != nil {
				return err
			}
		}
	}
	ratios := nfsRatios(results, cfg.systems)
	if cfg.plot != "" {
		if err := plotNFS(results, cfg.systems, cfg.plot); err != nil {
			return err
		}
		fmt.Fprintf(progress, "wrote %s\n", cfg.plot)
	}
	if cfg.json {
		if err := json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"bench": "nfs", "results": results, "ratios": ratios, "failures": failures}); err != nil {
			return err
		}
		return strataFailed(failures)
	}
	w := cmd.OutOrStdout()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "server\tworkload\tclients\tmedian\tunit\t")
	for _, sys := range cfg.systems {
		for _, wl := range []string{"smallfile", "app"} {
			for _, n := range cfg.clients {
				if v := medianNFS(results, sys, wl, n); v > 0 {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\tfiles/s\t\n", sys, wl, n, v)
				}
			}
		}
		for _, wl := range []string{"largefile-write", "largefile-read", "clnt-smallfile"} {
			if v := medianNFS(results, sys, wl, -1); v > 0 {
				unit := "MB/s"
				if wl == "clnt-smallfile" {
					unit = "files/s"
				}
				fmt.Fprintf(tw, "%s\t%s\t\t%.1f\t%s\t\n", sys, wl, v, unit)
			}
		}
	}
	if v := medianNFS(results, "fio", "largefile-write", -1); v > 0 {
		fmt.Fprintf(tw, "fio (disk)\tsequential write\t\t%.1f\tMB/s\t\n", v)
	}
	tw.Flush()
	if len(ratios) > 0 {
		fmt.Fprintf(w, "\nratios (> 1: Strata better), median of %d round(s)\n", cfg.rounds)
		keys := make([]string, 0, len(ratios))
		for k := range ratios {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %-48s %.2f\n", k, ratios[k])
		}
	}
	if len(failures) > 0 {
		fmt.Fprintf(w, "\nFAILED cells (no figure; not in the medians and ratios):\n")
		for _, f := range failures {
			fmt.Fprintf(w, "  round %d %-12s %s: %s\n", f.Round, f.Server, cellName(f.Workload, f.Clients), f.Reason)
		}
	}
	return strataFailed(failures)
}

// strataFailed is an error if a Strata cell failed (a peer's failure is
// only reported).
func strataFailed(fs []nfsFailure) error {
	n := 0
	for _, f := range fs {
		if strings.HasPrefix(f.Server, "strata") {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("%d Strata cell(s) FAILED (listed above)", n)
	}
	return nil
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

// nfsCell is one measurement on one server.
type nfsCell struct {
	workload string
	clients  int // smallfile and app
	run      func(ctx context.Context, s nfsload.Server) ([]nfsload.Result, error)
	show     func([]nfsload.Result) string // the progress line of a result
}

// runNFSSystem starts server name, runs its cells of round, and stops it.
// Every cell runs under its deadline (cfg.cellDeadline). A cell that fails
// or times out is reported (progress, and the returned failures) and the
// server is restarted on a fresh disk for the next cell: a failed cell
// leaves it in an unknown state (dead, hung, holding locks). If it does not
// start, its remaining cells are reported as not run. The error is only
// ctx's (the run was interrupted).
func runNFSSystem(ctx context.Context, cfg nfsBenchConfig, name string, round int, progress io.Writer) ([]nfsload.Result, []nfsFailure, error) {
	tag := fmt.Sprintf("r%d", round)
	var cells []nfsCell
	for _, n := range cfg.clients {
		cells = append(cells, nfsCell{"smallfile", n,
			func(ctx context.Context, s nfsload.Server) ([]nfsload.Result, error) {
				r, err := nfsload.Smallfile(ctx, s, n, cfg.dur, fmt.Sprintf("%s-c%d", tag, n))
				return []nfsload.Result{r}, err
			},
			func(r []nfsload.Result) string {
				return fmt.Sprintf("smallfile clients=%-3d %8.0f files/s", n, r[0].PerSec)
			}})
	}
	if cfg.appSrc != "" && cfg.appSrc != "none" {
		for _, n := range cfg.clients {
			cells = append(cells, nfsCell{"app", n,
				func(ctx context.Context, s nfsload.Server) ([]nfsload.Result, error) {
					r, err := nfsload.App(ctx, s, cfg.appSrc, n, fmt.Sprintf("%s-c%d", tag, n))
					return []nfsload.Result{r}, err
				},
				func(r []nfsload.Result) string {
					return fmt.Sprintf("app clients=%-3d %8.0f files/s (%d files copied and read back)", n, r[0].PerSec, r[0].Ops)
				}})
		}
	}
	cells = append(cells, nfsCell{"largefile", 0,
		func(ctx context.Context, s nfsload.Server) ([]nfsload.Result, error) {
			w, rd, err := nfsload.Largefile(ctx, s, cfg.large, tag)
			return []nfsload.Result{w, rd}, err
		},
		func(r []nfsload.Result) string {
			return fmt.Sprintf("largefile write %.1f MB/s, read %.1f MB/s", r[0].PerSec, r[1].PerSec)
		}})
	if cfg.clnt {
		cells = append(cells, nfsCell{"clnt-smallfile", 4,
			func(ctx context.Context, _ nfsload.Server) ([]nfsload.Result, error) {
				fs, err := nfsbench.ClntSmallfile(ctx, 4, cfg.dur, progress)
				return []nfsload.Result{{Server: name, Workload: "clnt-smallfile", Clients: 4, PerSec: fs}}, err
			},
			func(r []nfsload.Result) string {
				return fmt.Sprintf("clnt-smallfile 4 threads %8.0f files/s", r[0].PerSec)
			}})
	}

	var results []nfsload.Result
	var failures []nfsFailure
	fail := func(c nfsCell, timedOut bool, reason string) {
		fmt.Fprintf(progress, "round %d %-8s %s: FAILED: %s\n", round, name, cellName(c.workload, c.clients), reason)
		failures = append(failures, nfsFailure{Server: name, Workload: c.workload, Clients: c.clients, Round: round, TimedOut: timedOut, Reason: reason})
	}
	sys, err := startSystem(ctx, name, cfg.dir, progress)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		for _, c := range cells {
			fail(c, false, fmt.Sprintf("not run: the server did not start: %v", err))
		}
		return nil, failures, nil
	}
	defer func() {
		if sys != nil {
			sys.stop()
		}
	}()
	var notRun string // why the remaining cells do not run
	for i, c := range cells {
		if notRun != "" {
			fail(c, false, notRun)
			continue
		}
		bound := cfg.cellDeadline(c.workload)
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
			fmt.Fprintf(progress, "round %d %-8s %s\n", round, name, c.show(rs))
			continue
		}
		fail(c, timedOut, fmt.Sprintf("%v (after %v)", err, time.Since(t0).Round(time.Millisecond)))
		if timedOut && sys.dumpStacks != nil {
			dst, _ := filepath.Abs(filepath.Join(cfg.dir, cellFile(name, tag, c)))
			if err := sys.dumpStacks(dst); err != nil {
				fmt.Fprintf(progress, "round %d %-8s saving its log and goroutine stacks: %v\n", round, name, err)
			} else {
				fmt.Fprintf(progress, "round %d %-8s saved its log and goroutine stacks to %s\n", round, name, dst)
			}
		}
		sys.stop()
		sys = nil
		if i == len(cells)-1 {
			break
		}
		fmt.Fprintf(progress, "round %d %-8s restarting the server on a fresh disk for its remaining cells\n", round, name)
		if sys, err = startSystem(ctx, name, cfg.dir, progress); err != nil {
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
func cellFile(name, tag string, c nfsCell) string {
	if perClients(c.workload) {
		return fmt.Sprintf("%s-%s-%s-c%d.log", name, tag, c.workload, c.clients)
	}
	return fmt.Sprintf("%s-%s-%s.log", name, tag, c.workload)
}

// medianNFS is the median over rounds of one cell (clients -1: any).
func medianNFS(rs []nfsload.Result, server, workload string, clients int) float64 {
	var xs []float64
	for _, r := range rs {
		if r.Server == server && r.Workload == workload && (clients < 0 || r.Clients == clients) {
			xs = append(xs, r.PerSec)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// nfsRatios compares the medians of every cell that has a result (failed
// cells have none) for both a Strata system and a peer, in some round.
func nfsRatios(rs []nfsload.Result, systems []string) map[string]float64 {
	out := map[string]float64{}
	done := map[string]bool{}
	for _, subj := range systems {
		if !strings.HasPrefix(subj, "strata") {
			continue
		}
		for _, peer := range systems {
			if strings.HasPrefix(peer, "strata") {
				continue
			}
			for _, r := range rs {
				if r.Server != subj {
					continue
				}
				clients := r.Clients
				perClients := r.Workload == "smallfile" || r.Workload == "app"
				if !perClients {
					clients = -1
				}
				key := fmt.Sprintf("%s %s/%s", r.Workload, subj, peer)
				if perClients {
					key += fmt.Sprintf(" clients=%d", r.Clients)
				}
				if done[key] {
					continue // every round of a cell gives the same medians
				}
				done[key] = true
				s, p := medianNFS(rs, subj, r.Workload, clients), medianNFS(rs, peer, r.Workload, clients)
				if s <= 0 || p <= 0 {
					continue
				}
				out[key] = round3(s / p)
			}
		}
	}
	// The largefile target is a fraction of the disk's bandwidth (0.9).
	if d, s := medianNFS(rs, "fio", "largefile-write", -1), medianNFS(rs, "strata", "largefile-write", -1); d > 0 && s > 0 {
		out["largefile-write strata/fio-disk"] = round3(s / d)
	}
	return out
}

func plotNFS(rs []nfsload.Result, systems []string, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	p := plot.Panel{Title: "smallfile (create, write 100 B, commit, remove)", XLabel: "clients", YLabel: "files/s", LogX: true}
	for i, sys := range systems {
		s := plot.Series{Name: sys, Color: plot.Palette[i%len(plot.Palette)]}
		var seen []int
		for _, r := range rs {
			if r.Server == sys && r.Workload == "smallfile" && !slices.Contains(seen, r.Clients) {
				seen = append(seen, r.Clients)
			}
		}
		slices.Sort(seen)
		for _, n := range seen {
			s.X = append(s.X, float64(n))
			s.Y = append(s.Y, medianNFS(rs, sys, "smallfile", n))
		}
		p.Series = append(p.Series, s)
	}
	return plot.Render(path, []plot.Panel{p}, 1)
}
