package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"strata/kv"
	"strata/smr"
	"strata/stack"
	"strata/wor"
)

// defaultKVFile is where `strata up` lists its kv servers.
const defaultKVFile = "strata-data/kv.json"

// defaultKVServers are the kv servers `strata up` starts by default.
const defaultKVServers = "udp:127.0.0.1:7201,udp:127.0.0.1:7202,udp:127.0.0.1:7203"

// defaultKVLog is the first segment of the kv group's range in the WOR
// space (smr.Config.Log): far above the segments the wor commands'
// examples use.
const defaultKVLog = 1 << 36

func kvCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "kv",
		Short: "Replicated key-value service (WormPaxos over write-once registers): servers and client commands",
		Long: `kv is a replicated, linearizable key-value store: "kv serve" runs one of its
servers (a WormPaxos replica whose log lives in the wormservers of a
cluster file); the client commands talk to any server, which forwards
writes to the leader. Keys are 1 to 4096 bytes, values up to 256 KiB (a
value larger than a log register is written as parts: see docs/kv.md).`,
	}
	c.AddCommand(kvServeCmd(), kvPutCmd(), kvGetCmd(), kvDeleteCmd(), kvCASCmd(), kvScanCmd(), kvWatchCmd(), kvStatusCmd())
	addWANFlags(c)
	return c
}

