package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	benchgeo "strata/bench/geo"
)

func benchGeoCmd() *cobra.Command {
	var (
		quick, asJSON, noCampaign bool
		rounds, instances, sets   int
		seed                      uint64
		cases, peerDir, venv      string
		timeLimit                 float64
	)
	c := &cobra.Command{
		Use:   "geo",
		Short: "Strata's geo planner vs the same plans as MIPs solved by HiGHS (PyPI highspy)",
		Long: `Draws --instances random access sets (3-5 front-ends, cycling through
NA, NA-EU, NA-AS and GL) over the 25 Azure candidate sites, f = 1, and for
each case (protocol/objective; bounds as in the paper's Figure 2: a read
bound 1.25 times the protocol's least read latency at storage 6, then
min write with storage <= 6, or min storage with writes <= 300 ms) times
geo.Solve against bench/geo/highs_plan.py, which formulates the same model
as a mixed integer program for HiGHS. Rounds alternate which goes first.
Each plan's optima are compared (and both plans verified by geo's
Plan.Check); any disagreement is reported loudly, with the instance saved.
HiGHS's time is its run() call alone (no Python start, no model building).
Then, unless --quick or --no-campaign, the full Table 1 campaign (Strata
only) with its wall time, our medians beside the paper's.

Strata: geo.Solve in this process (one thread), timed around the call.
HiGHS: highspy from bench/geo/requirements.txt (version printed under
settings), default threads, --highs-time-limit per plan; its time is
HiGHS's run() alone. Ratio keys "plan-time strata/highs CASE" (and "all"):
the median over plans and rounds of HiGHS's time over Strata's (above 1:
Strata is faster).

The peer runs in a venv under strata-data/bench/geo-venv, created on first
use (python3 -m venv, pip install -r bench/geo/requirements.txt).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"rounds": "2", "instances": "4"}); err != nil {
					return err
				}
				noCampaign = true
			}
			if rounds < 1 || instances < 1 {
				return fmt.Errorf("--rounds and --instances must be at least 1")
			}
			if timeLimit < 0 {
				return fmt.Errorf("--highs-time-limit must be >= 0 (0: none)")
			}
			if !noCampaign && sets < 1 {
				return fmt.Errorf("--sets must be at least 1 (or --no-campaign)")
			}
			var cs []benchgeo.Case
			for _, s := range strings.Split(cases, ",") {
				c, err := benchgeo.ParseCase(s)
				if err != nil {
					return fmt.Errorf("--cases: %w", err)
				}
				cs = append(cs, c)
			}
			progress := cmd.ErrOrStderr()
			cfg := benchgeo.Config{
				Instances: instances, Rounds: rounds, Seed: seed, F: 1, Cases: cs,
				PeerDir: peerDir, Venv: venv, TimeLimit: timeLimit, Progress: progress,
				MismatchDir: "strata-data/bench/geo-mismatch",
			}
			if !noCampaign {
				cfg.CampaignSets = sets
			}
			t0 := time.Now()
			rep, err := benchgeo.Run(ctx, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(progress, "bench geo: done in %s\n", time.Since(t0).Round(time.Second))
			if asJSON {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				err = benchgeo.Print(cmd.OutOrStdout(), rep)
			}
			if err != nil {
				return err
			}
			return benchgeo.Check(rep)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 4 access sets, 2 rounds, no campaign")
	f.BoolVar(&asJSON, "json", false, "print one JSON object (bench, config, results, ratios, spread)")
	f.BoolVar(&noCampaign, "no-campaign", false, "skip the Table 1 campaign")
	f.IntVar(&rounds, "rounds", 3, "rounds (each times both planners on every plan)")
	f.IntVar(&instances, "instances", 8, "random access sets")
	f.IntVar(&sets, "sets", 200, "campaign access sets per type")
	f.Uint64Var(&seed, "seed", 1, "seed of the access sets")
	f.StringVar(&cases, "cases", "pando/write,pando/storage,epaxos/write,epaxos/storage,rspaxos/write,rspaxos/storage", "protocol/objective pairs")
	f.StringVar(&peerDir, "peer-dir", "", "folder of highs_plan.py and requirements.txt (default: bench/geo found from the working directory)")
	f.StringVar(&venv, "venv", "strata-data/bench/geo-venv", "Python venv for highspy (created if absent)")
	f.Float64Var(&timeLimit, "highs-time-limit", 600, "HiGHS time limit per plan, seconds (0: none)")
	return c
}
