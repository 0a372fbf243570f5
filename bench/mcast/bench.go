package mcast

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"strata/bench/jgroups"
	"strata/bench/kit"
	"strata/internal/sealkeys"
	"strata/stack"
)

// Config is one run of `strata bench mcast`.
type Config struct {
	Members   []int // group sizes
	Size      int   // bytes per message
	Count     int   // Strata: casts per member
	Rounds    int
	Transport string // "tcp" or "udp", for both systems

	JGroups   bool
	JGTime    int // JGroups: seconds of the measured MPerf test
	JGWarmup  int // JGroups: seconds of the warm-up test (0: none)
	JGThreads int // JGroups: sender threads per member (0: MPerf's 100)

	// Tuned runs both systems with the flow-control budget Credits (bytes
	// per sender): Strata's cast window becomes Credits bytes and
	// Credits/Size casts, its point-to-point window Credits/Size frames,
	// with stability gossip every 10 ms and a 200 ms first retransmission;
	// JGroups' MFC and UFC max_credits become Credits. Otherwise both run as their users get them: Strata
	// with the stack's defaults, JGroups with the jar's stack file.
	Tuned   bool
	Credits int
	// Strata overrides (0 keeps the tuned value, or without Tuned the
	// stack's default; the command allows them untuned only without
	// JGroups).
	CastWindow, CastBytes, Window int
	Gossip, RTO                   time.Duration

	Outstanding, Batch int           // Strata's sender (the workload, not the stack)
	Timeout            time.Duration // Strata: deadline of one run

	// Seal adds the system strata-sealed: the same members with every
	// datagram sealed (stack/transport.Sealed, a fresh cluster key in a
	// file the members read from STRATA_KEY_FILE).
	Seal bool

	// Self runs one member process given the member flags: this binary's
	// `bench mcast --member`.
	Self     []string
	Progress io.Writer
}

// Result is one run of one system.
type Result struct {
	System     string    `json:"system"`
	Transport  string    `json:"transport"`
	Members    int       `json:"members"`
	Size       int       `json:"size"`
	Round      int       `json:"round"`             // from 1
	Count      int       `json:"count,omitempty"`   // strata: casts per member
	Seconds    int       `json:"seconds,omitempty"` // jgroups: length of the measured test
	MsgsPerSec float64   `json:"msgs_per_sec"`      // mean over members, msgs received per second
	PerMember  []float64 `json:"per_member_msgs_per_sec"`
}

// Results is the report's "results".
type Results struct {
	Runs []Result `json:"runs"`
	cfg  Config
}

// tuning is Strata's stack settings for cfg, as member flags and as the
// report prints them.
func tuning(cfg Config) ([]string, kit.Settings) {
	def := stack.Config{}.WithDefaults()
	cw, cb, w, g, rto := def.CastWindow, def.CastBytes, def.Window, def.GossipEvery, def.RTO
	if cfg.Tuned {
		cw, cb, w, g, rto = max(cfg.Credits/cfg.Size, 1), cfg.Credits, max(cfg.Credits/cfg.Size, 1), 10*time.Millisecond, 200*time.Millisecond
	}
	if cfg.CastWindow > 0 {
		cw = cfg.CastWindow
	}
	if cfg.CastBytes > 0 {
		cb = cfg.CastBytes
	}
	if cfg.Window > 0 {
		w = cfg.Window
	}
	if cfg.Gossip > 0 {
		g = cfg.Gossip
	}
	if cfg.RTO > 0 {
		rto = cfg.RTO
	}
	st := kit.Settings{"cast_window": cw, "cast_bytes": cb, "window": w, "gossip": g.String(), "rto": rto.String()}
	if !cfg.Tuned && cfg.CastWindow == 0 && cfg.CastBytes == 0 && cfg.Window == 0 && cfg.Gossip == 0 && cfg.RTO == 0 {
		return nil, st // the member's flags left unset: the stack's defaults
	}
	return []string{"--cast-window", strconv.Itoa(cw), "--cast-bytes", strconv.Itoa(cb), "--window", strconv.Itoa(w), "--gossip", g.String(), "--rto", rto.String()}, st
}

// jgStack is the stack JGroups' members run.
func jgStack(cfg Config) jgroups.StackSpec {
	spec := jgroups.StackSpec{Base: jgroups.DefaultTCP}
	if cfg.Transport == "udp" {
		spec.Base = jgroups.DefaultUDP
	}
	if cfg.Tuned {
		c := strconv.Itoa(cfg.Credits)
		spec.Set = map[string]map[string]string{"MFC": {"max_credits": c}, "UFC": {"max_credits": c}}
	}
	return spec
}

