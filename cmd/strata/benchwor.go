package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	worbench "strata/bench/wor"
	"strata/wor"
)

func benchWorCmd() *cobra.Command {
	var (
		quick, asJSON, noEtcd, tlsCost         bool
		clientsFlag, sizesFlag, engines, modes string
		dur, warmup                            time.Duration
		dir, lengthsFlag, plotPath             string
		rounds                                 int
	)
	c := &cobra.Command{
		Use:   "wor",
		Short: "Write-once registers: Read, Capture+Write, pre-captured Write, vs etcd (3 members each)",
		Long: `Strata: 3 wormservers ("strata wor serve", one process each, UDP on
loopback), persistent (a journal per server under --dir on the project disk;
every reply leaves only after a journal flush ending in fdatasync, concurrent
requests sharing one) and in memory. From this process, with increasing
numbers of concurrent clients (goroutines sharing one wor client, one
operation outstanding each, no rate limit), for the paxos and chain engines:
  read               a linearizable read
  capture+write      the full single-register write: Capture (Paxos phase 1)
                     then Write (phase 2)
  write-precaptured  Write on registers captured before the timer
                     (WormPaxos's steady state)
and a sweep of the pre-captured write's latency against 1..N in-memory
servers (--lengths, plotted to --plot).

etcd: v3.6.16 (bench/etcd, built on first use into the user cache: several
minutes), 3 embedded members (one process each, data under --dir/etcd, its
defaults: fsync on, snapshot count 10000, 2 GiB quota, 100 ms heartbeat,
1 s election), gRPC over TCP on loopback. Its own client (clientv3, a
separate process, the same value sizes, client counts, warm-up and window,
no rate limit) runs create-if-absent (a transaction: if the key's version
is 0, put) on fresh keys and a linearizable get.

Persistent paxos is compared with etcd: write-precaptured and capture+write
each with create-if-absent, read with the get; ops/s strata/etcd and p50
etcd/strata, paired per round (> 1: Strata better), median and range over
rounds. Round 1 measures every cell, later rounds the compared ones; which
system goes first alternates. Both sides' settings (read back from the
running etcd) and disk syncs per operation are printed. Exits non-zero if
etcd does not start (use --no-etcd) or a Strata cell fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"clients": "1,16", "duration": "1s", "sizes": "8", "rounds": "1"}); err != nil {
					return err
				}
			}
			cfg := worbench.Config{Dir: dir, Measure: dur, Warmup: warmup, Rounds: rounds, Plot: plotPath, Etcd: !noEtcd, Progress: cmd.ErrOrStderr(),
				Engines: commaList(engines), Modes: commaList(modes)}
			var err error
			if cfg.Clients, err = parseInts("--clients", clientsFlag, 1, 256); err != nil {
				return err
			}
			if cfg.Sizes, err = parseInts("--sizes", sizesFlag, 1, wor.MaxPersistentValue); err != nil {
				return err
			}
			if lengthsFlag != "" {
				if cfg.Lengths, err = parseInts("--lengths", lengthsFlag, 1, 9); err != nil {
					return err
				}
			}
			for _, e := range cfg.Engines {
				if !slices.Contains(worbench.Engines, e) {
					return fmt.Errorf("--engines: unknown engine %q (want %s)", e, strings.Join(worbench.Engines, ","))
				}
			}
			for _, m := range cfg.Modes {
				if !slices.Contains(worbench.Modes, m) {
					return fmt.Errorf("--modes: unknown mode %q (want %s)", m, strings.Join(worbench.Modes, ","))
				}
			}
			if rounds < 1 {
				return fmt.Errorf("--rounds must be at least 1, not %d", rounds)
			}
			if dur <= 0 || warmup < 0 {
				return fmt.Errorf("--duration must be positive and --warmup not negative")
			}
			if tlsCost {
				rows, err := worbench.RunTLSCost(ctx, cfg)
				rep := worbench.TLSCostReport(cfg, rows)
				if err != nil {
					rep.Fail("%v", err)
				}
				if asJSON {
					if jerr := rep.WriteJSON(cmd.OutOrStdout()); jerr != nil {
						return jerr
					}
				} else {
					worbench.PrintTLSCost(cmd.OutOrStdout(), rep, rows)
				}
				return err
			}
			rep, err := worbench.Run(ctx, cfg)
			if errors.Is(err, worbench.ErrEtcdStart) {
				return fmt.Errorf("%w (use --no-etcd to run without the etcd peer)", err)
			}
			if rep == nil {
				return err
			}
			// The report is complete even when a cell of either system
			// failed: print it, then exit non-zero.
			if asJSON {
				if jerr := rep.WriteJSON(cmd.OutOrStdout()); jerr != nil {
					return jerr
				}
			} else {
				worbench.Print(cmd.OutOrStdout(), rep)
			}
			return err
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 1 and 16 clients, 8-byte values, 1 s cells, 1 round")
	f.IntVar(&rounds, "rounds", 3, "rounds; the cells compared with etcd repeat every round, alternating which system goes first")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&clientsFlag, "clients", "1,4,16,64", "concurrent clients (both sides)")
	f.StringVar(&sizesFlag, "sizes", "8,1024", "value sizes in bytes (both sides)")
	f.StringVar(&engines, "engines", "paxos,chain", "Strata engines")
	f.StringVar(&modes, "modes", "persistent,memory", "Strata server storage modes")
	f.DurationVar(&dur, "duration", 3*time.Second, "measured window per cell (both sides)")
	f.DurationVar(&warmup, "warmup", 500*time.Millisecond, "warm-up before each cell's window (both sides)")
	f.StringVar(&dir, "dir", "strata-data/bench-wor", "data folder of the persistent servers and of etcd (on the project disk; emptied first)")
	f.StringVar(&lengthsFlag, "lengths", "1,3,5", "replica-set sizes for the latency-vs-chain-length sweep ('' to skip)")
	f.StringVar(&plotPath, "plot", "strata-data/bench/wor-lengths.png", "write the sweep's plot here ('' to skip)")
	f.BoolVar(&tlsCost, "tls-cost", false, "instead: what TLS costs WOR writes, write-precaptured (paxos) over tcp with and without TLS 1.3 (certificates made under --dir), each --modes, --clients, the first of --sizes, --rounds; prints 'write-throughput tls-cost strata-tls/strata'")
	f.BoolVar(&noEtcd, "no-etcd", false, "skip the etcd peer (3 members built from bench/etcd, go.etcd.io/etcd v3.6.16): no ratios")
	return c
}

// commaList splits a comma-separated flag value, dropping blanks.
func commaList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
