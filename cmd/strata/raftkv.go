package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"strata/distsys/systems/raftkv"
)

// Default addresses of `strata raftkv up`'s three servers: stack (peer)
// ports 7501–7503, client ports 7511–7513.
const (
	defaultRaftPeers   = "udp:127.0.0.1:7501,udp:127.0.0.1:7502,udp:127.0.0.1:7503"
	defaultRaftClients = "127.0.0.1:7511,127.0.0.1:7512,127.0.0.1:7513"
)

func raftkvCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "raftkv",
		Short: "The Raft key-value store compiled from models/raftkv/RaftKV.tla (MPCal) to Go",
		Long: `raftkv runs the Raft key-value store whose servers are the AServer archetype
of models/raftkv/RaftKV.tla, model-checked with TLC and compiled with
strata mpcal gogen (package distsys/systems/raftkv; docs/raftkv.md).
Each server keeps its term, vote and log on a journal file; clients
send puts and gets to any server and follow redirects to the leader.`,
	}
	c.AddCommand(raftkvServeCmd(), raftkvUpCmd(), raftkvPutCmd(), raftkvGetCmd())
	return c
}

func raftkvServeCmd() *cobra.Command {
	var id int
	var peers, clients, dir string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run one Raft KV server until interrupted",
		Long: `serve runs server --id (1..n) of the cluster whose servers' stack addresses
are --peers and client addresses --clients (both in id order). Its term,
vote and log are in DIR/raftkv-ID.journal, recovered on restart. Prints
"listening on ADDR" (the client address) once serving.`,
		Example: "  strata raftkv serve --id 1 --dir strata-data/raftkv",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, cs := splitList(peers), splitList(clients)
			if id < 1 || id > len(ps) {
				return fmt.Errorf("--id %d: want a server id in 1..%d (one per --peers address)", id, len(ps))
			}
			if len(cs) != len(ps) {
				return fmt.Errorf("--clients names %d addresses, --peers %d: want one client address per server", len(cs), len(ps))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			s, err := raftkv.StartServer(raftkv.ServerConfig{ID: id, Peers: ps, Clients: cs, Dir: dir})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", s.ClientAddr())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			select {
			case <-ctx.Done():
			case <-s.Done():
			}
			return s.Close()
		},
	}
	c.Flags().IntVar(&id, "id", 0, "this server's id, 1..n")
	c.Flags().StringVar(&peers, "peers", defaultRaftPeers, "every server's stack address, in id order")
	c.Flags().StringVar(&clients, "clients", defaultRaftClients, "every server's client address, in id order")
	c.Flags().StringVar(&dir, "dir", "strata-data/raftkv", "directory of the server's journal file")
	return c
}

func raftkvUpCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "up",
		Short: "Run three Raft KV servers on loopback as child processes, until interrupted",
		Long: `up starts three 'strata raftkv serve' child processes on the default
addresses (stack ports 7501–7503, client ports 7511–7513), journals under
--dir, and stops them on Ctrl-C. Kill one with kill -9 and the others go on;
'strata raftkv up' again recovers the cluster from the journals.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := os.Executable()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var procs []*exec.Cmd
			defer func() {
				for _, p := range procs {
					p.Process.Signal(syscall.SIGTERM)
				}
				for _, p := range procs {
					p.Wait()
				}
			}()
			for id := 1; id <= 3; id++ {
				p := exec.Command(bin, "raftkv", "serve", "--id", strconv.Itoa(id), "--dir", dir)
				p.Env = os.Environ()
				logf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("raftkv-%d.log", id)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return err
				}
				p.Stdout, p.Stderr = logf, logf
				err = p.Start()
				logf.Close()
				if err != nil {
					return fmt.Errorf("server %d: %w", id, err)
				}
				procs = append(procs, p)
				fmt.Fprintf(cmd.OutOrStdout(), "server %d: pid %d, clients on %s, log %s\n", id, p.Process.Pid,
					splitList(defaultRaftClients)[id-1], logf.Name())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "try: strata raftkv put hello world; strata raftkv get hello (Ctrl-C stops the cluster)\n")
			<-ctx.Done()
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "strata-data/raftkv", "directory of the servers' journals and logs")
	return c
}

func raftkvClient(servers string, timeout time.Duration, fn func(context.Context, *raftkv.Client) error) error {
	c, err := raftkv.NewClient(splitList(servers))
	if err != nil {
		return err
	}
	defer c.Close()
	if timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return fn(ctx, c)
}

func raftkvPutCmd() *cobra.Command {
	var servers string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "put KEY VALUE",
		Short: "Set KEY to VALUE (through the leader)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return raftkvClient(servers, timeout, func(ctx context.Context, c *raftkv.Client) error {
				if err := c.Put(ctx, args[0], args[1]); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "ok")
				return nil
			})
		},
	}
	c.Flags().StringVar(&servers, "servers", defaultRaftClients, "the servers' client addresses, in id order")
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	return c
}

func raftkvGetCmd() *cobra.Command {
	var servers string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "get KEY",
		Short: "Print KEY's value (a linearizable read: it goes through the log)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return raftkvClient(servers, timeout, func(ctx context.Context, c *raftkv.Client) error {
				v, ok, err := c.Get(ctx, args[0])
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("%s: not found", args[0])
				}
				fmt.Fprintln(cmd.OutOrStdout(), v)
				return nil
			})
		},
	}
	c.Flags().StringVar(&servers, "servers", defaultRaftClients, "the servers' client addresses, in id order")
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	return c
}