// ratioKey names the ratio of one group size.
func ratioKey(cfg Config, members int) string {
	k := fmt.Sprintf("msgs/s strata/jgroups %s members=%d", cfg.Transport, members)
	if cfg.Tuned {
		k += " tuned"
	}
	return k
}

// Run runs every group size for both systems each round, in kit.Order.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Transport == "" {
		cfg.Transport = "tcp"
	}
	if cfg.Credits <= 0 {
		cfg.Credits = TCPXMLCredits
	}
	progress := cfg.Progress
	mode := "defaults: Strata with the stack's defaults (as `strata stack` and group.Join give them), JGroups with the jar's stack file"
	if !cfg.Tuned && (cfg.CastWindow != 0 || cfg.CastBytes != 0 || cfg.Window != 0 || cfg.Gossip != 0 || cfg.RTO != 0) {
		mode = "custom: Strata with the --cast-window, --cast-bytes, --window, --gossip or --rto given, the rest its defaults"
	}
	if cfg.Tuned {
		mode = fmt.Sprintf("tuned: both with a flow-control budget of %d bytes per sender (Strata's cast window in bytes, and its windows in casts and frames of --size bytes; JGroups' MFC and UFC max_credits)", cfg.Credits)
	}
	rep := kit.NewReport("mcast", kit.Settings{"rounds": cfg.Rounds, "members": cfg.Members, "size": cfg.Size, "transport": cfg.Transport, "tuning": mode})
	res := &Results{Runs: []Result{}, cfg: cfg}
	rep.Results = res

	extra, st := tuning(cfg)
	extra = append(extra, "--outstanding", strconv.Itoa(cfg.Outstanding), "--batch", strconv.Itoa(cfg.Batch))
	st["props"] = Props
	st["transport"] = cfg.Transport
	st["casts_per_member"] = cfg.Count
	st["sender"] = fmt.Sprintf("%d casts per Node.Batch, at most %d waiting in flow control", cfg.Batch, cfg.Outstanding)
	st["figure"] = "casts delivered (own included) / time from the first delivery to the last, mean over members"
	rep.System("strata", st)

	var jar string
	systems := []string{"strata"}
	if cfg.JGroups {
		fmt.Fprintln(progress, "installing JGroups from Maven Central (if missing)")
		var err error
		if jar, err = jgroups.EnsureJGroups(ctx); err != nil {
			return nil, fmt.Errorf("%w (use --no-jgroups to skip the peer)", err)
		}
		systems = append(systems, "jgroups")
		rep.System("jgroups", jgroupsSettings(ctx, cfg, jar))
	}

	var sealEnv []string
	if cfg.Seal {
		dir, err := os.MkdirTemp("", "strata-mcast-seal")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		keyFile := filepath.Join(dir, "cluster.key")
		if err := sealkeys.WriteNew(keyFile); err != nil {
			return nil, err
		}
		sealEnv = []string{"STRATA_KEY_FILE=" + keyFile}
		systems = append(systems, "strata-sealed")
		rep.System("strata-sealed", kit.Settings{"what": "strata's members with every datagram sealed (XChaCha20-Poly1305, replay window; 42 bytes a datagram), otherwise the same settings"})
		rep.Note("msgs/s seal-cost strata-sealed/strata pairs the sealed and plain Strata members within one round (> 1 would mean sealed is faster); the target (issue 32) is a seal costing at most 25%% of multicast throughput at 1 KiB, a ratio of 0.75 or more")
	}

	ratios := kit.Ratios{}
	for r := 0; r < cfg.Rounds; r++ {
		for _, n := range cfg.Members {
			got := map[string]float64{}
			for _, sys := range kit.Order(r, systems) {
				var x Result
				var err error
				if sys == "strata" || sys == "strata-sealed" {
					var env []string
					if sys == "strata-sealed" {
						env = sealEnv
					}
					x, err = runStrata(ctx, cfg, r, n, extra, env)
					x.System = sys
					if err != nil {
						if ctx.Err() != nil {
							return nil, err
						}
						// Recorded, not fatal: the run's other cells still
						// pair, and the failure is printed with them (and
						// makes the command exit non-zero).
						fmt.Fprintf(progress, "round %d %s members=%d: FAILED: %v\n", r+1, sys, n, firstLine(err.Error()))
						rep.Fail("round %d %s members=%d: %s", r+1, sys, n, firstLine(err.Error()))
						continue
					}
				} else if x, err = runJGroups(ctx, cfg, r, n, jar); err != nil {
					if ctx.Err() != nil {
						return nil, err
					}
					fmt.Fprintf(progress, "round %d jgroups members=%d: FAILED: %v\n", r+1, n, firstLine(err.Error()))
					rep.Fail("round %d jgroups members=%d: %s", r+1, n, firstLine(err.Error()))
					continue
				}
				res.Runs = append(res.Runs, x)
				got[sys] = x.MsgsPerSec
			}
			ratios.Higher(ratioKey(cfg, n), got["strata"], got["jgroups"])
			if cfg.Seal {
				ratios.Higher(fmt.Sprintf("msgs/s seal-cost strata-sealed/strata %s members=%d", cfg.Transport, n), got["strata-sealed"], got["strata"])
			}
		}
	}
	ratios.Summarize(rep)
	rep.Note("every ratio pairs the two systems' msgs/s of one group size within one round (> 1: Strata better); the table's figure is the median over rounds")
	if !cfg.Tuned {
		rep.Note("both systems run with their defaults; --tuned runs both with the same flow-control budget instead")
	} else {
		rep.Note("tuned: Strata's stability gossip (which returns cast credit in Strata) and first retransmission timeout have no JGroups counterpart to set: JGroups returns MFC credit by replenishment at min_threshold of the budget, and its retransmission intervals are in its settings")
	}
	return rep, nil
}

