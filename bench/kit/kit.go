// Package kit is what every Strata benchmark shares, so that a reader
// checks each thing once: the report that `strata bench NAME --json`
// prints (with every system's exact settings under "config"), the round
// scheduler that changes which system goes first every round, ratios paired
// per round and summarized by the one median (internal/stats), child
// processes that print a ready line, peers built from their own Go modules
// under bench/, and CPU pinning.
//
// A benchmark lives in bench/NAME (harness, workload, peers; a Go peer's
// module nests there or, when two benchmarks use it, sits in bench/PEER);
// cmd/strata only parses flags and calls it.
package kit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"strata/internal/stats"
)

// Settings are one system's exact settings (durability, transport, version,
// tuning), or the run's (key "run"), as the report prints them.
type Settings map[string]any

// Report is the one object `strata bench NAME --json` prints. Every ratio
// is oriented so that a value above 1 means Strata is better; Spread holds
// the smallest and largest per-round ratio behind each median.
type Report struct {
	Bench    string                `json:"bench"`
	Config   map[string]Settings   `json:"config"`
	Results  any                   `json:"results"`
	Ratios   map[string]float64    `json:"ratios"`
	Spread   map[string][2]float64 `json:"spread,omitempty"`
	Failures []string              `json:"failures,omitempty"`
	Notes    []string              `json:"notes,omitempty"`
}

// NewReport starts a report for bench with the run's settings filled in
// from the machine (CPUs, Go version, start time) and run.
func NewReport(bench string, run Settings) *Report {
	r := &Report{Bench: bench, Config: map[string]Settings{}, Ratios: map[string]float64{}, Spread: map[string][2]float64{}}
	s := Settings{"date": time.Now().UTC().Format(time.RFC3339), "cpus": runtime.NumCPU(), "go": runtime.Version(), "host": Host()}
	for k, v := range run {
		s[k] = v
	}
	r.Config["run"] = s
	return r
}

// Host names the machine: its CPU model and kernel, as /proc says.
func Host() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return strings.TrimSpace(fmt.Sprintf("%s, Linux %s", model, kernel))
}

// System records system's settings under config.
func (r *Report) System(name string, s Settings) { r.Config[name] = s }

// Fail records a cell that measured nothing (left out of the ratios).
func (r *Report) Fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// Note records a sentence the reader must see next to the figures.
func (r *Report) Note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// WriteJSON prints the report as one JSON object on one line.
func (r *Report) WriteJSON(w io.Writer) error {
	if r.Results == nil {
		r.Results = []any{}
	}
	return json.NewEncoder(w).Encode(r)
}

// PrintConfig prints every system's settings, the run's first, so that a
// table never appears without what both sides ran with.
func (r *Report) PrintConfig(w io.Writer) {
	names := make([]string, 0, len(r.Config))
	for k := range r.Config {
		if k != "run" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	names = append([]string{"run"}, names...)
	fmt.Fprintln(w, "settings:")
	for _, n := range names {
		s, ok := r.Config[n]
		if !ok {
			continue
		}
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%v", k, s[k]))
		}
		fmt.Fprintf(w, "  %-14s %s\n", n+":", strings.Join(parts, "; "))
	}
}

// PrintRatios prints the ratios (sorted by key) with their spreads, then
// the failures and notes.
func (r *Report) PrintRatios(w io.Writer) {
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w, "ratios (> 1: Strata better; median of the per-round ratios, min-max over rounds):")
		keys := make([]string, 0, len(r.Ratios))
		for k := range r.Ratios {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range keys {
			sp := ""
			if s, ok := r.Spread[k]; ok {
				sp = fmt.Sprintf("(%.2f-%.2f)", s[0], s[1])
			}
			fmt.Fprintf(tw, "  %s\t%.3f\t%s\n", k, r.Ratios[k], sp)
		}
		tw.Flush()
	}
	if len(r.Failures) > 0 {
		fmt.Fprintln(w, "FAILED cells (no figure; not in the medians and ratios):")
		for _, f := range r.Failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// Order returns the systems in the order round r (counted from 0) runs
// them: rotated by r, so that every system goes first as often as the
// others and two systems alternate.
func Order(r int, systems []string) []string {
	if len(systems) == 0 {
		return nil
	}
	k := r % len(systems)
	return append(slices.Clone(systems[k:]), systems[:k]...)
}

// Ratios collects one ratio per round under each key; Summarize turns
// them into the report's medians and spreads. Pairing per round (rather
// than dividing medians) keeps a slow minute on the machine from favouring
// whichever system it did not hit.
type Ratios map[string][]float64

// Higher adds a round's ratio for a metric where more is better
// (throughput): strata/peer. Pairs with a zero or missing side are skipped.
func (rs Ratios) Higher(key string, strata, peer float64) {
	if strata > 0 && peer > 0 && !math.IsInf(strata, 0) && !math.IsInf(peer, 0) {
		rs[key] = append(rs[key], strata/peer)
	}
}

// Lower adds a round's ratio for a metric where less is better (latency,
// time): peer/strata.
func (rs Ratios) Lower(key string, strata, peer float64) { rs.Higher(key, peer, strata) }

// Summarize writes the median of each key's ratios (rounded to three
// decimals) and their range into r.
func (rs Ratios) Summarize(r *Report) {
	for k, xs := range rs {
		if len(xs) == 0 {
			continue
		}
		lo, hi := stats.Range(xs)
		r.Ratios[k] = Round3(stats.Median(xs))
		r.Spread[k] = [2]float64{Round3(lo), Round3(hi)}
	}
}

// Median is internal/stats.Median, the one median every benchmark uses
// (the mean of the two middle values for an even count).
func Median(xs []float64) float64 { return stats.Median(xs) }

// Round3 rounds to three decimals.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// ErrPeerFailed is returned, with the complete report, when a peer's cell
// failed mid-run: its round has no ratio there, and the command exits
// non-zero after printing rather than look like a complete comparison.
var ErrPeerFailed = errors.New("failed peer cells")
