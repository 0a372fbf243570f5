package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"strata/internal/sbench"
	"strata/internal/stackbench"
	"strata/stack"
)

func benchStackCmd() *cobra.Command {
	var (
		quick, asJSON, noJGroups bool
		codeOnly                 bool
		pin                      string
		n, size, rounds, codeN   int
		callersFlag, transports  string
		serveStrata, serveRaw    string
		busyPoll                 time.Duration
		procs                    int
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
   its generated code) and the bypass's generic loops alone.

2. Round trips on loopback between two processes: Strata's RPC stack
   (Reliable, Fragment, RPC) over UDP and TCP; a raw-socket echo of the same
   kind; and JGroups' own RoundTrip tool with its tcp-low-latency stack
   (two JVMs, TCPPING discovery; installed from Maven Central). 1 and 8
   concurrent callers. Each server runs in its own process; the clients run
   in this one. Rounds alternate the order of the systems.

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
   two gets its share of the machine, as one CPU each when pinned. With
   every CPU each, a Strata process's polling reader and its callers
   spread over more threads than the machine has CPUs next to the other
   process's poller (the raw sockets' single goroutine cannot).

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
				return stackbench.Serve(stdinContext(ctx), serveStrata, busyPoll, func(a stack.Addr) { fmt.Printf("listening on %s\n", a) })
			case serveRaw != "":
				network, addr, _ := strings.Cut(serveRaw, ":")
				stopEcho, actual, err := sbench.RawEchoServer(network, addr, busyPoll)
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
			if n < 100 || size < 1 || rounds < 1 || codeN < 1000 {
				return fmt.Errorf("--n >= 100, --size >= 1, --rounds >= 1 and --code-n >= 1000 are required")
			}
			if busyPoll < 0 || busyPoll > time.Second {
				return fmt.Errorf("--busy-poll %v: want 0 to 1s", busyPoll)
			}
			cpus := []int{-1, -1}
			switch pin {
			case "", "none":
			case "split":
				if runtime.NumCPU() < 2 {
					return fmt.Errorf("--pin split needs 2 CPUs, this machine has %d (use --pin shared)", runtime.NumCPU())
				}
				cpus = []int{0, 1}
			case "shared":
				cpus = []int{0, 0}
			default:
				return fmt.Errorf("--pin: unknown placement %q (want none, split or shared)", pin)
			}
			if procs < 0 {
				return fmt.Errorf("--procs %d: want 0 (half the CPUs) or more", procs)
			}
			if procs == 0 {
				procs = max(1, runtime.NumCPU()/2)
			}
			return runStackBench(ctx, cmd, asJSON, !noJGroups, codeOnly, n, size, rounds, codeN, callers, kinds, cpus, busyPoll, procs)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 20k calls per cell, 1 round")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&codeOnly, "code-only", false, "only the code-latency cells (no processes, no network)")
	f.BoolVar(&noJGroups, "no-jgroups", false, "skip the JGroups peer (needs java and Maven Central)")
	f.StringVar(&pin, "pin", "none", "placement for every system: none; split (clients on CPU 0, servers on CPU 1); shared (clients and servers on CPU 0); needs taskset")
	f.IntVar(&n, "n", 100000, "calls per cell")
	f.IntVar(&size, "size", 100, "request bytes")
	f.IntVar(&rounds, "rounds", 3, "rounds")
	f.IntVar(&codeN, "code-n", 500000, "messages per code-latency cell")
	f.StringVar(&callersFlag, "callers", "1,8", "concurrent callers")
	f.StringVar(&transports, "transports", "udp,tcp", "transports for Strata and raw sockets")
	f.IntVar(&procs, "procs", 0, "unpinned (--pin none): GOMAXPROCS of the client and server Go processes (0: half the CPUs, at least 1)")
	f.DurationVar(&busyPoll, "busy-poll", 50*time.Microsecond, "Strata's and the raw sockets' readers poll an empty socket this long before sleeping (0: never)")
	f.StringVar(&serveStrata, "serve-strata", "", "run a Strata echo server on this address (internal)")
	f.StringVar(&serveRaw, "serve-raw", "", "run a raw echo server, NET:HOST:PORT (internal)")
	f.MarkHidden("serve-strata")
	f.MarkHidden("serve-raw")
	return c
}

// server is a child process serving round trips.
type server struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	addr string
}

