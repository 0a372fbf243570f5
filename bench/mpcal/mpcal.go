// Package mpcal is the MPCal benchmark (`strata bench mpcal`): Strata's
// MPCal compiler against the reference PlusCal translator, pcal.trans,
// each doing its translation of the same spec.
//
// Strata's side is its own pipeline: the MPCal module text in, parsed,
// checked and compiled to PlusCal, the module text with the PlusCal
// translation out (mpcal.ParseFile, mpcal.Compile, File.WithPlusCal; what
// `strata mpcal pcalgen` does minus the file I/O). pcal.trans's side is
// the next step of the same spec: the module with Strata's PlusCal in, the
// module with its TLA+ translation out (pcal.Translator, what `pcal.trans
// -nocfg` does minus the file I/O). The two are different translations of
// the same input; each is the whole of its tool's work on it, and both run
// warm, in memory: Strata in this process, pcal.trans in one JVM
// (PcalBench.java), each repeated after a warm-up, with per-run times.
// A separate row times whole cold processes (`strata mpcal pcalgen` and
// `java pcal.trans -nocfg`), where the JVM's start-up dominates.
package mpcal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/mpcal"
	"strata/mpcal/tlc"
)

// The systems, as the config and the ratio keys name them.
const (
	Strata = "strata"
	Pcal   = "pcal.trans"
)

// Config describes a run.
type Config struct {
	Rounds int // rounds; each runs both sides on every input, alternating
	Runs   int // warm translations per side, input and round
	Warmup int // warm translations per side and input before round 1
	// Sizes are the line counts of synthetic MPCal specs (mpcal.Synthetic).
	Sizes []int
	// ModelsDir is searched for the largest MPCal model ("" to skip).
	ModelsDir string
	// Cold adds the whole-process row; StrataCmd is the argv prefix that
	// runs this binary (its "mpcal pcalgen FILE" is timed).
	Cold      bool
	StrataCmd []string
	Progress  io.Writer
}

// Input is one spec's figures.
type Input struct {
	Name string `json:"input"`
	// Lines of Strata's input (the MPCal module), of pcal.trans's input
	// (the module with Strata's PlusCal) and of pcal.trans's output.
	MPCalLines   int `json:"mpcal_lines"`
	PlusCalLines int `json:"pluscal_module_lines"`
	TLALines     int `json:"tla_module_lines"`
	// Medians over rounds of each round's median per-run time (warm) and
	// of the whole-process times (cold).
	StrataWarmMs float64 `json:"strata_warm_ms"`
	PcalWarmMs   float64 `json:"pcal_warm_ms"`
	StrataColdMs float64 `json:"strata_cold_ms,omitempty"`
	PcalColdMs   float64 `json:"pcal_cold_ms,omitempty"`
	Rounds       []Round `json:"rounds"`
}

// Round is one round of one input: every per-run time.
type Round struct {
	Round        int       `json:"round"`
	First        string    `json:"first"` // the side that ran first
	StrataRunsMs []float64 `json:"strata_runs_ms"`
	PcalRunsMs   []float64 `json:"pcal_runs_ms"`
	StrataColdMs float64   `json:"strata_cold_ms,omitempty"`
	PcalColdMs   float64   `json:"pcal_cold_ms,omitempty"`
}

// WarmKey and ColdKey are the ratio keys of an input: pcal.trans's time
// over Strata's (above 1: Strata is faster), warm in process and cold
// whole processes.
func WarmKey(input string) string { return "time strata/pcal.trans " + input }
func ColdKey(input string) string { return "cold process strata/pcal.trans " + input }

type spec struct {
	name    string
	src     []byte // the MPCal module
	module  string // file name: the module's name + ".tla"
	withPC  []byte // Strata's output, pcal.trans's input
	pcPath  string // withPC on disk, for the driver
	id      string // the driver's id
	tlaHash string // pcal.trans's output, from the driver
}

// strataTranslate is Strata's side of one run.
func strataTranslate(name string, src []byte) ([]byte, error) {
	f, err := mpcal.ParseFile(name, src)
	if err != nil {
		return nil, err
	}
	out, err := mpcal.Compile(f)
	if err != nil {
		return nil, err
	}
	return f.WithPlusCal(out.PlusCal()), nil
}

