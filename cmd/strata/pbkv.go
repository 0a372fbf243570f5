package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"strata/models/pbkv"
)

// Default addresses of `strata pbkv up`'s replicas: their stack (replica
// to replica) addresses and the TCP addresses clients use.
const (
	defaultPBKVReplicas = "udp:127.0.0.1:7501,udp:127.0.0.1:7502,udp:127.0.0.1:7503"
	defaultPBKVClients  = "127.0.0.1:7511,127.0.0.1:7512,127.0.0.1:7513"
)

func pbkvCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "pbkv",
		Short: "Primary-backup key-value store compiled from an MPCal model (models/pbkv)",
		Long: `pbkv is the primary-backup key-value store whose replicas run Go code
compiled by "strata mpcal gogen" from models/pbkv/PBKV.tla, the model TLC
checks. The primary is the lowest replica not suspected by the failure
detector; it pushes its state to every live backup before it answers.
Replicas crash and stay down: do not restart a killed replica under its
id. See docs/pbkv.md.`,
	}
	c.AddCommand(pbkvServeCmd(), pbkvUpCmd(), pbkvPutCmd(), pbkvGetCmd())
	return c
}

func pbkvList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func pbkvServeCmd() *cobra.Command {
	var id int
	var replicas, clients, listen string
	var heartbeat, suspect time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run one replica, until interrupted",
		Long: `serve runs replica --id (1-based position in --replicas, the stack addresses of
every replica in order, the same list on every replica) and takes client
requests on --listen (default: entry --id of --clients). Start every replica
within --suspect-after of the others. Prints "listening on HOST:PORT" (the
client address) once serving.`,
		Example: "  strata pbkv serve --id 1 --replicas " + defaultPBKVReplicas + " --clients " + defaultPBKVClients,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reps := pbkvList(replicas)
			if listen == "" {
				cl := pbkvList(clients)
				if id < 1 || id > len(cl) {
					return fmt.Errorf("--id %d: no entry %d in --clients (%d addresses); give --listen", id, id, len(cl))
				}
				listen = cl[id-1]
			}
			s, err := pbkv.NewServer(pbkv.ServerConfig{ID: id, Replicas: reps, Listen: listen,
				Heartbeat: heartbeat, SuspectAfter: suspect})
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", s.Addr())
			return s.Run(ctx)
		},
	}
	c.Flags().IntVar(&id, "id", 0, "this replica's position in --replicas (1 is the first primary)")
	c.Flags().StringVar(&replicas, "replicas", defaultPBKVReplicas, "every replica's stack address, in order, comma-separated")
	c.Flags().StringVar(&clients, "clients", defaultPBKVClients, "every replica's client address, in order, comma-separated")
	c.Flags().StringVar(&listen, "listen", "", "client address of this replica (default: entry --id of --clients)")
	c.Flags().DurationVar(&heartbeat, "heartbeat", 100*time.Millisecond, "failure detector heartbeat interval")
	c.Flags().DurationVar(&suspect, "suspect-after", time.Second, "silence after which a replica is suspected (for good)")
	return c
}

func pbkvUpCmd() *cobra.Command {
	var replicas, clients string
	c := &cobra.Command{
		Use:   "up",
		Short: "Run 3 replicas on loopback as child processes, until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reps, cls := pbkvList(replicas), pbkvList(clients)
			if len(reps) != len(cls) || len(reps) == 0 {
				return fmt.Errorf("--replicas has %d addresses and --clients %d: want the same number, at least one", len(reps), len(cls))
			}
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			exited := make(chan error, len(reps))
			var procs []*exec.Cmd
			reaped := 0
			defer func() {
				for _, p := range procs {
					p.Process.Signal(syscall.SIGTERM) // an exited one ignores it
				}
				for ; reaped < len(procs); reaped++ {
					<-exited
				}
			}()
			for i := range reps {
				p := exec.Command(bin, "pbkv", "serve", "--id", fmt.Sprint(i+1),
					"--replicas", strings.Join(reps, ","), "--clients", strings.Join(cls, ","))
				p.Stdout, p.Stderr = cmd.ErrOrStderr(), cmd.ErrOrStderr()
				if err := p.Start(); err != nil {
					return err
				}
				procs = append(procs, p)
				go func() { exited <- p.Wait() }()
			}
			fmt.Fprintf(cmd.OutOrStdout(), `pbkv: %d replicas (pids`, len(procs))
			for _, p := range procs {
				fmt.Fprintf(cmd.OutOrStdout(), " %d", p.Process.Pid)
			}
			fmt.Fprintf(cmd.OutOrStdout(), `), clients at %s
try: strata pbkv put hello world; strata pbkv get hello
kill -9 the first pid (the primary) and the commands keep working. Ctrl-C stops them.
`, strings.Join(cls, ","))
			// A replica that exits (killed, say) stays down: the others
			// go on without it, as the model's crash-stop replicas do.
			for reaped < len(procs) {
				select {
				case <-ctx.Done():
					return nil
				case err := <-exited:
					reaped++
					fmt.Fprintf(cmd.ErrOrStderr(), "pbkv: a replica exited (%v); %d left\n", err, len(procs)-reaped)
				}
			}
			return errors.New("every replica exited")
		},
	}
	c.Flags().StringVar(&replicas, "replicas", defaultPBKVReplicas, "the replicas' stack addresses, in order")
	c.Flags().StringVar(&clients, "clients", defaultPBKVClients, "the replicas' client addresses, in order")
	return c
}

type pbkvClientFlags struct {
	servers string
	timeout time.Duration
}

func (f *pbkvClientFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.servers, "servers", defaultPBKVClients, "the replicas' client addresses, in replica order, comma-separated")
	c.Flags().DurationVar(&f.timeout, "timeout", 20*time.Second, "give up after this long")
}

func (f *pbkvClientFlags) run(cmd *cobra.Command, fn func(context.Context, *pbkv.Client) error) error {
	c, err := pbkv.NewClient(pbkvList(f.servers))
	if err != nil {
		return err
	}
	defer c.Close()
	c.Timeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return fn(ctx, c)
}

func pbkvPutCmd() *cobra.Command {
	var f pbkvClientFlags
	c := &cobra.Command{
		Use:   "put KEY VALUE",
		Short: "Set a key; returns once every live replica has it",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c *pbkv.Client) error {
				if err := c.Put(ctx, args[0], args[1]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "put %q\n", args[0])
				return nil
			})
		},
	}
	f.add(c)
	return c
}

func pbkvGetCmd() *cobra.Command {
	var f pbkvClientFlags
	c := &cobra.Command{
		Use:   "get KEY",
		Short: "Read a key from the primary",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c *pbkv.Client) error {
				v, ok, err := c.Get(ctx, args[0])
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not found: " + args[0])
				}
				fmt.Fprintln(cmd.OutOrStdout(), v)
				return nil
			})
		},
	}
	f.add(c)
	return c
}