// startServer starts this binary with args (pinned to cpu unless cpu < 0,
// with env added to the environment) and waits for its "listening on"
// line.
func startServer(ctx context.Context, cpu int, env []string, args ...string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv, err := sbench.Pinned(cpu, append([]string{self}, args...))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("server %v did not start: %q %v", args, line, err)
	}
	return &server{cmd: cmd, in: in, addr: addr}, nil
}

func (s *server) stop() {
	s.in.Close()
	s.cmd.Process.Signal(syscall.SIGTERM) // servers that do not watch stdin
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

type stackReport struct {
	Bench    string                  `json:"bench"`
	Code     []stackbench.CodeResult `json:"code"`
	Results  []stackbench.RTTResult  `json:"results"`
	JGroups  []sbench.JGResult       `json:"-"`
	Peer     map[string]any          `json:"peer,omitempty"`
	Ratios   map[string]float64      `json:"ratios"`
	Extra    map[string]float64      `json:"overhead_us"`     // Strata's mean round trip minus raw's
	ExtraP50 map[string]float64      `json:"overhead_p50_us"` // the same at the median
	// Failures are the peer's cells that measured nothing (left out of the
	// medians and ratios).
	Failures []string `json:"failures,omitempty"`
}

// codeRatios adds, per stack, size and direction, how many times faster
// the bypass is than the imperative stack.
func codeRatios(rep *stackReport) {
	find := func(st string, size int, mode string) *stackbench.CodeResult {
		for i, r := range rep.Code {
			if r.Stack == st && r.Size == size && r.Mode == mode {
				return &rep.Code[i]
			}
		}
		return nil
	}
	for _, r := range rep.Code {
		if r.Mode != "bypass" {
			continue
		}
		imp := find(r.Stack, r.Size, "imperative")
		if imp == nil {
			continue
		}
		if r.DownNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/imperative %s down size=%d", r.Stack, r.Size)] = round3(imp.DownNs / r.DownNs)
		}
		if r.UpNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/imperative %s up size=%d", r.Stack, r.Size)] = round3(imp.UpNs / r.UpNs)
		}
		// Down and up together, as the paper's Table 1 totals them.
		if r.DownNs+r.UpNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/imperative %s down+up size=%d", r.Stack, r.Size)] = round3((imp.DownNs + imp.UpNs) / (r.DownNs + r.UpNs))
		}
		// What the generated code gains over the generic loops.
		if gen := find(r.Stack, r.Size, "generic"); gen != nil && r.DownNs > 0 && r.UpNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/generic %s down size=%d", r.Stack, r.Size)] = round3(gen.DownNs / r.DownNs)
			rep.Ratios[fmt.Sprintf("code-latency bypass/generic %s up size=%d", r.Stack, r.Size)] = round3(gen.UpNs / r.UpNs)
		}
	}
}

