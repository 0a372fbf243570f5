package stackbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"strata/bench/jgroups"
	"strata/bench/kit"
	"strata/internal/sealkeys"
	"strata/stack"
	"strata/stack/transport"
)

// Config is one run of `strata bench stack`.
type Config struct {
	N      int // calls per round-trip cell
	Size   int // request payload bytes
	Reply  int // reply payload bytes (every system; JGroups RoundTrip's is RTHeader)
	Rounds int
	CodeN  int // messages per code-latency cell (the group stacks run CodeN/5)

	Callers    []int
	Transports []string // "udp", "tcp"
	CodeOnly   bool     // only the code-latency cells

	JGroups bool
	// JGroupsTCP is the jar's stack file for JGroups' TCP cells
	// (jgroups.LowLatencyTCP or jgroups.DefaultTCP); its UDP cells run
	// jgroups.DefaultUDP.
	JGroupsTCP string
	// JGroupsWarmup is the requests of each warm-up pass before a measured
	// RoundTrip run, in the same JVMs (0: as many as measured); passes
	// repeat until the rate settles (jgroups.RTConfig.WarmupPasses).
	JGroupsWarmup int

	// CPUs places clients and servers: {-1, -1} unpinned; {0, 1} split;
	// {0, 0} shared (see the command's help).
	CPUs     [2]int
	BusyPoll time.Duration
	Procs    int // unpinned: GOMAXPROCS of the Go client and server processes

	// Seal adds the system strata-sealed: Strata's blocking client and
	// server with every datagram sealed (stack/transport.Sealed, a fresh
	// cluster key), to measure what the seal costs.
	Seal     bool
	sealFile string             // Run: the key file the sealed server reads
	sealRing *transport.Keyring // Run: the client's keyring

	// Self runs this binary's `bench stack` command (the server modes).
	Self     []string
	Progress io.Writer
}

// Results is the report's "results".
type Results struct {
	Code       []CodeResult `json:"code"`
	RoundTrips []RTTResult  `json:"round_trips"`
	// Overhead is Strata's mean round trip minus the raw socket's, and
	// OverheadP50 the same at the median call, per transport, callers and
	// API (medians over rounds), in µs.
	Overhead    map[string]float64 `json:"overhead_us"`
	OverheadP50 map[string]float64 `json:"overhead_p50_us"`

	cfg Config
}

// Strata's two client APIs as systems of the round-trip table.
const (
	sysStrata      = "strata"
	sysStrataEvent = "strata-event"
	sysStrataSeal  = "strata-sealed"
	sysRaw         = "raw"
	sysJGroups     = "jgroups"
)

