package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
)

func stackCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "stack",
		Short: "Layered protocol stacks (Ensemble design): configure, inspect, trace",
	}
	c.AddCommand(stackShowCmd(), stackTraceCmd(), stackServeCmd(), stackCallCmd(), stackChatCmd())
	return c
}

func stackShowCmd() *cobra.Command {
	var list string
	c := &cobra.Command{
		Use:   "show [PROPS]",
		Short: "Print the stack chosen for required properties, and why",
		Long: `show turns required properties (comma-separated: Reliable, FIFO, Fragment,
Flow, RPC; for groups Multicast, Stability, SelfDelivery, CastFlow, Total,
Membership, Vsync) into an ordered list of layers and prints it top to
bottom with the reason for each layer. With --layers it validates a hand-written stack
instead (top first, e.g. top,rpc,frag,pt2pt,bottom) and says which layer
lacks what.`,
		Example: "  strata stack show Reliable,Fragment,RPC\n  strata stack show Total,Membership\n  strata stack show --layers top,frag,bottom",
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

func stackTraceCmd() *cobra.Command {
	var (
		props      string
		size       int
		loss       float64
		seed       uint64
		functional bool
	)
	c := &cobra.Command{
		Use:   "trace",
		Short: "Run two nodes on the simulated network and print every event at every layer boundary",
		Long: `trace builds the stack for --props on two nodes (sim:a, sim:b) joined by a
simulated 1 ms link (with --loss), sends one message of --size bytes from a
to b and makes one RPC from a to b, and prints each event as it is handed to
a layer or leaves the stack, with the virtual time. The run is deterministic:
the same --seed prints the same trace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := layers.ParseProps(props)
			if err != nil {
				return err
			}
			ch, err := layers.Configure(ps)
			if err != nil {
				return err
			}
			if size < 0 || loss < 0 || loss >= 1 {
				return fmt.Errorf("--size must be >= 0 and --loss in [0,1)")
			}
			out := cmd.OutOrStdout()
			net := sim.New(seed)
			net.SetDefault(sim.Link{Delay: time.Millisecond, Loss: loss})
			names := make([]string, len(ch.Specs))
			for i, s := range ch.Specs {
				names[i] = s.Name
			}
			mk := func(a stack.Addr) (*stack.Node, error) {
				tr, err := net.Endpoint(a)
				if err != nil {
					return nil, err
				}
				trace := func(layer int, dir stack.Dir, ev stack.Event) {
					where := "app"
					switch {
					case layer < 0:
						where = "network"
					case layer < len(names):
						where = names[layer]
					}
					arrow := "↓"
					if dir == stack.Up {
						arrow = "↑"
					}
					fmt.Fprintf(out, "%10v  %s  %s %-8s %s\n", net.Now(), a, arrow, where, ev)
				}
				return stack.NewNode(tr, net.Clock(), layers.Build(ch.Specs, stack.Config{Local: a, Epoch: 1}),
					stack.NodeOptions{Imperative: !functional, Trace: trace}), nil
			}
			a, err := mk("sim:a")
			if err != nil {
				return err
			}
			b, err := mk("sim:b")
			if err != nil {
				return err
			}
			got := 0
			b.OnDeliver(func(stack.Addr, []byte) { got++ })
			b.Handle(func(_ stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
			fmt.Fprintf(out, "stack (bottom to top): %s\n", strings.Join(names, ", "))
			if err := a.Send("sim:b", make([]byte, size)); err != nil {
				return err
			}
			replied := false
			if contains(ps, stack.RPC) {
				a.CallAsync("sim:b", []byte("ping"), time.Second, func(r []byte, err error) {
					replied = true
					fmt.Fprintf(out, "reply: %q %v\n", r, err)
				})
			}
			net.RunUntil(func() bool { return got == 1 && (replied || !contains(ps, stack.RPC)) }, time.Minute)
			fmt.Fprintf(out, "delivered %d message(s) in %v of virtual time\n", got, net.Now())
			return nil
		},
	}
	c.Flags().StringVar(&props, "props", "Reliable,Fragment,RPC", "required properties")
	c.Flags().IntVar(&size, "size", 100, "bytes of the one-way message")
	c.Flags().Float64Var(&loss, "loss", 0, "loss probability of the simulated link")
	c.Flags().Uint64Var(&seed, "seed", 1, "simulation seed")
	c.Flags().BoolVar(&functional, "functional", false, "use the functional composition instead of the scheduler")
	return c
}

func contains(ps []stack.Prop, p stack.Prop) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}
