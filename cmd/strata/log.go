package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"strata/stack"
	"strata/wor"
	"strata/wormlog"
)

// defaultLogFile lists the log servers strata up starts (the kv servers
// file's format).
const defaultLogFile = "strata-data/log.json"

// defaultLogServers are up's log servers at its default ports.
const defaultLogServers = "udp:127.0.0.1:7301,udp:127.0.0.1:7302"

// defaultLogBase is the first WOR segment of the default log: away from
// the kv service's range (defaultKVLog) and from segments users allocate
// by hand.
const defaultLogBase = 1 << 37

// logProps is the stack of log servers and clients: RPC, retransmitted.
const logProps = "Reliable,Fragment,RPC"

func logCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "log",
		Short: "Shared log (WormLog over write-once registers): servers and client commands",
		Long: `log is a shared log in the style of CORFU over the wormservers' write-once
registers (docs/wormlog.md): "log serve" runs a log server, one of which is
the sequencer, handing out positions with pre-made captures as tokens;
appends then write straight to the wormservers, so client commands need
both the log servers and the wormservers' cluster file. Entries are up to
` + strconv.Itoa(wormlog.MaxEntry) + ` bytes.`,
	}
	c.AddCommand(logServeCmd(), logAppendCmd(), logReadCmd(), logTailCmd(), logStatusCmd(), logSubscribeCmd(), logTrimCmd())
	addWANFlags(c)
	return c
}

func logServeCmd() *cobra.Command {
	var listen, cluster, advertise, metrics string
	var id, base uint64
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run a log server (the sequencer or a standby), until interrupted",
		Long: `serve runs one log server on a UDP or TCP address. The servers of a log name
the same --cluster and --base and distinct --id; one becomes the sequencer
and the others take over if it stops answering. The sequencer keeps nothing
on disk: what a new one needs is in the WOR space. Prints "listening on
ADDR" at once.`,
		Example: "  strata log serve --listen udp:127.0.0.1:7301 --cluster strata-data/cluster.json --id 1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if id == 0 {
				return errors.New("--id: a nonzero server id, distinct among the log's servers")
			}
			w, n, err := logWORClient(cluster, listen, timeout)
			if err != nil {
				return err
			}
			defer n.Close()
			if advertise == "" {
				advertise = string(n.Local())
				if wildcardAddr(advertise) {
					return fmt.Errorf("--listen %s binds every interface, so it names no address clients can reach: give --advertise", listen)
				}
			}
			srv, err := wormlog.StartServer(wormlog.ServerConfig{Node: n, Client: w, ID: id, Addr: advertise, Base: base, Logger: log})
			if err != nil {
				return err
			}
			defer srv.Close()
			if metrics != "" {
				stopMetrics, err := serveLogMetrics(metrics, srv, n, log)
				if err != nil {
					return err
				}
				defer stopMetrics()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", n.Local())
			log.Info("log server up", "id", id, "addr", advertise)
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&listen, "listen", "udp:127.0.0.1:7301", "transport address")
	c.Flags().StringVar(&cluster, "cluster", "", "the wormservers' cluster file (default "+defaultClusterFile+")")
	c.Flags().Uint64Var(&id, "id", 0, "server id: nonzero, distinct among the log's servers")
	c.Flags().Uint64Var(&base, "base", defaultLogBase, "the log's first WOR segment (the same on every server and client of the log)")
	c.Flags().StringVar(&advertise, "advertise", "", "address clients reach this server at (default: the listen address)")
	c.Flags().DurationVar(&timeout, "wor-timeout", time.Second, "per-request timeout towards the wormservers")
	c.Flags().StringVar(&metrics, "metrics", "", "serve Prometheus metrics on this HOST:PORT")
	return c
}

