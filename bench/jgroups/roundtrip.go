package jgroups

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// RoundTripClass is JGroups' round-trip test program.
const RoundTripClass = "org.jgroups.tests.RoundTrip"

// MaxWarmupPasses is how many warm-up passes RoundTrip runs at most, and
// WarmupSettled the factor by which a pass's request rate must beat the
// best before it for the JVMs to count as still warming up.
const (
	MaxWarmupPasses = 8
	WarmupSettled   = 1.1
)

// warmedUp reports whether the warm-up passes with these request rates
// are enough: the last two passes each failed to beat the best rate
// before them by WarmupSettled. Two, not one: on a busy machine one slow
// pass says little, and stopping early leaves the JIT compiler working
// through the measured run.
func warmedUp(rates []float64) bool {
	if len(rates) < 3 {
		return false
	}
	best := max(rates[0], 0)
	for _, r := range rates[1 : len(rates)-2] {
		best = max(best, r)
	}
	n := len(rates)
	return rates[n-2] < WarmupSettled*best && rates[n-1] < WarmupSettled*max(best, rates[n-2])
}

// RTHeader is the header RoundTrip puts in front of a request's payload and
// the whole of its reply: a type byte and the sender thread's id (a short).
const RTHeader = 3

// RTConfig configures [RoundTrip].
type RTConfig struct {
	Jar      string    // JGroups jar; "" means EnsureJGroups
	Stack    StackSpec // the stack both members run (see BuildStack)
	Messages int       // requests in the measured run (all senders together)
	// Size is RoundTrip's "size": payload bytes after its 3-byte header
	// (RTHeader); a request carries RTHeader+Size bytes, a reply RTHeader.
	Size    int
	Senders int // sender threads, each with one request outstanding
	Warmup  int // requests per warm-up pass; 0 means Messages, <0 no warm-up
	// WarmupPasses caps the warm-up passes (0 means MaxWarmupPasses): they
	// repeat until two in a row fail to beat the best rate before them by
	// WarmupSettled (see warmedUp), i.e. the JIT compiler has stopped
	// speeding the JVMs up.
	WarmupPasses int
	Timeout      time.Duration // whole run, JVM start to exit; 0 means 3 minutes
	JVMArgs      []string      // extra JVM options for both members (e.g. -Xmx256m)
	CPUs         []int         // if two CPUs are given: A (the sender) runs on the first only, B on the second
}

// RTResult is what [RoundTrip] measured, as RoundTrip reported it.
// Latencies are in microseconds; a zero field was not reported.
type RTResult struct {
	Messages, Size, Senders, Warmup int

	// AvgUs is RoundTrip's printed average round trip (System.nanoTime
	// around each request's send and the wait for its reply). It is not the
	// mean of all requests: JGroups' Average keeps 2048 slots per sender and
	// each new sample overwrites a random slot (senders' slots are merged
	// the same way), so it is the mean of a random, recency-weighted sample
	// of at most 2048 round trips. MinUs and MaxUs are over all requests.
	AvgUs, MinUs, MaxUs float64
	// ReqPerSec is RoundTrip's "reqs/sec": Messages / the wall time from
	// releasing the sender threads to the last one's end; exact.
	ReqPerSec float64

	// RateAvgUs is Senders / ReqPerSec in microseconds: by Little's law the
	// mean round trip over all requests (each sender has exactly one request
	// outstanding), including the sender loop's own small overhead. It is
	// exact where AvgUs is sampled.
	RateAvgUs float64

	// CPUPerCallUs is the CPU time both JVMs used during the measured run
	// (from the menu's "2" to its report; JIT and GC threads included),
	// per request, in µs.
	CPUPerCallUs float64

	// WarmupReqPerSec are the warm-up passes' request rates, in order.
	WarmupReqPerSec []float64

	Raw       string   // RoundTrip's report lines of the measured run, both members
	Commands  []string // the two java command lines (member A sends, B answers)
	Stdin     string   // what was typed into A's stdin menu, in order
	StackXML  string   // the stack file both members ran with (see BuildStack)
	StackFile string   // its temporary path in Commands (removed on return)
	Jar       string
	Output    string // A's and B's complete console output
}

// RoundTrip runs org.jgroups.tests.RoundTrip between two JVMs on 127.0.0.1
// over cfg.Stack, with RoundTrip's own defaults for everything its menu
// does not set (its JGroups transport; messages flagged NO_FC, not OOB,
// bundled as the stack's bundler does; sender threads as its thread
// factory makes them): warm-up runs until the request rate settles (see
// RTConfig.WarmupPasses), then the measured run, in the same
// JVMs. Both JVMs are killed (process group SIGKILL) on return whatever
// happens.
//
// RoundTrip's stdin menu ([1] send [2] num_msgs [3] senders [4] size
// [d] details [x] exit [X] exit all) reads one key, then skips whatever else
// is already buffered, and "2", "3", "4" then prompt for a number on a line
// of its own; so keys are typed without newline and each value only after
// its prompt appears.
func RoundTrip(ctx context.Context, cfg RTConfig) (RTResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := roundTrip(ctx, cfg)
		if !errors.Is(err, errStdinRace) || attempt == 3 || ctx.Err() != nil {
			return res, err
		}
	}
}