// Run measures the code-latency cells, then (unless cfg.CodeOnly) the
// round trips, every system of a cell in each round in kit.Order.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	progress := cfg.Progress
	run := kit.Settings{"rounds": cfg.Rounds, "code_messages": cfg.CodeN}
	if !cfg.CodeOnly {
		run["calls_per_cell"], run["request_bytes"], run["reply_bytes"] = cfg.N, cfg.Size, cfg.Reply
		run["callers"], run["transports"] = cfg.Callers, cfg.Transports
		run["placement"] = placement(cfg)
	}
	rep := kit.NewReport("stack", run)
	res := &Results{RoundTrips: []RTTResult{}, Overhead: map[string]float64{}, OverheadP50: map[string]float64{}, cfg: cfg}
	rep.Results = res
	res.Code = codeLatency(cfg, progress)
	codeRatios(rep, res.Code)
	rep.Note("code-latency ratios are within Strata: the bypass against the imperative composition, or against its own generic loops (> 1: the bypass is faster), of the medians over rounds, so they have no per-round spread")
	rep.System("strata-code", kit.Settings{"stacks": "pt2pt: bottom,pt2pt,top; mcast4: top,mnak,pt2pt,bottom; vsync: Total,Membership (13 layers)",
		"modes": strings.Join(Modes, ","), "sizes": "pt2pt 4,24,100,1000 B; mcast4 and vsync 4,100,1000 B"})
	if cfg.CodeOnly {
		return rep, nil
	}

	var jar string
	if cfg.JGroups {
		if cfg.Size < jgroups.RTHeader || cfg.Reply != jgroups.RTHeader {
			return nil, fmt.Errorf("JGroups RoundTrip's requests carry at least its %d-byte header and its replies exactly that: "+
				"--size must be >= %d and --reply-size %d (or use --no-jgroups)", jgroups.RTHeader, jgroups.RTHeader, jgroups.RTHeader)
		}
		fmt.Fprintln(progress, "installing JGroups from Maven Central (if missing)")
		var err error
		if jar, err = jgroups.EnsureJGroups(ctx); err != nil {
			return nil, fmt.Errorf("%w (use --no-jgroups to skip the peer)", err)
		}
	}
	if cfg.CPUs[0] >= 0 {
		// After the code-latency cells, which measure one thread anyway.
		restore, err := kit.PinSelf(cfg.CPUs[0])
		if err != nil {
			return nil, fmt.Errorf("%w (drop --pin)", err)
		}
		defer restore()
	}
	var env []string
	if cfg.CPUs[0] < 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cfg.Procs))
		env = []string{"GOMAXPROCS=" + strconv.Itoa(cfg.Procs)}
	}
	gomaxprocs := "1 (pinned)"
	if cfg.CPUs[0] < 0 {
		gomaxprocs = strconv.Itoa(cfg.Procs)
	}
	rep.System(sysStrata, kit.Settings{"stack": Props, "transports": strings.Join(cfg.Transports, ","),
		"apis":      "strata: blocking Node.Call per caller goroutine; strata-event: Node.CallAsync, the next call from the reply callback",
		"busy_poll": cfg.BusyPoll.String(), "gomaxprocs": gomaxprocs, "reply_bytes": cfg.Reply, "warmup_calls": 200})
	rep.System(sysRaw, kit.Settings{"what": "one socket per caller (UDP: connected; TCP: TCP_NODELAY, 4-byte length frames), one request outstanding; the server answers on one goroutine (UDP) or one per connection (TCP)",
		"busy_poll": cfg.BusyPoll.String(), "gomaxprocs": gomaxprocs, "reply_bytes": cfg.Reply})
	systems := []string{sysStrata, sysStrataEvent, sysRaw}
	if cfg.Seal {
		dir, err := os.MkdirTemp("", "strata-bench-seal")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		keyFile := filepath.Join(dir, "cluster.key")
		if err := sealkeys.WriteNew(keyFile); err != nil {
			return nil, err
		}
		if cfg.sealRing, _, err = sealkeys.Watch(keyFile, time.Hour, nil); err != nil {
			return nil, err
		}
		cfg.sealFile = keyFile
		systems = append(systems, sysStrataSeal)
		rep.System(sysStrataSeal, kit.Settings{"what": "strata (blocking API) with every datagram sealed: XChaCha20-Poly1305 with a fresh cluster key, replay window (stack/transport.Sealed); client and server both sealed",
			"overhead_bytes_per_datagram": 42})
		rep.Note("strata-sealed/strata ratios (rtt seal-cost ...) compare the sealed and the plain Strata client within one round: > 1 would mean the sealed one is faster; the target (issue 32) is a seal costing at most 15%% of the round trip at 100-byte messages, i.e. a ratio >= %.3f", 1/1.15)
	}
	if cfg.JGroups {
		systems = append(systems, sysJGroups)
		rep.System(sysJGroups, jgroupsSettings(ctx, cfg, jar))
	}

	ratios := kit.Ratios{}
	for r := 0; r < cfg.Rounds; r++ {
		for _, kind := range cfg.Transports {
			if err := runCells(ctx, cfg, rep, res, ratios, r, kind, systems, jar, env); err != nil {
				return nil, err
			}
		}
	}
	ratios.Summarize(rep)
	overheads(res, cfg)
	rep.Note("mean µs = callers / req/s for every system (each caller keeps one request outstanding, so by Little's law this is the mean round trip); every rtt ratio compares it, within one round, for the same transport and callers")
	rep.Note("request %d B and reply %d B for every system", cfg.Size, cfg.Reply)
	if cfg.JGroups {
		rep.Note("JGroups: org.jgroups.tests.RoundTrip %s (%s) in two fresh JVMs per cell (A sends from --callers sender threads, B answers); "+
			"UDP cells run the jar's %s, TCP cells its %s (see settings); warm-up passes of %d requests with the same settings in the same JVMs precede each measured run until the rate settles (the JIT compiler keeps speeding JGroups up for tens of thousands of calls on this machine); "+
			"its request is its 3-byte header + %d B, its reply the 3-byte header; its 'timer avg' is RoundTrip's printed average, a sample of at most 2048 calls per sender, shown but not compared",
			jgroups.Version, jgroups.JavaVersion(ctx), jgroups.DefaultUDP, cfg.JGroupsTCP, jgWarmup(cfg), cfg.Size-jgroups.RTHeader)
	}
	return rep, nil
}

