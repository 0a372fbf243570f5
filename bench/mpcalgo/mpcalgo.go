// Package mpcalgo is the benchmark of Go code generated from MPCal
// (`strata bench mpcal-go`), after the PGo paper's echo experiment
// (../shared/papers/pgo-mpcal.txt, §6): how much slower an echo compiled
// from an MPCal model (mpcal/testdata/gogen/echobench, over the distsys
// runtime and its mailbox resource) is than the same echo written by hand
// in Go, on the same stack nodes, in both mailbox modes; and the
// per-operation cost of distsys/tla values.
//
// Each round runs, for each mode, both systems in the order kit.Order
// gives (so each goes first as often as the other), each on two fresh
// stack nodes on loopback UDP in this process: warm-up round trips, then
// the measured ones, one at a time. The ratio of a round is the
// hand-written mean over the generated mean (above 1: generated code is
// faster); the report gives the median over rounds and the range.
package mpcalgo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
)

// Config describes a run.
type Config struct {
	Rounds   int
	N        int           // measured round trips per system, mode and round
	Warmup   int           // untimed round trips before them
	Modes    []string      // Relaxed, TwoPhase, LastAgent
	BusyPoll time.Duration // transport busy polling, both systems
	Values   bool          // run the TLA+ value microbenchmarks
	ValueN   int           // their values' size
	Progress io.Writer
}

// Cell is one system in one mode and round.
type Cell struct {
	Round  int     `json:"round"`
	Mode   string  `json:"mode"`
	System string  `json:"system"`
	First  bool    `json:"first"` // ran first in its round and mode
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	// Generated runs: sections aborted (an empty inbox waits, then
	// aborts and retries) and undecodable messages.
	ClientAborts uint64 `json:"client_aborts,omitempty"`
	ServerAborts uint64 `json:"server_aborts,omitempty"`
	Dropped      uint64 `json:"dropped,omitempty"`
}

