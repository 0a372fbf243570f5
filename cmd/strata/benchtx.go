package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	txbench "strata/bench/tx"
)

func benchTxCmd() *cobra.Command {
	var (
		quick, asJSON, noEtcd            bool
		dir, engine, plotTo, bankClients string
		transfers, rounds, bankAccounts  int
		bankWarmup, bankWindow           time.Duration
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

Then the bank workload against etcd v3.6.16 (bench/etcd: 3 members, its
defaults, fsync on every commit; built into the user cache on first use):
--bank-accounts accounts, transfers of 1..10 between two random accounts by
--bank-clients concurrent clients, each transfer one transaction. Strata: an
E3 transaction from a random RM (two Adds, the source's refusing to go
negative), lock conflicts retried after a random pause (Immediate-Restart).
etcd: its own clientv3 in a child process, a Txn reading both balances,
then a Txn comparing both keys' mod revisions and putting both, a failed
compare retried. Same generator and seed on both sides (bench/ycsb's
bank.go); rounds alternate which system goes first; ratio transfers/s
strata/etcd per client count (> 1: Strata better; issue 28's target 1.0).

--quick: 100 transactions per variant, 1 round, 2 s bank windows.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if quick {
				if err := quickDefaults(cmd, map[string]string{"transfers": "100", "rounds": "1", "bank-window": "2s"}); err != nil {
					return err
				}
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			var clients []int
			if bankClients != "" {
				if clients, err = parseInts("--bank-clients", bankClients, 1, 1024); err != nil {
					return err
				}
			}
			rep, err := txbench.Run(ctx, txbench.Config{Strata: self, Dir: filepath.Join(dir, "tx"), Transfers: transfers, Rounds: rounds,
				Engine: engine, PlotPath: plotTo, Progress: cmd.ErrOrStderr(),
				BankClients: clients, BankAccounts: bankAccounts, BankWarmup: bankWarmup, BankWindow: bankWindow, NoEtcd: noEtcd})
			if err != nil {
				return err
			}
			return printReport(cmd, rep, asJSON, txbench.Print)
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "reduced run: 100 transactions per variant, 1 round")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	c.Flags().StringVar(&dir, "dir", "strata-data/bench", "data folder (emptied first)")
	c.Flags().StringVar(&engine, "engine", "paxos", "WOR engine: paxos or chain")
	c.Flags().StringVar(&plotTo, "plot", "docs/img/wormtx-variants.png", "PNG of p50 per variant (empty: none)")
	c.Flags().IntVar(&transfers, "transfers", 1000, "measured transactions per variant and round")
	c.Flags().IntVar(&rounds, "rounds", 3, "rounds")
	c.Flags().StringVar(&bankClients, "bank-clients", "1,16", "concurrent clients of the bank cells (both sides; empty: no bank workload)")
	c.Flags().IntVar(&bankAccounts, "bank-accounts", 1000, "accounts of the bank workload")
	c.Flags().DurationVar(&bankWarmup, "bank-warmup", time.Second, "warm-up of each bank cell (both sides)")
	c.Flags().DurationVar(&bankWindow, "bank-window", 5*time.Second, "measured window of each bank cell (both sides)")
	c.Flags().BoolVar(&noEtcd, "no-etcd", false, "skip etcd (no ratios)")
	return c
}
