package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"strata/bench/mpcalgo"
)

func benchMpcalGoCmd() *cobra.Command {
	var (
		quick, asJSON, noValues bool
		rounds, n, warmup       int
		valueN                  int
		modes                   string
		busyPoll                time.Duration
	)
	c := &cobra.Command{
		Use:   "mpcal-go",
		Short: "Go generated from MPCal vs hand-written Go: echo round trips, and TLA+ value operations",
		Long: `The PGo paper's echo experiment on Strata's Go back end.

Echo: --n sequential request/reply round trips (after --warmup untimed
ones) through code generated from mpcal/testdata/gogen/echobench/EchoBench.tla
(strata mpcal gogen; the client and server archetypes, each on its own
stack node on loopback UDP, messages through distsys.Mailboxes) against
the same echo written by hand in Go on the same kind of nodes (same stack
properties, same transport options, requests of the generated request's
size). Both run in this process. Each mailbox mode (--modes):
  relaxed:   the mailboxes send each section's messages at commit, one
             one-way message per destination (exact for sections with a
             single send, as here); stack Reliable,FIFO;
  two-phase: the mailboxes' two-phase commit (a prepare RPC at pre-commit,
             a one-way commit); stack Reliable,FIFO,RPC;
  last-agent: two-phase with MailboxOptions.LastAgent: a section whose one
             send is its only resource others see commits through one
             deliver RPC that the receiver decides (all of this model's
             sending sections); stack Reliable,FIFO,RPC.
Each round runs, per mode, both systems in alternating order (bench/kit
Order). Printed: mean, p50 and p99 round trip per system (medians over
rounds), the overhead of generated code over hand-written per mode, and
ratios "rtt generated/handwritten MODE" = hand-written mean / generated
mean (above 1: generated code is faster; median of the per-round ratios,
min-max).

TLA+ values: record update, set union and membership, and function
EXCEPT on --value-n-element values (distsys/tla), ns/op from
testing.Benchmark.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"rounds": "2", "n": "2000", "warmup": "200"}); err != nil {
					return err
				}
			}
			var ms []string
			for _, m := range strings.Split(modes, ",") {
				m = strings.TrimSpace(m)
				if m != mpcalgo.Relaxed && m != mpcalgo.TwoPhase && m != mpcalgo.LastAgent {
					return fmt.Errorf("--modes: unknown mode %q (want %s, %s, %s)", m, mpcalgo.Relaxed, mpcalgo.TwoPhase, mpcalgo.LastAgent)
				}
				ms = append(ms, m)
			}
			if rounds < 1 || n < 100 || warmup < 1 || valueN < 1 || valueN > 1_000_000 {
				return fmt.Errorf("--rounds >= 1, --n >= 100, --warmup >= 1 and --value-n in [1, 1000000] are required")
			}
			if busyPoll < 0 || busyPoll > time.Second {
				return fmt.Errorf("--busy-poll %v: want 0 to 1s", busyPoll)
			}
			rep, err := mpcalgo.Run(ctx, mpcalgo.Config{Rounds: rounds, N: n, Warmup: warmup, Modes: ms,
				BusyPoll: busyPoll, Values: !noValues, ValueN: valueN, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if asJSON {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				err = mpcalgo.Print(cmd.OutOrStdout(), rep)
			}
			return failedCells(rep, err)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 2 rounds of 2,000 round trips after 200 warm-up ones")
	f.BoolVar(&asJSON, "json", false, "print one JSON object (bench, config, results, ratios, spread)")
	f.BoolVar(&noValues, "no-values", false, "skip the TLA+ value microbenchmarks")
	f.IntVar(&rounds, "rounds", 5, "rounds (each runs both systems in every mode)")
	f.IntVar(&n, "n", 10000, "measured round trips per system, mode and round")
	f.IntVar(&warmup, "warmup", 1000, "untimed round trips before the measured ones")
	f.IntVar(&valueN, "value-n", 1000, "elements of the values in the TLA+ microbenchmarks")
	f.StringVar(&modes, "modes", "relaxed,two-phase,last-agent", "mailbox modes: relaxed, two-phase, last-agent")
	f.DurationVar(&busyPoll, "busy-poll", 0, "both systems' transports poll an empty socket this long before sleeping (0: never)")
	return c
}