// jgroupsSettings are JGroups' settings as the report prints them.
func jgroupsSettings(ctx context.Context, cfg Config, jar string) kit.Settings {
	spec := jgStack(cfg)
	threads := "100 (MPerf's default)"
	if cfg.JGThreads > 0 {
		threads = strconv.Itoa(cfg.JGThreads)
	}
	s := kit.Settings{"version": jgroups.Version, "java": jgroups.JavaVersion(ctx), "tool": jgroups.MPerfClass,
		"stack": spec.Base + " with TCPPING listing the members on 127.0.0.1", "sender_threads": threads,
		"test_seconds": cfg.JGTime, "warmup_seconds": cfg.JGWarmup, "transport": cfg.Transport,
		"figure": "msgs received during the test (own included) / the test's length, mean over members"}
	if xml, err := jgroups.BuildStack(jar, spec, []int{7800}); err == nil {
		tp := strings.ToUpper(cfg.Transport)
		for k, v := range map[string]string{"mfc_max_credits": jgroups.Effective(xml, "MFC", "max_credits"), "ufc_max_credits": jgroups.Effective(xml, "UFC", "max_credits"),
			"bundler": jgroups.Effective(xml, tp, "bundler_type"), "nakack2_xmit_interval": jgroups.Effective(xml, "NAKACK2", "xmit_interval"),
			"unicast3_xmit_interval": jgroups.Effective(xml, "UNICAST3", "xmit_interval"), "stable_desired_avg_gossip": jgroups.Effective(xml, "STABLE", "desired_avg_gossip")} {
			if v == "" {
				v = jgDefaults[k]
			}
			s[k] = v
		}
	} else {
		s["stack_error"] = err.Error()
	}
	return s
}

func runStrata(ctx context.Context, cfg Config, r, n int, extra, env []string) (Result, error) {
	fmt.Fprintf(cfg.Progress, "round %d strata %s members=%d: %d casts each (members report every %v)\n", r+1, cfg.Transport, n, cfg.Count, ProgressEvery)
	run, err := RunStrata(ctx, StrataConfig{Members: n, Size: cfg.Size, Count: cfg.Count, Transport: cfg.Transport,
		Argv: cfg.Self, Extra: extra, Stderr: cfg.Progress, Timeout: cfg.Timeout, Env: env})
	if err != nil {
		return Result{}, err
	}
	x := Result{System: "strata", Transport: cfg.Transport, Members: n, Size: cfg.Size, Round: r + 1, Count: cfg.Count, MsgsPerSec: round1(run.MeanMsgsPerSec())}
	for _, p := range run.PerMember {
		x.PerMember = append(x.PerMember, round1(p.MsgsPerSec))
	}
	fmt.Fprintf(cfg.Progress, "round %d strata %s members=%d: %.0f msgs/s per member %v (%.2f s)\n",
		r+1, cfg.Transport, n, x.MsgsPerSec, x.PerMember, run.PerMember[0].Seconds)
	return x, nil
}