func kvServeCmd() *cobra.Command {
	var listen, cluster, metrics, advertise, ecLeader, ecDelegate string
	var id, logSeg uint64
	var timeout time.Duration
	var keyed bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run a key-value server (a WormPaxos replica, or --keyed), until interrupted",
		Long: `serve runs one kv server on a UDP or TCP address. Its replica keeps the log
and snapshots in the WOR space of the cluster file's wormservers (no local
state: a restarted server catches up from the latest snapshot and the log
after it), so every server of a group names the same --cluster and
--log-segment and a distinct --id. Prints "listening on ADDR" once caught
up.

--keyed serves keyed mode instead (docs/kv.md): Pando's per-key logs on an
ec cluster. Every key is a log of versions in the WOR space; each server
answers every request itself (no leader: a get reads the key's latest
version, one round trip to the nearest Phase 1a quorum; a put proposes the
next version, its Phase 2 run by --ec-delegate if given, then collects the
old versions). Scans and watches are refused.`,
		Example: "  strata kv serve --listen udp:127.0.0.1:7201 --cluster strata-data/cluster.json --id 1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if !keyed && (ecLeader != "" || ecDelegate != "") {
				return errors.New("--ec-leader and --ec-delegate are for --keyed")
			}
			if id == 0 && !keyed {
				return errors.New("--id: a nonzero replica id, distinct in the group")
			}
			if cluster == "" {
				if _, err := os.Stat(defaultClusterFile); err != nil {
					return fmt.Errorf("--cluster: the wormservers' cluster file is needed (strata up writes %s)", defaultClusterFile)
				}
				cluster = defaultClusterFile
			}
			cfg, err := loadClusterFile(cluster)
			if err != nil {
				return err
			}
			n, err := listenNode(listen, kv.Props)
			if err != nil {
				return err
			}
			defer n.Close()
			e, err := wor.NewCluster(n, cfg, 1+rand.Uint64N(1<<32-1), timeout)
			if err != nil {
				return err
			}
			if advertise == "" {
				advertise = string(n.Local())
				// Followers forward writes to the address the leader
				// advertises: a wildcard one would send them to themselves.
				if wildcardAddr(advertise) {
					return fmt.Errorf("--listen %s binds every interface, so it names no address the other servers can forward to: give --advertise (e.g. udp:10.0.0.5:7201)", listen)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// serveMetrics: the server's metrics, if asked for.
			var serveMetrics func() (func(), error)
			if keyed {
				if cfg.Engine != "ec" {
					return fmt.Errorf("--keyed needs an ec cluster (keyed logs are the ec engine's); %s is %s", cluster, cfg.Engine)
				}
				e.SetECProposers(stack.Addr(ecLeader), stack.Addr(ecDelegate))
				ks, err := kv.StartKeyedServer(kv.KeyedServerConfig{Node: n, Client: wor.NewClient(e), Logger: log})
				if err != nil {
					return err
				}
				defer ks.Close()
				serveMetrics = func() (func(), error) { return serveKeyedMetrics(metrics, ks, n, log) }
				log.Info("kv server up (keyed mode)", "addr", n.Local(), "delegate", ecDelegate, "leader", ecLeader)
			} else {
				srv, err := kv.StartServer(ctx, kv.ServerConfig{
					Node:    n,
					Replica: smr.Config{Client: wor.NewClient(e), ID: id, Addr: advertise, Log: logSeg, Logger: log},
					Logger:  log,
				})
				if err != nil {
					return err
				}
				defer srv.Close()
				serveMetrics = func() (func(), error) { return serveKVMetrics(metrics, srv, n, log) }
				log.Info("kv server up", "id", id, "addr", advertise, "revision", srv.Stats().Revision)
			}
			if metrics != "" {
				stopMetrics, err := serveMetrics()
				if err != nil {
					return err
				}
				defer stopMetrics()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", n.Local())
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&listen, "listen", "udp:127.0.0.1:7201", "transport address")
	c.Flags().StringVar(&cluster, "cluster", "", "the wormservers' cluster file (default "+defaultClusterFile+")")
	c.Flags().Uint64Var(&id, "id", 0, "replica id: nonzero, distinct in the group")
	c.Flags().Uint64Var(&logSeg, "log-segment", defaultKVLog, "first segment of the group's range in the WOR space (the same on every server of the group)")
	c.Flags().StringVar(&advertise, "advertise", "", "address the other servers forward to (default: the listen address)")
	c.Flags().StringVar(&metrics, "metrics", "", "serve Prometheus metrics on this HOST:PORT")
	c.Flags().DurationVar(&timeout, "wor-timeout", time.Second, "per-request timeout towards the wormservers")
	c.Flags().BoolVar(&keyed, "keyed", false, "serve keyed mode: Pando's per-key logs on an ec cluster, no leader (see above)")
	c.Flags().StringVar(&ecDelegate, "ec-delegate", "", "with --keyed: puts delegate Phase 2 to the proposer at this address ('strata wor ec-leader')")
	c.Flags().StringVar(&ecLeader, "ec-leader", "", "with --keyed: a put preempted by another hands its write to the leader at this address ('strata wor ec-leader')")
	return c
}

// observeKVRequests registers the request counters and latencies of a
// kv server (either mode) whose observer set installs.
func observeKVRequests(reg *prometheus.Registry, set func(func(op kv.Op, st kv.Status, d time.Duration))) {
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_kv_requests_total", Help: "Requests answered, by operation and outcome."}, []string{"op", "status"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "strata_kv_request_seconds",
		Help:    "Time from a request's receipt to its reply (a write: through the log at the leader, forwarding included).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
	}, []string{"op"})
	reg.MustRegister(reqs, lat)
	statusNames := map[kv.Status]string{kv.StatusOK: "ok", kv.StatusNotFound: "not_found", kv.StatusMalformed: "malformed", kv.StatusUnknownOp: "unknown_op",
		kv.StatusEmptyKey: "empty_key", kv.StatusKeyTooLarge: "key_too_large", kv.StatusValueTooLarge: "value_too_large", kv.StatusCompacted: "compacted",
		kv.StatusStaleSequence: "stale_sequence", kv.StatusUnavailable: "unavailable", kv.StatusInternal: "internal", kv.StatusUnsupported: "unsupported"}
	set(func(op kv.Op, st kv.Status, d time.Duration) {
		name, ok := statusNames[st]
		if !ok {
			name = strconv.Itoa(int(st))
		}
		reqs.WithLabelValues(op.String(), name).Inc()
		lat.WithLabelValues(op.String()).Observe(d.Seconds())
	})
}

