package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"strata/journal"
	"strata/journal/disk"
	"strata/journal/killtest"
)

func journalCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "journal",
		Short: "The crash-safe journal every node stores its data in",
	}
	c.AddCommand(journalDemoCmd(), journalCheckCmd())
	return c
}

func journalDemoCmd() *cobra.Command {
	var (
		dir        string
		rounds     int
		goroutines int
		child      string
	)
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run concurrent atomic operations, kill -9 the process, recover and verify",
		Long: `demo creates a journal file in --dir, then for each round starts a child
process that commits numbered operations from --goroutines goroutines (each
operation writes a 128-byte inode object and a 4 KiB block atomically and
waits for durability), kills it with SIGKILL at a random moment, recovers
the journal and checks that every acknowledged operation survived and that
no operation is half applied.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if goroutines < 1 || goroutines > 1024 {
				return fmt.Errorf("--goroutines must be in [1,1024], got %d", goroutines)
			}
			if child != "" {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
				defer stop()
				return killtest.Worker(ctx, child, goroutines, os.Stdout)
			}
			if rounds < 1 {
				return fmt.Errorf("--rounds must be at least 1, got %d", rounds)
			}
			return runDemo(cmd, dir, rounds, goroutines)
		},
	}
	c.Flags().StringVar(&dir, "dir", "strata-data", "folder for the journal file")
	c.Flags().IntVar(&rounds, "rounds", 5, "kill-and-recover rounds")
	c.Flags().IntVar(&goroutines, "goroutines", 8, "concurrent committers in the child")
	c.Flags().StringVar(&child, "child", "", "run as the child worker on this file (internal)")
	c.Flags().MarkHidden("child")
	return c
}

func runDemo(cmd *cobra.Command, dir string, rounds, goroutines int) error {
	out := cmd.OutOrStdout()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "journal.img")
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "journal demo: %s, %d rounds, %d committing goroutines per child\n", path, rounds, goroutines)
	const row = "%-6v %-13v %-13v %-16v %-21v %s\n" // rows print as rounds finish
	fmt.Fprintf(out, row, "round", "killed after", "acknowledged", "replayed blocks", "recovered op numbers", "checks")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	total := 0
	for r := 1; r <= rounds; r++ {
		child := exec.Command(self, "journal", "demo", "--child", path, "--goroutines", fmt.Sprint(goroutines))
		res, err := killtest.Round(cmd.Context(), child, path, goroutines, rng, 50*time.Millisecond, 400*time.Millisecond)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		total += res.Acked
		lo, hi := span(res.Recovered)
		fmt.Fprintf(out, row, r, res.KilledAt.Round(time.Millisecond), res.Acked, res.Replayed, fmt.Sprintf("%d..%d", lo, hi),
			fmt.Sprintf("every acknowledged op present; %d/%d workers' inode and block agree", goroutines, goroutines))
	}
	fmt.Fprintf(out, "OK: %d rounds of SIGKILL and recovery; %d acknowledged operations all survived, none torn\n", rounds, total)
	return nil
}

func span(m map[int]uint64) (lo, hi uint64) {
	vs := make([]uint64, 0, len(m))
	for _, v := range m {
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return 0, 0
	}
	return slices.Min(vs), slices.Max(vs)
}

func journalCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Recover a journal file and report its geometry and what recovery replayed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := disk.OpenFile(args[0])
			if err != nil {
				return err
			}
			j, err := journal.Open(d, journal.Options{})
			if err != nil {
				d.Close()
				return err
			}
			st := j.Stats()
			fmt.Fprintf(cmd.OutOrStdout(), "%s: journal OK: %d data blocks, replayed %d block updates\n", args[0], j.Size(), st.Recovered)
			return j.Close()
		},
	}
}
