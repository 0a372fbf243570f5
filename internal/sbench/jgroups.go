package sbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"strata/internal/freeport"
	"strata/internal/procgroup"
)

// JGroupsVersion is the JGroups release the benchmark runs.
const JGroupsVersion = "5.5.6.Final"

// JGroupsArtifact is its Maven coordinate.
const JGroupsArtifact = "org.jgroups:jgroups:" + JGroupsVersion

// RoundTripClass is JGroups' round-trip test program.
const RoundTripClass = "org.jgroups.tests.RoundTrip"

// JGroupsJarPath returns where Maven keeps the JGroups jar:
// ~/.m2/repository/org/jgroups/jgroups/V/jgroups-V.jar.
func JGroupsJarPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("sbench: locating ~/.m2: %w", err)
	}
	return filepath.Join(home, ".m2", "repository", "org", "jgroups", "jgroups",
		JGroupsVersion, "jgroups-"+JGroupsVersion+".jar"), nil
}

// jgSetup is what every JGroups benchmark run needs: the jar, java, free
// ports for the members and a stack file listing them for TCPPING.
type jgSetup struct {
	jar, java, stackXML, stackFile string
	ports                          []int
	cleanup                        func()
}

// prepareJGroups fetches the jar if jar is "", finds java, picks a port per
// member and writes the stack mkStack builds for them to a temporary file
// named file.
func prepareJGroups(ctx context.Context, jar string, members int, mkStack func(jar string, ports []int) (string, error), file string) (*jgSetup, error) {
	var err error
	if jar == "" {
		if jar, err = EnsureJGroups(ctx); err != nil {
			return nil, err
		}
	}
	s := &jgSetup{jar: jar, cleanup: func() {}}
	if s.java, err = exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("sbench: java not found on PATH: %w", err)
	}
	if s.ports, err = freeport.TCP(members); err != nil {
		return nil, err
	}
	if s.stackXML, err = mkStack(jar, s.ports); err != nil {
		return nil, fmt.Errorf("sbench: %w", err)
	}
	dir, err := os.MkdirTemp("", "sbench-jgroups-")
	if err != nil {
		return nil, err
	}
	s.cleanup = func() { os.RemoveAll(dir) }
	s.stackFile = filepath.Join(dir, file)
	if err := os.WriteFile(s.stackFile, []byte(s.stackXML), 0o644); err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

// jgMember is one JVM of a JGroups benchmark run: its process, console
// and stdin.
type jgMember struct {
	name string
	cmd  *exec.Cmd
	con  *console
	in   io.WriteCloser
}

// startMember starts JGroups tool class as member name, bound to the
// setup's i-th port (on CPU cpu when cpu >= 0), with args after the class.
// Its stdin stays open and silent until the run closes it: at EOF the
// tools' menu loops end.
func (s *jgSetup) startMember(ctx context.Context, jvmArgs []string, i, cpu int, class, name string, args ...string) (*jgMember, error) {
	argv := []string{s.java,
		"-Djava.net.preferIPv4Stack=true",
		"-Djgroups.bind_addr=127.0.0.1",
		"-D" + BindPortProperty + "=" + strconv.Itoa(s.ports[i]),
		"-Duser.language=en", "-Duser.country=US",
	}
	argv = append(argv, jvmArgs...)
	argv = append(argv, "-cp", s.jar, class, "-props", s.stackFile, "-name", name)
	argv = append(argv, args...)
	if cpu >= 0 {
		var err error
		if argv, err = Pinned(cpu, argv); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	procgroup.Own(cmd)
	cmd.WaitDelay = 3 * time.Second
	con := newConsole()
	cmd.Stdout, cmd.Stderr = con, con
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		in.Close()
		return nil, fmt.Errorf("sbench: starting member %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); con.closeWith() }()
	return &jgMember{name, cmd, con, in}, nil
}

// stopMembers kills every member's process group, reaps it, and returns
// what the members printed, member by member.
func stopMembers(ms []*jgMember) string {
	for _, m := range ms {
		_ = procgroup.Kill(m.cmd)
		m.in.Close()
		<-m.con.done
	}
	var out strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&out, "==== member %s\n%s\n", m.name, stripANSI(m.con.String()))
	}
	return out.String()
}

// waitExited gives the members up to five seconds to leave by themselves.
func waitExited(ctx context.Context, ms []*jgMember) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, m := range ms {
		m.con.waitClosed(ctx)
	}
}

// EnsureJGroups returns the path of the JGroups jar, first fetching it with
// `mvn -q dependency:get -Dartifact=org.jgroups:jgroups:5.5.6.Final` if it is
// not in the local Maven repository. It fails if java (needed to run the jar)
// is not on PATH, or if the jar is missing and mvn is not on PATH.
func EnsureJGroups(ctx context.Context) (jarPath string, err error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("sbench: java not found on PATH (JGroups needs Java 17+; on Debian: apt-get install openjdk-17-jre-headless): %w", err)
	}
	jar, err := JGroupsJarPath()
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(jar); err == nil && st.Size() > 0 {
		return jar, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("sbench: %s is missing and mvn is not on PATH to fetch %s (on Debian: apt-get install maven): %w", jar, JGroupsArtifact, err)
	}
	cmd := exec.CommandContext(ctx, mvn, "-q", "dependency:get", "-Dartifact="+JGroupsArtifact)
	procgroup.Own(cmd)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbench: %s: %w\n%s", strings.Join(cmd.Args, " "), err, tail(string(out), 4000))
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("sbench: mvn dependency:get succeeded but %s is missing: %w", jar, err)
	}
	return jar, nil
}

