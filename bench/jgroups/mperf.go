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

// MPerfClass is JGroups' multicast throughput test program.
const MPerfClass = "org.jgroups.tests.perf.MPerf"

// MPerfConfig configures [MPerf].
//
// MPerf 5.5.6 runs for a time, not for a number of messages: when the
// test starts, every member sends from Threads sender threads for Seconds
// and counts every message it receives from every member, its own
// included (MPerf's "measure local messages", on by default); a member's
// figure is the messages it received during its test / the test's length.
type MPerfConfig struct {
	Jar     string    // JGroups jar; "" means EnsureJGroups
	Stack   StackSpec // the stack every member runs (see BuildStack); Base "" means tcp.xml
	Members int       // JVMs, each one member (>= 1)
	Size    int       // message payload bytes
	Seconds int       // length of the measured test
	// Warmup is the length of a first test in the same JVMs, so that the
	// measured one runs JIT-compiled code; 0 means min(Seconds, 5), < 0
	// none.
	Warmup  int
	Threads int           // sender threads per member; 0 keeps MPerf's default (100)
	Timeout time.Duration // whole run, first JVM start to exit; 0 means Seconds*3 + Warmup*3 + 2 minutes
	JVMArgs []string      // extra JVM options for every member (e.g. -Xmx512m)
}

// MPerfMember is one member's line of MPerf's results.
type MPerfMember struct {
	Name       string  `json:"name"`
	Msgs       int64   `json:"msgs"`    // messages received during the test, own included
	TimeMs     int64   `json:"time_ms"` // the test's length as that member measured it
	MsgsPerSec float64 `json:"msgs_per_sec"`
}

// MPerfResult is what [MPerf] measured, as MPerf reported it.
type MPerfResult struct {
	Members, Size, Seconds, Warmup, Threads int

	PerMember       []MPerfMember // the measured test, in member order A, B, C, ...
	WarmupPerMember []MPerfMember
	AvgMsgsPerSec   float64 // MPerf's "Average/node" msgs/sec (total msgs / mean time)

	Raw       string   // MPerf's results block of the measured test
	Commands  []string // the java command lines, member A first
	Stdin     string   // what was typed into A's stdin menu, in order
	StackXML  string   // the stack file every member ran with (see BuildStack)
	StackFile string   // its temporary path in Commands (removed on return)
	Jar       string
	Output    string // every member's complete console output
}

// MeanMsgsPerSec is the mean over members of msgs/s received.
func (r MPerfResult) MeanMsgsPerSec() float64 {
	if len(r.PerMember) == 0 {
		return 0
	}
	s := 0.0
	for _, m := range r.PerMember {
		s += m.MsgsPerSec
	}
	return s / float64(len(r.PerMember))
}

// MPerf runs org.jgroups.tests.perf.MPerf with cfg.Members JVMs on
// 127.0.0.1 over cfg.Stack (see [BuildStack]): member A starts the
// cluster, the others join; once A's view has every member, A's stdin menu
// sets the message size (and the sender threads), then runs the warm-up
// test and the measured test, each after setting its length; then "exit
// all". Every JVM is killed (process group SIGKILL) on return whatever
// happens, and on ctx's end.
//
// MPerf's menu ([1] start test, [4] threads, [6] time, [7] msg size, ...,
// [X] exit all) reads one key, skips what else is buffered, and "4", "6"
// and "7" then prompt for a number on a line of its own, which MPerf
// multicasts to every member as a config change; so keys are typed without
// newline, each value only after its prompt appears (see errStdinRace),
// and the next key only after every member printed the change.
func MPerf(ctx context.Context, cfg MPerfConfig) (MPerfResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := mperf(ctx, cfg)
		if !errors.Is(err, errStdinRace) || attempt == 3 || ctx.Err() != nil {
			return res, err
		}
	}
}

const mperfMenuEnd = "[x] Exit this [X] Exit all"

