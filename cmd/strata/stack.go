package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"strata/stack"
	"strata/stack/layers"
)

func stackCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "stack",
		Short: "Layered protocol stacks (Ensemble design): configure, inspect, trace",
	}
	c.AddCommand(stackShowCmd())
	return c
}

func stackShowCmd() *cobra.Command {
	var list string
	c := &cobra.Command{
		Use:   "show [PROPS]",
		Short: "Print the stack chosen for required properties, and why",
		Long: `show turns required properties (comma-separated: Reliable, FIFO, Fragment,
Flow, RPC) into an ordered list of layers and prints it top to bottom with
the reason for each layer. With --layers it validates a hand-written stack
instead (top first, e.g. top,rpc,frag,pt2pt,bottom) and says which layer
lacks what.`,
		Example: "  strata stack show Reliable,Fragment,RPC\n  strata stack show --layers top,frag,bottom",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if list != "" {
				specs, err := layers.Named(list)
				if err != nil {
					return err
				}
				provides, _ := stack.Validate(specs)
				fmt.Fprintf(out, "stack %s is valid; it provides %s\n", list, joinProps(provides))
				return nil
			}
			var props []stack.Prop
			if len(args) == 1 {
				var err error
				if props, err = layers.ParseProps(args[0]); err != nil {
					return err
				}
			}
			ch, err := layers.Configure(props)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "required: %s\nstack (top to bottom):\n", joinProps(props))
			for i := len(ch.Specs) - 1; i >= 0; i-- {
				s := ch.Specs[i]
				fmt.Fprintf(out, "  %-7s %-45s [%s]\n", s.Name, s.Doc, ch.Reasons[i])
			}
			fmt.Fprintf(out, "provides: %s\n", joinProps(ch.Provides))
			return nil
		},
	}
	c.Flags().StringVar(&list, "layers", "", "validate this hand-written stack (top first) instead")
	return c
}

func joinProps(ps []stack.Prop) string {
	if len(ps) == 0 {
		return "(nothing)"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}
