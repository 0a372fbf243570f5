package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"strata/internal/freeport"
	"strata/internal/memlimit"
	"strata/journal"
	"strata/kv"
	"strata/stack"
	"strata/wor"
)

// worProps is the stack wormservers and their clients run.
const worProps = "Reliable,Fragment,RPC"

func worCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "wor",
		Short: "Write-once registers (WormSpace): servers and client commands",
	}
	c.AddCommand(worServeCmd(), worAllocCmd(), worPutCmd(), worGetCmd(), worTrimCmd(), worReconfigureCmd(), worStatusCmd(), worListenCmd(), worECLeaderCmd())
	addWANFlags(c)
	c.PersistentFlags().StringVar(&worEngine, "engine", "paxos", "client engine with --servers: paxos (majority quorums), chain (chain replication, head first in --servers) or ec (Pando's erasure-coded Paxos: server i of --servers holds split i; default plan: one failure tolerated from 3 servers on, e.g. k=3 of 5)")
	c.PersistentFlags().IntVar(&worECK, "ec-k", 0, "with --engine ec: data splits per value (k); quorums are the smallest the rules allow for --servers")
	c.PersistentFlags().StringVar(&worECLeader, "ec-leader", "", "with --engine ec: hand a write preempted by another client to the leader at this address (see 'strata wor ec-leader')")
	c.PersistentFlags().StringVar(&worECDelegate, "ec-delegate", "", "with --engine ec: put delegates Phase 2 to the proposer at this address (Pando's partial delegation; 'strata wor ec-leader' serves it)")
	c.PersistentFlags().StringVar(&worPlanFile, "plan", "", "with --engine ec: the plan (JSON with k, r, q1a, q1b, q2, as 'strata geo plan --json' prints it); refused if it breaks a quorum rule")
	c.PersistentFlags().StringVar(&worCluster, "cluster", "", "cluster configuration file (JSON: engine, directory, partitions, and for engine ec an optional plan); default: "+defaultClusterFile+" if it exists and --servers is not given")
	return c
}

// worCluster is the cluster file the client commands use ("" : see
// clusterFile).
var worCluster string

// defaultClusterFile is where `strata up` writes its cluster file.
const defaultClusterFile = "strata-data/cluster.json"