// serveKVMetrics exports a kv server's counters and its stack's.
func serveKVMetrics(addr string, srv *kv.Server, n *stack.Node, log *slog.Logger) (func(), error) {
	reg := prometheus.NewRegistry()
	observeKVRequests(reg, srv.SetObserver)
	for _, g := range []struct {
		name, help string
		f          func(kv.ServerStats) float64
	}{
		{"strata_kv_keys", "Keys in the store.", func(s kv.ServerStats) float64 { return float64(s.Keys) }},
		{"strata_kv_sessions", "Client sessions kept for deduplication.", func(s kv.ServerStats) float64 { return float64(s.Sessions) }},
		{"strata_kv_revision", "Log index of the last command applied here.", func(s kv.ServerStats) float64 { return float64(s.Revision) }},
		{"strata_kv_leader", "1 if this server's replica leads the group.", func(s kv.ServerStats) float64 { return b2f(s.Leader) }},
		{"strata_kv_epoch", "The leader's epoch as this server knows it.", func(s kv.ServerStats) float64 { return float64(s.Epoch) }},
		{"strata_kv_inflight", "Requests being served.", func(s kv.ServerStats) float64 { return float64(s.InFlight) }},
	} {
		f := g.f
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, func() float64 { return f(srv.Stats()) }))
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_kv_forwarded_total", Help: "Requests forwarded to the leader's server."},
		func() float64 { return float64(srv.Stats().Forwarded) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_kv_malformed_total", Help: "Requests that did not decode or validate."},
		func() float64 { return float64(srv.Stats().Malformed) }))
	return serveMetrics(addr, reg, n, log)
}

// serveKeyedMetrics exports a keyed-mode kv server's counters and its
// stack's.
func serveKeyedMetrics(addr string, srv *kv.KeyedServer, n *stack.Node, log *slog.Logger) (func(), error) {
	reg := prometheus.NewRegistry()
	observeKVRequests(reg, srv.SetObserver)
	for _, c := range []struct {
		name, help string
		f          func(kv.KeyedStats) uint64
	}{
		{"strata_kv_malformed_total", "Requests that did not decode or validate.", func(s kv.KeyedStats) uint64 { return s.Malformed }},
		{"strata_kv_keyed_retries_total", "Writes that lost their bucket version to another write and tried the next.", func(s kv.KeyedStats) uint64 { return s.Retries }},
		{"strata_kv_keyed_collected_total", "Floors raised after writes (old versions collected).", func(s kv.KeyedStats) uint64 { return s.Collected }},
	} {
		f := c.f
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, func() float64 { return float64(f(srv.Stats())) }))
	}
	return serveMetrics(addr, reg, n, log)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// kvClientFlags are the flags every kv client command takes.
type kvClientFlags struct {
	servers, file string
	timeout       time.Duration
}

func (f *kvClientFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.servers, "servers", defaultKVServers, "kv servers, comma-separated (default: those of --servers-file if it exists)")
	c.Flags().StringVar(&f.file, "servers-file", "", "JSON file listing the kv servers (default "+defaultKVFile+", written by strata up)")
	c.Flags().DurationVar(&f.timeout, "timeout", 10*time.Second, "give up after this long")
}

// run dials the servers and runs fn with a context bounded by --timeout.
func (f *kvClientFlags) run(cmd *cobra.Command, fn func(context.Context, *kv.Client) error) error {
	servers, err := serverList(cmd, f.servers, f.file, defaultKVFile)
	if err != nil {
		return err
	}
	// Dial's node through listenNode: the client is in the emulated WAN
	// if one is configured.
	c, err := kv.Dial(servers, kv.ClientConfig{Logger: slog.New(slog.DiscardHandler), Listen: listenNode})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return fn(ctx, c)
}

func printKV(w io.Writer, e kv.KeyValue) {
	fmt.Fprintf(w, "%q = %q (version %d, created at %d, modified at %d)\n", e.Key, e.Value, e.Version, e.Create, e.Mod)
}

func kvPutCmd() *cobra.Command {
	var f kvClientFlags
	var file string
	c := &cobra.Command{
		Use:   "put KEY [VALUE]",
		Short: "Set a key (the value from the argument, or from --file)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			value, err := argOrFile(cmd, "put", "a value", args[1:], file, kv.MaxValue)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c *kv.Client) error {
				r, err := c.Put(ctx, args[0], value)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "put %q: version %d at revision %d\n", args[0], r.Version, r.Rev)
				return nil
			})
		},
	}
	f.add(c)
	c.Flags().StringVar(&file, "file", "", "read the value from this file (- for standard input), up to 256 KiB")
	return c
}