var (
	reMPerfLine   = regexp.MustCompile(`(?m)^(\S+): ([0-9,]+) msgs, .*?time=([0-9,]+) ms, msgs/sec=([0-9.,]+)`)
	reMPerfAvg    = regexp.MustCompile(`Average/node:.*?msgs/sec=([0-9.,]+)`)
	mperfNames    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	mperfNoResult = "Received no results"
)

func mperf(ctx context.Context, cfg MPerfConfig) (res MPerfResult, err error) {
	if cfg.Members < 1 || cfg.Members > len(mperfNames) || cfg.Size < 1 || cfg.Seconds < 1 || cfg.Threads < 0 {
		return res, fmt.Errorf("jgroups: MPerfConfig needs 1 <= Members <= %d, Size >= 1, Seconds >= 1, Threads >= 0 (got %d, %d, %d, %d)",
			len(mperfNames), cfg.Members, cfg.Size, cfg.Seconds, cfg.Threads)
	}
	warm := cfg.Warmup
	if warm == 0 {
		warm = min(cfg.Seconds, 5)
	}
	warm = max(warm, 0)
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Duration(3*(cfg.Seconds+warm))*time.Second + 2*time.Minute
	}
	res.Members, res.Size, res.Seconds, res.Warmup, res.Threads = cfg.Members, cfg.Size, cfg.Seconds, warm, cfg.Threads
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	if cfg.Stack.Base == "" {
		cfg.Stack.Base = DefaultTCP
	}
	setup, err := prepare(ctx, cfg.Jar, cfg.Members, cfg.Stack)
	if err != nil {
		return res, err
	}
	defer setup.cleanup()
	res.Jar, res.StackXML, res.StackFile = setup.jar, setup.stackXML, setup.stackFile

	var ms []*member
	defer func() {
		res.Output = stopMembers(ms)
		if err != nil && res.Output != "" {
			err = fmt.Errorf("%w\n%s", err, tail(res.Output, 6000))
		}
	}()
	start := func(i int) (*console, error) {
		m, err := setup.startMember(ctx, cfg.JVMArgs, i, -1, MPerfClass, mperfNames[i:i+1])
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
		res.Commands = append(res.Commands, shellJoin(m.cmd.Args))
		return m.con, nil
	}

	// A first, so that it is the coordinator the others join.
	a, err := start(0)
	if err != nil {
		return res, err
	}
	if _, err := a.waitFor(ctx, 0, "GMS: address="); err != nil {
		return res, fmt.Errorf("jgroups: member A did not start: %w", err)
	}
	if _, err := a.waitFor(ctx, 0, mperfMenuEnd); err != nil {
		return res, fmt.Errorf("jgroups: member A did not become coordinator: %w", err)
	}
	for i := 1; i < cfg.Members; i++ {
		if _, err := start(i); err != nil {
			return res, err
		}
	}
	full := regexp.MustCompile(`\*\* \[A\|\d+\] \(` + strconv.Itoa(cfg.Members) + `\)`)
	if _, err := a.waitRE(ctx, 0, full); err != nil {
		return res, fmt.Errorf("jgroups: the %d members did not form a cluster: %w", cfg.Members, err)
	}
	for _, m := range ms[1:] {
		// A joiner asks A for the current settings and prints them.
		if _, err := m.con.waitFor(ctx, 0, mperfMenuEnd); err != nil {
			return res, fmt.Errorf("jgroups: member %s not ready: %w", m.name, err)
		}
		if _, err := m.con.waitFor(ctx, 0, "\nlog_local="); err != nil {
			return res, fmt.Errorf("jgroups: member %s got no settings from A: %w", m.name, err)
		}
	}

	in := ms[0].in
	var typed []string
	typeKey := func(k string) error {
		typed = append(typed, k)
		_, err := in.Write([]byte(k))
		return err
	}
	set := func(key, field string, v int) error {
		offs := make([]int, len(ms))
		for i, m := range ms {
			offs[i] = m.con.Len()
		}
		if err := typeKey(key); err != nil {
			return err
		}
		typed = append(typed, strconv.Itoa(v)+"⏎")
		if _, err := a.answer(ctx, in, offs[0], field+": ", v, mperfMenuEnd); err != nil {
			return err
		}
		// Every member applies the change and prints field=value (A's
		// line may follow its own prompt directly).
		want := field + "=" + strconv.Itoa(v)
		for i, m := range ms {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := m.con.waitFor(cctx, offs[i], want+"\n", want+"\r\n")
			cancel()
			if err != nil {
				return fmt.Errorf("jgroups: member %s did not apply %s=%d (its output since: %q): %w", m.name, field, v, tail(m.con.slice(offs[i], m.con.Len()), 400), err)
			}
		}
		return nil
	}
	run := func(secs int) ([]MPerfMember, float64, string, error) {
		if err := set("6", "time", secs); err != nil {
			return nil, 0, "", err
		}
		off := a.Len()
		if err := typeKey("1"); err != nil {
			return nil, 0, "", err
		}
		i, err := a.waitFor(ctx, off, "Average/cluster:", mperfNoResult)
		if err != nil {
			return nil, 0, "", fmt.Errorf("jgroups: no MPerf results: %w", err)
		}
		end, err := a.waitFor(ctx, i, mperfMenuEnd)
		if err != nil {
			return nil, 0, "", err
		}
		block := stripANSI(a.slice(off, end))
		if k := strings.Index(block, "Results:"); k >= 0 {
			block = block[k:]
		}
		if strings.Contains(block, mperfNoResult) {
			return nil, 0, block, errors.New("jgroups: MPerf received no results")
		}
		pm, avg, err := parseMPerf(block, cfg.Members)
		return pm, avg, block, err
	}

	if err := set("7", "msg_size", cfg.Size); err != nil {
		return res, err
	}
	if cfg.Threads > 0 {
		if err := set("4", "num_threads", cfg.Threads); err != nil {
			return res, err
		}
	}
	if warm > 0 {
		typed = append(typed, "(warm-up:)")
		if res.WarmupPerMember, _, _, err = run(warm); err != nil {
			return res, err
		}
		typed = append(typed, "(measured:)")
	}
	if res.PerMember, res.AvgMsgsPerSec, res.Raw, err = run(cfg.Seconds); err != nil {
		return res, err
	}

	// Exit all: A multicasts EXIT and every member exits.
	typeKey("X") // best effort: the JVMs are killed on return anyway
	res.Stdin = strings.Join(typed, " ")
	waitExited(ctx, ms)
	return res, nil
}

