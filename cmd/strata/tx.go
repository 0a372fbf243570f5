package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"strata/stack"
	"strata/wor"
	"strata/wormtx"
)

// Defaults of the tx commands: three RMs and a TM on 127.0.0.1.
const (
	defaultTxRMs = "udp:127.0.0.1:7401,udp:127.0.0.1:7402,udp:127.0.0.1:7403"
	defaultTxTM  = "udp:127.0.0.1:7400"
	// txSegBase is the first WOR segment of WormTX's vote segments: a
	// peer's are txSegBase | index<<20 | incarnation (fresh per start).
	txSegBase = 1 << 38
	// tmIndex stands for the TM among the indexes.
	tmIndex = 1023
)

func txCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "tx",
		Short: "Transactions across partitions (WormTX over write-once registers): servers and a bank client",
		Long: `tx runs WormTX (docs/wormtx.md): resource managers (RMs), each holding the
accounts of one partition, commit transactions atomically across partitions
by writing their votes into write-once registers on the wormservers; a
transaction manager (TM) coordinates the variants A8 to D4, and E3 (the
default) needs none. Start a TM and every RM with "tx serve", then run
transfers with "tx deposit", "tx transfer" and "tx balance"; any RM can be
killed and restarted (its log is in its --dir), and a transaction it was in
ends without it.`,
	}
	c.AddCommand(txServeCmd(), txTransferCmd(), txDepositCmd(), txBalanceCmd())
	addWANFlags(c)
	return c
}

type txFlags struct {
	rms, tm, servers, engine string
	timeout                  time.Duration
}

func (f *txFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.rms, "rms", defaultTxRMs, "the RMs' addresses, by index (the same list everywhere)")
	c.Flags().StringVar(&f.tm, "tm", defaultTxTM, "the TM's address")
	c.Flags().StringVar(&f.servers, "servers", defaultServers, "the wormservers (a paxos, chain or ec replica set)")
	c.Flags().StringVar(&f.engine, "engine", "paxos", "WOR engine: paxos, chain or ec (erasure-coded, the default plan for the servers: see docs/ec.md)")
	c.Flags().DurationVar(&f.timeout, "timeout", 500*time.Millisecond, "how long a peer waits for an outcome before resolving it from the registers")
}

func splitAddrs(s string) []stack.Addr {
	var out []stack.Addr
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, stack.Addr(a))
		}
	}
	return out
}

func txServeCmd() *cobra.Command {
	var f txFlags
	var id int
	var dir string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run an RM (--id N) or the TM (--id tm), until interrupted",
		Long: `serve runs one WormTX peer: an RM (--id 0, 1, ...: its index in --rms; its
accounts and vote log in a journal in --dir) or the TM (--id -1: soft state only).
Each start takes a fresh vote segment (an incarnation counter in --dir).
Prints "listening on ADDR".`,
		Example: "  strata tx serve --id -1 --dir strata-data/tx-tm\n  strata tx serve --id 0 --dir strata-data/tx-0",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			rms := splitAddrs(f.rms)
			if len(rms) == 0 {
				return errors.New("--rms is empty")
			}
			if id < -1 || id >= len(rms) {
				return fmt.Errorf("--id %d: an RM index in [0, %d), or -1 for the TM", id, len(rms))
			}
			if dir == "" {
				return errors.New("--dir: a directory for the peer's incarnation counter (and an RM's log)")
			}
			listen, index := stack.Addr(f.tm), uint64(tmIndex)
			if id >= 0 {
				listen, index = rms[id], uint64(id)
			}
			incarnation, err := nextIncarnation(dir)
			if err != nil {
				return err
			}
			node, err := listenNode(string(listen), worProps)
			if err != nil {
				return err
			}
			defer node.Close()
			eng, enode, err := txEngine(f, listen)
			if err != nil {
				return err
			}
			defer enode.Close()
			cfg := wormtx.Config{ID: uint32(max(id, 0)), RMs: rms, TM: stack.Addr(f.tm), Node: node, Engine: eng,
				VoteSeg: txSegBase | index<<20 | incarnation, Timeout: f.timeout, Log: log}
			var store *wormtx.JournalStore
			if id >= 0 {
				if store, err = wormtx.OpenJournalDir(dir, 0); err != nil {
					return err
				}
				defer store.Close()
				cfg.Store = store
			}
			p, err := wormtx.NewPeer(cfg)
			if err != nil {
				return err
			}
			defer p.Close()
			if id >= 0 {
				p.Serve()
			}
			ready := make(chan struct{})
			p.Prime(func() { close(ready) })
			select {
			case <-ready:
			case <-time.After(10 * time.Second):
				return errors.New("could not capture vote registers on the wormservers within 10 s")
			}
			role := "TM"
			if id >= 0 {
				role = fmt.Sprintf("RM %d", id)
			}
			log.Info("wormtx peer up", "role", role, "vote_segment", cfg.VoteSeg, "incarnation", incarnation)
			fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", node.Local())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	f.add(c)
	c.Flags().IntVar(&id, "id", 0, "RM index in --rms, or -1 for the TM")
	c.Flags().StringVar(&dir, "dir", "", "the peer's directory (an RM's accounts and vote log)")
	return c
}

