package main

import (
	"github.com/spf13/cobra"
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
	c.AddCommand(benchJournalCmd(), benchStackCmd(), benchMcastCmd(), benchWorCmd(), benchNFSCmd(), benchMpcalCmd(), benchGeoCmd(), benchKVCmd(), benchLogCmd(), benchTxCmd(), benchGeoKVCmd(), benchMpcalGoCmd(), benchCRDTCmd())
	return c
}