func worServeCmd() *cobra.Command {
	var listen, dir, metrics string
	var blocks uint64
	var join bool
	var cacheMB int
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run a wormserver (Paxos acceptor for every register), until interrupted",
		Long: `serve runs one wormserver on a UDP or TCP address. With --dir the acceptor
state is kept in a journal file (DIR/wor.img, created if absent): every reply
leaves only after the state it reports is durable, and a restart recovers
it. Without --dir the state is in memory. Prints "listening on ADDR".

With --dir, memory holds every register's ballots but only the values
stored last, up to --value-cache MiB; older values are read back from the
journal when asked for, so a server's memory does not grow with the data
it holds.

A server that replaces another (see "strata wor reconfigure") starts with
--join: it serves no partition until the reconfiguration has installed the
partition's state on it.`,
		Example: "  strata wor serve --listen udp:127.0.0.1:7101 --dir strata-data/wor-1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			var srv *wor.Server
			if dir == "" {
				srv = wor.NewServer(log)
			} else {
				j, err := openWorJournal(dir, blocks)
				if err != nil {
					return err
				}
				defer j.Close()
				if srv, err = wor.NewPersistentServer(j, log); err != nil {
					return err
				}
				srv.SetValueCache(cacheMB << 20)
				log.Info("recovered acceptor state", "registers", srv.Registers(), "dir", dir)
			}
			if join {
				srv.Join()
			}
			n, err := listenNode(listen, worProps)
			if err != nil {
				return err
			}
			defer n.Close()
			n.HandleAsync(srv.HandleAsync)
			srv.SetBatch(n.Batch)
			srv.SetNotifier(func(to stack.Addr, msg []byte) {
				if err := n.Send(to, msg); err != nil {
					log.Debug("wor: notification not sent", "to", to, "err", err)
				}
			})
			if metrics != "" {
				stop, err := serveWorMetrics(metrics, srv, n, log)
				if err != nil {
					return err
				}
				defer stop()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", n.Local())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&listen, "listen", "udp:127.0.0.1:7101", "transport address")
	c.Flags().StringVar(&dir, "dir", "", "keep acceptor state in DIR/wor.img (default: memory)")
	c.Flags().Uint64Var(&blocks, "blocks", 65536, "size of a new journal file in 4 KiB blocks")
	c.Flags().StringVar(&metrics, "metrics", "", "serve Prometheus metrics on this HOST:PORT")
	c.Flags().IntVar(&cacheMB, "value-cache", wor.DefaultValueCache>>20, "MiB of the most recently stored values kept in memory (with --dir)")
	c.Flags().BoolVar(&join, "join", false, "a new server replacing another: serve partitions only once a reconfiguration installs them")
	return c
}

func openWorJournal(dir string, blocks uint64) (*journal.Journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	j, _, err := journal.OpenFile(filepath.Join(dir, "wor.img"), blocks, journal.Options{})
	return j, err
}

// worEngine is the engine the client commands use ("paxos", "chain" or
// "ec"); worECK and worPlanFile choose the ec engine's plan.
var (
	worEngine     = "paxos"
	worECK        int
	worPlanFile   string
	worECLeader   string
	worECDelegate string
)

// ecPlanFlag returns the plan --ec-k or --plan chose for n servers of
// engine, or ok false if neither was given (the engine's default plan
// then).
func ecPlanFlag(engine string, n int) (plan wor.ECPlan, ok bool, err error) {
	switch {
	case worECK == 0 && worPlanFile == "":
		return wor.ECPlan{}, false, nil
	case engine != "ec":
		return wor.ECPlan{}, false, fmt.Errorf("--ec-k and --plan are for --engine ec, not %s", engine)
	case worECK != 0 && worPlanFile != "":
		return wor.ECPlan{}, false, errors.New("give --ec-k or --plan, not both")
	case worECK != 0:
		plan, err = wor.ECPlanFor(n, worECK)
		if err != nil {
			return plan, false, fmt.Errorf("--ec-k %d with %d servers: %w", worECK, n, err)
		}
		return plan, true, nil
	}
	b, err := os.ReadFile(worPlanFile)
	if err != nil {
		return plan, false, fmt.Errorf("--plan: %w", err)
	}
	if plan, err = wor.ParseECPlan(b); err != nil {
		return plan, false, fmt.Errorf("--plan %s: %w", worPlanFile, err)
	}
	if err := plan.Validate(n); err != nil {
		return plan, false, fmt.Errorf("--plan %s with %d servers: %w", worPlanFile, n, err)
	}
	return plan, true, nil
}

// clusterFile is the cluster file the client commands use, or "" to use
// --servers: --cluster if given, else the default file if it exists and
// --servers was not given.
func clusterFile(cmd *cobra.Command) string {
	if worCluster != "" {
		return worCluster
	}
	if f := cmd.Flags().Lookup("servers"); f != nil && f.Changed {
		return ""
	}
	if _, err := os.Stat(defaultClusterFile); err == nil {
		return defaultClusterFile
	}
	return ""
}

// requireCluster opens the cluster client of a command that needs a
// cluster file.
func requireCluster(cmd *cobra.Command, what string, timeout time.Duration) (string, *wor.Cluster, *stack.Node, error) {
	file := clusterFile(cmd)
	if file == "" {
		return "", nil, nil, fmt.Errorf("%s needs a cluster file: --cluster FILE (strata up writes %s)", what, defaultClusterFile)
	}
	cl, n, err := clusterClient(file, timeout)
	return file, cl, n, err
}

// clusterClient opens a client node and a cluster engine from a file.
func clusterClient(file string, timeout time.Duration) (*wor.Cluster, *stack.Node, error) {
	cfg, err := loadClusterFile(file)
	if err != nil {
		return nil, nil, err
	}
	kind, _, _ := strings.Cut(cfg.Directory[0], ":")
	n, err := listenNode(kind+":127.0.0.1:0", worProps)
	if err != nil {
		return nil, nil, err
	}
	e, err := wor.NewCluster(n, cfg, 1+rand.Uint64N(1<<32-1), timeout)
	if err != nil {
		n.Close()
		return nil, nil, err
	}
	return e, n, nil
}

// worClient opens a client of the cluster in file, or of the replica set
// servers if file is "".
func worClient(file, servers string, timeout time.Duration) (*wor.Client, *stack.Node, error) {
	if file != "" {
		e, n, err := clusterClient(file, timeout)
		if err != nil {
			return nil, nil, err
		}
		return wor.NewClient(e), n, nil
	}
	var reps []stack.Addr
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			reps = append(reps, stack.Addr(s))
		}
	}
	if len(reps) == 0 {
		return nil, nil, errors.New("--servers is empty")
	}
	if worECLeader != "" && worEngine != "ec" {
		return nil, nil, fmt.Errorf("--ec-leader is for --engine ec, not %s", worEngine)
	}
	if worECDelegate != "" && worEngine != "ec" {
		return nil, nil, fmt.Errorf("--ec-delegate is for --engine ec, not %s", worEngine)
	}
	plan, withPlan, err := ecPlanFlag(worEngine, len(reps))
	if err != nil {
		return nil, nil, err
	}
	kind, _, _ := strings.Cut(string(reps[0]), ":")
	n, err := listenNode(kind+":127.0.0.1:0", worProps)
	if err != nil {
		return nil, nil, err
	}
	var e wor.Engine
	if withPlan {
		e, err = wor.NewEC(n, reps, 1+rand.Uint64N(1<<32-1), timeout, plan)
	} else {
		e, err = wor.NewEngine(worEngine, n, reps, 1+rand.Uint64N(1<<32-1), timeout)
	}
	if ec, ok := e.(*wor.EC); ok {
		ec.SetLeader(stack.Addr(worECLeader))
		ec.SetDelegate(stack.Addr(worECDelegate))
	}
	if err != nil {
		n.Close()
		return nil, nil, fmt.Errorf("--engine: %w", err)
	}
	return wor.NewClient(e), n, nil
}