func jgWarmup(cfg Config) int {
	if cfg.JGroupsWarmup > 0 {
		return cfg.JGroupsWarmup
	}
	return cfg.N
}

// placement describes cfg.CPUs.
func placement(cfg Config) string {
	switch {
	case cfg.CPUs[0] < 0:
		return fmt.Sprintf("unpinned; the Go client and server processes run with GOMAXPROCS %d, the JVMs unrestricted", cfg.Procs)
	case cfg.CPUs[0] == cfg.CPUs[1]:
		return fmt.Sprintf("shared: clients and servers on CPU %d", cfg.CPUs[0])
	default:
		return fmt.Sprintf("split: clients (this process, JGroups' sending JVM) on CPU %d, servers (Strata's, the raw echo, JGroups' answering JVM) on CPU %d", cfg.CPUs[0], cfg.CPUs[1])
	}
}

// jgStack is the stack JGroups runs for transport kind.
func jgStack(cfg Config, kind string) jgroups.StackSpec {
	if kind == "udp" {
		return jgroups.StackSpec{Base: jgroups.DefaultUDP}
	}
	return jgroups.StackSpec{Base: cfg.JGroupsTCP}
}

// jgroupsSettings are JGroups' settings as the report prints them: the
// stack file per transport with the attributes that decide a round trip's
// path, read from the stack as built.
func jgroupsSettings(ctx context.Context, cfg Config, jar string) kit.Settings {
	s := kit.Settings{"version": jgroups.Version, "java": jgroups.JavaVersion(ctx), "tool": jgroups.RoundTripClass,
		"roundtrip_options": "its defaults: -tp jg (the JGroups channel), messages NO_FC, not OOB, not DONT_BUNDLE; sender threads from its thread factory",
		"request_bytes":     fmt.Sprintf("%d (header %d + size %d)", cfg.Size, jgroups.RTHeader, cfg.Size-jgroups.RTHeader),
		"reply_bytes":       jgroups.RTHeader, "discovery": "TCPPING listing both members on 127.0.0.1",
		"warmup":      fmt.Sprintf("passes of %d requests with the same settings in the same JVMs, until two in a row fail to beat the best rate before them by %.1fx (at least 3, at most %d)", jgWarmup(cfg), jgroups.WarmupSettled, jgroups.MaxWarmupPasses),
		"jvm_options": "none beyond -Djava.net.preferIPv4Stack=true -Djgroups.bind_addr=127.0.0.1 and the bind port (the JVM's defaults)"}
	for _, kind := range cfg.Transports {
		spec := jgStack(cfg, kind)
		xml, err := jgroups.BuildStack(jar, spec, []int{7800, 7801})
		if err != nil {
			s["stack_"+kind] = spec.Base + " (" + err.Error() + ")"
			continue
		}
		tp := strings.ToUpper(kind)
		desc := fmt.Sprintf("%s: %s bundler=%s message_processing_policy=%s", spec.Base, tp,
			jgroups.Effective(xml, tp, "bundler_type"), jgroups.Effective(xml, tp, "message_processing_policy"))
		if kind == "tcp" {
			desc += " tcp_nodelay=" + jgroups.Effective(xml, tp, "tcp_nodelay")
		} else {
			desc += " ip_mcast=false"
		}
		s["stack_"+kind] = desc
	}
	return s
}