// Run compiles and starts the pcal.trans driver, warms both sides up on
// every input, then runs the rounds.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if cfg.Rounds < 1 || cfg.Runs < 1 || cfg.Warmup < 0 {
		return nil, errors.New("bench mpcal: need rounds >= 1, runs >= 1 and warmup >= 0")
	}
	if cfg.Cold && len(cfg.StrataCmd) == 0 {
		return nil, errors.New("bench mpcal: the cold row needs the command that runs strata")
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	jar, err := tlc.Jar()
	if err != nil {
		return nil, fmt.Errorf("bench mpcal: %w", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("bench mpcal: %w: %v", tlc.ErrJavaMissing, err)
	}
	classes, err := compileDriver(ctx, jar, progress)
	if err != nil {
		return nil, fmt.Errorf("bench mpcal: %w", err)
	}
	dir, err := os.MkdirTemp("", "strata-bench-mpcal-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	// The inputs, and Strata's output of each: pcal.trans's input.
	var specs []*spec
	if cfg.ModelsDir != "" {
		if name, src := largestModel(cfg.ModelsDir); name != "" {
			specs = append(specs, &spec{name: name, src: src})
		}
	}
	for _, n := range cfg.Sizes {
		specs = append(specs, &spec{name: fmt.Sprintf("synthetic-%d", n), src: mpcal.Synthetic(n)})
	}
	if len(specs) == 0 {
		return nil, errors.New("bench mpcal: no input (no MPCal model and no --sizes)")
	}
	for i, s := range specs {
		f, err := mpcal.ParseFile(s.name, s.src)
		if err != nil {
			return nil, fmt.Errorf("bench mpcal: %s: %w", s.name, err)
		}
		s.module = f.Module.Name + ".tla"
		if s.withPC, err = strataTranslate(s.name, s.src); err != nil {
			return nil, fmt.Errorf("bench mpcal: %s: %w", s.name, err)
		}
		s.id = strconv.Itoa(i)
		sub := filepath.Join(dir, s.id, "driver")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
		s.pcPath = filepath.Join(sub, s.module)
		if err := os.WriteFile(s.pcPath, s.withPC, 0o644); err != nil {
			return nil, err
		}
	}

	fmt.Fprintf(progress, "bench mpcal: starting the pcal.trans driver (one JVM)\n")
	drv, err := startDriver(ctx, java, jar, classes)
	if err != nil {
		return nil, fmt.Errorf("bench mpcal: %w", err)
	}
	defer drv.stop()

	var names []string
	inputs := make([]*Input, len(specs))
	for i, s := range specs {
		l, err := drv.load(s.id, s.pcPath)
		if err != nil {
			return nil, fmt.Errorf("bench mpcal: %s: %w", s.name, err)
		}
		s.tlaHash = l.SHA256
		inputs[i] = &Input{Name: s.name, MPCalLines: bytes.Count(s.src, []byte("\n")), PlusCalLines: l.InLines, TLALines: l.OutLines}
		names = append(names, s.name)
	}
	order := "the side that goes first alternates every round (kit.Order), per input"
	rep := kit.NewReport("mpcal", kit.Settings{
		"rounds": cfg.Rounds,
		"runs":   fmt.Sprintf("%d warm translations per side, input and round (the round's figure: their median)", cfg.Runs),
		"warmup": fmt.Sprintf("%d translations per side and input before round 1, not timed", cfg.Warmup),
		"inputs": names,
		"order":  order,
		"cold":   cfg.Cold,
	})
	rep.System(Strata, kit.Settings{
		"translation": "MPCal -> PlusCal: the MPCal module text in, the module with the PlusCal translation out",
		"warm":        "mpcal.ParseFile + mpcal.Compile + File.WithPlusCal in this process (in memory, no file I/O)",
		"cold":        "a `strata mpcal pcalgen MODULE.tla` process (reads and rewrites the file)",
	})
	rep.System(Pcal, kit.Settings{
		"translation": "PlusCal -> TLA+: the module with Strata's PlusCal in, the module with the TLA+ translation out",
		"version":     drv.ready.Pcal,
		"jar":         jar,
		"java":        drv.ready.Java + " (" + drv.ready.VM + "), JVM defaults",
		"warm":        "new pcal.Translator(text, {-nocfg, FILE}).translate() in one JVM (bench/mpcal/PcalBench.java; in memory, no file I/O; output checked equal every run)",
		"cold":        "a `java -cp JAR pcal.trans -nocfg MODULE.tla` process (reads and rewrites the file)",
	})

	// Warm-up: both sides, every input, before anything is timed.
	for _, s := range specs {
		fmt.Fprintf(progress, "bench mpcal: warm-up on %s (%d runs each)\n", s.name, cfg.Warmup)
		if _, err := strataRuns(s, cfg.Warmup); err != nil {
			return nil, err
		}
		if cfg.Warmup > 0 {
			if _, err := drv.run(s.id, cfg.Warmup); err != nil {
				return nil, fmt.Errorf("bench mpcal: %s: %w", s.name, err)
			}
		}
	}

	rs := kit.Ratios{}
	for r := 0; r < cfg.Rounds; r++ {
		for i, s := range specs {
			in := inputs[i]
			sides := kit.Order(r, []string{Strata, Pcal})
			fmt.Fprintf(progress, "bench mpcal: round %d/%d %s (%s first)\n", r+1, cfg.Rounds, s.name, sides[0])
			rd := Round{Round: r + 1, First: sides[0]}
			for _, side := range sides {
				if side == Strata {
					if rd.StrataRunsMs, err = strataRuns(s, cfg.Runs); err != nil {
						return nil, err
					}
				} else {
					ds, err := drv.run(s.id, cfg.Runs)
					if err != nil {
						return nil, fmt.Errorf("bench mpcal: %s: %w", s.name, err)
					}
					for _, d := range ds {
						rd.PcalRunsMs = append(rd.PcalRunsMs, ms(d))
					}
				}
			}
			if cfg.Cold {
				for _, side := range sides {
					var err error
					if side == Strata {
						rd.StrataColdMs, err = coldStrata(ctx, cfg.StrataCmd, dir, s)
					} else {
						rd.PcalColdMs, err = coldPcal(ctx, java, jar, dir, s)
					}
					if err != nil {
						return nil, err
					}
				}
			}
			addRound(rs, s.name, rd)
			in.Rounds = append(in.Rounds, rd)
		}
	}
	for _, in := range inputs {
		var sw, pw, sc, pc []float64
		for _, rd := range in.Rounds {
			sw, pw = append(sw, kit.Median(rd.StrataRunsMs)), append(pw, kit.Median(rd.PcalRunsMs))
			sc, pc = append(sc, rd.StrataColdMs), append(pc, rd.PcalColdMs)
		}
		in.StrataWarmMs, in.PcalWarmMs = kit.Median(sw), kit.Median(pw)
		if cfg.Cold {
			in.StrataColdMs, in.PcalColdMs = kit.Median(sc), kit.Median(pc)
		}
	}
	rs.Summarize(rep)
	rep.Results = inputs
	if err := drv.stop(); err != nil {
		return nil, fmt.Errorf("bench mpcal: %w", err)
	}
	return rep, nil
}

// addRound adds a round's ratios: pcal.trans's time over Strata's, warm
// (the round's median runs) and, if measured, cold.
func addRound(rs kit.Ratios, input string, rd Round) {
	if len(rd.StrataRunsMs) > 0 && len(rd.PcalRunsMs) > 0 {
		rs.Lower(WarmKey(input), kit.Median(rd.StrataRunsMs), kit.Median(rd.PcalRunsMs))
	}
	rs.Lower(ColdKey(input), rd.StrataColdMs, rd.PcalColdMs)
}

// strataRuns runs Strata's translation of s n times and returns each
// run's time in milliseconds; every output must be the one pcal.trans was
// given.
func strataRuns(s *spec, n int) ([]float64, error) {
	out := make([]float64, 0, n)
	for range n {
		t0 := time.Now()
		b, err := strataTranslate(s.name, s.src)
		d := time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("bench mpcal: %s: %w", s.name, err)
		}
		if !bytes.Equal(b, s.withPC) {
			return nil, fmt.Errorf("bench mpcal: %s: Strata's translation differs from its first", s.name)
		}
		out = append(out, ms(d))
	}
	return out, nil
}

// coldStrata times one `strata mpcal pcalgen` process on a fresh copy of
// the MPCal module and checks what it wrote.
func coldStrata(ctx context.Context, strataCmd []string, dir string, s *spec) (float64, error) {
	sub := filepath.Join(dir, s.id, "strata")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return 0, err
	}
	file := filepath.Join(sub, s.module)
	if err := os.WriteFile(file, s.src, 0o644); err != nil {
		return 0, err
	}
	argv := append(append([]string{}, strataCmd...), "mpcal", "pcalgen", s.module)
	t0 := time.Now()
	_, err := kit.Output(ctx, kit.Cmd{Name: "strata mpcal pcalgen " + s.name, Argv: argv, Dir: sub})
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("bench mpcal: %w", err)
	}
	if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, s.withPC) {
		return 0, fmt.Errorf("bench mpcal: %s: the strata process wrote different PlusCal than the library (%v)", s.name, err)
	}
	return ms(d), nil
}