// Summary is the median over rounds of a system's figures in a mode.
type Summary struct {
	Mode   string  `json:"mode"`
	System string  `json:"system"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
}

// Results is the report's results object.
type Results struct {
	Summary []Summary `json:"summary"`
	// OverheadPct is, per mode, the median over rounds of the generated
	// mean over the hand-written mean, minus 1, in percent; OverheadP50Pct
	// the same of the p50s (less moved by a loaded machine's tail).
	OverheadPct    map[string]float64 `json:"overhead_pct"`
	OverheadP50Pct map[string]float64 `json:"overhead_p50_pct"`
	Cells          []Cell             `json:"cells"`
	Values         []ValueOp          `json:"values,omitempty"`
}

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if cfg.Rounds < 1 || cfg.N < 100 || cfg.Warmup < 1 {
		return nil, fmt.Errorf("mpcal-go: need at least 1 round, 100 round trips and 1 warm-up round trip (got %d, %d, %d)", cfg.Rounds, cfg.N, cfg.Warmup)
	}
	for _, m := range cfg.Modes {
		if m != Relaxed && m != TwoPhase && m != LastAgent {
			return nil, fmt.Errorf("mpcal-go: unknown mailbox mode %q (want %s, %s or %s)", m, Relaxed, TwoPhase, LastAgent)
		}
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	rep := kit.NewReport("mpcal-go", kit.Settings{"rounds": cfg.Rounds, "round_trips": cfg.N, "warmup": cfg.Warmup,
		"modes": cfg.Modes, "placement": "one process, two stack nodes on loopback UDP (127.0.0.1), GOMAXPROCS as the run"})
	common := func(s kit.Settings) kit.Settings {
		s["transport"] = "udp:127.0.0.1"
		s["busy_poll"] = cfg.BusyPoll.String()
		s["stack_props"] = fmt.Sprintf("%s: %s; %s and %s: %s", Relaxed, Props(Relaxed), TwoPhase, LastAgent, Props(TwoPhase))
		s["request_bytes"] = wireSize((cfg.N + cfg.Warmup) / 2)
		return s
	}
	rep.System(Generated, common(kit.Settings{
		"model":     "mpcal/testdata/gogen/echobench/EchoBench.tla (strata mpcal gogen)",
		"runtime":   "distsys.Context.Run; distsys.Mailboxes (relaxed: one one-way message per send at commit; two-phase: prepare RPC at pre-commit, one-way commit; last-agent: two-phase with LastAgent, one deliver RPC for these single-send sections)",
		"per_round": "client: 2 critical sections (request, response), server: 1 (receive and reply)",
	}))
	rep.System(Handwritten, common(kit.Settings{
		"code":      "bench/mpcalgo runHandwritten: server OnDeliver sends the bytes back; client Send, wait on a channel, check the number",
		"per_round": "one Send each way, same message size as the generated request",
	}))

	res := &Results{OverheadPct: map[string]float64{}, OverheadP50Pct: map[string]float64{}}
	ratios := kit.Ratios{}
	overheads, overheadsP50 := map[string][]float64{}, map[string][]float64{}
	systems := []string{Generated, Handwritten}
	for r := range cfg.Rounds {
		for _, mode := range cfg.Modes {
			means, p50s := map[string]float64{}, map[string]float64{}
			for i, sys := range kit.Order(r, systems) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				o := echoOpts{mode: mode, n: cfg.N, warmup: cfg.Warmup, busyPoll: cfg.BusyPoll}
				var (
					lat []time.Duration
					st  distsysStats
					err error
				)
				if sys == Generated {
					lat, st, err = runGenerated(ctx, o)
				} else {
					lat, err = runHandwritten(ctx, o)
				}
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					rep.Fail("round %d %s %s: %v", r+1, mode, sys, err)
					fmt.Fprintf(progress, "round %d %s %s: FAILED: %v\n", r+1, mode, sys, err)
					continue
				}
				c := cellOf(lat)
				c.Round, c.Mode, c.System, c.First = r+1, mode, sys, i == 0
				c.ClientAborts, c.ServerAborts, c.Dropped = st.ClientAborts, st.ServerAborts, st.Dropped
				res.Cells = append(res.Cells, c)
				means[sys], p50s[sys] = c.MeanUs, c.P50Us
				fmt.Fprintf(progress, "round %d %-9s %-11s mean %7.1f µs  p50 %7.1f  p99 %7.1f\n", r+1, mode, sys, c.MeanUs, c.P50Us, c.P99Us)
			}
			ratios.Lower("rtt generated/handwritten "+mode, means[Generated], means[Handwritten])
			ratios.Lower("p50 generated/handwritten "+mode, p50s[Generated], p50s[Handwritten])
			if means[Generated] > 0 && means[Handwritten] > 0 {
				overheads[mode] = append(overheads[mode], 100*(means[Generated]/means[Handwritten]-1))
			}
			if p50s[Generated] > 0 && p50s[Handwritten] > 0 {
				overheadsP50[mode] = append(overheadsP50[mode], 100*(p50s[Generated]/p50s[Handwritten]-1))
			}
		}
	}
	ratios.Summarize(rep)
	for mode, xs := range overheads {
		res.OverheadPct[mode] = kit.Round3(kit.Median(xs))
	}
	for mode, xs := range overheadsP50 {
		res.OverheadP50Pct[mode] = kit.Round3(kit.Median(xs))
	}
	for _, mode := range cfg.Modes {
		for _, sys := range systems {
			var mean, p50, p99 []float64
			for _, c := range res.Cells {
				if c.Mode == mode && c.System == sys {
					mean, p50, p99 = append(mean, c.MeanUs), append(p50, c.P50Us), append(p99, c.P99Us)
				}
			}
			if len(mean) > 0 {
				res.Summary = append(res.Summary, Summary{Mode: mode, System: sys,
					MeanUs: kit.Round3(kit.Median(mean)), P50Us: kit.Round3(kit.Median(p50)), P99Us: kit.Round3(kit.Median(p99))})
			}
		}
	}
	if cfg.Values {
		fmt.Fprintf(progress, "TLA+ value microbenchmarks (n=%d)...\n", cfg.ValueN)
		res.Values = runValues(cfg.ValueN)
	}
	rep.Results = res
	rep.Note("in the ratios \"Strata\" is the generated code: hand-written time / generated time, > 1 when generated code is faster")
	rep.Note("the paper measured PGo's generated echo at +23%% (relaxed) and +85%% (two-phase) over hand-written Go; overhead_pct is Strata's")
	return rep, nil
}

// cellOf summarizes round-trip times in microseconds.
func cellOf(lat []time.Duration) Cell {
	if len(lat) == 0 {
		return Cell{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	us := func(d time.Duration) float64 { return kit.Round3(float64(d) / 1e3) }
	pct := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Cell{MeanUs: kit.Round3(float64(sum) / float64(len(s)) / 1e3), P50Us: us(pct(0.50)), P99Us: us(pct(0.99))}
}

// Print writes the report as tables.
func Print(w io.Writer, rep *kit.Report) error {
	rep.PrintConfig(w)
	res, ok := rep.Results.(*Results)
	if !ok {
		return fmt.Errorf("mpcal-go: report without results")
	}
	fmt.Fprintln(w, "echo round trips (median over rounds of each round's figure):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  mode\tsystem\tmean µs\tp50 µs\tp99 µs\t")
	for _, s := range res.Summary {
		fmt.Fprintf(tw, "  %s\t%s\t%.1f\t%.1f\t%.1f\t\n", s.Mode, s.System, s.MeanUs, s.P50Us, s.P99Us)
	}
	tw.Flush()
	modes := make([]string, 0, len(res.OverheadPct))
	for m := range res.OverheadPct {
		modes = append(modes, m)
	}
	slices.Sort(modes)
	for _, m := range modes {
		fmt.Fprintf(w, "overhead of generated code over hand-written, %s: %+.1f%% mean, %+.1f%% p50 (medians over rounds)\n", m, res.OverheadPct[m], res.OverheadP50Pct[m])
	}
	if len(res.Values) > 0 {
		fmt.Fprintf(w, "TLA+ values (distsys/tla, testing.Benchmark, n=%d):\n", res.Values[0].N)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  operation\tns/op\tB/op\tallocs/op\t")
		for _, v := range res.Values {
			fmt.Fprintf(tw, "  %s\t%.0f\t%d\t%d\t\n", v.Name, v.NsPerOp, v.BPerOp, v.AllocsOp)
		}
		tw.Flush()
	}
	rep.PrintRatios(w)
	return nil
}
