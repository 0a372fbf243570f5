package main

import (
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"strata/bench/crdt"
)

func benchCRDTCmd() *cobra.Command {
	var (
		quick, asJSON bool
		nodes         string
		rounds, runs  int
		interval      time.Duration
	)
	c := &cobra.Command{
		Use:   "crdt",
		Short: "Convergence time of the CRDT set compiled from MPCal (the PGo paper's Figure 7)",
		Long: `The PGo paper's CRDT experiment (§7.6, Figure 7) on the add-wins set
compiled from models/crdt/AWORSet.tla.

Each cluster size in --nodes runs that many replicas in this process, each
on its own stack node on loopback UDP (Reliable,FIFO,Fragment) with a
distsys.CRDT resource that sends its whole state to every other replica
every --interval (50 ms, as in the paper). Every replica runs --rounds
rounds: in round r replica n adds <<r, n>> and waits until its own set
holds <<r, i>> for every replica i; its convergence time is the time from
the add's commit until then. Two systems on the same resource:
  generated:   each add goes through the ANode archetype compiled by
               strata mpcal gogen (input channel, critical sections,
               output channel);
  handwritten: each add is written and committed on the resource from Go.
(The paper compared with Roshi, which is not run here.) Each of --runs
runs every size with both systems in alternating order. Printed: mean,
p50 and p90 convergence time per size and system (medians over runs) and
the ratio "convergence p50 generated/handwritten N nodes" = hand-written
p50 / generated p50 (above 1: generated is faster; median over runs,
min-max).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"nodes": "3,5", "rounds": "20", "runs": "1"}); err != nil {
					return err
				}
			}
			ns, err := parseInts("--nodes", nodes, 2, 64)
			if err != nil {
				return err
			}
			if rounds < 1 || runs < 1 {
				return fmt.Errorf("--rounds and --runs must be at least 1")
			}
			if interval <= 0 {
				return fmt.Errorf("--interval %v: want a positive duration", interval)
			}
			rep, err := crdt.Run(ctx, crdt.Config{Nodes: ns, Rounds: rounds, Runs: runs, Interval: interval, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if asJSON {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				err = crdt.Print(cmd.OutOrStdout(), rep)
			}
			return failedCells(rep, err)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 3 and 5 replicas, 20 rounds, 1 run")
	f.BoolVar(&asJSON, "json", false, "print one JSON object (bench, config, results, ratios, spread)")
	f.StringVar(&nodes, "nodes", "3,5,7,9", "cluster sizes, comma-separated")
	f.IntVar(&rounds, "rounds", 100, "rounds per replica")
	f.IntVar(&runs, "runs", 3, "runs (each runs every size with both systems)")
	f.DurationVar(&interval, "interval", 50*time.Millisecond, "gossip period")
	return c
}
