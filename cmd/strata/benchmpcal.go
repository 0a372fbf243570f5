package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"strata/internal/stats"
	"strata/mpcal"
	"strata/mpcal/tlc"
)

func benchMpcalCmd() *cobra.Command {
	var (
		quick, asJSON bool
		rounds        int
		sizes         string
		models        string
	)
	c := &cobra.Command{
		Use:   "mpcal",
		Short: "Strata's MPCal pipeline vs pcal.trans (the reference PlusCal translator)",
		Long: `Times Strata's whole MPCal pipeline (the strata process parsing the
module, checking the MPCal and writing the PlusCal into the file:
"strata mpcal pcalgen") against the reference PlusCal translator alone
("java pcal.trans -nocfg", from the TLA+ tools jar) translating the PlusCal
output of the same spec. Inputs: the largest MPCal model under models/ and
synthetic MPCal specs of the given line counts. Each round runs both,
alternating; the table gives medians and the ratio pcal.trans/Strata (above
1: Strata is faster), and the in-process time of Strata's pipeline (no
process start) per input, which shows it is linear in the input's size.
One process at a time; pcal.trans's JVM uses both cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quick {
				if err := quickDefaults(cmd, map[string]string{"rounds": "3", "sizes": "1000,2000,5000"}); err != nil {
					return err
				}
			}
			ns, err := parseInts("sizes", sizes, 50, 200000)
			if err != nil {
				return err
			}
			return runMpcalBench(cmd.Context(), cmd, asJSON, rounds, ns, models)
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "reduced run: 3 rounds")
	f.BoolVar(&asJSON, "json", false, "print one JSON object with results and ratios")
	f.IntVar(&rounds, "rounds", 7, "rounds (each runs both tools on every input)")
	f.StringVar(&sizes, "sizes", "1000,2000,5000", "line counts of the synthetic MPCal specs")
	f.StringVar(&models, "models", "models", "folder searched for the largest MPCal model ('' to skip)")
	return c
}

// mpcalBenchResult is one input's medians.
type mpcalBenchResult struct {
	Input    string  `json:"input"`
	Lines    int     `json:"lines"`
	StrataMs float64 `json:"strata_ms"` // strata mpcal pcalgen, whole process
	PcalMs   float64 `json:"pcal_ms"`   // java pcal.trans, whole process
	InProcMs float64 `json:"inproc_ms"` // parse + check + generate in this process
	RatioLo  float64 `json:"ratio_min"` // spread of the per-round ratios
	RatioHi  float64 `json:"ratio_max"`
	Ratio    float64 `json:"ratio"` // median of per-round pcal/strata
	Rounds   int     `json:"rounds"`
}

func runMpcalBench(ctx context.Context, cmd *cobra.Command, asJSON bool, rounds int, sizes []int, modelsDir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	jar, err := tlc.Jar()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "strata-bench-mpcal-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	type input struct {
		name string
		src  []byte
	}
	var inputs []input
	if modelsDir != "" {
		if name, src := largestModel(modelsDir); name != "" {
			inputs = append(inputs, input{name, src})
		}
	}
	for _, n := range sizes {
		inputs = append(inputs, input{fmt.Sprintf("synthetic-%d", n), mpcal.Synthetic(n)})
	}
	progress := cmd.ErrOrStderr()
	var results []mpcalBenchResult
	ratios := map[string]float64{}
	for _, in := range inputs {
		// The PlusCal translator's input: the module with Strata's output.
		f, err := mpcal.ParseFile(in.name, in.src)
		if err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
		out, err := mpcal.Compile(f)
		if err != nil {
			return fmt.Errorf("%s: %w", in.name, err)
		}
		withPcal := f.WithPlusCal(out.PlusCal())
		sub := filepath.Join(dir, strings.ReplaceAll(in.name, "/", "_"))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		module := f.Module.Name + ".tla"
		var st, pc, ip, rs []float64
		for r := 0; r < rounds; r++ {
			fmt.Fprintf(progress, "bench mpcal: %s round %d/%d\n", in.name, r+1, rounds)
			// Strata: a fresh copy of the MPCal module each time.
			sfile := filepath.Join(sub, module)
			if err := os.WriteFile(sfile, in.src, 0o644); err != nil {
				return err
			}
			d1, err := timeCmd(ctx, sub, self, "mpcal", "pcalgen", module)
			if err != nil {
				return fmt.Errorf("strata mpcal pcalgen %s: %w", in.name, err)
			}
			if got, _ := os.ReadFile(sfile); !bytes.Equal(got, withPcal) {
				return fmt.Errorf("%s: the strata process wrote different PlusCal than the library", in.name)
			}
			// pcal.trans on the same spec's PlusCal.
			if err := os.WriteFile(sfile, withPcal, 0o644); err != nil {
				return err
			}
			d2, err := timeCmd(ctx, sub, "java", "-cp", jar, "pcal.trans", "-nocfg", module)
			if err != nil {
				return fmt.Errorf("pcal.trans %s: %w", in.name, err)
			}
			// In-process: the pipeline without process start.
			t0 := time.Now()
			g, err := mpcal.ParseFile(in.name, in.src)
			if err == nil {
				_, err = mpcal.Compile(g)
			}
			if err != nil {
				return err
			}
			d3 := time.Since(t0)
			st, pc, ip = append(st, ms(d1)), append(pc, ms(d2)), append(ip, ms(d3))
			rs = append(rs, float64(d2)/float64(d1))
		}
		lo, hi := stats.Range(rs)
		res := mpcalBenchResult{Input: in.name, Lines: bytes.Count(in.src, []byte("\n")),
			StrataMs: stats.Median(st), PcalMs: stats.Median(pc), InProcMs: stats.Median(ip),
			Ratio: stats.Median(rs), RatioLo: lo, RatioHi: hi, Rounds: len(st)}
		results = append(results, res)
		ratios[fmt.Sprintf("time strata/pcal.trans %s", in.name)] = res.Ratio
	}
	if asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"bench": "mpcal", "results": results, "ratios": ratios})
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "input\tlines\tstrata pcalgen ms\tpcal.trans ms\tpcal.trans/strata\tspread\tin-process ms\tin-process µs/line\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%.0f\t%.0f\t%.2f\t%.2f-%.2f\t%.1f\t%.2f\t\n", r.Input, r.Lines, r.StrataMs, r.PcalMs, r.Ratio, r.RatioLo, r.RatioHi, r.InProcMs, 1000*r.InProcMs/float64(r.Lines))
	}
	return w.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// timeCmd runs a command to completion in dir and returns its wall time.
func timeCmd(ctx context.Context, dir, name string, args ...string) (time.Duration, error) {
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = dir
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	t0 := time.Now()
	err := c.Run()
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%w\n%s", err, out.String())
	}
	return d, nil
}

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
