package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	worbench "strata/bench/wor"
	"strata/internal/plot"
	"strata/wor"
)

func benchWorCmd() *cobra.Command {
	var (
		quick, asJSON, noEtcd                  bool
		clientsFlag, sizesFlag, engines, modes string
		dur                                    time.Duration
		dir, lengthsFlag, plotPath             string
		rounds                                 int
	)
	c := &cobra.Command{
		Use:   "wor",
		Short: "Write-once registers: Read, Capture+Write, pre-captured Write (vs etcd when its peer is available)",
		Long: `Starts 3 wormservers on loopback (persistent on the project disk, and in
memory), and measures from this process, with increasing numbers of
concurrent clients: Read, Capture+Write, and Write on registers captured
beforehand, for the paxos and chain engines. Each server is its own
process; all share the machine's 2 cores with the clients.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"clients": "1,16", "duration": "1s", "sizes": "8", "rounds": "1"}); err != nil {
					return err
				}
			}
			clients, err := parseInts("--clients", clientsFlag, 1, 256)
			if err != nil {
				return err
			}
			sizes, err := parseInts("--sizes", sizesFlag, 1, wor.MaxPersistentValue)
			if err != nil {
				return err
			}
			if rounds < 1 {
				return fmt.Errorf("--rounds must be at least 1")
			}
			var results []worbench.Result
			progress := cmd.ErrOrStderr()
			seg := uint64(0)
			// Fresh journals: every capture+write takes a register slot.
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			for _, mode := range strings.Split(modes, ",") {
				if mode != "persistent" && mode != "memory" {
					return fmt.Errorf("--modes: unknown mode %q", mode)
				}
			}
			var ec *etcdCluster
			if !noEtcd {
				var err error
				if ec, err = startEtcd(ctx, progress, filepath.Join(dir, "etcd")); err != nil {
					return fmt.Errorf("%w (use --no-etcd to skip the peer)", err)
				}
				defer ec.stop()
			}
			// Round 1 measures every cell; later rounds repeat the cells
			// compared with etcd (persistent paxos: read and pre-captured
			// write). Strata and etcd alternate which goes first.
			for round := 1; round <= rounds; round++ {
				order := []string{"strata", "etcd"}
				if round%2 == 0 {
					slices.Reverse(order)
				}
				for _, sys := range order {
					if sys == "etcd" {
						if ec == nil {
							continue
						}
						for _, op := range []string{"put", "get"} {
							for _, size := range sizes {
								for _, cl := range clients {
									r, err := ec.run(ctx, op, cl, size, dur, fmt.Sprintf("r%d", time.Now().UnixNano()))
									if err != nil {
										return err
									}
									r.Round = round
									results = append(results, r)
									fmt.Fprintf(progress, "round %d etcd       %-23s size=%-4d clients=%-3d %8.0f ops/s  p50 %7.0f µs  p99 %7.0f µs\n", round, op, size, cl, r.OpsPerSec, r.P50us, r.P99us)
								}
							}
						}
						continue
					}
					ms, es, ops := strings.Split(modes, ","), strings.Split(engines, ","), worbench.Ops
					if round > 1 {
						ms, es, ops = []string{"persistent"}, []string{"paxos"}, []string{"read", "write-precaptured"}
					}
					for _, mode := range ms {
						for _, engine := range es {
							rs, err := worCells(ctx, progress, dir, mode, engine, ops, sizes, clients, dur, round, &seg)
							if err != nil {
								return err
							}
							results = append(results, rs...)
						}
					}
				}
			}
			if lengthsFlag != "" {
				lengths, err := parseInts("--lengths", lengthsFlag, 1, 9)
				if err != nil {
					return err
				}
				lr, err := worLengths(ctx, progress, lengths, dur)
				if err != nil {
					return err
				}
				results = append(results, lr...)
				if plotPath != "" {
					if err := plotLengths(lr, plotPath); err != nil {
						return err
					}
					fmt.Fprintf(progress, "wrote %s\n", plotPath)
				}
			}
			ratios, spread := worRatios(results)
			rep := map[string]any{"bench": "wor", "results": results, "ratios": ratios, "spread": spread, "rounds": rounds}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			printWor(cmd.OutOrStdout(), results)
			if len(ratios) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "\nratios vs etcd (persistent paxos; > 1: Strata better), median of %d round(s) (min-max)\n", rounds)
				keys := make([]string, 0, len(ratios))
				for k := range ratios {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					fmt.Fprintf(cmd.OutOrStdout(), "  %-52s %.2f  (%.2f-%.2f)\n", k, ratios[k], spread[k][0], spread[k][1])
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 1 and 16 clients, 8-byte values, 1 s cells, 1 round")
	f.IntVar(&rounds, "rounds", 3, "rounds; the cells compared with etcd repeat every round, alternating which system goes first")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&clientsFlag, "clients", "1,4,16,64", "concurrent clients")
	f.StringVar(&sizesFlag, "sizes", "8,1024", "value sizes in bytes")
	f.StringVar(&engines, "engines", "paxos,chain", "engines")
	f.StringVar(&modes, "modes", "persistent,memory", "server storage modes")
	f.DurationVar(&dur, "duration", 3*time.Second, "measured time per cell")
	f.StringVar(&dir, "dir", "strata-data/bench-wor", "data folder of the persistent servers (on the project disk)")
	f.StringVar(&lengthsFlag, "lengths", "1,3,5", "replica-set sizes for the latency-vs-chain-length sweep ('' to skip)")
	f.StringVar(&plotPath, "plot", "strata-data/bench/wor-lengths.png", "write the sweep's plot here ('' to skip)")
	f.BoolVar(&noEtcd, "no-etcd", false, "skip the etcd peer (3 members built from bench/etcd, go.etcd.io/etcd v3.6.16)")
	return c
}

// worRatios compares persistent paxos against etcd, round by round: a
// pre-captured write with etcd's create-if-absent transaction, a read with
// its linearizable get (throughput strata/etcd, p50 latency etcd/strata).
// It returns the median over rounds and the min and max.
func worRatios(rs []worbench.Result) (map[string]float64, map[string][2]float64) {
	find := func(op string, cl, size, round int) *worbench.Result {
		for i := range rs {
			r := &rs[i]
			if r.System == "strata" && r.Op == op && r.Clients == cl && r.Size == size && r.Mode == "persistent" && r.Engine == "paxos" && r.Round == round {
				return r
			}
		}
		return nil
	}
	per := map[string][]float64{}
	for _, r := range rs {
		if r.System != "etcd" {
			continue
		}
		sop := map[string]string{"put": "write-precaptured", "get": "read"}[r.Op]
		s := find(sop, r.Clients, r.Size, r.Round)
		if s == nil || r.OpsPerSec == 0 || s.P50us == 0 {
			continue
		}
		key := fmt.Sprintf("%s strata/etcd clients=%d size=%d", sop, r.Clients, r.Size)
		per["ops/s "+key] = append(per["ops/s "+key], s.OpsPerSec/r.OpsPerSec)
		per["p50 "+key] = append(per["p50 "+key], r.P50us/s.P50us)
	}
	med, spread := map[string]float64{}, map[string][2]float64{}
	for k, xs := range per {
		slices.Sort(xs)
		med[k] = round3(xs[len(xs)/2])
		spread[k] = [2]float64{round3(xs[0]), round3(xs[len(xs)-1])}
	}
	return med, spread
}

// worCells starts 3 fresh wormservers of a mode and measures ops with an
// engine's client.
func worCells(ctx context.Context, progress io.Writer, dir, mode, engine string, ops []string, sizes, clients []int, dur time.Duration, round int, seg *uint64) ([]worbench.Result, error) {
	var servers []*server
	var addrs []string
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for i := 0; i < 3; i++ {
		args := []string{"wor", "serve", "--listen", "udp:127.0.0.1:0", "--blocks", "262144"}
		if mode == "persistent" {
			// Fresh journals per round and engine: every capture takes a
			// register slot.
			args = append(args, "--dir", filepath.Join(dir, fmt.Sprintf("%s-r%d", engine, round), fmt.Sprintf("%d", i)))
		}
		s, err := startServer(ctx, -1, nil, args...)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
		addrs = append(addrs, s.addr)
	}
	worEngine = engine
	wc, n, err := worClient("", strings.Join(addrs, ","), 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	var out []worbench.Result
	for _, op := range ops {
		for _, size := range sizes {
			for _, cl := range clients {
				*seg++
				rate := 20000
				if mode == "persistent" {
					rate = 4000
				}
				q0, _ := wc.QuorumStats()
				r, err := worbench.RunRate(ctx, wc, *seg, op, cl, size, dur, rate)
				if err != nil {
					// One failed cell (e.g. a timeout under overload) is
					// reported and the run goes on.
					fmt.Fprintf(progress, "round %d %s %s %s size=%d clients=%d: FAILED: %v\n", round, mode, engine, op, size, cl, err)
					continue
				}
				r.Engine, r.Mode, r.Round = engine, mode, round
				hedged := ""
				if q1, ok := wc.QuorumStats(); ok && q1.Requests > q0.Requests {
					r.Hedged, r.QuorumRequests = q1.Hedged-q0.Hedged, q1.Requests-q0.Requests
					hedged = fmt.Sprintf("  hedged %.2f%%", 100*float64(r.Hedged)/float64(r.QuorumRequests))
				}
				out = append(out, r)
				fmt.Fprintf(progress, "round %d %-10s %-5s %-17s size=%-4d clients=%-3d %8.0f ops/s  p50 %7.0f µs  p99 %7.0f µs%s\n", round, mode, engine, op, size, cl, r.OpsPerSec, r.P50us, r.P99us, hedged)
			}
		}
	}
	return out, nil
}

func printWor(w io.Writer, rs []worbench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tsystem\tmode\tengine\top\tsize\tclients\tops/s\tp50 µs\tp99 µs\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%.0f\t%.0f\t%.0f\t\n", r.Round, r.System, r.Mode, r.Engine, r.Op, r.Size, r.Clients, r.OpsPerSec, r.P50us, r.P99us)
	}
	tw.Flush()
}

// worLengths measures the pre-captured write latency of one client against
// replica sets of each size (in-memory servers), for both engines: chain
// replication writes the servers one after another, Paxos in parallel.
func worLengths(ctx context.Context, progress io.Writer, lengths []int, dur time.Duration) ([]worbench.Result, error) {
	var out []worbench.Result
	seg := uint64(1 << 30)
	for _, n := range lengths {
		var servers []*server
		var addrs []string
		for i := 0; i < n; i++ {
			s, err := startServer(ctx, -1, nil, "wor", "serve", "--listen", "udp:127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			servers = append(servers, s)
			addrs = append(addrs, s.addr)
		}
		err := func() error {
			for _, engine := range []string{"paxos", "chain"} {
				worEngine = engine
				wc, node, err := worClient("", strings.Join(addrs, ","), 2*time.Second)
				if err != nil {
					return err
				}
				seg++
				r, err := worbench.Run(ctx, wc, seg, "write-precaptured", 1, 8, dur)
				node.Close()
				if err != nil {
					return fmt.Errorf("%s with %d servers: %w", engine, n, err)
				}
				r.Engine, r.Mode = engine, fmt.Sprintf("memory-%d", n)
				out = append(out, r)
				fmt.Fprintf(progress, "%d servers %-5s write-precaptured p50 %7.0f µs\n", n, engine, r.P50us)
			}
			return nil
		}()
		for _, s := range servers {
			s.stop()
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func plotLengths(rs []worbench.Result, path string) error {
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