func runJGroups(ctx context.Context, cfg Config, r, n int, jar string) (Result, error) {
	warm := cfg.JGWarmup
	if warm == 0 {
		warm = -1 // none
	}
	fmt.Fprintf(cfg.Progress, "round %d jgroups %s members=%d: %d s warm-up, then the %d s test\n", r+1, cfg.Transport, n, max(cfg.JGWarmup, 0), cfg.JGTime)
	var res jgroups.MPerfResult
	var err error
	// Fresh JVMs occasionally fail to form a cluster (discovery races); a
	// failed attempt measures nothing: try again.
	for attempt := 1; attempt <= 3; attempt++ {
		if res, err = jgroups.MPerf(ctx, jgroups.MPerfConfig{Jar: jar, Stack: jgStack(cfg), Members: n, Size: cfg.Size, Seconds: cfg.JGTime, Warmup: warm, Threads: cfg.JGThreads}); err == nil || ctx.Err() != nil {
			break
		}
		fmt.Fprintf(cfg.Progress, "jgroups members=%d attempt %d failed: %v\n", n, attempt, firstLine(err.Error()))
	}
	if err != nil {
		return Result{}, err
	}
	x := Result{System: "jgroups", Transport: cfg.Transport, Members: n, Size: cfg.Size, Round: r + 1, Seconds: cfg.JGTime, MsgsPerSec: round1(res.MeanMsgsPerSec())}
	for _, p := range res.PerMember {
		x.PerMember = append(x.PerMember, round1(p.MsgsPerSec))
	}
	var warmRates []float64
	for _, p := range res.WarmupPerMember {
		warmRates = append(warmRates, round1(p.MsgsPerSec))
	}
	fmt.Fprintf(cfg.Progress, "round %d jgroups %s members=%d: %.0f msgs/s per member %v (%d s test; warm-up %v)\n",
		r+1, cfg.Transport, n, x.MsgsPerSec, x.PerMember, cfg.JGTime, warmRates)
	return x, nil
}

// jgDefaults are JGroups 5.5.6's built-in values of the settings the
// report prints, for a stack file that leaves them unset (from its source).
var jgDefaults = map[string]string{
	"nakack2_xmit_interval":     "1000 (ms, NAKACK2's default)",
	"unicast3_xmit_interval":    "500 (ms, UNICAST3's default)",
	"stable_desired_avg_gossip": "20000 (ms, STABLE's default)",
	"mfc_max_credits":           "(MFC's default)",
	"ufc_max_credits":           "(UFC's default)",
	"bundler":                   "(the transport's default)",
}

// TCPXMLCredits is tcp.xml's MFC and UFC max_credits ("2M", in bytes): the
// default budget of --tuned runs.
const TCPXMLCredits = 2_000_000

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

var errNoResults = errors.New("mcast: the report holds no mcast results")

// Print writes the table (per system and group size, the median over
// rounds of the members' mean msgs/s, with the lowest and highest round),
// then the settings, ratios, failures and notes.
func Print(w io.Writer, rep *kit.Report) error {
	res, ok := rep.Results.(*Results)
	if !ok {
		return errNoResults
	}
	cfg := res.cfg
	label := "both with their defaults"
	if cfg.Tuned {
		label = "TUNED: both with the same flow-control budget (see settings)"
	}
	fmt.Fprintf(w, "multicast throughput on loopback over %s, %d-byte messages, every member sends; msgs/s received per member\n", cfg.Transport, cfg.Size)
	fmt.Fprintf(w, "(own messages included), mean over members, median of %d round(s); %s\n\n", cfg.Rounds, label)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\ttransport\tmembers\tmsgs/s per member\tspread (rounds)\tper member (last round)\t")
	for _, sys := range []string{"strata", "strata-sealed", "jgroups"} {
		for _, n := range cfg.Members {
			var xs []float64
			var last []float64
			for _, r := range res.Runs {
				if r.System == sys && r.Members == n {
					xs = append(xs, r.MsgsPerSec)
					last = r.PerMember
				}
			}
			if len(xs) == 0 {
				continue
			}
			lo, hi := xs[0], xs[0]
			for _, x := range xs {
				lo, hi = min(lo, x), max(hi, x)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f-%.0f\t%s\t\n", sys, cfg.Transport, n, kit.Median(xs), lo, hi, fmtRates(last))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	rep.PrintConfig(w)
	fmt.Fprintln(w)
	rep.PrintRatios(w)
	return nil
}

func fmtRates(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(parts, " ")
}