// median is the median of f over rs.
func median(rs []stackbench.CodeResult, f func(stackbench.CodeResult) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

func runStackBench(ctx context.Context, cmd *cobra.Command, asJSON, jg, codeOnly bool, n, size, rounds, codeN int, callers []int, kinds []string, cpus []int, busyPoll time.Duration, procs int) error {
	progress := cmd.ErrOrStderr()
	rep := &stackReport{Bench: "stack", Results: []stackbench.RTTResult{}, Ratios: map[string]float64{}, Extra: map[string]float64{}, ExtraP50: map[string]float64{}, Peer: map[string]any{}}
	// Every cell runs once per round, modes alternating within a cell;
	// the table shows each cell's median round.
	cells := map[string][]stackbench.CodeResult{}
	var order []string
	add := func(r stackbench.CodeResult) {
		k := fmt.Sprintf("%s/%d/%s", r.Stack, r.Size, r.Mode)
		if _, ok := cells[k]; !ok {
			order = append(order, k)
		}
		cells[k] = append(cells[k], r)
	}
	for round := 0; round < rounds; round++ {
		for _, sz := range []int{4, 24, 100, 1000} {
			for _, mode := range stackbench.Modes {
				r := stackbench.CodeLatency(sz, codeN, mode)
				add(r)
				fmt.Fprintf(progress, "round %d code latency pt2pt %4d B %s: down %.0f ns, up %.0f ns, ack %.0f ns, %.2f allocs\n", round+1, sz, mode, r.DownNs, r.UpNs, r.AckNs, r.AllocsOp)
			}
		}
		for _, st := range stackbench.GroupStacks {
			for _, sz := range []int{4, 100, 1000} {
				for _, mode := range stackbench.Modes {
					r := stackbench.GroupCodeLatency(st, sz, codeN/5, mode)
					add(r)
					fmt.Fprintf(progress, "round %d code latency %s %4d B %s: down %.0f ns, up %.0f ns, rest %.0f ns, %.2f allocs, bypass hits %.2f\n", round+1, st, sz, mode, r.DownNs, r.UpNs, r.AckNs, r.AllocsOp, r.Hits)
				}
			}
		}
	}
	for _, k := range order {
		rs := cells[k]
		med := rs[0]
		med.DownNs = median(rs, func(r stackbench.CodeResult) float64 { return r.DownNs })
		med.UpNs = median(rs, func(r stackbench.CodeResult) float64 { return r.UpNs })
		med.AckNs = median(rs, func(r stackbench.CodeResult) float64 { return r.AckNs })
		rep.Code = append(rep.Code, med)
	}
	codeRatios(rep)
	if codeOnly {
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
		}
		printCode(cmd.OutOrStdout(), rep)
		return nil
	}
	var jar string
	if jg {
		var err error
		fmt.Fprintln(progress, "installing JGroups from Maven Central (if missing)")
		if jar, err = sbench.EnsureJGroups(ctx); err != nil {
			return fmt.Errorf("%w (use --no-jgroups to skip the peer)", err)
		}
	}
	if cpus[0] >= 0 {
		// After the code-latency cells, which measure one thread anyway.
		restore, err := sbench.PinSelf(cpus[0])
		if err != nil {
			return fmt.Errorf("%w (drop --pin)", err)
		}
		defer restore()
		placement := "split"
		if cpus[0] == cpus[1] {
			placement = "shared"
		}
		rep.Peer["pinning"] = fmt.Sprintf("%s: clients on CPU %d, servers on CPU %d", placement, cpus[0], cpus[1])
	}
	rep.Peer["busy_poll"] = busyPoll.String()
	var env []string
	if cpus[0] < 0 {
		// After the code-latency cells, as for pinning.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		env = []string{"GOMAXPROCS=" + strconv.Itoa(procs)}
		rep.Peer["gomaxprocs"] = strconv.Itoa(procs)
	}
	for r := 0; r < rounds; r++ {
		for _, kind := range kinds {
			bp := "--busy-poll=" + busyPoll.String()
			ss, err := startServer(ctx, cpus[1], env, "bench", "stack", bp, "--serve-strata", kind+":127.0.0.1:0")
			if err != nil {
				return err
			}
			rs, err := startServer(ctx, cpus[1], env, "bench", "stack", bp, "--serve-raw", kind+":127.0.0.1:0")
			if err != nil {
				ss.stop()
				return err
			}
			_, rawAddr, _ := strings.Cut(rs.addr, ":")
			for _, c := range callers {
				order := []string{"strata", "strata-event", "raw"}
				if r%2 == 1 {
					slices.Reverse(order)
				}
				for _, sys := range order {
					var res stackbench.RTTResult
					switch sys {
					case "strata":
						res, err = stackbench.StrataRoundTrip(ctx, stack.Addr(ss.addr), size, n, c, stackbench.Blocking, busyPoll)
					case "strata-event":
						res, err = stackbench.StrataRoundTrip(ctx, stack.Addr(ss.addr), size, n, c, stackbench.Event, busyPoll)
					default:
						var rr sbench.RawResult
						rr, err = sbench.RawRoundTrip(ctx, kind, rawAddr, size, n, c, busyPoll)
						res = stackbench.RTTResult{System: "raw", Transport: kind, Callers: c, Size: size, N: rr.N, AvgUs: rr.AvgUs, P50Us: rr.P50Us, P99Us: rr.P99Us, ReqPerSec: rr.ReqPerSec}
					}
					if err != nil {
						ss.stop()
						rs.stop()
						return fmt.Errorf("%s %s callers=%d: %w", sys, kind, c, err)
					}
					rep.Results = append(rep.Results, res)
					fmt.Fprintf(progress, "round %d %-6s %s callers=%d: avg %.1f µs, p50 %.1f, p99 %.1f, %.0f req/s\n", r+1, sys, kind, c, res.AvgUs, res.P50Us, res.P99Us, res.ReqPerSec)
				}
			}
			ss.stop()
			rs.stop()
		}
		if jg {
			for _, c := range callers {
				// Two fresh JVMs occasionally fail to form a cluster here
				// (discovery races); a failed attempt measures nothing, so
				// try again before giving up.
				var res sbench.JGResult
				var err error
				for attempt := 1; attempt <= 3; attempt++ {
					if res, err = sbench.JGroupsRoundTrip(ctx, sbench.JGConfig{Jar: jar, Messages: n, Size: size, Senders: c, CPUs: jgCPUs(cpus)}); err == nil {
						break
					}
					fmt.Fprintf(progress, "jgroups callers=%d attempt %d failed: %v\n", c, attempt, firstLine(err.Error()))
				}
				if err != nil {
					// The peer's failure costs its cell, not the run: the
					// medians and ratios use the rounds that measured it.
					fmt.Fprintf(progress, "round %d jgroups tcp callers=%d: FAILED after 3 attempts: %v\n", r+1, c, firstLine(err.Error()))
					rep.Failures = append(rep.Failures, fmt.Sprintf("round %d jgroups tcp callers=%d: %s", r+1, c, firstLine(err.Error())))
					continue
				}
				rep.JGroups = append(rep.JGroups, res)
				rep.Results = append(rep.Results, stackbench.RTTResult{System: "jgroups", Transport: "tcp", Callers: c, Size: size, N: res.Messages, AvgUs: res.RateAvgUs, ReqPerSec: res.ReqPerSec})
				rep.Peer["jgroups_stack_xml"] = res.StackXML
				rep.Peer["jgroups_commands"] = res.Commands
				fmt.Fprintf(progress, "round %d jgroups tcp callers=%d: mean %.1f µs (printed avg %.1f, min %.1f), %.0f req/s\n", r+1, c, res.RateAvgUs, res.AvgUs, res.MinUs, res.ReqPerSec)
			}
		}
	}
	summarizeStack(rep, kinds, callers, jg)
	if asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
	}
	printStack(cmd.OutOrStdout(), rep, kinds, callers, jg, n, size, rounds)
	return nil
}

