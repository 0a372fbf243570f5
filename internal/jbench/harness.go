package jbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"strata/internal/plot"
	"strata/internal/stats"
	"strata/journal/disk"
)

// PeerName is the peer's name in ratio keys.
const PeerName = "go-journal"

// Config describes a benchmark run.
type Config struct {
	Goroutines []int
	Waits      []bool
	Media      []Medium
	Duration   time.Duration
	Rounds     int
	FlushEvery int
	LogBlocks  uint64
	StrataCmd  []string // argv prefix that runs a Strata worker
	PeerBin    string   // built bench/gojournal worker
	Progress   io.Writer
}

// Medium is a folder on one kind of storage.
type Medium struct {
	Name string // "disk" or "tmpfs"
	Dir  string
}

// Case is one (medium, mode, G) cell with every round's results.
type Case struct {
	Medium     string   `json:"medium"`
	Wait       bool     `json:"wait"`
	Goroutines int      `json:"goroutines"`
	Strata     []Result `json:"strata"`
	Peer       []Result `json:"peer"`
	// Derived.
	StrataOps   float64 `json:"strata_ops_per_sec_median"`
	PeerOps     float64 `json:"peer_ops_per_sec_median"`
	Ratio       float64 `json:"ratio_median"`
	RatioMin    float64 `json:"ratio_min"`
	RatioMax    float64 `json:"ratio_max"`
	LatRatio    float64 `json:"p50_latency_ratio_median"`
	LimitOps    float64 `json:"fsync_limit_ops_per_sec,omitempty"`
	BarrierUs   float64 `json:"barrier_us,omitempty"`
	RecordBytes float64 `json:"bytes_per_barrier,omitempty"`
}

func (c *Case) label() string {
	mode := "wait"
	if !c.Wait {
		mode = "nowait"
	}
	return fmt.Sprintf("%s %s G=%d", c.Medium, mode, c.Goroutines)
}

// Report is the whole benchmark's outcome.
type Report struct {
	Bench   string             `json:"bench"`
	Results []*Case            `json:"results"`
	Ratios  map[string]float64 `json:"ratios"`
}

// FindPeerSource locates bench/gojournal starting from dir and its parents.
func FindPeerSource(dirs ...string) (string, error) {
	for _, d := range dirs {
		for d != "" {
			p := filepath.Join(d, "bench", "gojournal")
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return p, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", errors.New("cannot find bench/gojournal (run from the Strata source tree or pass --peer-src)")
}

// BuildPeer builds the GoJournal worker from its module into out.
func BuildPeer(ctx context.Context, src, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = src
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build go-journal worker in %s: %w\n%s", src, err, stderr.String())
	}
	return nil
}

// Run runs every case for cfg.Rounds rounds, alternating Strata and the peer
// (the order flips each round), each in its own process on a fresh file.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	var cases []*Case
	for _, m := range cfg.Media {
		for _, w := range cfg.Waits {
			for _, g := range cfg.Goroutines {
				cases = append(cases, &Case{Medium: m.Name, Wait: w, Goroutines: g})
			}
		}
	}
	dirOf := map[string]string{}
	for _, m := range cfg.Media {
		if err := os.MkdirAll(m.Dir, 0o755); err != nil {
			return nil, err
		}
		dirOf[m.Name] = m.Dir
	}
	total := len(cases) * cfg.Rounds * 2
	n := 0
	for r := 0; r < cfg.Rounds; r++ {
		for _, c := range cases {
			order := []string{"strata", PeerName}
			if r%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, sys := range order {
				n++
				res, err := runOne(ctx, cfg, sys, dirOf[c.Medium], c)
				if err != nil {
					return nil, fmt.Errorf("%s %s round %d: %w", sys, c.label(), r+1, err)
				}
				if sys == "strata" {
					c.Strata = append(c.Strata, res)
				} else {
					c.Peer = append(c.Peer, res)
				}
				if cfg.Progress != nil {
					fmt.Fprintf(cfg.Progress, "[%d/%d] round %d %-22s %-10s %10.0f ops/s  p50 %8.1f µs\n", n, total, r+1, c.label(), sys, res.OpsPerSec, res.P50us)
				}
			}
		}
	}
	rep := &Report{Bench: "journal", Results: cases, Ratios: map[string]float64{}}
	for _, c := range cases {
		summarize(c)
		rep.Ratios["ops/s strata/"+PeerName+" "+c.label()] = round3(c.Ratio)
		rep.Ratios["p50 latency strata/"+PeerName+" "+c.label()] = round3(c.LatRatio)
	}
	// The physical limit: a barrier per record, each carrying the bytes
	// Strata's records carried, measured on the same medium.
	for _, c := range cases {
		if c.Medium != "disk" || !c.Wait {
			continue
		}
		med := medianResult(c.Strata)
		if med.Records == 0 {
			continue
		}
		c.RecordBytes = float64(med.RingBlocks)/float64(med.Records)*disk.BlockSize + disk.BlockSize
		lat, err := BarrierLatency(dirOf[c.Medium], int(c.RecordBytes), 60)
		if err != nil {
			return nil, err
		}
		c.BarrierUs = float64(lat.Microseconds())
		opsPerRecord := float64(med.Ops) / float64(med.Records)
		c.LimitOps = opsPerRecord / lat.Seconds()
	}
	return rep, nil
}