// JGConfig configures [JGroupsRoundTrip].
type JGConfig struct {
	Jar      string        // JGroups jar; "" means EnsureJGroups
	Messages int           // requests in the measured run (all senders together)
	Size     int           // request payload bytes (RoundTrip adds a 3-byte header)
	Senders  int           // sender threads, each with one request outstanding
	Warmup   int           // requests in the warm-up run; 0 means Messages, <0 none
	Timeout  time.Duration // whole run, JVM start to exit; 0 means 3 minutes
	JVMArgs  []string      // extra JVM options for both members (e.g. -Xmx256m)
	CPUs     []int         // if two CPUs are given: A (the sender) runs on the first only, B on the second
}

// JGResult is what [JGroupsRoundTrip] measured, as RoundTrip reported it.
// Latencies are in microseconds; a zero field was not reported.
type JGResult struct {
	Messages, Size, Senders, Warmup int

	// AvgUs is RoundTrip's printed average round trip. It is not the mean of
	// all requests: JGroups' Average keeps 2048 slots per sender and each new
	// sample overwrites a random slot (senders' slots are merged the same
	// way), so it is the mean of a random, recency-weighted sample of at
	// most 2048 round trips. MinUs and MaxUs are over all requests.
	AvgUs, MinUs, MaxUs float64
	P50Us, P99Us        float64 // not printed by RoundTrip 5.5.6: always 0
	ReqPerSec           float64 // "reqs/sec": Messages / wall time of the run, exact

	// RateAvgUs is Senders / ReqPerSec in microseconds: by Little's law the
	// mean round trip over all requests (each sender has exactly one request
	// outstanding), including the sender loop's own small overhead. It is
	// exact where AvgUs is sampled.
	RateAvgUs float64

	// WarmupAvgUs and WarmupReqPerSec are the warm-up run's figures.
	WarmupAvgUs, WarmupReqPerSec float64

	Raw       string   // RoundTrip's report lines of the measured run, both members
	Commands  []string // the two java command lines (member A sends, B answers)
	Stdin     string   // what was typed into A's stdin menu, in order
	StackXML  string   // the stack file both members ran with (see LowLatencyStack)
	StackFile string   // its temporary path in Commands (removed on return)
	Jar       string
	Output    string // A's and B's complete console output
}

// JGroupsRoundTrip runs org.jgroups.tests.RoundTrip between two JVMs on
// 127.0.0.1 over the jar's low-latency TCP stack (see [LowLatencyStack]):
// a warm-up run, then the measured run, in the same JVMs. Both JVMs are
// killed (process group SIGKILL) on return whatever happens.
//
// RoundTrip's stdin menu ([1] send [2] num_msgs [3] senders [4] size
// [d] details [x] exit [X] exit all) reads one key, then skips whatever else
// is already buffered, and "2", "3", "4" then prompt for a number on a line
// of its own; so keys are typed without newline and each value only after
// its prompt appears.
func JGroupsRoundTrip(ctx context.Context, cfg JGConfig) (JGResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := jgroupsRoundTrip(ctx, cfg)
		if !errors.Is(err, errStdinRace) || attempt == 3 || ctx.Err() != nil {
			return res, err
		}
	}
}

// errStdinRace: after printing a number prompt, RoundTrip (Util.
// readStringFromStdin) skips the bytes already available on stdin, and on a
// pipe that skip throws "IOException: Illegal seek"; so a value must arrive
// after the skip. JGroupsRoundTrip waits promptSettle after each prompt,
// detects the exception if the JVM was slower still, and then starts again
// with new JVMs (the leftover value would be read as menu keys).
var errStdinRace = errors.New("sbench: RoundTrip's stdin skip raced with the typed value")

const promptSettle = 100 * time.Millisecond

