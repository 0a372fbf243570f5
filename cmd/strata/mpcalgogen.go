package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"strata/mpcal"
)

func mpcalGogenCmd() *cobra.Command {
	var pkg, out string
	c := &cobra.Command{
		Use:   "gogen FILE.tla",
		Short: "Compile an MPCal model's archetypes to a Go package over the distsys runtime",
		Long: `Parses and checks the --mpcal algorithm in FILE.tla and writes Go code for
it: a Constants struct and New (a missing constant is an error naming its
declaration), one method per module operator or define the archetypes use,
per archetype a *distsys.Archetype with one critical section per label
(each commented with its MPCal position), and per procedure the
archetypes call a *distsys.Procedure the same way (call and return move a
frame stack that an aborted section rolls back). Processes and mapping macros
are not compiled: the Go program binds resources (distsys.Mailboxes over
Strata's stack, channels, local state) to the archetypes' parameters.
Constructs the Go back end does not support are reported as
file:line:col: unsupported: message. See docs/distsys.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := readAlgorithm(args[0])
			if err != nil {
				return err
			}
			src, err := mpcal.GenerateGo(f, mpcal.GoOptions{Package: pkg})
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(src)
				return err
			}
			if err := os.WriteFile(out, src, 0o644); err != nil {
				return fmt.Errorf("gogen: %w", err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&pkg, "package", "", "Go package name (default: the algorithm's name, lower-cased)")
	c.Flags().StringVarP(&out, "output", "o", "", "write the Go file here (default: standard output)")
	return c
}