func parseUint(what, s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", what, s, err)
	}
	return v, nil
}

// parseSegOff reads "SEG OFF".
func parseSegOff(args []string) (uint64, uint64, error) {
	seg, err := parseUint("segment", args[0])
	if err != nil {
		return 0, 0, err
	}
	off, err := parseUint("offset", args[1])
	return seg, off, err
}

func worAllocCmd() *cobra.Command {
	var servers string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "alloc SEG [METADATA]",
		Short: "Allocate a segment (exactly one of racing callers wins)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			seg, err := parseUint("segment", args[0])
			if err != nil {
				return err
			}
			meta := ""
			if len(args) == 2 {
				meta = args[1]
			}
			return withWorClient(cmd, servers, timeout, func(ctx context.Context, c *wor.Client) error {
				err = c.Alloc(ctx, seg, []byte(meta))
				var ae *wor.AllocatedError
				switch {
				case err == nil:
					fmt.Fprintf(cmd.OutOrStdout(), "allocated segment %d\n", seg)
				case errors.As(err, &ae):
					fmt.Fprintf(cmd.OutOrStdout(), "segment %d was already allocated (metadata %q)\n", seg, ae.Metadata)
				default:
					return err
				}
				return nil
			})
		},
	}
	worClientFlags(c, &servers, &timeout)
	return c
}

const defaultServers = "udp:127.0.0.1:7101,udp:127.0.0.1:7102,udp:127.0.0.1:7103"

func worPutCmd() *cobra.Command {
	var servers string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "put SEG OFF VALUE",
		Short: "Capture and write a register; exits 1 if it already held another value (printed)",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			seg, off, err := parseSegOff(args)
			if err != nil {
				return err
			}
			return withWorClient(cmd, servers, timeout, func(ctx context.Context, c *wor.Client) error {
				for attempt := 0; ; attempt++ {
					err := c.Propose(ctx, seg, off, []byte(args[2]))
					var we *wor.WrittenError
					switch {
					case err == nil:
						fmt.Fprintf(cmd.OutOrStdout(), "wrote %d/%d = %q\n", seg, off, args[2])
						return nil
					case errors.As(err, &we):
						fmt.Fprintf(cmd.OutOrStdout(), "already written: %d/%d = %q\n", seg, off, we.Value)
						if string(we.Value) == args[2] {
							return nil // a retried put: the value asked for is the one chosen
						}
						// Scripts must see that their value was not written.
						return fmt.Errorf("put %d/%d: %w", seg, off, wor.ErrWritten)
					case errors.Is(err, wor.ErrPreempted) && attempt < 5:
						continue
					default:
						return err
					}
				}
			})
		},
	}
	worClientFlags(c, &servers, &timeout)
	return c
}

func worGetCmd() *cobra.Command {
	var servers string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "get SEG OFF",
		Short: "Read a register (completing a half-finished write)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			seg, off, err := parseSegOff(args)
			if err != nil {
				return err
			}
			return withWorClient(cmd, servers, timeout, func(ctx context.Context, c *wor.Client) error {
				v, err := c.Read(ctx, seg, off)
				if errors.Is(err, wor.ErrUnwritten) {
					fmt.Fprintf(cmd.OutOrStdout(), "%d/%d is not written\n", seg, off)
					return nil
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d/%d = %q\n", seg, off, v)
				return nil
			})
		},
	}
	worClientFlags(c, &servers, &timeout)
	return c
}

