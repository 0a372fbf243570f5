package main

import (
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	benchmpcal "strata/bench/mpcal"
)

func benchMpcalCmd() *cobra.Command {
	var (
		quick, asJSON, noCold bool
		rounds, runs, warmup  int
		sizes                 string
		models                string
	)
	c := &cobra.Command{
		Use:   "mpcal",
		Short: "Strata's MPCal compiler vs pcal.trans (the reference PlusCal translator), both warm",
		Long: `Times, per input spec, each tool's translation of it, both warm and in
memory:

  Strata: MPCal -> PlusCal. The MPCal module text in, the module with the
    PlusCal translation out (mpcal.ParseFile, mpcal.Compile,
    File.WithPlusCal: what "strata mpcal pcalgen" does, minus the file
    I/O), in this process.
  pcal.trans: PlusCal -> TLA+, the next step of the same spec. The module
    with Strata's PlusCal in, the module with the TLA+ translation out
    (pcal.Translator from the TLA+ tools jar: what "pcal.trans -nocfg"
    does, minus the file I/O), in one JVM with default settings, driven by
    bench/mpcal/PcalBench.java (compiled at run time with javac against
    the jar; needs a JDK).

They are different translations of the same input, each the whole of its
tool's work. Each side runs --warmup untimed translations per input, then
every round --runs timed ones per input; the side that goes first
alternates every round. Every output is checked equal to the first (and,
for pcal.trans, to what the pcal.trans command writes). The ratio "time
strata/pcal.trans INPUT" is pcal.trans's time over Strata's (median of
the per-round ratios of the rounds' median runs; above 1: Strata is
faster).

A separate, labelled row ("cold process strata/pcal.trans INPUT", unless
--no-cold) times whole processes each round: "strata mpcal pcalgen" against
"java pcal.trans -nocfg", where pcal.trans's time is mostly JVM start-up.

Inputs: the largest MPCal model under --models and synthetic MPCal specs
of the given line counts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"rounds": "3", "runs": "5", "warmup": "10"}); err != nil {
					return err
				}
			}
			ns, err := parseInts("--sizes", sizes, 50, 200000)
			if err != nil {
				return err
			}
			if rounds < 1 || runs < 1 || warmup < 0 {
				return fmt.Errorf("--rounds and --runs must be at least 1, --warmup at least 0")
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			rep, err := benchmpcal.Run(ctx, benchmpcal.Config{
				Rounds: rounds, Runs: runs, Warmup: warmup, Sizes: ns, ModelsDir: models,
				Cold: !noCold, StrataCmd: []string{self}, Progress: cmd.ErrOrStderr(),
			})
			if err != nil {
				return err
			}
			if asJSON {
				return rep.WriteJSON(cmd.OutOrStdout())
			}
			return benchmpcal.Print(cmd.OutOrStdout(), rep)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 3 rounds of 5 runs after 10 warm-up runs")
	f.BoolVar(&asJSON, "json", false, "print one JSON object (bench, config, results, ratios, spread)")
	f.BoolVar(&noCold, "no-cold", false, "skip the cold whole-process row")
	f.IntVar(&rounds, "rounds", 7, "rounds (each runs both sides on every input)")
	f.IntVar(&runs, "runs", 10, "timed translations per side, input and round")
	f.IntVar(&warmup, "warmup", 30, "untimed translations per side and input before the first round")
	f.StringVar(&sizes, "sizes", "1000,2000,5000", "line counts of the synthetic MPCal specs")
	f.StringVar(&models, "models", "models", "folder searched for the largest MPCal model ('' to skip)")
	return c
}
