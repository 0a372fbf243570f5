// Command strata is the single binary of the Strata storage system.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "strata:", err)
		os.Exit(1)
	}
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "strata",
		Short: "Strata: a crash-safe, replicated, geo-aware storage system",
		Long: `Strata is one storage system built from the designs of five papers:
a crash-safe concurrent journal (GoJournal), layered protocol stacks
(Ensemble), write-once registers (WormSpace), erasure-coded geo storage
(Pando) and a Modular PlusCal compiler (PGo).

Start with:  strata up`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(upCmd(), journalCmd(), stackCmd(), worCmd(), nfsCmd(), benchCmd())
	return root
}