// coldPcal times one `java pcal.trans -nocfg` process on a fresh copy of
// the PlusCal module and checks that it wrote what the driver computes.
func coldPcal(ctx context.Context, java, jar, dir string, s *spec) (float64, error) {
	sub := filepath.Join(dir, s.id, "pcal")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return 0, err
	}
	file := filepath.Join(sub, s.module)
	if err := os.WriteFile(file, s.withPC, 0o644); err != nil {
		return 0, err
	}
	t0 := time.Now()
	_, err := kit.Output(ctx, kit.Cmd{Name: "pcal.trans " + s.name, Argv: []string{java, "-cp", jar, "pcal.trans", "-nocfg", s.module}, Dir: sub})
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("bench mpcal: %w", err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	if sha256Hex(got) != s.tlaHash {
		return 0, fmt.Errorf("bench mpcal: %s: the pcal.trans process wrote a different translation than the driver computes in process", s.name)
	}
	return ms(d), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// largestModel returns the MPCal model with the most lines under dir.
func largestModel(dir string) (string, []byte) {
	var best string
	var bestSrc []byte
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".tla") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(src, []byte("--mpcal")) {
			return nil
		}
		if bytes.Count(src, []byte("\n")) > bytes.Count(bestSrc, []byte("\n")) {
			best, bestSrc = p, src
		}
		return nil
	})
	return best, bestSrc
}