func upCmd() *cobra.Command {
	var dir string
	var base, nfsPort, nfsSize int
	var secure bool
	var network string
	var geoFlags geoUpFlags
	c := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster: 3 key-value servers, 2 shared-log servers, a WormTX TM and 3 RMs, 3 write-once-register servers and an NFS export, data in a folder",
		Long: `up starts, as child processes with their data in DIR:
  - three wormservers (persistent, UDP on 127.0.0.1, ports --port, --port+1,
    --port+2; journals in DIR/wor-1..3; cluster file DIR/cluster.json);
  - three key-value servers (ids 1..3, UDP on 127.0.0.1, ports --port+100 to
    --port+102; their replicated log and snapshots live in the wormservers;
    the list of them in DIR/kv.json, which "strata kv" commands read);
  - two shared-log servers (WormLog; ids 1..2, UDP on 127.0.0.1, ports
    --port+200 and --port+201; the log lives in the wormservers; the list
    in DIR/log.json, which "strata log" commands read);
  - WormTX: a transaction manager and three resource managers (UDP on
    127.0.0.1, ports --port+299 to --port+302, the "strata tx" commands'
    defaults for the default --port; vote logs in DIR/tx-tm, DIR/tx-0..2;
    the RMs listed in DIR/tx.json);
  - an NFSv3 server exporting /strata (NFS on --nfs-port, MOUNT on
    --nfs-port+1, TCP and UDP on 127.0.0.1; file system in DIR/nfs.img,
    created with --nfs-size MiB the first time; --nfs-port 0 to skip).
It prints how to use them and stops them on Ctrl-C; a later "up" recovers
everything from the journals.

With --geo REGIONS it starts an emulated geo-distributed cluster instead: the
planner (strata geo plan, Pando, --geo-f failures, storage overhead at most
--geo-storage, read latency minimized) places k data and r parity splits on
data sites; a wormserver runs for each site (the ec engine with the plan's
quorums: cluster file DIR/cluster.json) and a kv server for each front-end
region of REGIONS, each on a loopback host of its own site (127.0.1.N), and
every process delays what it sends by the one-way latency between sites
(DIR/wan.json, docs/wan.md). It prints where each front end is and the
planner's latency for it. No log, tx or NFS servers in this mode.

With --secure every server seals every datagram it sends and refuses any
not sealed with the cluster key (docs/security.md): the key is
DIR/cluster.key (made the first time, mode 0600, kept for later runs), or
the file --key-file or STRATA_KEY_FILE names. The cluster file and the
servers files name it, so client commands given those files (the defaults
for the default DIR) seal too; elsewhere, give --key-file. The servers are
on UDP unless --transport tcp; with tcp, --secure also runs every link
over TLS 1.3 with mutual authentication, with a CA and a node certificate
made the first time in DIR/tls (or the TLS files flags or the
environment name), named in the same files.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var addrs []string
			var procs []*exec.Cmd
			defer func() {
				// Last started first: the kv servers are the wormservers'
				// clients.
				for i := len(procs) - 1; i >= 0; i-- {
					procs[i].Process.Signal(os.Interrupt)
					procs[i].Wait()
				}
			}()
			if geoFlags.access != "" || geoFlags.planFile != "" {
				if secure {
					return errors.New("--secure is not supported with --geo yet: give --key-file (or STRATA_KEY_FILE) to seal the geo cluster's servers")
				}
				return upGeo(ctx, cmd, &procs, self, dir, base, geoFlags)
			}
			if network != "udp" && network != "tcp" {
				return fmt.Errorf("--transport %q: want udp or tcp", network)
			}
			sec, keyPath, tlsPath, err := upSecurity(dir, secure, network)
			if err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(dir, upKeyFile)); err == nil && sec == nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "strata up: %s holds a cluster key from an earlier --secure run, but this run is not sealed: give --secure to seal it\n", dir)
			}
			for i := 0; i < 3; i++ {
				port := base + i
				if base == 0 {
					port = 0 // any free port for each
				}
				listen := fmt.Sprintf("%s:127.0.0.1:%d", network, port)
				line, err := startChild(cmd, &procs, "listening on ", memlimit.Env(worMemShare), self, "wor", "serve", "--listen", listen, "--dir", filepath.Join(dir, fmt.Sprintf("wor-%d", i+1)))
				if err != nil {
					return fmt.Errorf("server %d: %w", i+1, err)
				}
				addrs = append(addrs, strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
			}
			nfsLine := ""
			if nfsPort != 0 {
				if _, err := startChild(cmd, &procs, "serving ", memlimit.Env(smallMemShare), self, "nfs", "serve", "--disk", filepath.Join(dir, "nfs.img"), "--size", fmt.Sprint(nfsSize),
					"--listen", fmt.Sprintf("127.0.0.1:%d", nfsPort), "--mount-listen", fmt.Sprintf("127.0.0.1:%d", nfsPort+1)); err != nil {
					return fmt.Errorf("nfs server: %w", err)
				}
				nfsLine = fmt.Sprintf("NFSv3 export /strata on 127.0.0.1 (nfs port %d, mount port %d), file system in %s\n", nfsPort, nfsPort+1, filepath.Join(dir, "nfs.img"))
			}
			cfgPath := filepath.Join(dir, "cluster.json")
			cfg := wor.ClusterConfig{Engine: "paxos", Directory: addrs, Partitions: [][]string{addrs}}
			if old, err := wor.LoadClusterConfig(cfgPath); err == nil && len(old.Partitions) > 0 && base != 0 && strings.HasPrefix(old.Directory[0], network+":") {
				// Keep a file a reconfiguration may have been run against
				// (on this transport): the directory remembers the
				// partition's later epochs.
				cfg = *old
			}
			cfg.Security = sec // this run's, whatever an earlier one wrote
			if err := writeClusterFile(cfgPath, &cfg); err != nil {
				return err
			}
			// The kv servers, then the log servers: numbered from 1, on
			// ports from base+first, listed in a servers file.
			group := func(kind string, n, first int, share float64) ([]string, string, error) {
				var out []string
				for i := 0; i < n; i++ {
					port := base + first + i
					if base == 0 {
						port = 0
					}
					line, err := startChild(cmd, &procs, "listening on ", memlimit.Env(share), self, kind, "serve", "--listen", fmt.Sprintf("%s:127.0.0.1:%d", network, port), "--cluster", cfgPath, "--id", fmt.Sprint(i+1))
					if err != nil {
						return nil, "", fmt.Errorf("%s server %d: %w", kind, i+1, err)
					}
					out = append(out, strings.TrimSpace(strings.TrimPrefix(line, "listening on ")))
				}
				path := filepath.Join(dir, kind+".json")
				b, err := json.MarshalIndent(kv.ServersFile{Servers: out, Security: sec}, "", "  ")
				if err == nil {
					err = os.WriteFile(path, append(b, '\n'), 0o644)
				}
				return out, path, err
			}
			kvAddrs, kvPath, err := group("kv", 3, 100, kvMemShare)
			if err != nil {
				return err
			}
			logAddrs, logPath, err := group("log", 2, 200, smallMemShare)
			if err != nil {
				return err
			}
			// WormTX: a TM and three RMs on ports base+299.. (the tx
			// commands' defaults for the default --port), told each
			// other's addresses up front.
			txPorts := []int{base + 299, base + 300, base + 301, base + 302}
			if base == 0 {
				free := freeport.UDP
				if network == "tcp" {
					free = freeport.TCP
				}
				if txPorts, err = free(4); err != nil {
					return err
				}
			}
			var txAddrs []string
			for _, p := range txPorts {
				txAddrs = append(txAddrs, fmt.Sprintf("%s:127.0.0.1:%d", network, p))
			}
			rmList := strings.Join(txAddrs[1:], ",")
			for i := -1; i < 3; i++ {
				sub := "tx-tm"
				if i >= 0 {
					sub = fmt.Sprintf("tx-%d", i)
				}
				if _, err := startChild(cmd, &procs, "listening on ", memlimit.Env(smallMemShare), self, "tx", "serve", "--id", fmt.Sprint(i), "--dir", filepath.Join(dir, sub),
					"--tm", txAddrs[0], "--rms", rmList, "--servers", strings.Join(addrs, ",")); err != nil {
					return fmt.Errorf("tx %s: %w", sub, err)
				}
			}
			txPath := filepath.Join(dir, "tx.json")
			if b, err := json.MarshalIndent(kv.ServersFile{Servers: txAddrs[1:], Security: sec}, "", "  "); err != nil {
				return err
			} else if err := os.WriteFile(txPath, append(b, '\n'), 0o644); err != nil {
				return err
			}
			o := cmd.OutOrStdout()
			fmt.Fprintf(o, "3 kv servers up: %s (servers file %s; log and snapshots in the wormservers)\n", strings.Join(kvAddrs, ", "), kvPath)
			fmt.Fprintf(o, "WormTX up: TM %s, RMs %s (listed in %s; vote logs in %s/tx-*; votes in the wormservers)\n", txAddrs[0], strings.Join(txAddrs[1:], ", "), txPath, dir)
			fmt.Fprintf(o, "2 log servers up: %s (servers file %s; a shared log in the wormservers)\n", strings.Join(logAddrs, ", "), logPath)
			fmt.Fprintf(o, "3 wormservers up: %s (data in %s, cluster file %s)\n", strings.Join(addrs, ", "), dir, cfgPath)
			hint, kvHint := "", ""
			if cfgPath != defaultClusterFile {
				hint = " --cluster " + cfgPath
			}
			if kvPath != defaultKVFile {
				kvHint = " --servers-file " + kvPath
			}
			logHint := ""
			if logPath != defaultLogFile || cfgPath != defaultClusterFile {
				logHint = " --servers-file " + logPath + " --cluster " + cfgPath
			}
			fmt.Fprint(o, nfsLine)
			txKeyHint := ""
			if keyPath != "" {
				fmt.Fprintf(o, "sealed links: every server seals with the cluster key %s (mode 0600) and refuses other traffic; %s and the servers files name it, so the commands below seal too (elsewhere: --key-file %s)\n", keyPath, cfgPath, keyPath)
				txKeyHint = " --key-file " + keyPath // the tx commands read no servers file
			}
			if tlsPath != "" {
				fmt.Fprintf(o, "TLS: every tcp: link runs TLS 1.3 with the certificates in %s (ca-key.pem signs more: keep it with the operator); the cluster and servers files name it (elsewhere: --tls-dir %s)\n", tlsPath, tlsPath)
				txKeyHint += " --tls-dir " + tlsPath
			}
			fmt.Fprintf(o, "try:\n  strata kv put hello world%s\n  strata kv get hello%s\n  strata kv scan '' --limit 10%s\n  strata kv watch --prefix he%s &\n  strata kv status%s\n", kvHint, kvHint, kvHint, kvHint, kvHint)
			fmt.Fprintf(o, "  strata log append 'first entry'%s\n  strata log subscribe --from 0 --for 2s%s\n", logHint, logHint)
			txHint := ""
			if rmList != defaultTxRMs {
				txHint = " --rms " + rmList
			}
			txHint += txKeyHint
			fmt.Fprintf(o, "  strata tx deposit alice 100%s\n  strata tx transfer alice bob 10%s\n  strata tx balance alice bob%s\n", txHint, txHint, txHint)
			fmt.Fprintf(o, "  strata wor%s alloc 1 my-segment\n  strata wor%s put 1 0 hello\n  strata wor%s get 1 0\n  strata wor%s status\n", hint, hint, hint, hint)
			if nfsPort != 0 {
				fmt.Fprintf(o, "  nfs-cp README.md 'nfs://127.0.0.1/strata/README.md?version=3&nfsport=%d&mountport=%d'\n", nfsPort, nfsPort+1)
				fmt.Fprintf(o, "  nfs-ls 'nfs://127.0.0.1/strata/?version=3&nfsport=%d&mountport=%d'\n", nfsPort, nfsPort+1)
			}
			fmt.Fprintf(o, "Ctrl-C stops them.\n")
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "strata-data", "data folder")
	c.Flags().IntVar(&base, "port", 7101, "first port (0: any free ports, and a cluster file for this run only)")
	c.Flags().StringVar(&network, "transport", "udp", "the servers' transport: udp or tcp (with --secure, tcp links also run TLS)")
	c.Flags().IntVar(&nfsPort, "nfs-port", 20049, "NFS port (MOUNT uses the next one); 0: no NFS export")
	c.Flags().IntVar(&nfsSize, "nfs-size", 1024, "size in MiB of a new NFS disk")
	c.Flags().BoolVar(&secure, "secure", false, "seal every link with the cluster key DIR/"+upKeyFile+" (made the first time, mode 0600), named in the cluster and servers files (docs/security.md)")
	geoFlags.add(c)
	addWANChildFlag(c)
	return c
}

// Memory shares of up's servers (internal/memlimit), soft limits: a kv
// server keeps its whole state in memory, and a wormserver every live
// register's value (the log since the last snapshot and the snapshots'
// chunks: two to three times the kv state); the NFS server (a journal's
// buffers and caches) and the log servers (soft state) need little.
const (
	kvMemShare    = 1.0 / 8
	worMemShare   = 1.0 / 8
	smallMemShare = 1.0 / 32
)

// startChild starts a child process (added to procs, so the caller stops
// it) with env added to its environment and stderr shared, and returns
// the first line of its output, which must start with prefix.
func startChild(cmd *cobra.Command, procs *[]*exec.Cmd, prefix string, env []string, name string, args ...string) (string, error) {
	p := exec.Command(name, args...)
	env = append(append(append(env, wanChildEnv()...), sealChildEnv()...), tlsChildEnv()...)
	if len(env) > 0 {
		p.Env = append(os.Environ(), env...)
	}
	out, err := p.StdoutPipe()
	if err != nil {
		return "", err
	}
	p.Stderr = cmd.ErrOrStderr()
	if err := p.Start(); err != nil {
		return "", err
	}
	*procs = append(*procs, p)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, prefix) {
		return "", fmt.Errorf("did not start: %q %v", line, err)
	}
	return line, nil
}

// serveWorMetrics exports a wormserver's counters and its stack's.
func serveWorMetrics(addr string, srv *wor.Server, n *stack.Node, log *slog.Logger) (func(), error) {
	reg := prometheus.NewRegistry()
	for _, m := range []struct {
		op string
		f  func(wor.Stats) uint64
	}{
		{"prepare", func(s wor.Stats) uint64 { return s.Prepares }},
		{"accept", func(s wor.Stats) uint64 { return s.Accepts }},
		{"read", func(s wor.Stats) uint64 { return s.Reads }},
		{"malformed", func(s wor.Stats) uint64 { return s.Malformed }},
	} {
		f := m.f
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "strata_wor_requests_total", Help: "Wormserver requests by type.", ConstLabels: prometheus.Labels{"type": m.op},
		}, func() float64 { return float64(f(srv.Stats())) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_wor_registers", Help: "Registers with acceptor state."},
		func() float64 { return float64(srv.Stats().Registers) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_wor_journal_barriers_total", Help: "Journal barriers (persistent mode)."},
		func() float64 { return float64(srv.Stats().Barriers) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_wor_free_slots", Help: "Reclaimed journal slots awaiting reuse (persistent mode)."},
		func() float64 { return float64(srv.Stats().FreeSlots) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_wor_spill_reads_total", Help: "Values read back from the journal because they had left the value cache (persistent mode)."},
		func() float64 { return float64(srv.Stats().SpillReads) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_wor_cached_value_bytes", Help: "Bytes of values the value cache holds, bookkeeping included (persistent mode)."},
		func() float64 { return float64(srv.Stats().CachedValueBytes) }))
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "strata_wor_request_seconds",
		Help:    "Time from a request's receipt to its reply, durability included: the server's share of a quorum round.",
		Buckets: prometheus.ExponentialBuckets(20e-6, 2, 16),
	}, []string{"type"})
	reg.MustRegister(lat)
	srv.SetObserver(func(op string, d time.Duration) { lat.WithLabelValues(op).Observe(d.Seconds()) })
	return serveMetrics(addr, reg, n, log)
}

// withWorClient runs fn with a client of the replica set and a context
// bounded by five request timeouts.
func withWorClient(cmd *cobra.Command, servers string, timeout time.Duration, fn func(context.Context, *wor.Client) error) error {
	c, n, err := worClient(clusterFile(cmd), servers, timeout)
	if err != nil {
		return err
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*timeout)
	defer cancel()
	return fn(ctx, c)
}

func worClientFlags(c *cobra.Command, servers *string, timeout *time.Duration) {
	c.Flags().StringVar(servers, "servers", defaultServers, "the replica set (instead of a cluster file)")
	c.Flags().DurationVar(timeout, "timeout", time.Second, "per-request timeout")
}

func worTrimCmd() *cobra.Command {
	var servers string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "trim SEG",
		Short: "Trim a segment: servers forget it and refuse its registers from now on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seg, err := parseUint("segment", args[0])
			if err != nil {
				return err
			}
			return withWorClient(cmd, servers, timeout, func(ctx context.Context, c *wor.Client) error {
				if err := c.Trim(ctx, seg); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "trimmed segment %d\n", seg)
				return nil
			})
		},
	}
	worClientFlags(c, &servers, &timeout)
	return c
}

func worReconfigureCmd() *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "reconfigure PART SERVER,SERVER,...",
		Short: "Replace a partition's replica set while clients keep running",
		Long: `reconfigure moves partition PART to a new replica set: it decides the next
epoch in the cluster's directory, seals the current epoch at a majority of
its servers, copies their merged acceptor state to the new servers and
activates the new epoch there. Clients that meet a sealed server fetch the
new configuration from the directory and retry.

Replace a minority of the servers per step. Start new servers with
"strata wor serve --join". If a reconfiguration fails half-way, run it
again: it completes the decided change. Needs a cluster file (--cluster,
or strata-data/cluster.json written by "strata up"). Partitions of the
chain and ec engines cannot be reconfigured yet.`,
		Example: "  strata wor serve --listen udp:127.0.0.1:7104 --dir strata-data/wor-4 --join &\n  strata wor reconfigure 0 udp:127.0.0.1:7101,udp:127.0.0.1:7102,udp:127.0.0.1:7104",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			part, err := parseUint("partition", args[0])
			if err != nil {
				return err
			}
			var servers []string
			for _, s := range strings.Split(args[1], ",") {
				if s = strings.TrimSpace(s); s != "" {
					servers = append(servers, s)
				}
			}
			file, cl, n, err := requireCluster(cmd, "reconfigure", timeout)
			if err != nil {
				return err
			}
			defer n.Close()
			if part >= uint64(cl.Partitions()) {
				return fmt.Errorf("partition %d: the cluster has %d", part, cl.Partitions())
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 20*timeout)
			defer cancel()
			ep, err := cl.Reconfigure(ctx, uint32(part), servers)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "partition %d is at epoch %d: %s\n", part, ep, strings.Join(servers, ","))
			cfg := cl.ClusterConfig()
			if old, err := wor.LoadClusterConfig(file); err == nil {
				cfg.Security = old.Security // the engine knows servers, not files
			}
			if err := writeClusterFile(file, cfg); err != nil {
				return fmt.Errorf("reconfigured, but could not update %s: %w", file, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "updated %s\n", file)
			return nil
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", time.Second, "per-request timeout")
	return c
}

func worStatusCmd() *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "status",
		Short: "Print each partition's current configuration epoch and servers (from the directory)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, cl, n, err := requireCluster(cmd, "status", timeout)
			if err != nil {
				return err
			}
			defer n.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*timeout)
			defer cancel()
			o := cmd.OutOrStdout()
			fmt.Fprintf(o, "cluster file %s: %d partition(s)\n", file, cl.Partitions())
			for p := 0; p < cl.Partitions(); p++ {
				if err := cl.Refresh(ctx, uint32(p)); err != nil {
					return err
				}
				ep, servers := cl.Config(uint32(p))
				fmt.Fprintf(o, "  partition %d  epoch %d  %s\n", p, ep, strings.Join(servers, ","))
			}
			return nil
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", time.Second, "per-request timeout")
	return c
}

// writeClusterFile replaces a cluster file atomically.
func writeClusterFile(path string, cfg *wor.ClusterConfig) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func worListenCmd() *cobra.Command {
	var servers string
	var timeout, dur time.Duration
	c := &cobra.Command{
		Use:   "listen SEG",
		Short: "Print writes to a segment's registers as they happen (until Ctrl-C or --for)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seg, err := parseUint("segment", args[0])
			if err != nil {
				return err
			}
			wc, n, err := worClient(clusterFile(cmd), servers, timeout)
			if err != nil {
				return err
			}
			defer n.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			ch, err := wc.SegListen(ctx, seg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "listening to segment %d\n", seg)
			for w := range ch {
				fmt.Fprintf(cmd.OutOrStdout(), "%d/%d = %q\n", w.Seg, w.Off, w.Value)
			}
			return nil
		},
	}
	worClientFlags(c, &servers, &timeout)
	c.Flags().DurationVar(&dur, "for", 0, "stop after this long (default: until interrupted)")
	return c
}

// worECLeaderCmd runs the leader the ec engine's clients hand preempted
// writes to (--ec-leader): Pando's leader fallback.
func worECLeaderCmd() *cobra.Command {
	var servers, listen string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "ec-leader",
		Short: "Run the proposer ec clients hand preempted writes (--ec-leader) and delegated writes (--ec-delegate) to, until interrupted",
		Long: `ec-leader runs the leader of Pando's leader fallback for the ec engine over
--servers, with the plan of --ec-k or --plan (the clients' plan; default:
the ec engine's default for the number of servers). A client started with
--engine ec --ec-leader ADDR whose write is preempted by another client's
capture hands it, once, to this leader, which captures and writes it
itself, retrying with backoff, and answers with the value now chosen. The
leader is one more proposer to the protocol: several leaders, or none
reachable, are safe.

It is also a delegate of Pando's partial delegation: a client started
with --engine ec --ec-delegate ADDR sends Phase 1 of a put to the servers
with their promises forwarded here, and the value here; this process runs
Phase 2 at the client's ballot with the acceptances forwarded to the
client (front end -> server -> delegate -> server -> front end, instead of
two round trips from the front end). Run one on each data site that a
plan names as a delegate. Prints "listening on ADDR".`,
		Example: "  strata wor ec-leader --listen udp:127.0.0.1:7110 --servers udp:127.0.0.1:7101,...",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if worECLeader != "" || worECDelegate != "" {
				return errors.New("ec-leader: --ec-leader and --ec-delegate are for clients (a proposer hands nothing on)")
			}
			var reps []stack.Addr
			for _, s := range strings.Split(servers, ",") {
				if s = strings.TrimSpace(s); s != "" {
					reps = append(reps, stack.Addr(s))
				}
			}
			if len(reps) == 0 {
				return errors.New("--servers is empty")
			}
			plan, withPlan, err := ecPlanFlag("ec", len(reps))
			if err != nil {
				return err
			}
			if !withPlan {
				if plan, err = wor.EngineECPlan(len(reps)); err != nil {
					return err
				}
			}
			n, err := listenNode(listen, worProps)
			if err != nil {
				return err
			}
			defer n.Close()
			e, err := wor.NewEC(n, reps, 1+rand.Uint64N(1<<32-1), timeout, plan)
			if err != nil {
				return err
			}
			wor.ServeECLeader(n, e)
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", n.Local())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&listen, "listen", "udp:127.0.0.1:7110", "transport address")
	worClientFlags(c, &servers, &timeout)
	return c
}
