package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"strata/bench/jgroups"
	stackbench "strata/bench/stack"
	"strata/stack"
	"strata/stack/transport"
)

func benchStackCmd() *cobra.Command {
	var (
		quick, asJSON, noJGroups, noSeal bool
		codeOnly                         bool
		pin, jgTCP                       string
		n, size, reply, rounds           int
		codeN, jgWarmup                  int
		callersFlag, transports          string
		serveStrata, serveRaw            string
		busyPoll                         time.Duration
		procs                            int
	)
	c := &cobra.Command{
		Use:   "stack",
		Short: "Stack code latency, and round trips vs raw sockets and JGroups RoundTrip",
		Long: `Two measurements:

1. Code latency with no network (the Ensemble paper's Table 1): a message of
   4, 24, 100 and 1000 bytes down through the reliable point-to-point stack
   (bottom, pt2pt, top), up through the receiver's, and the ack back; ns
   and allocations per message. Also the 4-layer reliable multicast stack
   (top, mnak, pt2pt, bottom; a cast to one other member) and the 13-layer
   virtually synchronous total-order stack (Total, Membership; three
   members, a cast from one that is not the sequencer, then its order
   entry and acknowledgements), 4, 100 and 1000 bytes. Four modes: the
   imperative and functional compositions, the bypass (stack.Optimize, with
   its generated code) and the bypass's generic loops alone. The ratios
   here are within Strata (bypass/imperative, bypass/generic).

2. Round trips on loopback between two processes, per transport (--transports)
   and number of concurrent callers (--callers), each caller with one
   request outstanding; --size-byte requests, --reply-size-byte replies for
   every system:
   - strata: Strata's RPC stack (Reliable, Fragment, RPC) over UDP or TCP,
     a server process answering; the callers block in Node.Call;
   - strata-event: the same server, the next call issued from the reply
     callback (Node.CallAsync);
   - raw: a raw-socket echo of the same kind (UDP datagrams; TCP frames
     with a 4-byte length, TCP_NODELAY), the floor any stack is measured
     against;
   - jgroups: JGroups 5.5.6.Final's own RoundTrip tool (two JVMs, member A
     sends from --callers sender threads, member B answers; installed from
     Maven Central), with RoundTrip's own defaults for everything else. Its
     UDP cells run the jar's udp.xml (JGroups' default stack; UDP with
     ip_mcast=false, since IP multicast may not work here), its TCP cells
     --jg-tcp-stack (default tcp-low-latency.xml, which the jar describes
     as the stack for RoundTrip; tcp.xml is the throughput stack); discovery
     is TCPPING listing both members. Warm-up passes with the same settings
     (--jg-warmup requests each) precede each measured run in the same JVMs
     until two passes in a row fail to beat the best rate before them by
     10% (at most 8): on a 2-CPU machine the JIT compiler keeps speeding
     JGroups up for tens of thousands of calls (one pass of 20,000 left it
     using 2-4x the CPU per call it settles at).
     RoundTrip's request is its 3-byte header plus --size minus 3 bytes, its
     reply the 3-byte header alone: so --reply-size is 3 by default, and
     JGroups runs only with --reply-size 3.
   Every system's figure is mean µs = callers / req/s (by Little's law the
   mean round trip), measured the same way for all; the table also shows
   per-call timers (p50, p99; JGroups' RoundTrip prints only a sampled
   average) and the CPU time the client and server processes used per
   call. Each round runs every cell's systems in a rotated order
   (bench/kit Order), and every ratio pairs Strata with a peer of the same
   transport and callers within one round; the reported ratio is the
   median over rounds with its range.

   Placement (--pin), the same for every system: none (default: every
   process may use every core); split: the clients (this
   process, or JGroups' sending JVM) on CPU 0 only and the server process
   (Strata's, the raw echo, JGroups' answering JVM) on CPU 1 only; shared:
   clients and servers all on CPU 0. A pinned Go process runs with
   GOMAXPROCS 1 and a JVM sizes its pools for one CPU. On a VM, a wake-up
   that crosses vCPUs can cost more than the whole software path of a
   round trip, so the placement decides much of a one-caller round trip:
   shared measures the software path, split the cross-CPU wake-ups, none
   whatever the scheduler does. Unpinned, the Go processes (this client
   process and the servers, Strata's and the raw echo's) run with
   GOMAXPROCS --procs, by default half the CPUs (at least 1): each of the
   two gets its share of the machine, as one CPU each when pinned. The
   JVMs are not restricted.

   Busy polling (--busy-poll, default 50µs): Strata's transports and the
   raw sockets alike keep polling an empty socket for that long before
   they sleep, so that a reply finds its CPU awake (on these VMs waking a
   sleeping vCPU costs tens of microseconds). A pinned process (one CPU)
   also yields its CPU between polls. JGroups runs as its stack file
   configures it.

Ratios are oriented so that > 1 means Strata is better.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			switch {
			case serveStrata != "":
				o, err := withSeal(transport.Options{BusyPoll: busyPoll}) // the strata-sealed system's server
				if err != nil {
					return err
				}
				return stackbench.ServeOpts(stdinContext(ctx), serveStrata, reply, o, func(a stack.Addr) { fmt.Printf("listening on %s\n", a) })
			case serveRaw != "":
				network, addr, _ := strings.Cut(serveRaw, ":")
				stopEcho, actual, err := stackbench.RawEchoServer(network, addr, reply, busyPoll)
				if err != nil {
					return err
				}
				defer stopEcho()
				fmt.Printf("listening on %s:%s\n", network, actual)
				<-stdinContext(ctx).Done()
				return nil
			}
			if quick {
				if err := quickDefaults(cmd, map[string]string{"n": "20000", "rounds": "1", "code-n": "100000"}); err != nil {
					return err
				}
			}
			callers, err := parseInts("--callers", callersFlag, 1, 256)
			if err != nil {
				return err
			}
			var kinds []string
			for _, s := range strings.Split(transports, ",") {
				if s != "udp" && s != "tcp" {
					return fmt.Errorf("--transports: unknown %q (want udp, tcp)", s)
				}
				kinds = append(kinds, s)
			}
			if n < 100 || size < 1 || reply < 0 || rounds < 1 || codeN < 1000 || jgWarmup < 0 {
				return fmt.Errorf("--n >= 100, --size >= 1, --reply-size >= 0, --rounds >= 1, --code-n >= 1000 and --jg-warmup >= 0 are required")
			}
			if reply > 65507 {
				return fmt.Errorf("--reply-size %d: at most 65507 (one UDP datagram)", reply)
			}
			if !noJGroups && !codeOnly && (reply != jgroups.RTHeader || size < jgroups.RTHeader) {
				return fmt.Errorf("--reply-size %d --size %d: JGroups RoundTrip replies with exactly its %d-byte header and its requests carry it too, so it runs only with --reply-size %d and --size >= %d (add --no-jgroups to measure other sizes)",
					reply, size, jgroups.RTHeader, jgroups.RTHeader, jgroups.RTHeader)
			}
			if jgTCP != jgroups.LowLatencyTCP && jgTCP != jgroups.DefaultTCP {
				return fmt.Errorf("--jg-tcp-stack %q: want %s or %s", jgTCP, jgroups.LowLatencyTCP, jgroups.DefaultTCP)
			}
			if busyPoll < 0 || busyPoll > time.Second {
				return fmt.Errorf("--busy-poll %v: want 0 to 1s", busyPoll)
			}
			cpus := [2]int{-1, -1}
			switch pin {
			case "", "none":
			case "split":
				if runtime.NumCPU() < 2 {
					return fmt.Errorf("--pin split needs 2 CPUs, this machine has %d (use --pin shared)", runtime.NumCPU())
				}
				cpus = [2]int{0, 1}
			case "shared":
				cpus = [2]int{0, 0}
			default:
				return fmt.Errorf("--pin: unknown placement %q (want none, split or shared)", pin)
			}
			if procs < 0 {
				return fmt.Errorf("--procs %d: want 0 (half the CPUs) or more", procs)
			}
			if procs == 0 {
				procs = max(1, runtime.NumCPU()/2)
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			rep, err := stackbench.Run(ctx, stackbench.Config{N: n, Size: size, Reply: reply, Rounds: rounds, CodeN: codeN,
				Callers: callers, Transports: kinds, CodeOnly: codeOnly, JGroups: !noJGroups, JGroupsTCP: jgTCP, JGroupsWarmup: jgWarmup,
				CPUs: cpus, BusyPoll: busyPoll, Procs: procs, Seal: !noSeal, Self: []string{self, "bench", "stack"}, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if asJSON {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				err = stackbench.Print(cmd.OutOrStdout(), rep)
			}
			return failedCells(rep, err)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 20k calls per cell, 100k messages per code-latency cell, 1 round")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&codeOnly, "code-only", false, "only the code-latency cells (no processes, no network)")
	f.BoolVar(&noSeal, "no-seal", false, "skip strata-sealed (Strata with every datagram sealed, to measure the seal's cost)")
	f.BoolVar(&noJGroups, "no-jgroups", false, "skip the JGroups peer (needs java and Maven Central)")
	f.StringVar(&pin, "pin", "none", "placement for every system: none; split (clients on CPU 0, servers on CPU 1); shared (clients and servers on CPU 0); needs taskset")
	f.IntVar(&n, "n", 100000, "calls per cell")
	f.IntVar(&size, "size", 100, "request payload bytes (JGroups: its 3-byte header + size-3)")
	f.IntVar(&reply, "reply-size", jgroups.RTHeader, "reply payload bytes for Strata and the raw echo (3: JGroups RoundTrip's fixed reply; other sizes need --no-jgroups)")
	f.IntVar(&rounds, "rounds", 3, "rounds")
	f.IntVar(&codeN, "code-n", 500000, "messages per code-latency cell")
	f.StringVar(&callersFlag, "callers", "1,8", "concurrent callers (JGroups: sender threads)")
	f.StringVar(&transports, "transports", "udp,tcp", "transports for every system (JGroups: udp.xml for udp, --jg-tcp-stack for tcp)")
	f.StringVar(&jgTCP, "jg-tcp-stack", jgroups.LowLatencyTCP, "JGroups' stack file for the TCP cells: "+jgroups.LowLatencyTCP+" or "+jgroups.DefaultTCP)
	f.IntVar(&jgWarmup, "jg-warmup", 0, "JGroups: requests per warm-up pass before each measured run, same JVMs and settings; passes repeat until the rate settles (0: as many as --n)")
	f.IntVar(&procs, "procs", 0, "unpinned (--pin none): GOMAXPROCS of the client and server Go processes (0: half the CPUs, at least 1)")
	f.DurationVar(&busyPoll, "busy-poll", 50*time.Microsecond, "Strata's and the raw sockets' readers poll an empty socket this long before sleeping (0: never)")
	f.StringVar(&serveStrata, "serve-strata", "", "run a Strata RPC server on this address (internal)")
	f.StringVar(&serveRaw, "serve-raw", "", "run a raw echo server, NET:HOST:PORT (internal)")
	f.MarkHidden("serve-strata")
	f.MarkHidden("serve-raw")
	return c
}