func kvGetCmd() *cobra.Command {
	var f kvClientFlags
	var seq, raw bool
	c := &cobra.Command{
		Use:   "get KEY",
		Short: "Read a key (linearizable; --sequential: the server's local state); exits 1 if absent",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c *kv.Client) error {
				var opts []kv.ReadOption
				if seq {
					opts = append(opts, kv.SequentialRead())
				}
				e, err := c.Get(ctx, args[0], opts...)
				if err != nil {
					return err
				}
				if raw {
					_, err := cmd.OutOrStdout().Write(e.Value)
					return err
				}
				printKV(cmd.OutOrStdout(), e)
				return nil
			})
		},
	}
	f.add(c)
	c.Flags().BoolVar(&seq, "sequential", false, "a sequentially consistent read of the receiving server's state")
	c.Flags().BoolVar(&raw, "value", false, "print the value's bytes alone (nothing else, no newline)")
	return c
}

func kvDeleteCmd() *cobra.Command {
	var f kvClientFlags
	c := &cobra.Command{
		Use:   "delete KEY",
		Short: "Delete a key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c *kv.Client) error {
				r, err := c.Delete(ctx, args[0])
				if err != nil {
					return err
				}
				if r.Succeeded {
					fmt.Fprintf(cmd.OutOrStdout(), "deleted %q at revision %d\n", args[0], r.Rev)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%q did not exist\n", args[0])
				}
				return nil
			})
		},
	}
	f.add(c)
	return c
}

func kvCASCmd() *cobra.Command {
	var f kvClientFlags
	c := &cobra.Command{
		Use:   "cas KEY VERSION VALUE",
		Short: "Set a key if its version is VERSION (0: if it does not exist); exits 1 if not",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			version, err := strconv.ParseUint(args[1], 10, 64)
			if err != nil {
				return fmt.Errorf("VERSION %q: want a version number (0: the key must not exist)", args[1])
			}
			return f.run(cmd, func(ctx context.Context, c *kv.Client) error {
				r, err := c.CAS(ctx, args[0], version, []byte(args[2]))
				if err != nil {
					return err
				}
				if !r.Succeeded {
					return fmt.Errorf("cas %q: version is %d, not %d; nothing written", args[0], r.Version, version)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "cas %q: version %d at revision %d\n", args[0], r.Version, r.Rev)
				return nil
			})
		},
	}
	f.add(c)
	return c
}

func kvScanCmd() *cobra.Command {
	var f kvClientFlags
	var limit int
	var seq bool
	c := &cobra.Command{
		Use:   "scan START [END]",
		Short: "List keys in [START, END) in order (no END: to the last key; START \"\": from the first)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (up to %d) or more", limit, kv.MaxScanLimit)
			}
			end := ""
			if len(args) == 2 {
				end = args[1]
			}
			return f.run(cmd, func(ctx context.Context, c *kv.Client) error {
				var opts []kv.ReadOption
				if seq {
					opts = append(opts, kv.SequentialRead())
				}
				kvs, more, err := c.Scan(ctx, args[0], end, limit, opts...)
				if err != nil {
					return err
				}
				for _, e := range kvs {
					printKV(cmd.OutOrStdout(), e)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d keys", len(kvs))
				if more {
					fmt.Fprintf(cmd.OutOrStdout(), " (more after %q)", kvs[len(kvs)-1].Key)
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			})
		},
	}
	f.add(c)
	c.Flags().IntVar(&limit, "limit", 100, "at most this many keys (0: up to the server's maximum)")
	c.Flags().BoolVar(&seq, "sequential", false, "a sequentially consistent read of the receiving server's state")
	return c
}