// parseMPerf reads MPerf's results block:
//
//	A: 299,576 msgs, 306.77MB received, time=5,258 ms, msgs/sec=56,975.28, throughput=58.34MB
//	B: 335,187 msgs, 343.23MB received, time=5,320 ms, msgs/sec=63,005.08, throughput=64.52MB
//	...
//	 Average/node:    317,381 msgs, 325.00MB received, time=5,289 ms, msgs/sec=60,007.75, throughput=61.45MB
//
// and returns the members' lines in name order and the Average/node rate.
func parseMPerf(block string, members int) ([]MPerfMember, float64, error) {
	num := func(s string) (float64, error) { return strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64) }
	var out []MPerfMember
	for _, m := range reMPerfLine.FindAllStringSubmatch(block, -1) {
		msgs, err1 := num(m[2])
		ms, err2 := num(m[3])
		rate, err3 := num(m[4])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, 0, fmt.Errorf("jgroups: MPerf line %q: %w", m[0], err)
		}
		out = append(out, MPerfMember{Name: m[1], Msgs: int64(msgs), TimeMs: int64(ms), MsgsPerSec: rate})
	}
	if len(out) != members {
		return out, 0, fmt.Errorf("jgroups: MPerf reported %d members' results, want %d:\n%s", len(out), members, block)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name < out[j-1].Name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	var avg float64
	if m := reMPerfAvg.FindStringSubmatch(block); m != nil {
		avg, _ = num(m[1])
	}
	return out, avg, nil
}
