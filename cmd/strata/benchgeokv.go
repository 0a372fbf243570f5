package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	geokv "strata/bench/geokv"
)

func benchGeoKVCmd() *cobra.Command {
	var (
		quick, asJSON bool
		dir, sets     string
		plotTo        string
		ops, warmup   int
		rounds        int
		storage       float64
		timeout       time.Duration
		tputWindow    time.Duration
		tputClients   int
		contWriters   int
		contTrials    int
	)
	c := &cobra.Command{
		Use:   "geo-kv",
		Short: "Pando's Figure 12 on the emulated WAN: read and write p95 per front end, Pando vs RS-Paxos vs replication plans, one engine (wor.EC)",
		Long: `For each of the Pando paper's four access sets (§5.2: NA, NA-EU, NA-AS,
GL, mapped to the embedded matrix's az_ regions) and each protocol's plan
(pando, rspaxos, and replication as epaxos plans it, k=1), planned by the
geo planner with f=1, the same storage-overhead bound (--storage, the
paper's 3x) and Figure 12(a)'s write SLO, the same engine (wor.EC) runs
the plan: one persistent "strata wor serve" per data site on its site's
loopback host behind the emulated WAN, and in this process one client per
front end on its site's host, delayed as its site. Each front end runs a
closed loop of --ops operations, writes (to fresh registers) and reads (of
the registers every front end preloaded, --preload each) alternating,
1 KiB values.

Prints p50/p95 read and write latency per front end next to the planner's
predictions, and per access set the ratio of the other plans' slowest
read p95 to Pando's (> 1: Pando better). Rounds rotate the protocols'
order.

Then Figure 13: on GL's Pando plan, 1 to --fig13-writers writers at its
front ends all write one fresh register at once, --fig13-trials times:
leaderless (a preempted writer captures again) vs the leader fallback (a
wor.EC leader on the plan's first data site; a writer preempted in Phase 2
hands it its value). Prints the winning write's p5/p50/p95 and the most
proposals.

Then Figure 14: throughput on loopback without delays of 3 replicas (k=1)
and erasure coding with k=2, r=3 and r=4 (5 and 6 servers; in-memory
wormservers), values of 1, 10 and 100 KiB, writes then reads, with
--fig14-clients closed-loop clients for --fig14-window; ratios EC over
replication (the paper: 0.9-1.2x from 10 KiB on).

--quick: 40 operations per front end, 1 round, 10 contention trials, 2 s
throughput windows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"ops": "40", "rounds": "1", "fig14-window": "2s", "fig13-trials": "10"}); err != nil {
					return err
				}
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			var names []string
			for _, s := range strings.Split(sets, ",") {
				if s = strings.TrimSpace(s); s != "" {
					names = append(names, s)
				}
			}
			rep, err := geokv.Run(ctx, geokv.Config{Strata: self, Dir: filepath.Join(dir, "geo-kv"), Sets: names, Ops: ops, Warmup: warmup,
				Rounds: rounds, Storage: storage, F: 1, Timeout: timeout, TputWindow: tputWindow, TputClients: tputClients, ContWriters: contWriters, ContTrials: contTrials, PlotPath: plotTo, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			return printReport(cmd, rep, asJSON, geokv.Print)
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "reduced run: 40 operations per front end, 1 round, 10 contention trials, 2 s throughput windows")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	c.Flags().StringVar(&dir, "dir", "strata-data/bench", "data folder (emptied first)")
	c.Flags().StringVar(&sets, "sets", "NA,NA-EU,NA-AS,GL", "access sets")
	c.Flags().IntVar(&ops, "ops", 200, "measured operations per front end and cell (half reads, half writes)")
	c.Flags().IntVar(&warmup, "preload", 5, "registers each front end writes (unmeasured) before each cell; the reads pick among them")
	c.Flags().IntVar(&rounds, "rounds", 3, "rounds")
	c.Flags().Float64Var(&storage, "storage", 3, "bound on the storage overhead for every plan (the paper's Figure 12: 3)")
	c.Flags().DurationVar(&tputWindow, "fig14-window", 5*time.Second, "measured window of each Figure 14 throughput cell (0: skip Figure 14)")
	c.Flags().IntVar(&tputClients, "fig14-clients", 16, "closed-loop clients of the Figure 14 cells")
	c.Flags().StringVar(&plotTo, "plot", "docs/img/geokv-fig12.png", "PNG of Figure 12: the slowest front end's read and write p95 per access set and protocol (empty: none)")
	c.Flags().IntVar(&contWriters, "fig13-writers", 4, "most concurrent writers of Figure 13")
	c.Flags().IntVar(&contTrials, "fig13-trials", 50, "registers written per writer count and mode in Figure 13 (0: skip Figure 13)")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "per-request timeout of the engine")
	return c
}
