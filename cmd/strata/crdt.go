package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/models/crdt/gen/aworset"
	"strata/models/crdt/gen/gcounter"
	"strata/stack"
)

// strata crdt: the replicated add-wins set and grow-only counter compiled
// from models/crdt (AWORSet.tla, GCounter.tla) by strata mpcal gogen, run
// as one process per replica. Each replica runs the generated ANode
// archetype over a distsys.CRDT resource that gossips over the replica's
// stack node; clients send operations to a replica by RPC on the same
// node, and the archetype applies them and replies with the value.

// crdtProps is the replicas' and clients' stack: RPC for the clients,
// Fragment for states larger than a datagram.
const crdtProps = "Reliable,FIFO,Fragment,RPC"

const defaultCRDTServer = "udp:127.0.0.1:7501"

func crdtCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "crdt",
		Short: "A replicated add-wins set or grow-only counter compiled from MPCal (models/crdt)",
		Long: `crdt runs the CRDT systems compiled from models/crdt/AWORSet.tla and
GCounter.tla with strata mpcal gogen: each replica is a process running the
generated ANode archetype over a state-based CRDT resource (distsys.CRDT)
that sends its whole state to every other replica every --interval and
merges what it receives. Updates apply locally at once; replicas converge
once they have heard from each other. See docs/distsys.md.`,
	}
	c.AddCommand(crdtServeCmd(), crdtUpCmd(), crdtOpCmd("add"), crdtOpCmd("remove"), crdtOpCmd("inc"), crdtOpCmd("get"))
	return c
}

// crdtReplicaConfig is what one replica process runs with.
type crdtReplicaConfig struct {
	kind     distsys.CRDTKind
	id       int          // 1-based position in peers
	peers    []stack.Addr // every replica's address, this one's included
	dir      string       // the state file's directory ("" for none)
	interval time.Duration
}

// crdtServer is a running replica: its node, resource and archetype, and
// the glue that feeds clients' operations to the archetype.
type crdtServer struct {
	kind distsys.CRDTKind
	node *stack.Node
	crdt *distsys.CRDT
	in   chan tla.Value
	out  chan tla.Value
	errc chan error // the archetype's Run result

	mu sync.Mutex // one operation at a time: serializes in and out
}

// startCRDTServer starts a replica on an open node (listening on
// cfg.peers[cfg.id-1]); the archetype runs until ctx ends.
func startCRDTServer(ctx context.Context, node *stack.Node, cfg crdtReplicaConfig) (*crdtServer, error) {
	self := tla.Int(int64(cfg.id))
	opt := distsys.CRDTOptions{Interval: cfg.interval}
	if cfg.dir != "" {
		if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
			return nil, err
		}
		opt.Path = filepath.Join(cfg.dir, cfg.kind.String()+".state")
	}
	res, err := distsys.NewCRDT(node, self, cfg.kind, cfg.peers, opt)
	if err != nil {
		return nil, err
	}
	var arch *distsys.Archetype
	n := tla.Int(int64(len(cfg.peers)))
	// Budget, Elems/Amounts and BugMerge only bound the model checker's
	// exploration (mapping macros); the compiled archetype does not use
	// them.
	switch cfg.kind {
	case distsys.AWORSetKind:
		m, err := aworset.New(aworset.Constants{NumNodes: n, Budget: tla.Int(0), Elems: tla.Set(), BugMerge: tla.String("none")})
		if err != nil {
			res.Close()
			return nil, err
		}
		arch = m.ANode()
	default:
		m, err := gcounter.New(gcounter.Constants{NumNodes: n, Budget: tla.Int(0), Amounts: tla.Set(), BugMerge: tla.String("none")})
		if err != nil {
			res.Close()
			return nil, err
		}
		arch = m.ANode()
	}
	s := &crdtServer{kind: cfg.kind, node: node, crdt: res, in: make(chan tla.Value), out: make(chan tla.Value, 1), errc: make(chan error, 1)}
	// The archetype waits for a client up to a second per attempt of its
	// take section (instead of the default 50 ms and an abort with a
	// growing back-off, which delays the next request on an idle replica).
	in := distsys.NewInput(s.in)
	in.Wait = time.Second
	actx, err := distsys.NewContext(arch, self, distsys.BindIndexed("crdt", res),
		distsys.BindRef("in", in), distsys.BindRef("out", distsys.NewOutput(s.out)))
	if err != nil {
		res.Close()
		return nil, err
	}
	go func() { s.errc <- actx.Run(ctx) }()
	node.HandleAsync(func(_ stack.Addr, req []byte, respond func([]byte)) {
		go func() { respond(s.handle(ctx, req)) }()
	})
	return s, nil
}