func runOne(ctx context.Context, cfg Config, sys, dir string, c *Case) (Result, error) {
	file := filepath.Join(dir, fmt.Sprintf("bench-%s.img", sys))
	defer os.Remove(file)
	var argv []string
	wait := strconv.FormatBool(c.Wait)
	if sys == "strata" {
		argv = append(slices.Clone(cfg.StrataCmd), "--file", file, "--g", strconv.Itoa(c.Goroutines),
			"--duration", cfg.Duration.String(), "--wait="+wait, "--flush-every", strconv.Itoa(cfg.FlushEvery),
			"--log-blocks", strconv.FormatUint(cfg.LogBlocks, 10))
	} else {
		// Same file preparation as Strata's worker does for itself.
		d, err := disk.CreateFile(file, DiskBlocks, ZeroBlocks)
		if err != nil {
			return Result{}, err
		}
		d.Close()
		argv = []string{cfg.PeerBin, "-file", file, "-blocks", strconv.Itoa(DiskBlocks), "-goroutines", strconv.Itoa(c.Goroutines),
			"-duration", cfg.Duration.String(), "-wait=" + wait, "-flush-every", strconv.Itoa(cfg.FlushEvery)}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("%v: %w\n%s", argv, err, stderr.String())
	}
	var res Result
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return Result{}, fmt.Errorf("worker output %q: %w", out.String(), err)
	}
	if res.Goroutines != c.Goroutines || res.Wait != c.Wait {
		return Result{}, fmt.Errorf("worker ran G=%d wait=%v, asked for G=%d wait=%v", res.Goroutines, res.Wait, c.Goroutines, c.Wait)
	}
	if res.Ops == 0 {
		return Result{}, fmt.Errorf("worker completed no operation: %s", out.String())
	}
	return res, nil
}

func medianResult(rs []Result) Result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b Result) int {
		switch {
		case a.OpsPerSec < b.OpsPerSec:
			return -1
		case a.OpsPerSec > b.OpsPerSec:
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

func summarize(c *Case) {
	var so, po, ratios, lat []float64
	for i := range c.Strata {
		so = append(so, c.Strata[i].OpsPerSec)
		po = append(po, c.Peer[i].OpsPerSec)
		ratios = append(ratios, c.Strata[i].OpsPerSec/c.Peer[i].OpsPerSec)
		if c.Strata[i].P50us > 0 {
			lat = append(lat, c.Peer[i].P50us/c.Strata[i].P50us)
		}
	}
	c.StrataOps, c.PeerOps = stats.Median(so), stats.Median(po)
	c.Ratio, c.RatioMin, c.RatioMax = stats.Median(ratios), slices.Min(ratios), slices.Max(ratios)
	c.LatRatio = stats.Median(lat)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// PrintTable writes the human-readable tables.
func PrintTable(w io.Writer, rep *Report, cfg Config) {
	fmt.Fprintf(w, "journal benchmark: Strata vs %s, %d round(s) of %s per cell, alternating; ratio = strata/peer throughput (>1: Strata faster)\n\n", PeerName, cfg.Rounds, cfg.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "medium\tmode\tG\tstrata ops/s\tpeer ops/s\tratio\t(min–max)\tstrata p50/p99 µs\tpeer p50/p99 µs\tp50 lat ratio\t")
	for _, c := range rep.Results {
		mode := "wait"
		if !c.Wait {
			mode = "nowait"
		}
		s, p := medianResult(c.Strata), medianResult(c.Peer)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.0f\t%.2fx\t(%.2f–%.2f)\t%.0f/%.0f\t%.0f/%.0f\t%.2fx\t\n",
			c.Medium, mode, c.Goroutines, c.StrataOps, c.PeerOps, c.Ratio, c.RatioMin, c.RatioMax, s.P50us, s.P99us, p.P50us, p.P99us, c.LatRatio)
	}
	tw.Flush()
	var lim []*Case
	for _, c := range rep.Results {
		if c.LimitOps > 0 {
			lim = append(lim, c)
		}
	}
	if len(lim) == 0 {
		return
	}
	fmt.Fprintf(w, "\nphysical limit on the disk (wait=true): one fdatasync per group commit, each carrying the bytes Strata's records carried\n\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "G\tKiB/barrier\tbarrier µs\tlimit ops/s\tstrata ops/s\t% of limit\t")
	for _, c := range lim {
		fmt.Fprintf(tw, "%d\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f%%\t\n", c.Goroutines, c.RecordBytes/1024, c.BarrierUs, c.LimitOps, c.StrataOps, 100*c.StrataOps/c.LimitOps)
	}
	tw.Flush()
}

// Plot writes throughput-vs-goroutines curves, one panel per medium and
// mode, Strata against the peer.
func Plot(rep *Report, path string) error {
	var panels []plot.Panel
	index := map[string]*plot.Panel{}
	for _, c := range rep.Results {
		mode := "wait=true"
		if !c.Wait {
			mode = "wait=false, Flush every 16"
		}
		key := c.Medium + " " + mode
		p := index[key]
		if p == nil {
			panels = append(panels, plot.Panel{
				Title: key, XLabel: "goroutines", YLabel: "ops/s", LogX: true,
				Series: []plot.Series{{Name: "strata", Color: plot.Palette[0]}, {Name: PeerName, Color: plot.Palette[1]}},
			})
			p = &panels[len(panels)-1]
			index[key] = p
		}
		p.Series[0].X = append(p.Series[0].X, float64(c.Goroutines))
		p.Series[0].Y = append(p.Series[0].Y, c.StrataOps)
		p.Series[1].X = append(p.Series[1].X, float64(c.Goroutines))
		p.Series[1].Y = append(p.Series[1].Y, c.PeerOps)
	}
	return plot.Render(path, panels, 2)
}
