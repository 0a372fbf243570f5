package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	txbench "strata/bench/tx"
)

func benchTxCmd() *cobra.Command {
	var (
		quick, asJSON       bool
		dir, engine, plotTo string
		transfers, rounds   int
	)
	c := &cobra.Command{
		Use:   "tx",
		Short: "WormTX commit latency per variant, A8 to E3 (the WormSpace paper's Figure 13), on loopback",
		Long: `3 persistent wormservers ("strata wor serve", fdatasync before every reply)
and, in this process on UDP sockets, a TM and 3 RMs whose vote logs fsync
every record. Each variant runs --transfers transactions one at a time, each
an Add on an account of RM 0, an Add on one of RM 1 and a Get on one of RM
2, initiated at RM 0, after a warm-up of a tenth; rounds rotate the order of
the variants. Prints p50 and p99 per variant next to its message delays and
plots the p50s into --plot.

Not in this version: the bank workload against etcd's Txn (issue 28).

--quick: 100 transactions per variant, 1 round.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"transfers": "100", "rounds": "1"}); err != nil {
					return err
				}
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			rep, err := txbench.Run(ctx, txbench.Config{Strata: self, Dir: filepath.Join(dir, "tx"), Transfers: transfers, Rounds: rounds,
				Engine: engine, PlotPath: plotTo, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if asJSON {
				if err := rep.WriteJSON(cmd.OutOrStdout()); err != nil {
					return err
				}
			} else {
				txbench.Print(cmd.OutOrStdout(), rep)
			}
			if len(rep.Failures) > 0 {
				return fmt.Errorf("%d cells failed", len(rep.Failures))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "reduced run: 100 transactions per variant, 1 round")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	c.Flags().StringVar(&dir, "dir", "strata-data/bench", "data folder (emptied first)")
	c.Flags().StringVar(&engine, "engine", "paxos", "WOR engine: paxos or chain")
	c.Flags().StringVar(&plotTo, "plot", "docs/img/wormtx-variants.png", "PNG of p50 per variant (empty: none)")
	c.Flags().IntVar(&transfers, "transfers", 1000, "measured transactions per variant and round")
	c.Flags().IntVar(&rounds, "rounds", 3, "rounds")
	return c
}
