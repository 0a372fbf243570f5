package main

import "github.com/spf13/cobra"

func benchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks that run Strata and a peer side by side and print ratios",
	}
	return c
}