func roundTrip(ctx context.Context, cfg RTConfig) (res RTResult, err error) {
	if cfg.Messages <= 0 || cfg.Size < 0 || cfg.Senders <= 0 || cfg.Stack.Base == "" {
		return res, fmt.Errorf("jgroups: RTConfig needs Messages > 0, Size >= 0, Senders > 0 and a stack (got %d, %d, %d, %q)", cfg.Messages, cfg.Size, cfg.Senders, cfg.Stack.Base)
	}
	if cfg.Senders > 32767 {
		return res, fmt.Errorf("jgroups: RoundTrip numbers senders with a short; %d is too many", cfg.Senders)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Minute
	}
	warm := cfg.Warmup
	if warm == 0 {
		warm = cfg.Messages
	}
	res.Messages, res.Size, res.Senders = cfg.Messages, cfg.Size, cfg.Senders
	if warm > 0 {
		res.Warmup = warm
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	setup, err := prepare(ctx, cfg.Jar, 2, cfg.Stack)
	if err != nil {
		return res, err
	}
	defer setup.cleanup()
	res.Jar, res.StackXML, res.StackFile = setup.jar, setup.stackXML, setup.stackFile

	names := []string{"A", "B"}
	var ms []*member
	defer func() {
		// Whatever happened: kill both process groups and reap them.
		res.Output = stopMembers(ms)
		if err != nil && res.Output != "" {
			err = fmt.Errorf("%w\n%s", err, tail(res.Output, 6000))
		}
	}()
	start := func(i int) (*console, error) {
		cpu := -1
		if len(cfg.CPUs) == 2 {
			cpu = cfg.CPUs[i]
		}
		m, err := setup.startMember(ctx, cfg.JVMArgs, i, cpu, RoundTripClass, names[i])
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
		res.Commands = append(res.Commands, shellJoin(m.cmd.Args))
		return m.con, nil
	}

	// A first, so that it is the coordinator B joins.
	a, err := start(0)
	if err != nil {
		return res, err
	}
	in := ms[0].in
	if _, err := a.waitFor(ctx, 0, "GMS: address="); err != nil {
		return res, fmt.Errorf("jgroups: member A did not start: %w", err)
	}
	b, err := start(1)
	if err != nil {
		return res, err
	}
	// Two members that have not formed a cluster within a minute will not
	// (a discovery race seen with pinned JVMs): fail now, so that the
	// caller's retry comes sooner than the whole run's timeout.
	vctx, vcancel := context.WithTimeout(ctx, time.Minute)
	_, err = a.waitRE(vctx, 0, reTwoView)
	vcancel()
	if err != nil {
		return res, fmt.Errorf("jgroups: the two members did not form a cluster: %w", err)
	}
	if _, err := b.waitFor(ctx, 0, menuEnd); err != nil {
		return res, fmt.Errorf("jgroups: member B not ready: %w", err)
	}

	var typed []string
	typeKey := func(k string) error {
		typed = append(typed, k)
		_, err := in.Write([]byte(k))
		return err
	}
	set := func(key, prompt string, v int) error {
		off := a.Len()
		if err := typeKey(key); err != nil {
			return err
		}
		typed = append(typed, strconv.Itoa(v)+"⏎")
		_, err := a.answer(ctx, in, off, prompt, v, menuEnd)
		return err
	}
	run := func(n int) (report string, err error) {
		if err := set("2", "num_msgs:", n); err != nil {
			return "", err
		}
		off := a.Len()
		if err := typeKey("1"); err != nil {
			return "", err
		}
		const notTwo = "Cluster must have exactly 2 members"
		i, err := a.waitFor(ctx, off, "rsp-delivery-time", notTwo)
		if err != nil {
			return "", fmt.Errorf("jgroups: no RoundTrip report: %w", err)
		}
		if strings.HasSuffix(a.slice(off, i), notTwo) {
			return "", errors.New("jgroups: RoundTrip: " + notTwo)
		}
		end, err := a.waitFor(ctx, i, menuEnd)
		if err != nil {
			return "", err
		}
		return stripANSI(a.slice(off, end)), nil
	}

	if err := set("3", "num_senders:", cfg.Senders); err != nil {
		return res, err
	}
	if err := set("4", "size:", cfg.Size); err != nil {
		return res, err
	}
	passes := cfg.WarmupPasses
	if passes <= 0 {
		passes = MaxWarmupPasses
	}
	for i := 0; warm > 0 && i < passes && !warmedUp(res.WarmupReqPerSec); i++ {
		typed = append(typed, "(warm-up:)")
		rep, err := run(warm)
		if err != nil {
			return res, err
		}
		w, err := parseRoundTrip(rep)
		if err != nil {
			return res, err
		}
		res.WarmupReqPerSec = append(res.WarmupReqPerSec, w.ReqPerSec)
	}
	if warm > 0 {
		typed = append(typed, "(measured:)")
	}
	bOff := b.Len()
	cpu0 := CPUTime(ms[0].cmd.Process.Pid) + CPUTime(ms[1].cmd.Process.Pid)
	rep, err := run(cfg.Messages)
	if err != nil {
		return res, err
	}
	if cpu1 := CPUTime(ms[0].cmd.Process.Pid) + CPUTime(ms[1].cmd.Process.Pid); cpu0 >= 0 && cpu1 >= cpu0 {
		res.CPUPerCallUs = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(cfg.Messages)
	}
	m, err := parseRoundTrip(rep)
	if err != nil {
		return res, err
	}
	res.AvgUs, res.MinUs, res.MaxUs, res.ReqPerSec = m.AvgUs, m.MinUs, m.MaxUs, m.ReqPerSec
	if m.ReqPerSec > 0 {
		res.RateAvgUs = float64(cfg.Senders) * 1e6 / m.ReqPerSec
	}

	// B prints its side when it gets A's DONE message.
	var bRep string
	bCtx, bCancel := context.WithTimeout(ctx, 5*time.Second)
	if j, err := b.waitFor(bCtx, bOff, "rsp-send-time"); err == nil {
		if k, err := b.waitFor(bCtx, j, "\n"); err == nil {
			bRep = stripANSI(b.slice(bOff, k))
		}
	}
	bCancel()
	res.Raw = "A: " + reportLines(rep) + "\nB: " + reportLines(bRep)

	// Exit all: A tells B to exit, then leaves.
	typeKey("X") // best effort: both JVMs are killed on return anyway
	res.Stdin = strings.Join(typed, " ")
	waitExited(ctx, ms)
	return res, nil
}

const menuEnd = "[X] exit all"

var (
	reTwoView = regexp.MustCompile(`view = \[[^\]]*\] \(2\)`)
	reReqs    = regexp.MustCompile(`reqs/sec\s*=\s*([0-9.,]+)`)
	reRTT     = regexp.MustCompile(`round-trip\s*=\s*(\S+)/(\S+)/(\S+)`)
	reDur     = regexp.MustCompile(`^([0-9.,]+)\s*(ns|us|µs|μs|ms|s|sec)$`)
)

type rtStats struct{ AvgUs, MinUs, MaxUs, ReqPerSec float64 }

// parseRoundTrip reads RoundTrip's report:
//
//	reqs/sec          = 5434.09
//	round-trip        = 32.49us/166.08us/25.05ms   (min/avg/max)
//	req-send-time     = ...
//	rsp-delivery-time = ...
func parseRoundTrip(s string) (rtStats, error) {
	var st rtStats
	// Per-sender lines ("0: round-trip = ...") precede the merged one.
	var merged []string
	for _, ln := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(ln); strings.HasPrefix(t, "round-trip") {
			merged = reRTT.FindStringSubmatch(t)
		}
	}
	r := reReqs.FindStringSubmatch(s)
	if merged == nil || r == nil {
		return st, fmt.Errorf("jgroups: cannot parse RoundTrip report:\n%s", s)
	}
	var err error
	if st.ReqPerSec, err = strconv.ParseFloat(strings.ReplaceAll(r[1], ",", ""), 64); err != nil {
		return st, fmt.Errorf("jgroups: reqs/sec %q: %w", r[1], err)
	}
	for i, dst := range []*float64{&st.MinUs, &st.AvgUs, &st.MaxUs} {
		if *dst, err = parseMicros(merged[i+1]); err != nil {
			return st, err
		}
	}
	return st, nil
}

// parseMicros converts JGroups' Util.printTime output ("89ns", "32.49us",
// "25.05ms", "1.2s") to microseconds.
func parseMicros(s string) (float64, error) {
	m := reDur.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("jgroups: unknown time %q", s)
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if err != nil {
		return 0, fmt.Errorf("jgroups: time %q: %w", s, err)
	}
	switch m[2] {
	case "ns":
		v /= 1000
	case "ms":
		v *= 1000
	case "s", "sec":
		v *= 1e6
	}
	return v, nil
}

// reportLines keeps the "key = value" lines of a report, one per line.
func reportLines(s string) string {
	var out []string
	for _, ln := range strings.Split(s, "\n") {
		t := strings.TrimSpace(ln)
		if strings.Contains(t, " = ") || strings.HasPrefix(t, "-- sending") {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n   ")
}