// serveLogMetrics exports a log server's counters and its stack's.
func serveLogMetrics(addr string, srv *wormlog.Server, n *stack.Node, log *slog.Logger) (func(), error) {
	reg := prometheus.NewRegistry()
	for _, g := range []struct {
		name, help string
		f          func(wormlog.ServerStats) float64
	}{
		{"strata_log_sequencer", "1 if this server is the log's sequencer.", func(s wormlog.ServerStats) float64 { return b2f(s.Sequencer) }},
		{"strata_log_epoch", "The sequencer's epoch as this server knows it.", func(s wormlog.ServerStats) float64 { return float64(s.Epoch) }},
		{"strata_log_tail", "The next position this sequencer hands out (0 on a standby).", func(s wormlog.ServerStats) float64 { return float64(s.Tail) }},
	} {
		f := g.f
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help}, func() float64 { return f(srv.Stats()) }))
	}
	for _, c := range []struct {
		name, help string
		f          func(wormlog.ServerStats) uint64
	}{
		{"strata_log_tokens_total", "Positions handed out as tokens.", func(s wormlog.ServerStats) uint64 { return s.Tokens }},
		{"strata_log_takeovers_total", "Times this server became the sequencer.", func(s wormlog.ServerStats) uint64 { return s.Takeovers }},
		{"strata_log_filled_segments_total", "Old segments junk-filled on takeovers.", func(s wormlog.ServerStats) uint64 { return s.FilledSegments }},
		{"strata_log_not_sequencer_total", "Token requests refused as a standby.", func(s wormlog.ServerStats) uint64 { return s.NotSequencer }},
		{"strata_log_refused_total", "Requests refused as malformed or while no segment was ready.", func(s wormlog.ServerStats) uint64 { return s.MalformedOrBusy }},
	} {
		f := c.f
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, func() float64 { return float64(f(srv.Stats())) }))
	}
	return serveMetrics(addr, reg, n, log)
}

// logWORClient loads the cluster file (the default if empty), listens on
// addr ("": any loopback port on the wormservers' transport) and returns a
// WOR client on that node.
func logWORClient(cluster, addr string, timeout time.Duration) (*wor.Client, *stack.Node, error) {
	if cluster == "" {
		if _, err := os.Stat(defaultClusterFile); err != nil {
			return nil, nil, fmt.Errorf("--cluster: the wormservers' cluster file is needed (strata up writes %s)", defaultClusterFile)
		}
		cluster = defaultClusterFile
	}
	cfg, err := loadClusterFile(cluster)
	if err != nil {
		return nil, nil, err
	}
	if addr == "" { // a client: any port, on the wormservers' transport
		kind, _, _ := strings.Cut(cfg.Directory[0], ":")
		addr = kind + ":127.0.0.1:0"
	}
	n, err := listenNode(addr, logProps)
	if err != nil {
		return nil, nil, err
	}
	e, err := wor.NewCluster(n, cfg, 1+rand.Uint64N(1<<32-1), timeout)
	if err != nil {
		n.Close()
		return nil, nil, err
	}
	return wor.NewClient(e), n, nil
}

// logClientFlags are the flags every log client command takes.
type logClientFlags struct {
	servers, file, cluster string
	base                   uint64
	timeout, hole          time.Duration
}

func (f *logClientFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.servers, "servers", defaultLogServers, "log servers, comma-separated (default: those of --servers-file if it exists)")
	c.Flags().StringVar(&f.file, "servers-file", "", "JSON file listing the log servers (default "+defaultLogFile+", written by strata up)")
	c.Flags().StringVar(&f.cluster, "cluster", "", "the wormservers' cluster file (default "+defaultClusterFile+")")
	c.Flags().Uint64Var(&f.base, "base", defaultLogBase, "the log's first WOR segment (as its servers')")
	c.Flags().DurationVar(&f.timeout, "timeout", 10*time.Second, "give up after this long")
	c.Flags().DurationVar(&f.hole, "hole-timeout", wormlog.DefaultHoleTimeout, "how long to wait for a handed-out position before filling it with junk")
}