// nextIncarnation bumps the counter in dir/incarnation and returns it.
func nextIncarnation(dir string) (uint64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	path := filepath.Join(dir, "incarnation")
	n := uint64(0)
	if b, err := os.ReadFile(path); err == nil {
		if n, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		n++
	}
	if n >= 1<<20 {
		return 0, fmt.Errorf("%s: incarnations exhausted", path)
	}
	tmp := path + ".tmp"
	fh, err := os.Create(tmp)
	if err == nil {
		_, err = fmt.Fprintf(fh, "%d\n", n)
		if err == nil {
			err = fh.Sync()
		}
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	return n, err
}

// txEngine dials the wormservers on a node of its own.
func txEngine(f txFlags, near stack.Addr) (wormtx.Engine, *stack.Node, error) {
	servers := splitAddrs(f.servers)
	if len(servers) == 0 {
		return nil, nil, errors.New("--servers is empty")
	}
	kind, _, _ := strings.Cut(string(near), ":")
	n, err := listenNode(kind+":127.0.0.1:0", worProps)
	if err != nil {
		return nil, nil, err
	}
	e, err := wor.NewEngine(f.engine, n, servers, 1+rand.Uint64N(1<<32-1), f.timeout)
	if err != nil {
		n.Close()
		return nil, nil, fmt.Errorf("--engine: %w", err)
	}
	return e, n, nil
}

// txClientFlags are the client commands' flags.
type txClientFlags struct {
	rms, via, variant string
	retries           int
	timeout           time.Duration
}

func (f *txClientFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.rms, "rms", defaultTxRMs, "the RMs' addresses")
	c.Flags().StringVar(&f.via, "via", "", "the RM that initiates the transaction (default: a random one of --rms)")
	c.Flags().StringVar(&f.variant, "variant", "E3", "protocol variant: A8, B6, C5, D4 or E3")
	c.Flags().IntVar(&f.retries, "retries", 20, "retries after a lock conflict (Immediate-Restart) or, for a read, a participant timeout")
	c.Flags().DurationVar(&f.timeout, "timeout", 10*time.Second, "deadline of the whole command")
}