func kvWatchCmd() *cobra.Command {
	var f kvClientFlags
	var prefix string
	var from uint64
	var dur time.Duration
	c := &cobra.Command{
		Use:   "watch KEY | --prefix PREFIX",
		Short: "Print changes of a key, or of every key with a prefix, as they happen (until Ctrl-C or --for)",
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("prefix") == (len(args) == 1) || len(args) > 1 {
				return errors.New("watch needs a KEY or --prefix PREFIX (not both)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			key, isPrefix := prefix, true
			if len(args) == 1 {
				key, isPrefix = args[0], false
			}
			f.timeout = 100 * 365 * 24 * time.Hour // the watch's own end is --for or Ctrl-C
			return f.run(cmd, func(ctx context.Context, c *kv.Client) error {
				ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
				if dur > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, dur)
					defer cancel()
				}
				o := cmd.OutOrStdout()
				if isPrefix {
					fmt.Fprintf(o, "watching keys starting with %q\n", key)
				} else {
					fmt.Fprintf(o, "watching %q\n", key)
				}
				err := c.Watch(ctx, key, isPrefix, from, func(ev kv.Event) error {
					if ev.Type == kv.EventDelete {
						fmt.Fprintf(o, "%d delete %q\n", ev.KV.Mod, ev.KV.Key)
					} else {
						fmt.Fprintf(o, "%d put %q = %q (version %d)\n", ev.KV.Mod, ev.KV.Key, ev.KV.Value, ev.KV.Version)
					}
					return nil
				})
				if ctx.Err() != nil {
					return nil // interrupted or --for elapsed
				}
				return err
			})
		},
	}
	f.add(c)
	c.Flags().StringVar(&prefix, "prefix", "", "watch every key starting with this (\"\": every key)")
	c.Flags().Uint64Var(&from, "from", 0, "first revision to report (0: changes from now on)")
	c.Flags().DurationVar(&dur, "for", 0, "stop after this long (default: until interrupted)")
	return c
}

func kvStatusCmd() *cobra.Command {
	var f kvClientFlags
	c := &cobra.Command{
		Use:   "status",
		Short: "Print each server's view: the revision it applied and the leader it knows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			servers, err := serverList(cmd, f.servers, f.file, defaultKVFile)
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c *kv.Client) error {
				o := cmd.OutOrStdout()
				for _, s := range servers {
					s = strings.TrimSpace(s)
					sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					st, err := c.Status(sctx, stack.Addr(s))
					cancel()
					if err != nil {
						fmt.Fprintf(o, "  %s  unreachable: %v\n", s, err)
						continue
					}
					leader := "unknown"
					if st.LeaderID != 0 {
						leader = fmt.Sprintf("%d at %s (epoch %d)", st.LeaderID, st.Leader, st.Epoch)
						if st.Leader == s {
							leader = fmt.Sprintf("this server, %d (epoch %d)", st.LeaderID, st.Epoch)
						}
					}
					fmt.Fprintf(o, "  %s  revision %d  leader %s\n", s, st.Revision, leader)
				}
				return nil
			})
		},
	}
	f.add(c)
	return c
}

// wildcardAddr reports whether a transport address (scheme:host:port)
// names the unspecified host (0.0.0.0 or ::).
func wildcardAddr(a string) bool {
	_, hp, ok := strings.Cut(a, ":")
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(hp)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// argOrFile is a command's data: its one argument, or the contents of
// --file (- for standard input), up to limit bytes and one more, so that
// a larger input is refused with the limit's error rather than cut.
func argOrFile(cmd *cobra.Command, verb, what string, args []string, file string, limit int) ([]byte, error) {
	switch {
	case len(args) == 1 && file != "":
		return nil, fmt.Errorf("%s: an argument and --file %s: give one", verb, file)
	case len(args) == 1:
		return []byte(args[0]), nil
	case file == "":
		return nil, fmt.Errorf("%s: no %s: give it as an argument or --file PATH (- for standard input)", verb, strings.TrimPrefix(strings.TrimPrefix(what, "a "), "an "))
	}
	in := cmd.InOrStdin()
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", verb, err)
		}
		defer fh.Close()
		in = fh
	}
	b, err := io.ReadAll(io.LimitReader(in, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", verb, file, err)
	}
	return b, nil
}

// serverList is a client command's servers: --servers (comma-separated),
// or the servers file (--servers-file, or defaultFile when it exists and
// --servers was not given; the format strata up writes), whose security
// section, if any, the command adopts (secfiles.go).
func serverList(cmd *cobra.Command, servers, file, defaultFile string) ([]string, error) {
	if file == "" && !cmd.Flags().Changed("servers") {
		if _, err := os.Stat(defaultFile); err == nil {
			file = defaultFile
		}
	}
	if file != "" {
		f, err := kv.LoadServersFile(file)
		if err != nil {
			return nil, err
		}
		if err := useSecurity(file, f.Security); err != nil {
			return nil, fmt.Errorf("servers file %w", err)
		}
		return f.Servers, nil
	}
	return strings.Split(servers, ","), nil
}