// runCells runs round r's cells of transport kind: the Strata and raw
// servers start, then every callers count runs every system in the
// round's order.
func runCells(ctx context.Context, cfg Config, rep *kit.Report, res *Results, ratios kit.Ratios, r int, kind string, systems []string, jar string, env []string) error {
	bp := "--busy-poll=" + cfg.BusyPoll.String()
	reply := "--reply-size=" + strconv.Itoa(cfg.Reply)
	start := func(name string, args ...string) (*kit.Proc, string, error) {
		p, err := kit.Start(ctx, kit.Cmd{Name: name + " server", Argv: append(append([]string{}, cfg.Self...), args...),
			Env: env, Pin: cfg.CPUs[1] >= 0, CPU: cfg.CPUs[1], Stdin: true, Stderr: cfg.Progress,
			Ready: func(l string) bool { return strings.HasPrefix(l, "listening on ") }, ReadyTimeout: 30 * time.Second})
		if err != nil {
			return nil, "", err
		}
		return p, strings.TrimPrefix(p.Ready, "listening on "), nil
	}
	ss, saddr, err := start("strata", bp, reply, "--serve-strata", kind+":127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ss.Stop()
	var sealed *kit.Proc
	var sealedAddr string
	if cfg.sealFile != "" {
		senv := env
		env = append(append([]string(nil), env...), "STRATA_KEY_FILE="+cfg.sealFile)
		sealed, sealedAddr, err = start("strata-sealed", bp, reply, "--serve-strata", kind+":127.0.0.1:0")
		env = senv
		if err != nil {
			return err
		}
		defer sealed.Stop()
	}
	rs, raddr, err := start("raw", bp, reply, "--serve-raw", kind+":127.0.0.1:0")
	if err != nil {
		return err
	}
	defer rs.Stop()
	_, rawAddr, _ := strings.Cut(raddr, ":")
	for _, c := range cfg.Callers {
		var cell []RTTResult
		for _, sys := range kit.Order(r, systems) {
			var x RTTResult
			var err error
			server := ss.Pid()
			switch sys {
			case sysRaw:
				server = rs.Pid()
			case sysStrataSeal:
				server = sealed.Pid()
			}
			cpu0 := jgroups.CPUTime(os.Getpid()) + jgroups.CPUTime(server)
			switch sys {
			case sysStrata:
				x, err = StrataRoundTrip(ctx, stack.Addr(saddr), cfg.Size, cfg.Reply, cfg.N, c, Blocking, cfg.BusyPoll)
			case sysStrataEvent:
				x, err = StrataRoundTrip(ctx, stack.Addr(saddr), cfg.Size, cfg.Reply, cfg.N, c, Event, cfg.BusyPoll)
			case sysStrataSeal:
				ring := cfg.sealRing
				x, err = StrataRoundTripOpts(ctx, stack.Addr(sealedAddr), cfg.Size, cfg.Reply, cfg.N, c, Blocking, transport.Options{BusyPoll: cfg.BusyPoll,
					Wrap: func(tr stack.Transport) (stack.Transport, error) { return transport.Sealed(tr, ring) }})
				x.System = sysStrataSeal
			case sysRaw:
				var rr RawResult
				rr, err = RawRoundTrip(ctx, kind, rawAddr, cfg.Size, cfg.Reply, cfg.N, c, cfg.BusyPoll)
				x = RTTResult{System: sysRaw, Transport: kind, Callers: c, Size: cfg.Size, Reply: cfg.Reply, N: rr.N,
					TimerMeanUs: rr.AvgUs, P50Us: rr.P50Us, P99Us: rr.P99Us, ReqPerSec: rr.ReqPerSec}
				if rr.ReqPerSec > 0 {
					x.MeanUs = float64(min(c, cfg.N)) * 1e6 / rr.ReqPerSec
				}
			case sysJGroups:
				var ok bool
				if x, ok = runJGroups(ctx, cfg, rep, r, kind, c, jar); !ok {
					continue
				}
			}
			if err != nil {
				return fmt.Errorf("round %d %s %s callers=%d: %w", r+1, sys, kind, c, err)
			}
			if cpu1 := jgroups.CPUTime(os.Getpid()) + jgroups.CPUTime(server); sys != sysJGroups && cpu0 >= 0 && cpu1 >= cpu0 && x.N > 0 {
				x.CPUPerCallUs = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(x.N)
			}
			x.Round = r + 1
			cell = append(cell, x)
			extra := ""
			if sys == sysJGroups {
				extra = fmt.Sprintf(" (RoundTrip's sampled timer avg %.1f µs; warm-up passes %.0f req/s)", x.TimerMeanUs, x.WarmupReqPerSec)
			} else {
				extra = fmt.Sprintf(", p50 %.1f, p99 %.1f", x.P50Us, x.P99Us)
			}
			fmt.Fprintf(cfg.Progress, "round %d %-12s %s callers=%d: mean %.1f µs%s, %.0f req/s, CPU %.1f µs/call\n", r+1, sys, kind, c, x.MeanUs, extra, x.ReqPerSec, x.CPUPerCallUs)
		}
		res.RoundTrips = append(res.RoundTrips, cell...)
		cellRatios(ratios, cell)
	}
	return nil
}

// runJGroups runs one JGroups cell; a cell that fails three times is
// recorded as a failure (ok false) and costs the run nothing else.
func runJGroups(ctx context.Context, cfg Config, rep *kit.Report, r int, kind string, c int, jar string) (RTTResult, bool) {
	var cpus []int
	if cfg.CPUs[0] >= 0 {
		cpus = cfg.CPUs[:]
	}
	rc := jgroups.RTConfig{Jar: jar, Stack: jgStack(cfg, kind), Messages: cfg.N, Size: cfg.Size - jgroups.RTHeader,
		Senders: c, Warmup: jgWarmup(cfg), CPUs: cpus}
	var jr jgroups.RTResult
	var err error
	// Two fresh JVMs occasionally fail to form a cluster here (discovery
	// races); a failed attempt measures nothing, so try again.
	for attempt := 1; attempt <= 3; attempt++ {
		if jr, err = jgroups.RoundTrip(ctx, rc); err == nil || ctx.Err() != nil {
			break
		}
		fmt.Fprintf(cfg.Progress, "jgroups %s callers=%d attempt %d failed: %v\n", kind, c, attempt, firstLine(err.Error()))
	}
	if err != nil {
		fmt.Fprintf(cfg.Progress, "round %d jgroups %s callers=%d: FAILED: %v\n", r+1, kind, c, firstLine(err.Error()))
		rep.Fail("round %d jgroups %s callers=%d: %s", r+1, kind, c, firstLine(err.Error()))
		return RTTResult{}, false
	}
	return RTTResult{System: sysJGroups, Transport: kind, Callers: c, Size: cfg.Size, Reply: jgroups.RTHeader, N: jr.Messages,
		MeanUs: jr.RateAvgUs, TimerMeanUs: jr.AvgUs, ReqPerSec: jr.ReqPerSec, CPUPerCallUs: jr.CPUPerCallUs, WarmupReqPerSec: jr.WarmupReqPerSec}, true
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// apiOf names the client API of a Strata system in the ratio keys.
func apiOf(sys string) string {
	if sys == sysStrataEvent {
		return "event"
	}
	return "blocking"
}

// cellRatios adds one round's ratios: each Strata API against the raw
// sockets and JGroups, always of the same transport and callers (a cell's
// results pair only by both).
func cellRatios(rs kit.Ratios, cell []RTTResult) {
	type key struct {
		sys, kind string
		callers   int
	}
	by := map[key]RTTResult{}
	for _, x := range cell {
		by[key{x.System, x.Transport, x.Callers}] = x
	}
	for k, s := range by {
		if k.sys == sysStrataSeal {
			if p, ok := by[key{sysStrata, k.kind, k.callers}]; ok {
				rs.Lower(fmt.Sprintf("rtt seal-cost strata-sealed/strata %s callers=%d", k.kind, k.callers), s.MeanUs, p.MeanUs)
			}
			continue
		}
		if k.sys != sysStrata && k.sys != sysStrataEvent {
			continue
		}
		for _, peer := range []string{sysRaw, sysJGroups} {
			if p, ok := by[key{peer, k.kind, k.callers}]; ok {
				rs.Lower(fmt.Sprintf("rtt strata/%s %s callers=%d api=%s", peer, k.kind, k.callers, apiOf(k.sys)), s.MeanUs, p.MeanUs)
			}
		}
	}
}

// medianOf is the median over rounds of f for one system's cell, or 0.
func medianOf(rts []RTTResult, sys, kind string, callers int, f func(RTTResult) float64) float64 {
	var xs []float64
	for _, r := range rts {
		if r.System == sys && r.Transport == kind && r.Callers == callers {
			xs = append(xs, f(r))
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return kit.Median(xs)
}

func meanOf(r RTTResult) float64  { return r.MeanUs }
func timerOf(r RTTResult) float64 { return r.TimerMeanUs }
func p50Of(r RTTResult) float64   { return r.P50Us }
func p99Of(r RTTResult) float64   { return r.P99Us }
func rpsOf(r RTTResult) float64   { return r.ReqPerSec }

// overheads fills Strata's extra time over the raw sockets.
func overheads(res *Results, cfg Config) {
	for _, k := range cfg.Transports {
		for _, c := range cfg.Callers {
			raw, raw50 := medianOf(res.RoundTrips, sysRaw, k, c, meanOf), medianOf(res.RoundTrips, sysRaw, k, c, p50Of)
			for _, sys := range []string{sysStrata, sysStrataEvent} {
				s := medianOf(res.RoundTrips, sys, k, c, meanOf)
				if s == 0 || raw == 0 {
					continue
				}
				key := fmt.Sprintf("strata-raw %s callers=%d api=%s", k, c, apiOf(sys))
				res.Overhead[key] = kit.Round3(s - raw)
				res.OverheadP50[key] = kit.Round3(medianOf(res.RoundTrips, sys, k, c, p50Of) - raw50)
			}
		}
	}
}

// codeLatency runs every code-latency cell once per round, the modes of a
// cell one after another, and returns each cell's medians over rounds.
func codeLatency(cfg Config, progress io.Writer) []CodeResult {
	cells := map[string][]CodeResult{}
	var order []string
	add := func(r CodeResult) {
		k := fmt.Sprintf("%s/%d/%s", r.Stack, r.Size, r.Mode)
		if _, ok := cells[k]; !ok {
			order = append(order, k)
		}
		cells[k] = append(cells[k], r)
	}
	for round := 0; round < cfg.Rounds; round++ {
		for _, sz := range []int{4, 24, 100, 1000} {
			for _, mode := range Modes {
				r := CodeLatency(sz, cfg.CodeN, mode)
				add(r)
				fmt.Fprintf(progress, "round %d code latency pt2pt %4d B %s: down %.0f ns, up %.0f ns, ack %.0f ns, %.2f allocs\n", round+1, sz, mode, r.DownNs, r.UpNs, r.AckNs, r.AllocsOp)
			}
		}
		for _, st := range GroupStacks {
			for _, sz := range []int{4, 100, 1000} {
				for _, mode := range Modes {
					r := GroupCodeLatency(st, sz, cfg.CodeN/5, mode)
					add(r)
					fmt.Fprintf(progress, "round %d code latency %s %4d B %s: down %.0f ns, up %.0f ns, rest %.0f ns, %.2f allocs, bypass hits %.2f\n", round+1, st, sz, mode, r.DownNs, r.UpNs, r.AckNs, r.AllocsOp, r.Hits)
				}
			}
		}
	}
	var out []CodeResult
	for _, k := range order {
		rs := cells[k]
		med := rs[0]
		pick := func(f func(CodeResult) float64) float64 {
			xs := make([]float64, len(rs))
			for i, r := range rs {
				xs[i] = f(r)
			}
			return kit.Median(xs)
		}
		med.DownNs = pick(func(r CodeResult) float64 { return r.DownNs })
		med.UpNs = pick(func(r CodeResult) float64 { return r.UpNs })
		med.AckNs = pick(func(r CodeResult) float64 { return r.AckNs })
		out = append(out, med)
	}
	return out
}

// codeRatios adds, per stack, size and direction, how many times faster
// the bypass is than the imperative stack (and than its own generic
// loops): ratios within Strata, of the medians over rounds.
func codeRatios(rep *kit.Report, code []CodeResult) {
	find := func(st string, size int, mode string) *CodeResult {
		for i, r := range code {
			if r.Stack == st && r.Size == size && r.Mode == mode {
				return &code[i]
			}
		}
		return nil
	}
	for _, r := range code {
		if r.Mode != "bypass" {
			continue
		}
		imp := find(r.Stack, r.Size, "imperative")
		if imp == nil {
			continue
		}
		if r.DownNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/imperative %s down size=%d", r.Stack, r.Size)] = kit.Round3(imp.DownNs / r.DownNs)
		}
		if r.UpNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/imperative %s up size=%d", r.Stack, r.Size)] = kit.Round3(imp.UpNs / r.UpNs)
		}
		// Down and up together, as the paper's Table 1 totals them.
		if r.DownNs+r.UpNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/imperative %s down+up size=%d", r.Stack, r.Size)] = kit.Round3((imp.DownNs + imp.UpNs) / (r.DownNs + r.UpNs))
		}
		// What the generated code gains over the generic loops.
		if gen := find(r.Stack, r.Size, "generic"); gen != nil && r.DownNs > 0 && r.UpNs > 0 {
			rep.Ratios[fmt.Sprintf("code-latency bypass/generic %s down size=%d", r.Stack, r.Size)] = kit.Round3(gen.DownNs / r.DownNs)
			rep.Ratios[fmt.Sprintf("code-latency bypass/generic %s up size=%d", r.Stack, r.Size)] = kit.Round3(gen.UpNs / r.UpNs)
		}
	}
}

var errNoResults = errors.New("stackbench: the report holds no stack results")

func cpuOf(r RTTResult) float64 { return r.CPUPerCallUs }
