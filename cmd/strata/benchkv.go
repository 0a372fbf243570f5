package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	kvbench "strata/bench/kv"
	"strata/bench/ycsb"
)

func benchKVCmd() *cobra.Command {
	var (
		quick, asJSON, noEtcd, noFailover        bool
		clientsFlag, recordsFlag, workloads, dir string
		dur, warmup, timeout, drain              time.Duration
		rounds, valueSize, loadClients           int
		seed, worBlocks                          uint64
	)
	c := &cobra.Command{
		Use:   "kv",
		Short: "Key-value service vs etcd under YCSB workloads A-F (3 servers each, fsync on every commit)",
		Long: `YCSB core workloads A-F (bench/ycsb, an in-house Go driver of YCSB 0.17's
CoreWorkload: keys "user"+FNV hash, one field of --value-size bytes, zipfian
0.99 scrambled over the records, D "latest", E scans of 1..100 records) against
both systems, 3 servers each on this machine, durable on every commit:

Strata: 3 persistent wormservers ("strata wor serve", journals under
--dir/strata on the project disk, fdatasync before every reply) and 3
"strata kv serve" processes over them (WormPaxos), as "strata up" runs them;
driven from this process by a kv.Client, linearizable reads.

etcd: v3.6.16 (bench/etcd, built on first use into the user cache: several
minutes), 3 embedded members (one process each, data under --dir/etcd, its
defaults: fsync on every commit), gRPC over TCP on loopback; driven by etcd's
own clientv3 in a process per phase (bench/etcd/ycsb) running the same
generator; linearizable Gets; history compacted after each phase, outside
the measurement.

For each record count of --records (a phase): load both systems to it
(--load-clients), then --rounds rounds; each round runs every workload with
every client count on both systems (closed-loop clients, a --warmup, then a
--duration window), the system that goes first alternating. After each load
the loaded system keeps running alone until its background work has ended
(its disk sync rate back near its idle rate, at most --drain; the same rule
for both systems, the wait reported with the load): a bulk load leaves a
snapshot being written (Strata) or a backend being committed (etcd), and the
cells measure the database, not the load's tail. Only one system
runs at a time: while one system's cells, loads and trials run, the other's
server processes are stopped with SIGSTOP (an idle Strata leader writes a
heartbeat entry every 50 ms, a journal fdatasync at each wormserver); before
its own, a system is resumed with SIGCONT and probed until healthy (a write, a
linearizable read, every server naming the same leader, confirmed twice the
election timeout later), outside the measurement; the report lists every
resume's time to healthy and each system's idle disk sync rate, measured once
at the start. Interrupted (SIGINT, SIGTERM, SIGHUP), it resumes and stops
every server. Ratios pair the
systems within a round: ops/s strata/etcd and p50 etcd/strata (> 1: Strata
better), median and range over rounds, printed beside issue 27's targets
(ops/s >= 1.5x on A, B, C, D, F and >= 1.0x on E; p50 at 1 client <= 0.8x
etcd's) with met / NOT MET. Once per phase it kills the Strata kv leader's
process with SIGKILL while a client writes (failover time: to the first write
issued after the kill completing) and restarts it (recovery time); with two
or more record counts, Strata's ops/s at the largest over the smallest
(target >= 0.8: within 20%).

--quick: 1 and 16 clients, 1 round, 2 s windows, still 100,000 records
(--records overrides); the full run: 1, 16, 64 clients, 3 rounds, 5 s
windows, 100,000 then 1,000,000 records. Exits non-zero if either system does
not start (--no-etcd skips etcd) or a Strata cell fails.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Interrupted or terminated, the run still resumes the servers
			// it paused and stops them.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"clients": "1,16", "rounds": "1", "duration": "2s", "warmup": "500ms", "records": "100000"}); err != nil {
					return err
				}
			}
			cfg := kvbench.Config{Dir: dir, Measure: dur, Warmup: warmup, Rounds: rounds, ValueSize: valueSize, LoadClients: loadClients,
				Seed: seed, OpTimeout: timeout, Etcd: !noEtcd, Failover: !noFailover, Drain: drain, WorBlocks: worBlocks, Progress: cmd.ErrOrStderr(),
				Workloads: commaList(workloads)}
			var err error
			if cfg.Clients, err = parseInts("--clients", clientsFlag, 1, 1024); err != nil {
				return err
			}
			recs, err := parseInts("--records", recordsFlag, ycsb.MinRecords, 1_000_000_000)
			if err != nil {
				return err
			}
			for _, r := range recs {
				cfg.Records = append(cfg.Records, int64(r))
			}
			for _, w := range cfg.Workloads {
				if _, err := ycsb.Lookup(w); err != nil {
					return fmt.Errorf("--workloads: %w", err)
				}
			}
			if rounds < 1 {
				return fmt.Errorf("--rounds must be at least 1, not %d", rounds)
			}
			if dur <= 0 || warmup < 0 {
				return fmt.Errorf("--duration must be positive and --warmup not negative")
			}
			if valueSize < 1 || valueSize > 256<<10 {
				return fmt.Errorf("--value-size %d: want 1..%d", valueSize, 256<<10)
			}
			if loadClients < 1 {
				return fmt.Errorf("--load-clients must be at least 1")
			}
			rep, err := kvbench.Run(ctx, cfg)
			if errors.Is(err, kvbench.ErrEtcdStart) {
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
				kvbench.Print(cmd.OutOrStdout(), rep)
			}
			return err
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 1 and 16 clients, 1 round, 2 s windows, 100,000 records")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&clientsFlag, "clients", "1,16,64", "concurrent clients (both sides)")
	f.StringVar(&recordsFlag, "records", "100000,1000000", "record counts, ascending: each phase loads up to it, then measures")
	f.StringVar(&workloads, "workloads", "A,B,C,D,E,F", "YCSB core workloads")
	f.IntVar(&rounds, "rounds", 3, "rounds per record count, alternating which system goes first")
	f.DurationVar(&dur, "duration", 5*time.Second, "measured window per cell (both sides)")
	f.DurationVar(&warmup, "warmup", time.Second, "warm-up before each cell's window (both sides)")
	f.IntVar(&valueSize, "value-size", 1024, "bytes of a record's one field")
	f.IntVar(&loadClients, "load-clients", 64, "clients inserting the records of a load phase")
	f.Uint64Var(&seed, "seed", 1, "seed of the YCSB generators (the same cells get the same seeds on both sides)")
	f.DurationVar(&timeout, "timeout", ycsb.DefaultOpTimeout, "per-request timeout (both sides)")
	f.StringVar(&dir, "dir", "strata-data/bench-kv", "data folder of both systems (on the project disk; emptied first)")
	f.Uint64Var(&worBlocks, "wor-blocks", 0, "journal size of each wormserver in 4 KiB blocks (0: four copies of the largest phase's data)")
	f.BoolVar(&noEtcd, "no-etcd", false, "skip the etcd peer (3 members built from bench/etcd, go.etcd.io/etcd v3.6.16): no ratios")
	f.BoolVar(&noFailover, "no-failover", false, "skip Strata's failover and recovery trials")
	f.DurationVar(&drain, "drain", 5*time.Minute, "after each load, wait up to this long for the loaded system's background work (disk syncs back near its idle rate; same rule for both) before its cells (0: measure at once)")
	return c
}