// Client protocol: a request is a TLA+ operation's encoding
// (<<"add", x>>, <<"remove", x>>, <<"inc", k>>, <<"read", 0>>); the
// response is 0 and the value's encoding, or 1 and an error message.
func (s *crdtServer) handle(ctx context.Context, req []byte) []byte {
	op, err := tla.Decode(req)
	if err == nil {
		// Check the operation here: a malformed one written by the
		// archetype would stop it (an error naming the MPCal statement).
		var st distsys.CRDTState
		st, err = distsys.NewCRDTState(s.kind)
		if err == nil {
			err = st.Update("check", op)
		}
	}
	if err != nil {
		return append([]byte{1}, "bad operation: "+err.Error()...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.in <- op:
	case err := <-s.errc:
		s.errc <- err
		return append([]byte{1}, fmt.Sprintf("replica stopped: %v", err)...)
	case <-ctx.Done():
		return append([]byte{1}, "replica shutting down"...)
	}
	select {
	case v := <-s.out:
		b, err := v.AppendBinary([]byte{0})
		if err != nil {
			return append([]byte{1}, err.Error()...)
		}
		return b
	case err := <-s.errc:
		s.errc <- err
		return append([]byte{1}, fmt.Sprintf("replica stopped: %v", err)...)
	case <-ctx.Done():
		return append([]byte{1}, "replica shutting down"...)
	}
}

// crdtCall sends one operation to the replica at server and returns the
// value it replied with.
func crdtCall(ctx context.Context, node *stack.Node, server stack.Addr, op tla.Value) (tla.Value, error) {
	req, err := op.MarshalBinary()
	if err != nil {
		return tla.Value{}, err
	}
	resp, err := node.Call(ctx, server, req, 5*time.Second)
	if err != nil {
		return tla.Value{}, fmt.Errorf("%s: %w", server, err)
	}
	if len(resp) == 0 {
		return tla.Value{}, fmt.Errorf("%s: empty response", server)
	}
	if resp[0] != 0 {
		return tla.Value{}, fmt.Errorf("%s: %s", server, resp[1:])
	}
	v, err := tla.Decode(resp[1:])
	if err != nil {
		return tla.Value{}, fmt.Errorf("%s: bad response: %w", server, err)
	}
	return v, nil
}

func parsePeers(s string) ([]stack.Addr, error) {
	var out []stack.Addr
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, stack.Addr(p))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--peers: list every replica's address, comma-separated, in id order")
	}
	return out, nil
}

func crdtServeCmd() *cobra.Command {
	var peers, kind, dir string
	var id int
	var interval time.Duration
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run one CRDT replica, until interrupted",
		Long: `serve runs replica --id of a CRDT whose replicas are at --peers (every
replica's address in id order, this one's included: it listens on the
--id'th). With --dir the replica's state is kept in DIR/KIND.state, written
durably before an update is acknowledged, so a replica restarted on the
same directory keeps its updates. Prints "listening on ADDR" when ready.`,
		Example: "  strata crdt serve --id 1 --peers udp:127.0.0.1:7501,udp:127.0.0.1:7502,udp:127.0.0.1:7503 --dir strata-data/crdt-1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := distsys.ParseCRDTKind(kind)
			if err != nil {
				return fmt.Errorf("--crdt: %w", err)
			}
			ps, err := parsePeers(peers)
			if err != nil {
				return err
			}
			if id < 1 || id > len(ps) {
				return fmt.Errorf("--id %d: want 1..%d (a position in --peers)", id, len(ps))
			}
			if interval <= 0 {
				return fmt.Errorf("--interval %v: want a positive duration", interval)
			}
			node, err := listenNode(string(ps[id-1]), crdtProps)
			if err != nil {
				return err
			}
			defer node.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv, err := startCRDTServer(ctx, node, crdtReplicaConfig{kind: k, id: id, peers: ps, dir: dir, interval: interval})
			if err != nil {
				return err
			}
			defer srv.crdt.Close()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", node.Local())
			log.Info("crdt replica up", "crdt", k, "id", id, "value", srv.crdt.Value().String())
			select {
			case <-ctx.Done():
				return nil
			case err := <-srv.errc:
				return fmt.Errorf("replica %d stopped: %w", id, err)
			}
		},
	}
	c.Flags().IntVar(&id, "id", 0, "this replica's id: its position (1-based) in --peers")
	c.Flags().StringVar(&peers, "peers", "", "every replica's address, comma-separated, in id order")
	c.Flags().StringVar(&kind, "crdt", "aworset", "aworset (an add-wins set) or gcounter (a grow-only counter)")
	c.Flags().StringVar(&dir, "dir", "", "keep the state durably in this directory (default: in memory; a restarted replica then starts empty under a new id)")
	c.Flags().DurationVar(&interval, "interval", 50*time.Millisecond, "gossip period")
	return c
}