func medianOf(rep *stackReport, sys, kind string, callers int, f func(stackbench.RTTResult) float64) float64 {
	var xs []float64
	for _, r := range rep.Results {
		if r.System == sys && r.Transport == kind && r.Callers == callers {
			xs = append(xs, f(r))
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func avgOf(r stackbench.RTTResult) float64 { return r.AvgUs }
func p50Of(r stackbench.RTTResult) float64 { return r.P50Us }
func p99Of(r stackbench.RTTResult) float64 { return r.P99Us }
func rpsOf(r stackbench.RTTResult) float64 { return r.ReqPerSec }

// apiOf names the client API of a Strata system in the ratio keys.
func apiOf(sys string) string {
	if sys == "strata-event" {
		return "event"
	}
	return "blocking"
}

func summarizeStack(rep *stackReport, kinds []string, callers []int, jg bool) {
	for _, k := range kinds {
		for _, c := range callers {
			raw, raw50 := medianOf(rep, "raw", k, c, avgOf), medianOf(rep, "raw", k, c, p50Of)
			for _, sys := range []string{"strata", "strata-event"} {
				api := apiOf(sys)
				s := medianOf(rep, sys, k, c, avgOf)
				rep.Ratios[fmt.Sprintf("rtt strata/raw %s callers=%d api=%s", k, c, api)] = round3(raw / s)
				rep.Extra[fmt.Sprintf("strata-raw %s callers=%d api=%s", k, c, api)] = round3(s - raw)
				rep.ExtraP50[fmt.Sprintf("strata-raw %s callers=%d api=%s", k, c, api)] = round3(medianOf(rep, sys, k, c, p50Of) - raw50)
				if j := medianOf(rep, "jgroups", "tcp", c, avgOf); jg && j > 0 {
					rep.Ratios[fmt.Sprintf("rtt strata/jgroups %s callers=%d api=%s", k, c, api)] = round3(j / s)
					rep.Ratios[fmt.Sprintf("req/s strata/jgroups %s callers=%d api=%s", k, c, api)] = round3(medianOf(rep, sys, k, c, rpsOf) / medianOf(rep, "jgroups", "tcp", c, rpsOf))
				}
			}
		}
	}
}

func printCode(w io.Writer, rep *stackReport) {
	fmt.Fprintf(w, "code latency, no network, ns per message (pt2pt: bottom, pt2pt, top; mcast4: top, mnak, pt2pt,\n")
	fmt.Fprintf(w, "bottom, a cast to one member; vsync: the Total,Membership stack, 3 members, a cast from a\n")
	fmt.Fprintf(w, "member that is not the sequencer; rest: sequencing, order entries and acks at every member;\n")
	fmt.Fprintf(w, "clock: what reading the clock adds to a timed step, measured in place every round and subtracted;\n")
	fmt.Fprintf(w, "allocs down/up/rest: by the stacks in each step; allocs/msg: all, the harness's frame buffers included; modes: imperative and functional compositions, bypass:\nthe imperative stack with stack.Optimize's bypass and its generated code, generic: the bypass's generic loops)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stack\tbytes\tmode\tdown ns\tup ns\tack/rest ns\tclock ns\tallocs down/up/rest\tallocs/msg\tbypass hits\twire bytes\t")
	for _, r := range rep.Code {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f/%.2f/%.2f\t%.3f\t%.2f\t%d\t\n", r.Stack, r.Size, r.Mode, r.DownNs, r.UpNs, r.AckNs, r.ClockNs, r.DownAllocs, r.UpAllocs, r.RestAllocs, r.AllocsOp, r.Hits, r.WireBytes)
	}
	tw.Flush()
	var keys []string
	for k := range rep.Ratios {
		if strings.HasPrefix(k, "code-latency") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) > 0 {
		fmt.Fprintf(w, "\nbypass speed-up (bypass/imperative: imperative ns / bypass ns; bypass/generic: the generated\ncode's gain, generic loops ns / bypass ns)\n")
		for _, k := range keys {
			fmt.Fprintf(w, "  %-50s %.2f\n", k, rep.Ratios[k])
		}
	}
}

func jgCPUs(cpus []int) []int {
	if cpus[0] < 0 {
		return nil
	}
	return cpus
}

func printStack(w io.Writer, rep *stackReport, kinds []string, callers []int, jg bool, n, size, rounds int) {
	printCode(w, rep)
	fmt.Fprintf(w, "\nround trips on loopback, %d-byte requests, %d calls per cell, median of %d round(s)\n", size, n, rounds)
	place, _ := rep.Peer["pinning"].(string)
	if place == "" {
		place = fmt.Sprintf("unpinned, Go processes with GOMAXPROCS %v", rep.Peer["gomaxprocs"])
	}
	fmt.Fprintf(w, "placement: %s; busy polling %v\n\n", place, rep.Peer["busy_poll"])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\ttransport\tcallers\tmean µs\tp50 µs\tp99 µs\treq/s\t")
	systems := []string{"strata", "strata-event", "raw"}
	if jg {
		systems = append(systems, "jgroups")
	}
	for _, sys := range systems {
		ks := kinds
		if sys == "jgroups" {
			ks = []string{"tcp"}
		}
		for _, k := range ks {
			for _, c := range callers {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t\n", sys, k, c, medianOf(rep, sys, k, c, avgOf),
					medianOf(rep, sys, k, c, p50Of), medianOf(rep, sys, k, c, p99Of), medianOf(rep, sys, k, c, rpsOf))
			}
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nratios (> 1: Strata better)\n")
	keys := make([]string, 0, len(rep.Ratios))
	for k := range rep.Ratios {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-50s %.2f\n", k, rep.Ratios[k])
	}
	for _, ex := range []struct {
		title string
		m     map[string]float64
	}{{"Strata's mean round trip minus the raw socket's (µs)", rep.Extra}, {"Strata's median (p50) round trip minus the raw socket's (µs)", rep.ExtraP50}} {
		fmt.Fprintf(w, "\n%s\n", ex.title)
		keys = keys[:0]
		for k := range ex.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %-50s %+.1f\n", k, ex.m[k])
		}
	}
	fmt.Fprintf(w, "\napi=blocking: callers wait in Node.Call (a lone caller with busy polling receives its reply itself);\napi=event (system strata-event): the next call is issued from the reply callback with Node.CallAsync,\non the goroutine that received the reply.\n")
	if jg {
		fmt.Fprintf(w, "\nJGroups mean = senders / req/s (Little's law): RoundTrip's printed average is a sample.\n")
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintf(w, "\nFAILED cells (no figure; not in the medians and ratios):\n")
		for _, f := range rep.Failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
}
