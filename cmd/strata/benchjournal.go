package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	benchjournal "strata/bench/journal"
)

func benchJournalCmd() *cobra.Command {
	var (
		quick, asJSON, worker, wait bool
		gs, waits, barriers         string
		dur                         time.Duration
		rounds, flushEvery, g       int
		diskDir, tmpfsDir, peerSrc  string
		file, cpuProfile, plotPath  string
		logBlocks                   uint64
	)
	c := &cobra.Command{
		Use:   "journal",
		Short: "Strata's journal vs GoJournal (github.com/mit-pdos/go-journal v0.5.4), both on fdatasync",
		Long: `Runs the NFS-write workload (each operation: one 128-byte inode object and
one 4 KiB block, committed atomically) with G goroutines on Strata's journal
and on GoJournal, each run in its own process on its own 64 MiB file
(created, fallocated, written with zeros and fsynced before the run, the
same preparation for both), on the project disk and on tmpfs, with
wait=true and with wait=false plus a Flush every --flush-every operations
per goroutine. The order of the systems rotates every round.

Strata: this binary's journal (strata/journal), log of --log-blocks blocks,
barrier fdatasync (journal/disk.FileDisk).
GoJournal: go-journal v0.5.4's jrnl/obj layers (log fixed at 511 blocks) over
goose's FileDisk, driven by bench/journal/gojournal (its own Go module,
built into the user cache; needs the Go toolchain and the module proxy the
first time). By default its barrier is fdatasync, like Strata's: goose's
FileDisk with only its Barrier replaced. --peer-barrier fsync runs goose's
FileDisk unchanged (fsync, GoJournal's own default) as "go-journal-fsync";
--peer-barrier fdatasync,fsync runs both.

Prints ops/s, p50/p99 latency (medians over rounds), per-cell ratios
(strata/peer throughput; peer/strata p50 latency: above 1 Strata is
better) and, for the disk, how close Strata gets to the fdatasync-bound
limit; then both sides' settings.`,
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
				if file == "" {
					return fmt.Errorf("--worker needs --file")
				}
				res, err := benchjournal.RunStrata(ctx, benchjournal.WorkerConfig{File: file, Goroutines: g, Duration: dur, Wait: wait, FlushEvery: flushEvery, LogBlocks: logBlocks})
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
			cfg := benchjournal.Config{Duration: dur, Rounds: rounds, FlushEvery: flushEvery, LogBlocks: logBlocks, PeerSrc: peerSrc, Progress: cmd.ErrOrStderr()}
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
			for _, s := range strings.Split(barriers, ",") {
				switch b := strings.TrimSpace(s); b {
				case benchjournal.BarrierFdatasync, benchjournal.BarrierFsync:
					cfg.PeerBarriers = append(cfg.PeerBarriers, b)
				default:
					return fmt.Errorf("--peer-barrier: unknown barrier %q (want fdatasync, fsync, or both: fdatasync,fsync)", s)
				}
			}
			if rounds < 1 || dur <= 0 || flushEvery < 0 {
				return fmt.Errorf("--rounds must be >= 1, --duration > 0 and --flush-every >= 0")
			}
			if logBlocks < 1 {
				return fmt.Errorf("--log-blocks must be at least 1")
			}
			cfg.Media = []benchjournal.Medium{{Name: "disk", Dir: diskDir}}
			if tmpfsDir != "" {
				cfg.Media = append(cfg.Media, benchjournal.Medium{Name: "tmpfs", Dir: tmpfsDir})
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.StrataCmd = []string{self, "bench", "journal", "--worker"}
			rep, err := benchjournal.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if plotPath != "" {
				if err := benchjournal.Plot(rep, plotPath); err != nil {
					return err
				}
				fmt.Fprintf(cfg.Progress, "wrote %s\n", plotPath)
			}
			if asJSON {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				err = benchjournal.Print(cmd.OutOrStdout(), rep)
			}
			return failedCells(rep, err)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: G in {1,8,32}, 1s cells, 2 rounds")
	f.BoolVar(&asJSON, "json", false, "print one JSON object (bench, config, results, ratios, spread)")
	f.StringVar(&gs, "goroutines", "1,2,4,8,16,32", "comma-separated goroutine counts")
	f.StringVar(&waits, "modes", "wait,nowait", "comma-separated commit modes: wait, nowait")
	f.StringVar(&barriers, "peer-barrier", "fdatasync", "GoJournal's barrier: fdatasync (Strata's), fsync (goose's own, as go-journal-fsync), or fdatasync,fsync")
	f.DurationVar(&dur, "duration", 3*time.Second, "measured time per cell and system")
	f.IntVar(&rounds, "rounds", 3, "rounds (each runs every cell for every system)")
	f.IntVar(&flushEvery, "flush-every", 16, "with nowait: Flush after this many operations per goroutine")
	f.Uint64Var(&logBlocks, "log-blocks", 4096, "Strata's log size in 4 KiB blocks")
	f.StringVar(&diskDir, "disk-dir", "strata-data/bench", "folder on the real disk")
	f.StringVar(&tmpfsDir, "tmpfs-dir", "/dev/shm/strata-bench", "folder on tmpfs ('' to skip)")
	f.StringVar(&plotPath, "plot", "strata-data/bench/journal.png", "write throughput curves to this PNG ('' to skip)")
	f.StringVar(&peerSrc, "peer-src", "", "path of bench/journal/gojournal (default: found from the working directory)")
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