func jgroupsRoundTrip(ctx context.Context, cfg JGConfig) (res JGResult, err error) {
	if cfg.Messages <= 0 || cfg.Size < 0 || cfg.Senders <= 0 {
		return res, fmt.Errorf("sbench: JGConfig needs Messages > 0, Size >= 0, Senders > 0 (got %d, %d, %d)", cfg.Messages, cfg.Size, cfg.Senders)
	}
	if cfg.Senders > 32767 {
		return res, fmt.Errorf("sbench: RoundTrip numbers senders with a short; %d is too many", cfg.Senders)
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

	setup, err := prepareJGroups(ctx, cfg.Jar, 2, LowLatencyStack, "tcp-low-latency-tcpping.xml")
	if err != nil {
		return res, err
	}
	defer setup.cleanup()
	res.Jar, res.StackXML, res.StackFile = setup.jar, setup.stackXML, setup.stackFile

	names := []string{"A", "B"}
	var ms []*jgMember
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
		return res, fmt.Errorf("sbench: member A did not start: %w", err)
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
		return res, fmt.Errorf("sbench: the two members did not form a cluster: %w", err)
	}
	if _, err := b.waitFor(ctx, 0, menuEnd); err != nil {
		return res, fmt.Errorf("sbench: member B not ready: %w", err)
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
			return "", fmt.Errorf("sbench: no RoundTrip report: %w", err)
		}
		if strings.HasSuffix(a.slice(off, i), notTwo) {
			return "", errors.New("sbench: RoundTrip: " + notTwo)
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
	if warm > 0 {
		typed = append(typed, "(warm-up:)")
		rep, err := run(warm)
		if err != nil {
			return res, err
		}
		w, err := parseRoundTrip(rep)
		if err != nil {
			return res, err
		}
		res.WarmupAvgUs, res.WarmupReqPerSec = w.AvgUs, w.ReqPerSec
		typed = append(typed, "(measured:)")
	}
	bOff := b.Len()
	rep, err := run(cfg.Messages)
	if err != nil {
		return res, err
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
	reANSI    = regexp.MustCompile("\x1b\\[[0-9;]*m")
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
		return st, fmt.Errorf("sbench: cannot parse RoundTrip report:\n%s", s)
	}
	var err error
	if st.ReqPerSec, err = strconv.ParseFloat(strings.ReplaceAll(r[1], ",", ""), 64); err != nil {
		return st, fmt.Errorf("sbench: reqs/sec %q: %w", r[1], err)
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
		return 0, fmt.Errorf("sbench: unknown time %q", s)
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
	if err != nil {
		return 0, fmt.Errorf("sbench: time %q: %w", s, err)
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

func stripANSI(s string) string { return reANSI.ReplaceAllString(s, "") }

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// shellJoin renders argv as a POSIX shell command line.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// console collects a process's output and lets callers wait for text in it.
type console struct {
	mu     sync.Mutex
	buf    []byte
	notify chan struct{} // closed and replaced on every write
	done   chan struct{} // closed when the process has exited
	once   sync.Once
}

func newConsole() *console {
	return &console{notify: make(chan struct{}), done: make(chan struct{})}
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.buf = append(c.buf, p...)
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
	return len(p), nil
}

func (c *console) closeWith() { c.once.Do(func() { close(c.done) }) }

func (c *console) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

func (c *console) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}

func (c *console) slice(i, j int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf[i:j])
}

// waitFor waits until one of subs appears at or after offset from and
// returns the offset just past the first such occurrence.
func (c *console) waitFor(ctx context.Context, from int, subs ...string) (int, error) {
	return c.wait(ctx, func(b []byte) int {
		best := -1
		for _, s := range subs {
			if i := strings.Index(string(b[from:]), s); i >= 0 && (best < 0 || from+i+len(s) < best) {
				best = from + i + len(s)
			}
		}
		return best
	}, fmt.Sprintf("%q", subs))
}

// waitRE waits until re matches at or after from; it returns the offset
// just past the match.
// answer waits (from offset off) for a tool's prompt, types v and a
// newline into in, and waits for the menu again (menuEnd); it returns
// where the prompt was. A JGroups tool that echoes an exception instead
// gets errStdinRace (see there).
func (c *console) answer(ctx context.Context, in io.Writer, off int, prompt string, v int, menuEnd string) (int, error) {
	p, err := c.waitFor(ctx, off, prompt)
	if err != nil {
		return 0, fmt.Errorf("sbench: no %q prompt: %w", prompt, err)
	}
	// See errStdinRace: let the tool get past its skip first.
	select {
	case <-time.After(promptSettle):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if _, err := in.Write([]byte(strconv.Itoa(v) + "\n")); err != nil {
		return 0, err
	}
	end, err := c.waitFor(ctx, p, menuEnd)
	if err != nil {
		return 0, err
	}
	if strings.Contains(c.slice(p, end), "Exception") {
		return 0, errStdinRace
	}
	return p, nil
}

func (c *console) waitRE(ctx context.Context, from int, re *regexp.Regexp) (int, error) {
	return c.wait(ctx, func(b []byte) int {
		if loc := re.FindIndex(b[from:]); loc != nil {
			return from + loc[1]
		}
		return -1
	}, re.String())
}

func (c *console) wait(ctx context.Context, find func([]byte) int, what string) (int, error) {
	for {
		c.mu.Lock()
		i := find(c.buf)
		ch := c.notify
		c.mu.Unlock()
		if i >= 0 {
			return i, nil
		}
		select {
		case <-ch:
		case <-c.done:
			// Output is complete once Wait returned; look one last time.
			c.mu.Lock()
			i := find(c.buf)
			c.mu.Unlock()
			if i >= 0 {
				return i, nil
			}
			return -1, fmt.Errorf("process exited before printing %s", what)
		case <-ctx.Done():
			return -1, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		}
	}
}

func (c *console) waitClosed(ctx context.Context) {
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}
