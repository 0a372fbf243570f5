package main

import (
	"fmt"
	"os"
	"os/signal"
	stacktransport "strata/stack/transport"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"strata/bench/mcast"
)

func benchMcastCmd() *cobra.Command {
	var (
		quick, asJSON, noJGroups, noSeal, member, tuned bool
		membersFlag, transport                          string
		size, count, rounds, credits                    int
		jgTime, jgWarmup, jgThreads                     int
		castWindow, castBytes, window                   int
		outstanding                                     int
		batch                                           int
		gossip, rto, timeout                            time.Duration
		listen, contact                                 string
	)
	c := &cobra.Command{
		Use:   "mcast",
		Short: "Multicast throughput: Strata's group stack vs JGroups MPerf",
		Long: `Every member of a group multicasts as fast as flow control lets it, and
every member counts what it receives from all members, its own messages
included; the figure is messages received per second per member.

Strata: --members processes on loopback (this binary, a hidden member
mode) form a group with the membership stack without total order
(Membership: reliable FIFO multicast, cast flow control, stability,
membership, fragmentation over reliable point-to-point) over --transport
(TCP by default: as fast as UDP here, and loopback UDP drops datagrams
when the socket buffers overflow, which costs retransmissions). Once the
view has every member, the first member casts a start message and every
member then casts --count casts of --size bytes, --batch at a time in one
Node.Batch, with at most --outstanding of them waiting in flow control.
Each member checks that it delivers every member's casts exactly once and
in order, and reports casts delivered / time from its first to its last
delivery. Members print their progress on stderr every 5 s.

JGroups: org.jgroups.tests.perf.MPerf 5.5.6.Final, one JVM per member, the
jar's tcp.xml (udp.xml with --transport udp, ip_mcast=false) with TCPPING
listing the members on 127.0.0.1, configured through its stdin menu
(message size, then a warm-up test and the measured test in the same
JVMs). MPerf 5.5.6 runs for a time (--jg-time seconds), not for a number
of messages; every member sends from 100 threads (--jg-threads) and
reports the messages it received during its test / the test's length.

Tuning. By default both systems run as their users get them: Strata's
stack with its own defaults (cast window 4096 casts and 4,000,000 bytes,
point-to-point window 1024 frames, stability gossip every 50 ms, first
retransmission after 20 ms: what ` + "`strata stack`" + ` and group.Join give),
JGroups with the jar's stack file. With --tuned both get the same
flow-control budget, --credits bytes per sender (default 2 MB, tcp.xml's
own MFC and UFC max_credits): Strata's cast window becomes --credits
bytes and --credits/--size casts, its point-to-point window --credits/--size
frames, its stability gossip (which is what returns cast credit in
Strata) runs every 10 ms and its first retransmission waits 200 ms
(above the queueing delays of a saturated loopback); JGroups' MFC and UFC
max_credits become --credits. --cast-window, --cast-bytes, --window,
--gossip and --rto override Strata's tuned values and need --tuned (or
--no-jgroups). The
output and the ratio keys say which mode ran, and print both sides'
settings.

Each round runs every group size for both systems in an order that
rotates (bench/kit Order). The table shows, per system and group size,
the median over rounds of the members' mean msgs/s, with the lowest and
highest round; the ratio is the median of the per-round ratios. Ratios are
oriented so that > 1 means Strata is better.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			if member {
				n, err := strconv.Atoi(membersFlag)
				if err != nil {
					return fmt.Errorf("--members: member mode wants one number: %w", err)
				}
				o, err := withSeal(stacktransport.Options{}) // the strata-sealed system's members (STRATA_KEY_FILE)
				if err != nil {
					return err
				}
				cfg := mcast.MemberConfig{Members: n, Size: size, Count: count, Listen: listen, Contact: contact, Wrap: o.Wrap,
					CastWindow: castWindow, CastBytes: castBytes, GossipEvery: gossip, Window: window, RTO: rto, Outstanding: outstanding, Batch: batch}
				return mcast.ServeMember(ctx, stdinContext(ctx), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			if quick {
				if err := quickDefaults(cmd, map[string]string{"count": "200000", "rounds": "1", "jg-time": "10", "jg-warmup": "15"}); err != nil {
					return err
				}
			}
			members, err := parseInts("--members", membersFlag, 1, 16)
			if err != nil {
				return err
			}
			if transport != "udp" && transport != "tcp" {
				return fmt.Errorf("--transport: unknown %q (want udp or tcp)", transport)
			}
			if size < 9 || count < 1 || rounds < 1 || jgTime < 1 || jgWarmup < 0 || jgThreads < 0 || credits < 1 {
				return fmt.Errorf("--size >= 9, --count >= 1, --rounds >= 1, --jg-time >= 1, --jg-warmup >= 0, --jg-threads >= 0 and --credits >= 1 are required")
			}
			if castWindow < 0 || castBytes < 0 || window < 0 || gossip < 0 || rto < 0 || outstanding < 0 || batch < 0 {
				return fmt.Errorf("--cast-window, --cast-bytes, --window, --gossip, --rto, --outstanding and --batch must not be negative")
			}
			for _, f := range []string{"cast-window", "cast-bytes", "window", "gossip", "rto"} {
				if cmd.Flags().Changed(f) && !tuned && !noJGroups {
					return fmt.Errorf("--%s tunes Strata alone: add --tuned (both systems get the same flow-control budget, --credits) or --no-jgroups", f)
				}
			}
			if cmd.Flags().Changed("credits") && !tuned {
				return fmt.Errorf("--credits is the budget of --tuned runs: add --tuned")
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg := mcast.Config{Members: members, Size: size, Count: count, Rounds: rounds, Transport: transport,
				JGroups: !noJGroups, Seal: !noSeal, JGTime: jgTime, JGWarmup: jgWarmup, JGThreads: jgThreads,
				Tuned: tuned, Credits: credits, CastWindow: castWindow, CastBytes: castBytes, Window: window, Gossip: gossip, RTO: rto,
				Outstanding: outstanding, Batch: batch, Timeout: timeout,
				Self: []string{self, "bench", "mcast", "--member"}, Progress: cmd.ErrOrStderr()}
			rep, err := mcast.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				err = mcast.Print(cmd.OutOrStdout(), rep)
			}
			return failedCells(rep, err)
		},
	}
	f := c.Flags()
	f.StringVar(&membersFlag, "members", "2,3", "comma-separated group sizes")
	f.IntVar(&size, "size", 1024, "bytes per message")
	f.IntVar(&count, "count", 1000000, "Strata: casts per member")
	f.IntVar(&rounds, "rounds", 3, "rounds (each runs every group size for both systems)")
	f.BoolVar(&quick, "quick", false, "reduced run: 200k casts per member, JGroups 15 s warm-up + 10 s test, 1 round")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&noJGroups, "no-jgroups", false, "skip the JGroups peer (needs java and Maven Central)")
	f.BoolVar(&noSeal, "no-seal", false, "skip strata-sealed (the members with every datagram sealed, to measure the seal's cost)")
	f.StringVar(&transport, "transport", "tcp", "transport of both systems: tcp (JGroups: tcp.xml) or udp (JGroups: udp.xml without IP multicast)")
	f.IntVar(&jgTime, "jg-time", 20, "JGroups: seconds of the measured MPerf test")
	f.IntVar(&jgWarmup, "jg-warmup", 20, "JGroups: seconds of the warm-up test in the same JVMs (0: none)")
	f.IntVar(&jgThreads, "jg-threads", 0, "JGroups: sender threads per member (0: MPerf's default, 100)")
	f.BoolVar(&tuned, "tuned", false, "run both systems with the same flow-control budget, --credits bytes per sender (see above) instead of their defaults")
	f.IntVar(&credits, "credits", mcast.TCPXMLCredits, "--tuned: flow-control budget per sender in bytes (tcp.xml's MFC/UFC max_credits)")
	f.IntVar(&castWindow, "cast-window", 0, "Strata, with --tuned: own casts that may be unstable at once (default --credits/--size; the stack's own default is 4096)")
	f.IntVar(&castBytes, "cast-bytes", 0, "Strata, with --tuned: bytes of own casts that may be unstable at once (default --credits; the stack's own default is 4000000)")
	f.IntVar(&window, "window", 0, "Strata, with --tuned: point-to-point frames in flight per peer (default --credits/--size; the stack's own default is 1024)")
	f.DurationVar(&gossip, "gossip", 0, "Strata, with --tuned: stability gossip interval (default 10ms; the stack's own default is 50ms)")
	f.DurationVar(&rto, "rto", 0, "Strata, with --tuned: first retransmission timeout (default 200ms; the stack's own default is 20ms)")
	f.IntVar(&outstanding, "outstanding", 64, "Strata: own casts a sender may have waiting in flow control")
	f.IntVar(&batch, "batch", 64, "Strata: casts per Node.Batch (their frames leave bundled); 1: one at a time")
	f.DurationVar(&timeout, "timeout", 3*time.Minute, "Strata: deadline of one run (members' progress is printed when it passes)")
	// Member mode (one Strata member process; used by the harness).
	f.BoolVar(&member, "member", false, "run one Strata member and print JSON lines (internal)")
	f.StringVar(&listen, "listen", "udp:127.0.0.1:0", "member: transport address (internal)")
	f.StringVar(&contact, "contact", "", "member: address to join through (internal)")
	for _, n := range []string{"member", "listen", "contact"} {
		f.MarkHidden(n)
	}
	return c
}