func crdtUpCmd() *cobra.Command {
	var kind, dir string
	var nodes, port int
	var interval time.Duration
	c := &cobra.Command{
		Use:   "up",
		Short: "Start a local CRDT cluster: N replica processes on loopback",
		Long: `up starts --nodes replicas (strata crdt serve) as child processes on
127.0.0.1:PORT, PORT+1, ..., each keeping its state in DIR/crdt-I, and
stops them on Ctrl-C. Kill one with kill -9 and start it again with the
command it prints: it recovers its state from its directory and catches up
by gossip.`,
		Example: "  strata crdt up --nodes 3\n  strata crdt add apple --server udp:127.0.0.1:7502\n  strata crdt get --server udp:127.0.0.1:7503",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := distsys.ParseCRDTKind(kind); err != nil {
				return fmt.Errorf("--crdt: %w", err)
			}
			if nodes < 1 || nodes > 64 {
				return fmt.Errorf("--nodes %d: want 1..64", nodes)
			}
			if port < 1 || port+nodes-1 > 65535 {
				return fmt.Errorf("--port %d: want a port such that PORT+N-1 <= 65535", port)
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			var addrs []string
			for i := range nodes {
				addrs = append(addrs, fmt.Sprintf("udp:127.0.0.1:%d", port+i))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			// Each child is waited for by its own goroutine, which
			// reports on exited (exec.Cmd.Wait must not be called twice).
			var procs []*exec.Cmd
			exited := make(chan error, nodes)
			reaped := 0
			defer func() {
				for _, p := range procs {
					_ = p.Process.Signal(syscall.SIGTERM)
				}
				for ; reaped < len(procs); reaped++ {
					<-exited
				}
			}()
			for i := range nodes {
				args := []string{"crdt", "serve", "--id", strconv.Itoa(i + 1), "--peers", strings.Join(addrs, ","),
					"--crdt", kind, "--dir", filepath.Join(dir, fmt.Sprintf("crdt-%d", i+1)), "--interval", interval.String()}
				p := exec.Command(self, args...)
				p.Stdout, p.Stderr = io.Discard, cmd.ErrOrStderr()
				p.Env = os.Environ()
				if err := p.Start(); err != nil {
					return err
				}
				procs = append(procs, p)
				go func() { exited <- p.Wait() }()
				fmt.Fprintf(out, "replica %d: %s (pid %d): strata %s\n", i+1, addrs[i], p.Process.Pid, strings.Join(args, " "))
			}
			fmt.Fprintf(out, "try: %s crdt %s --server %s; %s crdt get --server %s\n", self,
				map[string]string{"aworset": "add apple", "gcounter": "inc 1"}[kind], addrs[0], self, addrs[len(addrs)-1])
			for reaped < len(procs) {
				select {
				case <-ctx.Done():
					return nil
				case err := <-exited:
					reaped++
					fmt.Fprintf(out, "a replica exited (%v); the others keep running (start it again with its command above)\n", err)
				}
			}
			return nil
		},
	}
	c.Flags().IntVar(&nodes, "nodes", 3, "number of replicas")
	c.Flags().IntVar(&port, "port", 7501, "first replica's UDP port")
	c.Flags().StringVar(&kind, "crdt", "aworset", "aworset or gcounter")
	c.Flags().StringVar(&dir, "dir", "strata-data", "directory for the replicas' state directories")
	c.Flags().DurationVar(&interval, "interval", 50*time.Millisecond, "gossip period")
	return c
}

// crdtOpCmd is a client command: add X, remove X, inc [K], get.
func crdtOpCmd(verb string) *cobra.Command {
	var server string
	var timeout time.Duration
	use, short, args := verb+" ELEMENT", "", cobra.ExactArgs(1)
	switch verb {
	case "add":
		short = "Add an element (a string) to an aworset replica's set; prints the set"
	case "remove":
		short = "Remove an element from an aworset replica's set; prints the set"
	case "inc":
		use, short, args = "inc [K]", "Increment a gcounter replica's counter by K (default 1); prints the value", cobra.MaximumNArgs(1)
	case "get":
		use, short, args = "get", "Print a replica's value", cobra.NoArgs
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			var op tla.Value
			switch verb {
			case "add", "remove":
				op = tla.Tuple(tla.String(verb), tla.String(args[0]))
			case "inc":
				k := int64(1)
				if len(args) == 1 {
					var err error
					if k, err = strconv.ParseInt(args[0], 10, 64); err != nil || k < 0 {
						return fmt.Errorf("inc %q: want a natural number", args[0])
					}
				}
				op = tla.Tuple(tla.String("inc"), tla.Int(k))
			default:
				op = tla.Tuple(tla.String("read"), tla.Int(0))
			}
			node, err := listenNode("udp:127.0.0.1:0", crdtProps)
			if err != nil {
				return err
			}
			defer node.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			v, err := crdtCall(ctx, node, stack.Addr(server), op)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), v)
			return nil
		},
	}
	c.Flags().StringVar(&server, "server", defaultCRDTServer, "the replica to ask")
	c.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	return c
}
