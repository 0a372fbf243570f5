package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"strata/mpcal/tla"
)

// mpcalCmd groups the Modular PlusCal tools. So far: the TLA+ front end.
func mpcalCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mpcal",
		Short: "Modular PlusCal tools (so far: parse and format TLA+ modules)",
		Long: `Modular PlusCal (MPCal) models are TLA+ modules with an MPCal algorithm in
a comment. This first part is the TLA+ front end: the lexer, the parser
(TLA+ 1 and the parts of TLA+ 2 that TLC handles) and the printer. The
PlusCal and MPCal parsers, the checks, the PlusCal generator and the TLC
driver are not built yet.`,
	}
	c.AddCommand(mpcalFmtCmd())
	return c
}

func mpcalFmtCmd() *cobra.Command {
	var write bool
	c := &cobra.Command{
		Use:   "fmt FILE.tla",
		Short: "Parse a TLA+ module and print it formatted (errors as file:line:col: syntax: message)",
		Long: `Parses FILE.tla and prints the module as Strata's printer writes it: one
definition per line group, operators with the parentheses their precedence
needs. The output parses back to the same syntax tree. Comments are not
kept (use -w only on files whose comments you do not need).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			m, err := tla.ParseModule(args[0], src)
			if err != nil {
				return err
			}
			out := tla.Format(m)
			if write {
				return os.WriteFile(args[0], []byte(out), 0o644)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), out)
			return err
		},
	}
	c.Flags().BoolVarP(&write, "write", "w", false, "write the result back to FILE.tla (comments are lost)")
	return c
}