// runTx runs ops through an RM, retrying lock conflicts (which had no
// effect) after a random pause. An RM that does not answer may still
// have run the transaction, so only a read-only one (readOnly) is sent
// again, to the next RM; a write reports its outcome as unknown.
func runTx(cmd *cobra.Command, f txClientFlags, ops []wormtx.Op, readOnly bool) (wormtx.Result, error) {
	v, err := wormtx.ParseVariant(f.variant)
	if err != nil {
		return wormtx.Result{}, err
	}
	rms := splitAddrs(f.rms)
	if f.via != "" {
		rms = []stack.Addr{stack.Addr(f.via)}
	}
	if len(rms) == 0 {
		return wormtx.Result{}, errors.New("--rms is empty")
	}
	kind, _, _ := strings.Cut(string(rms[0]), ":")
	n, err := listenNode(kind+":127.0.0.1:0", worProps)
	if err != nil {
		return wormtx.Result{}, err
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	start := rand.IntN(len(rms))
	var last error
	for try := 0; try <= f.retries; try++ {
		rm := rms[(start+try)%len(rms)]
		// A read tries each RM for a few seconds; a write waits for its
		// one RM to the command's deadline (a transaction whose
		// participant is down ends only after the RMs' timeout).
		callCtx, callCancel := ctx, context.CancelFunc(func() {})
		if readOnly {
			callCtx, callCancel = context.WithTimeout(ctx, 3*time.Second)
		}
		r, err := wormtx.Call(callCtx, n, rm, v, ops)
		callCancel()
		switch {
		case err != nil && !readOnly:
			return wormtx.Result{}, fmt.Errorf("%w; the transaction may or may not have taken effect: check the balances", err)
		case err != nil:
			last = err // a read: try the next RM
		case (r.Outcome == wormtx.Conflict || readOnly && r.Outcome == wormtx.TimedOut) && try < f.retries:
			// A conflict is retried (Immediate-Restart); so is a read
			// that timed out on a participant (one just restarted, say):
			// it changed nothing, so running it again is safe.
			last = errors.New(r.Outcome.String())
			select {
			case <-time.After(time.Duration(1+rand.IntN(5<<min(try, 5))) * time.Millisecond):
			case <-ctx.Done():
				return wormtx.Result{}, ctx.Err()
			}
			continue
		default:
			return r, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return wormtx.Result{}, fmt.Errorf("no outcome: %w", last)
}

func parseAmount(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("amount %q: a positive integer", s)
	}
	return v, nil
}

func txTransferCmd() *cobra.Command {
	var f txClientFlags
	c := &cobra.Command{
		Use:     "transfer FROM TO AMOUNT",
		Short:   "Move AMOUNT from account FROM to account TO in one transaction",
		Example: "  strata tx transfer alice bob 10",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			amount, err := parseAmount(args[2])
			if err != nil {
				return err
			}
			if args[0] == args[1] {
				return errors.New("FROM and TO are the same account")
			}
			r, err := runTx(cmd, f, []wormtx.Op{{Kind: wormtx.Add, Key: args[0], Delta: -amount}, {Kind: wormtx.Add, Key: args[1], Delta: amount},
				{Kind: wormtx.Get, Key: args[0]}, {Kind: wormtx.Get, Key: args[1]}}, false)
			if err != nil {
				return err
			}
			if r.Outcome != wormtx.Committed {
				return fmt.Errorf("transfer %s", r.Outcome)
			}
			// The Gets come after the Adds: they read the new balances.
			fmt.Fprintf(cmd.OutOrStdout(), "committed: %s %d, %s %d\n", args[0], r.Reads[args[0]], args[1], r.Reads[args[1]])
			return nil
		},
	}
	f.add(c)
	return c
}

func txDepositCmd() *cobra.Command {
	var f txClientFlags
	c := &cobra.Command{
		Use:     "deposit ACCOUNT AMOUNT",
		Short:   "Add AMOUNT to an account (creating it)",
		Example: "  strata tx deposit alice 100",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			amount, err := parseAmount(args[1])
			if err != nil {
				return err
			}
			r, err := runTx(cmd, f, []wormtx.Op{{Kind: wormtx.Add, Key: args[0], Delta: amount}, {Kind: wormtx.Get, Key: args[0]}}, false)
			if err != nil {
				return err
			}
			if r.Outcome != wormtx.Committed {
				return fmt.Errorf("deposit %s", r.Outcome)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "committed: %s %d\n", args[0], r.Reads[args[0]])
			return nil
		},
	}
	f.add(c)
	return c
}

func txBalanceCmd() *cobra.Command {
	var f txClientFlags
	c := &cobra.Command{
		Use:     "balance ACCOUNT...",
		Short:   "Read accounts in one transaction (a consistent view across partitions)",
		Example: "  strata tx balance alice bob",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ops []wormtx.Op
			for _, a := range args {
				ops = append(ops, wormtx.Op{Kind: wormtx.Get, Key: a})
			}
			r, err := runTx(cmd, f, ops, true)
			if err != nil {
				return err
			}
			if r.Outcome != wormtx.Committed {
				return fmt.Errorf("balance %s", r.Outcome)
			}
			total := int64(0)
			for _, a := range args {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %d\n", a, r.Reads[a])
				total += r.Reads[a]
			}
			if len(args) > 1 {
				fmt.Fprintf(cmd.OutOrStdout(), "total %d\n", total)
			}
			return nil
		},
	}
	f.add(c)
	return c
}
