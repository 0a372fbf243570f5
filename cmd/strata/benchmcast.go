package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"strata/internal/sbench"
	"strata/internal/stackbench"
)

func benchMcastCmd() *cobra.Command {
	var (
		quick, asJSON, noJGroups, member bool
		membersFlag, transport           string
		size, count, rounds              int
		jgTime, jgWarmup, jgThreads      int
		castWindow, window, outstanding  int
		batch                            int
		gossip, rto, timeout             time.Duration
		listen, contact                  string
	)
	c := &cobra.Command{
		Use:   "mcast",
		Short: "Multicast throughput: Strata's group stack vs JGroups MPerf (tcp.xml)",
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
delivery.

The stack runs with tcp.xml's flow-control budgets: 2 MB of credits per
sender (MFC and UFC max_credits) become --cast-window unstable casts and a
--window of point-to-point frames; stability gossip, which is what returns
cast credit in Strata, runs every --gossip; --rto is raised above the
queueing delays of a saturated loopback (with the stack's 20 ms, acks that
wait in queues trigger spurious retransmissions). With the stack's own
defaults (--cast-window 256 --window 1024 --gossip 50ms --rto 20ms) a
sender is limited by stability to about 256 casts per gossip round.

JGroups: org.jgroups.tests.perf.MPerf 5.5.6.Final, one JVM per member, the
jar's tcp.xml with TCPPING listing the members on 127.0.0.1, configured
through its stdin menu (message size, then a warm-up test and the measured
test). MPerf 5.5.6 runs for a time (--jg-time seconds), not for a number of
messages; every member sends from 100 threads and reports the messages it
received during its test / the test's length.

Rounds alternate the order of the two systems. The table shows, per system
and group size, the median over rounds of the members' mean msgs/s, with
the lowest and highest round. Ratios are oriented so that > 1 means Strata
is better.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			tune := stackbench.McastConfig{CastWindow: castWindow, GossipEvery: gossip, Window: window, RTO: rto, Outstanding: outstanding, Batch: batch}
			if member {
				n, err := strconv.Atoi(membersFlag)
				if err != nil {
					return fmt.Errorf("--members: member mode wants one number: %w", err)
				}
				cfg := tune
				cfg.Members, cfg.Size, cfg.Count, cfg.Listen, cfg.Contact = n, size, count, listen, contact
				return stackbench.ServeMcastMember(ctx, stdinContext(ctx), cfg, cmd.OutOrStdout())
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
			if size < 9 || count < 1 || rounds < 1 || jgTime < 1 || jgWarmup < 0 || jgThreads < 0 {
				return fmt.Errorf("--size >= 9, --count >= 1, --rounds >= 1, --jg-time >= 1, --jg-warmup >= 0 and --jg-threads >= 0 are required")
			}
			// tcp.xml's flow control budgets: MFC and UFC max_credits="2M"
			// (bytes) per sender, as casts and frames of --size bytes.
			if !cmd.Flags().Changed("cast-window") {
				castWindow = max(tcpXMLCredits/size, 1)
			}
			if !cmd.Flags().Changed("window") {
				window = max(tcpXMLCredits/size, 1)
			}
			if castWindow < 0 || window < 0 || gossip < 0 || rto < 0 || outstanding < 0 || batch < 0 {
				return fmt.Errorf("--cast-window, --window, --gossip, --rto, --outstanding and --batch must not be negative")
			}
			extra := []string{"--cast-window", strconv.Itoa(castWindow), "--window", strconv.Itoa(window),
				"--gossip", gossip.String(), "--rto", rto.String(), "--outstanding", strconv.Itoa(outstanding), "--batch", strconv.Itoa(batch)}
			o := mcastOpts{members: members, size: size, count: count, rounds: rounds, transport: transport,
				jg: !noJGroups, jgTime: jgTime, jgWarmup: jgWarmup, jgThreads: jgThreads, extra: extra, timeout: timeout}
			return runMcastBench(ctx, cmd, o, asJSON)
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
	f.StringVar(&transport, "transport", "tcp", "Strata's transport: udp or tcp")
	f.IntVar(&jgTime, "jg-time", 20, "JGroups: seconds of the measured MPerf test")
	f.IntVar(&jgWarmup, "jg-warmup", 20, "JGroups: seconds of the warm-up test in the same JVMs (0: none)")
	f.IntVar(&jgThreads, "jg-threads", 0, "JGroups: sender threads per member (0: MPerf's default, 100)")
	f.IntVar(&castWindow, "cast-window", 0, "Strata: own casts that may be unstable at once (default: 2 MB / --size, tcp.xml's MFC credits; the stack's own default is 256)")
	f.IntVar(&window, "window", 0, "Strata: point-to-point frames in flight per peer (default: 2 MB / --size, tcp.xml's UFC credits; the stack's own default is 1024)")
	f.DurationVar(&gossip, "gossip", 10*time.Millisecond, "Strata: stability gossip interval, which paces cast flow control (0: the stack's default, 50ms)")
	f.DurationVar(&rto, "rto", 200*time.Millisecond, "Strata: point-to-point first retransmission timeout (0: the stack's default, 20ms)")
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

// tcpXMLCredits is tcp.xml's MFC and UFC max_credits ("2M", in bytes).
const tcpXMLCredits = 2_000_000

type mcastOpts struct {
	members                     []int
	size, count, rounds         int
	transport                   string
	jg                          bool
	jgTime, jgWarmup, jgThreads int
	extra                       []string
	timeout                     time.Duration
}

// mcastResult is one run of one system.
type mcastResult struct {
	System     string    `json:"system"`
	Transport  string    `json:"transport"`
	Members    int       `json:"members"`
	Size       int       `json:"size"`
	Round      int       `json:"round"`
	Count      int       `json:"count,omitempty"`   // strata: casts per member
	Seconds    int       `json:"seconds,omitempty"` // jgroups: length of the measured test
	MsgsPerSec float64   `json:"msgs_per_sec"`      // mean over members, msgs received per second
	PerMember  []float64 `json:"per_member_msgs_per_sec"`
}

type mcastReport struct {
	Bench   string                `json:"bench"`
	Results []mcastResult         `json:"results"`
	Ratios  map[string]float64    `json:"ratios"`
	Spread  map[string][2]float64 `json:"spread"` // per ratio: lowest and highest round
	Peer    map[string]any        `json:"peer,omitempty"`
	Strata  map[string]any        `json:"strata,omitempty"`
}

func runMcastBench(ctx context.Context, cmd *cobra.Command, o mcastOpts, asJSON bool) error {
	progress := cmd.ErrOrStderr()
	rep := &mcastReport{Bench: "mcast", Ratios: map[string]float64{}, Spread: map[string][2]float64{}, Peer: map[string]any{}, Strata: map[string]any{}}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var jar string
	if o.jg {
		fmt.Fprintln(progress, "installing JGroups from Maven Central (if missing)")
		if jar, err = sbench.EnsureJGroups(ctx); err != nil {
			return fmt.Errorf("%w (use --no-jgroups to skip the peer)", err)
		}
	}
	rep.Strata["config"] = map[string]any{"props": stackbench.McastProps, "transport": o.transport, "flags": o.extra}
	for r := 1; r <= o.rounds; r++ {
		for _, n := range o.members {
			order := []string{"strata", "jgroups"}
			if r%2 == 0 {
				slices.Reverse(order)
			}
			for _, sys := range order {
				switch {
				case sys == "strata":
					res, err := stackbench.StrataMcast(ctx, stackbench.McastRunConfig{Members: n, Size: o.size, Count: o.count, Transport: o.transport,
						Argv: []string{self, "bench", "mcast", "--member"}, Extra: o.extra, Stderr: progress, Timeout: o.timeout})
					if err != nil {
						return fmt.Errorf("strata members=%d: %w", n, err)
					}
					mr := mcastResult{System: "strata", Transport: o.transport, Members: n, Size: o.size, Round: r, Count: o.count, MsgsPerSec: round1(res.MeanMsgsPerSec())}
					for _, p := range res.PerMember {
						mr.PerMember = append(mr.PerMember, round1(p.MsgsPerSec))
					}
					rep.Results = append(rep.Results, mr)
					rep.Strata[fmt.Sprintf("commands members=%d", n)] = res.Commands
					rep.Strata[fmt.Sprintf("counters members=%d rank=0", n)] = res.PerMember[0].Counters
					fmt.Fprintf(progress, "round %d strata  %s members=%d: %.0f msgs/s per member %v (%d casts each, %.2f s)\n",
						r, o.transport, n, mr.MsgsPerSec, mr.PerMember, o.count, res.PerMember[0].Seconds)
				case sys == "jgroups" && o.jg:
					// Fresh JVMs occasionally fail to form a cluster (discovery
					// races); a failed attempt measures nothing: try again.
					var res sbench.MPerfResult
					var err error
					warm := o.jgWarmup
					if warm == 0 {
						warm = -1 // none
					}
					for attempt := 1; attempt <= 3; attempt++ {
						if res, err = sbench.JGroupsMPerf(ctx, sbench.MPerfConfig{Jar: jar, Members: n, Size: o.size, Seconds: o.jgTime, Warmup: warm, Threads: o.jgThreads}); err == nil || ctx.Err() != nil {
							break
						}
						fmt.Fprintf(progress, "jgroups members=%d attempt %d failed: %v\n", n, attempt, firstLine(err.Error()))
					}
					if err != nil {
						return fmt.Errorf("jgroups members=%d: %w", n, err)
					}
					mr := mcastResult{System: "jgroups", Transport: "tcp", Members: n, Size: o.size, Round: r, Seconds: o.jgTime, MsgsPerSec: round1(res.MeanMsgsPerSec())}
					var warmRates []float64
					for _, p := range res.PerMember {
						mr.PerMember = append(mr.PerMember, round1(p.MsgsPerSec))
					}
					for _, p := range res.WarmupPerMember {
						warmRates = append(warmRates, round1(p.MsgsPerSec))
					}
					rep.Results = append(rep.Results, mr)
					rep.Peer["jgroups_stack_xml"] = res.StackXML
					rep.Peer[fmt.Sprintf("jgroups_commands members=%d", n)] = res.Commands
					rep.Peer["jgroups_stdin"] = res.Stdin
					fmt.Fprintf(progress, "round %d jgroups tcp members=%d: %.0f msgs/s per member %v (%d s test; warm-up %v)\n",
						r, n, mr.MsgsPerSec, mr.PerMember, o.jgTime, warmRates)
				}
			}
		}
	}
	if o.jg {
		for _, n := range o.members {
			s := mcastMedian(rep.Results, "strata", n)
			j := mcastMedian(rep.Results, "jgroups", n)
			if s > 0 && j > 0 {
				k := fmt.Sprintf("msgs/s strata/jgroups members=%d", n)
				rep.Ratios[k] = round3(s / j)
				var per []float64
				for r := 1; r <= o.rounds; r++ {
					sr, jr := mcastRound(rep.Results, "strata", n, r), mcastRound(rep.Results, "jgroups", n, r)
					if sr > 0 && jr > 0 {
						per = append(per, sr/jr)
					}
				}
				if len(per) > 0 {
					slices.Sort(per)
					rep.Spread[k] = [2]float64{round3(per[0]), round3(per[len(per)-1])}
				}
			}
		}
	}
	if asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
	}
	printMcast(cmd.OutOrStdout(), rep, o)
	return nil
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func mcastValues(rs []mcastResult, sys string, members int) []float64 {
	var xs []float64
	for _, r := range rs {
		if r.System == sys && r.Members == members {
			xs = append(xs, r.MsgsPerSec)
		}
	}
	slices.Sort(xs)
	return xs
}

func mcastMedian(rs []mcastResult, sys string, members int) float64 {
	xs := mcastValues(rs, sys, members)
	if len(xs) == 0 {
		return 0
	}
	if len(xs)%2 == 0 {
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return xs[len(xs)/2]
}

func mcastRound(rs []mcastResult, sys string, members, round int) float64 {
	for _, r := range rs {
		if r.System == sys && r.Members == members && r.Round == round {
			return r.MsgsPerSec
		}
	}
	return 0
}

func printMcast(w io.Writer, rep *mcastReport, o mcastOpts) {
	fmt.Fprintf(w, "multicast throughput on loopback, %d-byte messages, every member sends; msgs/s received per member\n", o.size)
	fmt.Fprintf(w, "(own messages included), mean over members, median of %d round(s)\n\n", o.rounds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\ttransport\tmembers\tmsgs/s per member\tspread (rounds)\tper member (last round)\t")
	systems := []string{"strata"}
	if o.jg {
		systems = append(systems, "jgroups")
	}
	for _, sys := range systems {
		for _, n := range o.members {
			xs := mcastValues(rep.Results, sys, n)
			if len(xs) == 0 {
				continue
			}
			tr := o.transport
			if sys == "jgroups" {
				tr = "tcp"
			}
			var last []float64
			for _, r := range rep.Results {
				if r.System == sys && r.Members == n {
					last = r.PerMember
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f-%.0f\t%s\t\n", sys, tr, n, mcastMedian(rep.Results, sys, n), xs[0], xs[len(xs)-1], fmtRates(last))
		}
	}
	tw.Flush()
	if len(rep.Ratios) > 0 {
		fmt.Fprintf(w, "\nratios (> 1: Strata better)\n")
		keys := make([]string, 0, len(rep.Ratios))
		for k := range rep.Ratios {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sp := rep.Spread[k]
			fmt.Fprintf(w, "  %-40s %.3f  (rounds %.3f-%.3f)\n", k, rep.Ratios[k], sp[0], sp[1])
		}
	}
	fmt.Fprintf(w, "\nStrata: %s stack over %s, %d casts per member, %s.\n", stackbench.McastProps, o.transport, o.count, strings.Join(o.extra, " "))
	if o.jg {
		fmt.Fprintf(w, "JGroups: MPerf, tcp.xml (TCPPING), %d s test after a %d s warm-up in the same JVMs.\n", o.jgTime, o.jgWarmup)
	}
}

func fmtRates(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += " "
		}
		s += strconv.FormatFloat(x, 'f', 0, 64)
	}
	return s
}