// run makes a client and runs fn with a context bounded by --timeout (0:
// until interrupted).
func (f *logClientFlags) run(cmd *cobra.Command, fn func(context.Context, *wormlog.Client) error) error {
	servers, err := serverList(cmd, f.servers, f.file, defaultLogFile)
	if err != nil {
		return err
	}
	var addrs []stack.Addr
	for _, s := range servers {
		if s = strings.TrimSpace(s); s != "" {
			addrs = append(addrs, stack.Addr(s))
		}
	}
	if len(addrs) == 0 {
		return errors.New("--servers: no log server given")
	}
	w, n, err := logWORClient(f.cluster, "", time.Second)
	if err != nil {
		return err
	}
	defer n.Close()
	c, err := wormlog.NewClient(wormlog.ClientConfig{Node: n, WOR: w, Servers: addrs, Base: f.base, HoleTimeout: f.hole, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	return fn(ctx, c)
}

func logAppendCmd() *cobra.Command {
	var f logClientFlags
	var file string
	c := &cobra.Command{
		Use:   "append [DATA]",
		Short: "Append an entry (the argument, or --file) and print its position",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := argOrFile(cmd, "append", "an entry", args, file, wormlog.MaxEntry)
			if err != nil {
				return err
			}
			if len(data) > wormlog.MaxEntry {
				return fmt.Errorf("append: %w: at most %d bytes", wormlog.ErrTooLarge, wormlog.MaxEntry)
			}
			return f.run(cmd, func(ctx context.Context, c *wormlog.Client) error {
				pos, err := c.Append(ctx, data)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "appended at %d\n", pos)
				return nil
			})
		},
	}
	f.add(c)
	c.Flags().StringVar(&file, "file", "", "read the entry from this file (- for standard input)")
	return c
}

func printEntry(w io.Writer, e wormlog.Entry) {
	if e.Junk {
		fmt.Fprintf(w, "%d junk (a hole, filled)\n", e.Pos)
		return
	}
	fmt.Fprintf(w, "%d %q\n", e.Pos, e.Data)
}

func logReadCmd() *cobra.Command {
	var f logClientFlags
	var raw bool
	c := &cobra.Command{
		Use:   "read POS",
		Short: "Print the entry at a position",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pos, err := parseUint("position", args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c *wormlog.Client) error {
				e, err := c.Read(ctx, pos)
				if err != nil {
					return err
				}
				if raw && !e.Junk {
					_, err := cmd.OutOrStdout().Write(e.Data)
					return err
				}
				printEntry(cmd.OutOrStdout(), e)
				return nil
			})
		},
	}
	f.add(c)
	c.Flags().BoolVar(&raw, "value", false, "print the entry's bytes alone")
	return c
}

func logTailCmd() *cobra.Command {
	var f logClientFlags
	c := &cobra.Command{
		Use:   "tail",
		Short: "Print the position the next append gets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, c *wormlog.Client) error {
				t, err := c.Tail(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d\n", t)
				return nil
			})
		},
	}
	f.add(c)
	return c
}

func logStatusCmd() *cobra.Command {
	var f logClientFlags
	c := &cobra.Command{
		Use:   "status",
		Short: "Print which server is the sequencer, and the tail",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(ctx context.Context, c *wormlog.Client) error {
				t, err := c.Tail(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "sequencer %s, tail %d\n", c.Sequencer(), t)
				return nil
			})
		},
	}
	f.add(c)
	return c
}

func logSubscribeCmd() *cobra.Command {
	var f logClientFlags
	var from uint64
	var dur time.Duration
	var count int
	c := &cobra.Command{
		Use:   "subscribe",
		Short: "Print every entry from a position on, as they are appended (junk skipped)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.timeout = dur
			return f.run(cmd, func(ctx context.Context, c *wormlog.Client) error {
				sub := c.Subscribe(ctx, from)
				defer sub.Close()
				n := 0
				for e := range sub.C {
					printEntry(cmd.OutOrStdout(), e)
					if n++; count > 0 && n >= count {
						return nil
					}
				}
				if err := sub.Err(); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					return err
				}
				return nil
			})
		},
	}
	f.add(c)
	c.Flags().Uint64Var(&from, "from", 0, "first position")
	c.Flags().DurationVar(&dur, "for", 0, "stop after this long (default: until interrupted)")
	c.Flags().IntVar(&count, "count", 0, "stop after this many entries (0: no limit)")
	return c
}

func logTrimCmd() *cobra.Command {
	var f logClientFlags
	c := &cobra.Command{
		Use:   "trim PREFIX",
		Short: "Discard the log before a position (in whole segments)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := parseUint("position", args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c *wormlog.Client) error {
				if err := c.Trim(ctx, p); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "trimmed the segments before %d\n", p)
				return nil
			})
		},
	}
	f.add(c)
	return c
}
