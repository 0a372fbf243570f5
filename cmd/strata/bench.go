package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"strata/internal/jbench"
)

func benchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that run Strata and a peer side by side and print ratios",
		Long: `Each benchmark runs Strata and a peer in the same run, alternating, for
several rounds, and prints the median ratio with its spread. Every ratio is
oriented so that a value above 1 means Strata is better. --quick runs a
reduced set in a few minutes; --json prints one JSON object instead of tables.`,
	}
	c.AddCommand(benchJournalCmd(), benchStackCmd(), benchMcastCmd(), benchWorCmd(), benchNFSCmd(), benchMpcalCmd(), benchGeoCmd())
	return c
}

func benchJournalCmd() *cobra.Command {
	var (
		quick, asJSON, worker, wait bool
		gs, waits                   string
		dur                         time.Duration
		rounds, flushEvery, g       int
		diskDir, tmpfsDir, peerSrc  string
		file, cpuProfile, plotPath  string
		logBlocks                   uint64
	)
	c := &cobra.Command{
		Use:   "journal",
		Short: "Strata's journal vs GoJournal (github.com/mit-pdos/go-journal v0.5.4)",
		Long: `Runs the NFS-write workload (each operation: one 128-byte inode object and
one 4 KiB block, committed atomically) with G goroutines on Strata's journal
and on GoJournal, each in its own process on its own 64 MiB file, on the
project disk (real fdatasync) and on tmpfs, with wait=true and with
wait=false plus a Flush every --flush-every operations. The peer is built
from the separate module bench/gojournal (needs the Go toolchain and the
module proxy). Prints ops/s, p50/p99 latency, per-cell ratios and, for the
disk, how close Strata gets to the fsync-bound limit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if worker {
				if cpuProfile != "" {
					f, err := os.Create(cpuProfile)
					if err != nil {
						return err
					}
					defer f.Close()
					if err := pprof.StartCPUProfile(f); err != nil {
						return err
					}
					defer pprof.StopCPUProfile()
				}
				res, err := jbench.RunStrata(ctx, jbench.WorkerConfig{File: file, Goroutines: g, Duration: dur, Wait: wait, FlushEvery: flushEvery, LogBlocks: logBlocks})
				if err != nil {
					return err
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			if quick {
				if err := quickDefaults(cmd, map[string]string{"goroutines": "1,8,32", "duration": "1s", "rounds": "2"}); err != nil {
					return err
				}
			}
			return runJournalBench(ctx, cmd, asJSON, gs, waits, dur, rounds, flushEvery, logBlocks, diskDir, tmpfsDir, peerSrc, plotPath)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: G in {1,8,32}, 1s cells, 2 rounds")
	f.BoolVar(&asJSON, "json", false, "print one JSON object with results and ratios")
	f.StringVar(&gs, "goroutines", "1,2,4,8,16,32", "comma-separated goroutine counts")
	f.StringVar(&waits, "modes", "wait,nowait", "comma-separated commit modes: wait, nowait")
	f.DurationVar(&dur, "duration", 3*time.Second, "measured time per cell and system")
	f.IntVar(&rounds, "rounds", 3, "rounds (each runs every cell for both systems)")
	f.IntVar(&flushEvery, "flush-every", 16, "with nowait: Flush after this many operations per goroutine")
	f.Uint64Var(&logBlocks, "log-blocks", 4096, "Strata's log size in 4 KiB blocks")
	f.StringVar(&diskDir, "disk-dir", "strata-data/bench", "folder on the real disk")
	f.StringVar(&tmpfsDir, "tmpfs-dir", "/dev/shm/strata-bench", "folder on tmpfs ('' to skip)")
	f.StringVar(&plotPath, "plot", "strata-data/bench/journal.png", "write throughput curves to this PNG ('' to skip)")
	f.StringVar(&peerSrc, "peer-src", "", "path of bench/gojournal (default: found from the working directory)")
	// Worker mode (one Strata run; used by the harness).
	f.BoolVar(&worker, "worker", false, "run one Strata measurement and print JSON (internal)")
	f.StringVar(&file, "file", "", "worker: journal file")
	f.IntVar(&g, "g", 1, "worker: goroutines")
	f.BoolVar(&wait, "wait", true, "worker: commit with wait")
	f.StringVar(&cpuProfile, "cpuprofile", "", "worker: write a CPU profile here")
	for _, n := range []string{"worker", "file", "g", "wait", "cpuprofile"} {
		f.MarkHidden(n)
	}
	return c
}

func runJournalBench(ctx context.Context, cmd *cobra.Command, asJSON bool, gs, waits string, dur time.Duration, rounds, flushEvery int, logBlocks uint64, diskDir, tmpfsDir, peerSrc, plotPath string) error {
	var cfg jbench.Config
	var err error
	if cfg.Goroutines, err = parseInts("--goroutines", gs, 1, 1024); err != nil {
		return err
	}
	for _, s := range strings.Split(waits, ",") {
		switch strings.TrimSpace(s) {
		case "wait":
			cfg.Waits = append(cfg.Waits, true)
		case "nowait":
			cfg.Waits = append(cfg.Waits, false)
		default:
			return fmt.Errorf("--modes: unknown mode %q (want wait or nowait)", s)
		}
	}
	if rounds < 1 || dur <= 0 || flushEvery < 0 {
		return fmt.Errorf("--rounds must be >= 1, --duration > 0 and --flush-every >= 0")
	}
	cfg.Media = []jbench.Medium{{Name: "disk", Dir: diskDir}}
	if tmpfsDir != "" {
		cfg.Media = append(cfg.Media, jbench.Medium{Name: "tmpfs", Dir: tmpfsDir})
	}
	cfg.Duration, cfg.Rounds, cfg.FlushEvery, cfg.LogBlocks = dur, rounds, flushEvery, logBlocks
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.StrataCmd = []string{self, "bench", "journal", "--worker"}
	cfg.Progress = cmd.ErrOrStderr()
	if peerSrc == "" {
		wd, _ := os.Getwd()
		if peerSrc, err = jbench.FindPeerSource(wd, filepath.Dir(self)); err != nil {
			return err
		}
	}
	binDir, err := os.MkdirTemp("", "strata-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	cfg.PeerBin = filepath.Join(binDir, "gojournal-bench")
	fmt.Fprintf(cfg.Progress, "building the go-journal worker from %s\n", peerSrc)
	if err := jbench.BuildPeer(ctx, peerSrc, cfg.PeerBin); err != nil {
		return err
	}
	rep, err := jbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if plotPath != "" {
		if err := jbench.Plot(rep, plotPath); err != nil {
			return err
		}
		fmt.Fprintf(cfg.Progress, "wrote %s\n", plotPath)
	}
	if asJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		return enc.Encode(rep)
	}
	jbench.PrintTable(cmd.OutOrStdout(), rep, cfg)
	return nil
}
