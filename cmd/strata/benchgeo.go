package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"strata/geo"
	"strata/internal/geobench"
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
			var cs []geobench.Case
			for _, s := range strings.Split(cases, ",") {
				c, err := geobench.ParseCase(s)
				if err != nil {
					return fmt.Errorf("--cases: %w", err)
				}
				cs = append(cs, c)
			}
			progress := cmd.ErrOrStderr()
			dir, err := geobench.FindPeerDir(peerDir)
			if err != nil {
				return err
			}
			peer, err := geobench.SetupVenv(ctx, venv, dir, progress)
			if err != nil {
				return err
			}
			t0 := time.Now()
			rep, err := geobench.Run(ctx, geobench.Config{
				Instances: instances, Rounds: rounds, Seed: seed, F: 1, Cases: cs,
				Peer: peer, TimeLimit: timeLimit, Progress: progress,
				MismatchDir: "strata-data/bench/geo-mismatch",
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(progress, "bench geo: %d plans in %s\n", len(rep.Results), time.Since(t0).Round(time.Second))
			var camp *geo.CampaignResult
			var campWall time.Duration
			if !noCampaign {
				fmt.Fprintf(progress, "bench geo: Table 1 campaign, %d access sets per type\n", sets)
				t1 := time.Now()
				last := time.Now()
				r, err := geo.Campaign(ctx, geo.CampaignOptions{Sets: sets, Seed: 1, F: 1, Progress: func(done, total int) {
					if time.Since(last) > 10*time.Second || done == total {
						last = time.Now()
						fmt.Fprintf(progress, "bench geo: campaign %d/%d access sets\n", done, total)
					}
				}})
				if err != nil {
					return fmt.Errorf("campaign: %w", err)
				}
				campWall = time.Since(t1)
				camp = &r
			}
			out := cmd.OutOrStdout()
			keys, med, lo, hi := rep.Ratios()
			if asJSON {
				ratios := map[string]float64{}
				for _, k := range keys {
					ratios["plan-time strata/highs "+k] = med[k]
				}
				obj := map[string]any{"bench": "geo", "results": rep.Results, "ratios": ratios, "mismatches": rep.Mismatches}
				if camp != nil {
					obj["campaign"] = map[string]any{"sets_per_type": sets, "wall_s": campWall.Seconds(), "median_gap": camp.Median, "paper": geobench.PaperTable1}
				}
				b, err := geobench.MarshalIndent(obj)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(b))
			} else {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintln(tw, "instance\tcase\tStrata ms\tHiGHS s\tHiGHS/Strata\tsame optimum\toptimum\t")
				maxMs := 0.0
				for _, r := range rep.Results {
					same := "yes"
					if !r.Same {
						same = "NO"
					}
					maxMs = max(maxMs, r.StrataMaxMs)
					fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.2f\t%.0f\t%s\t%.4g\t\n", r.Instance, r.Case, r.StrataMs, r.HighsS, r.Ratio, same, r.StrataValue)
				}
				tw.Flush()
				for _, k := range keys {
					fmt.Fprintf(out, "plan-time strata/highs %-18s median %.0fx (range %.0f-%.0f)\n", k, med[k], lo[k], hi[k])
				}
				fmt.Fprintf(out, "slowest Strata plan: %.1f ms; optima agree on %d of %d plans\n", maxMs, len(rep.Results)-rep.Mismatches, len(rep.Results))
				for _, r := range rep.Results {
					if !r.Same {
						fmt.Fprintf(out, "MISMATCH %s %s (%s; read<=%g write<=%g storage<=%g): %s\n  strata: %s\n  highs:  %s\n",
							r.Instance, r.Case, strings.Join(r.Access, ","), r.ReadBound, r.WriteBound, r.StorageBound, r.Problem, r.StrataPlan, r.HighsPlan)
					}
				}
				if camp != nil {
					fmt.Fprintf(out, "Table 1 campaign (%d access sets per type, seed 1): %s wall\n", sets, campWall.Round(time.Second))
					geobench.WriteTable1(out, camp.Median)
				}
			}
			if rep.Mismatches > 0 {
				return fmt.Errorf("bench geo: %d of %d plans disagree between Strata and HiGHS (instances in strata-data/bench/geo-mismatch)", rep.Mismatches, len(rep.Results))
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 4 access sets, 2 rounds, no campaign")
	f.BoolVar(&asJSON, "json", false, "print one JSON object with results and ratios")
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
