package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"strata/stack"
	"strata/stack/transport"
)

func stackServeCmd() *cobra.Command {
	var listen, props, metrics string
	var busyPoll time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run a node that answers RPCs (echo) and logs one-way messages, until interrupted",
		Long: `serve runs one node with the stack chosen for --props on a real UDP or TCP
socket. It answers every RPC with the request prefixed by "re:", logs one-way
messages, prints "listening on ADDR" once ready, and serves Prometheus
metrics (per-layer counters) on --metrics if given.`,
		Example: "  strata stack serve --listen udp:127.0.0.1:7000 --metrics 127.0.0.1:9100",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, err := listenNodeOpts(listen, props, transport.Options{BusyPoll: busyPoll})
			if err != nil {
				return err
			}
			defer n.Close()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			n.Handle(func(_ stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
			n.OnDeliver(func(from stack.Addr, b []byte) { log.Info("message", "from", from, "bytes", len(b)) })
			if metrics != "" {
				stopMetrics, err := serveMetrics(metrics, prometheus.NewRegistry(), n, log)
				if err != nil {
					return err
				}
				defer stopMetrics()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", n.Local())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&listen, "listen", "udp:127.0.0.1:7000", "transport address (udp:HOST:PORT or tcp:HOST:PORT)")
	c.Flags().StringVar(&props, "props", "Reliable,Fragment,RPC", "required properties")
	c.Flags().StringVar(&metrics, "metrics", "", "serve Prometheus metrics on this HOST:PORT")
	c.Flags().DurationVar(&busyPoll, "busy-poll", 0, busyPollHelp)
	addWANFlags(c)
	return c
}

// busyPollHelp describes the --busy-poll flag of the stack commands.
const busyPollHelp = "poll an empty socket this long before sleeping: lower latency for CPU time (e.g. 50us; 0: never)"

func stackCallCmd() *cobra.Command {
	var listen, to, props string
	var n int
	var timeout, busyPoll time.Duration
	var oneway bool
	c := &cobra.Command{
		Use:     "call MESSAGE",
		Short:   "Send RPCs (or one-way messages) to a node started with 'strata stack serve'",
		Example: "  strata stack call --to udp:127.0.0.1:7000 --n 3 hello",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return fmt.Errorf("--to is required")
			}
			if n < 1 {
				return fmt.Errorf("--n must be at least 1")
			}
			if listen == "" {
				kind, _, _ := strings.Cut(to, ":")
				listen = kind + ":127.0.0.1:0"
				if strings.Contains(to, "[") {
					listen = kind + ":[::1]:0"
				}
			}
			node, err := listenNodeOpts(listen, props, transport.Options{BusyPoll: busyPoll})
			if err != nil {
				return err
			}
			defer node.Close()
			out := cmd.OutOrStdout()
			for i := 0; i < n; i++ {
				if oneway {
					if err := node.Send(stack.Addr(to), []byte(args[0])); err != nil {
						return err
					}
					continue
				}
				ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
				t0 := time.Now()
				resp, err := node.Call(ctx, stack.Addr(to), []byte(args[0]), 0)
				cancel()
				if err != nil {
					return fmt.Errorf("call %d: %w", i+1, err)
				}
				fmt.Fprintf(out, "reply %d: %q in %v\n", i+1, resp, time.Since(t0).Round(time.Microsecond))
			}
			if oneway {
				// Reliability needs the acks: wait until nothing is unacknowledged.
				time.Sleep(200 * time.Millisecond)
				fmt.Fprintf(out, "sent %d message(s)\n", n)
			}
			return nil
		},
	}
	c.Flags().StringVar(&to, "to", "", "server address (udp:HOST:PORT or tcp:HOST:PORT)")
	c.Flags().StringVar(&listen, "listen", "", "own address (default: same transport, loopback, any port)")
	c.Flags().StringVar(&props, "props", "Reliable,Fragment,RPC", "required properties (must match the server's)")
	c.Flags().IntVar(&n, "n", 1, "how many")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "deadline per call")
	c.Flags().BoolVar(&oneway, "oneway", false, "send one-way messages instead of RPCs")
	c.Flags().DurationVar(&busyPoll, "busy-poll", 0, busyPollHelp)
	addWANFlags(c)
	return c
}
