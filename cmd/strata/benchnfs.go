package main

import (
	"bufio"
	"context"
	"encoding/json"
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
		dur                                 time.Duration
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
			return runNFSBench(ctx, cmd, nfsBenchConfig{systems: systems, clients: clients, dur: dur, rounds: rounds, large: int64(largeMB) << 20, dir: dir, plot: plotPath, json: asJSON, clnt: clnt, appSrc: appSrc})
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
}

// nfsSystem is a running server under test.
type nfsSystem struct {
	server nfsload.Server
	stop   func()
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
			p.Process.Signal(os.Interrupt)
			p.Wait()
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
	return &nfsSystem{server: nfsload.Server{Name: name, NFSAddr: p.NFSAddr, MountAddr: p.MountAddr, Export: p.Export}, stop: func() { p.Stop(); cleanup() }}, nil
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
			sys, err := startSystem(ctx, name, cfg.dir, progress)
			if err != nil {
				return err
			}
			tag := fmt.Sprintf("r%d", round)
			for _, n := range cfg.clients {
				r, err := nfsload.Smallfile(ctx, sys.server, n, cfg.dur, fmt.Sprintf("%s-c%d", tag, n))
				if err != nil {
					sys.stop()
					return fmt.Errorf("%s smallfile clients=%d: %w", name, n, err)
				}
				r.Round = round
				results = append(results, r)
				fmt.Fprintf(progress, "round %d %-8s smallfile clients=%-3d %8.0f files/s\n", round, name, n, r.PerSec)
			}
			if cfg.appSrc != "" && cfg.appSrc != "none" {
				for _, n := range cfg.clients {
					r, err := nfsload.App(ctx, sys.server, cfg.appSrc, n, fmt.Sprintf("%s-c%d", tag, n))
					if err != nil {
						// A server that loses or corrupts data gets no
						// app figure; the run goes on.
						fmt.Fprintf(progress, "round %d %-8s app clients=%d: FAILED: %v\n", round, name, n, err)
						break
					}
					r.Round = round
					results = append(results, r)
					fmt.Fprintf(progress, "round %d %-8s app clients=%-3d %8.0f files/s (%d files copied and read back)\n", round, name, n, r.PerSec, r.Ops)
				}
			}
			w, rd, err := nfsload.Largefile(ctx, sys.server, cfg.large, tag)
			if err != nil {
				sys.stop()
				return fmt.Errorf("%s largefile: %w", name, err)
			}
			w.Round, rd.Round = round, round
			results = append(results, w, rd)
			fmt.Fprintf(progress, "round %d %-8s largefile write %.1f MB/s, read %.1f MB/s\n", round, name, w.PerSec, rd.PerSec)
			if cfg.clnt {
				fs, err := nfsbench.ClntSmallfile(ctx, 4, cfg.dur, progress)
				if err != nil {
					fmt.Fprintf(progress, "round %d %-8s clnt-smallfile: %v\n", round, name, err)
				} else {
					results = append(results, nfsload.Result{Server: name, Workload: "clnt-smallfile", Clients: 4, Round: round, PerSec: fs})
					fmt.Fprintf(progress, "round %d %-8s clnt-smallfile 4 threads %8.0f files/s\n", round, name, fs)
				}
			}
			sys.stop()
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
		return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"bench": "nfs", "results": results, "ratios": ratios})
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
	return nil
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

func nfsRatios(rs []nfsload.Result, systems []string) map[string]float64 {
	out := map[string]float64{}
	for _, subj := range systems {
		if !strings.HasPrefix(subj, "strata") {
			continue
		}
		for _, peer := range systems {
			if strings.HasPrefix(peer, "strata") {
				continue
			}
			for _, r := range rs {
				if r.Server != subj || r.Round != 1 {
					continue
				}
				clients := r.Clients
				perClients := r.Workload == "smallfile" || r.Workload == "app"
				if !perClients {
					clients = -1
				}
				s, p := medianNFS(rs, subj, r.Workload, clients), medianNFS(rs, peer, r.Workload, clients)
				if p == 0 {
					continue
				}
				key := fmt.Sprintf("%s %s/%s", r.Workload, subj, peer)
				if perClients {
					key += fmt.Sprintf(" clients=%d", r.Clients)
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