// Print writes the table, then the settings and the ratios.
func Print(w io.Writer, rep *kit.Report) error {
	inputs, ok := rep.Results.([]*Input)
	if !ok {
		return fmt.Errorf("bench mpcal: report results are %T, not mpcal inputs", rep.Results)
	}
	fmt.Fprintln(w, "warm, in process: Strata MPCal -> PlusCal (this process) vs pcal.trans PlusCal -> TLA+ (one warmed JVM), same spec;")
	fmt.Fprintln(w, "ms = median over rounds of each round's median run; ratio = pcal.trans time / Strata time (> 1: Strata faster)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "input\tMPCal lines\tPlusCal module lines\tstrata ms\tpcal.trans ms\tratio\tspread\tstrata µs/line\t")
	for _, in := range inputs {
		k := WarmKey(in.Name)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f-%.2f\t%.2f\t\n", in.Name, in.MPCalLines, in.PlusCalLines,
			in.StrataWarmMs, in.PcalWarmMs, rep.Ratios[k], rep.Spread[k][0], rep.Spread[k][1], 1000*in.StrataWarmMs/float64(max(1, in.MPCalLines)))
	}
	tw.Flush()
	cold := false
	for _, in := range inputs {
		if _, ok := rep.Ratios[ColdKey(in.Name)]; ok {
			cold = true
		}
	}
	if cold {
		fmt.Fprintln(w, "\ncold processes (start-up included; pcal.trans's is mostly JVM start): `strata mpcal pcalgen` vs `java pcal.trans -nocfg`")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "input\tstrata process ms\tpcal.trans process ms\tratio\tspread\t")
		for _, in := range inputs {
			k := ColdKey(in.Name)
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.2f-%.2f\t\n", in.Name, in.StrataColdMs, in.PcalColdMs, rep.Ratios[k], rep.Spread[k][0], rep.Spread[k][1])
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	rep.PrintConfig(w)
	rep.PrintRatios(w)
	return nil
}
