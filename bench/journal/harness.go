package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/internal/plot"
	"strata/journal/disk"
)

// The systems, as the tables, the config and the ratio keys name them.
const (
	Strata = "strata"
	// PeerName is GoJournal with Strata's barrier, fdatasync.
	PeerName = "go-journal"
	// PeerFsyncName is GoJournal on goose's FileDisk unchanged (fsync).
	PeerFsyncName = "go-journal-fsync"
)

// The peer's barriers (its -barrier flag).
const (
	BarrierFdatasync = "fdatasync"
	BarrierFsync     = "fsync"
)

// peerSystem names the peer that runs with barrier.
func peerSystem(barrier string) string {
	if barrier == BarrierFsync {
		return PeerFsyncName
	}
	return PeerName
}

// Config describes a benchmark run.
type Config struct {
	Goroutines []int
	Waits      []bool
	Media      []Medium
	Duration   time.Duration
	Rounds     int
	FlushEvery int
	LogBlocks  uint64
	// PeerBarriers lists the barriers GoJournal runs with, each as its own
	// system: BarrierFdatasync (Strata's: PeerName) and BarrierFsync
	// (goose's own: PeerFsyncName).
	PeerBarriers []string
	StrataCmd    []string // argv prefix that runs a Strata worker
	// PeerSrc is the peer's module (default: bench/journal/gojournal found
	// from the working directory).
	PeerSrc  string
	Progress io.Writer
}

// Medium is a folder on one kind of storage.
type Medium struct {
	Name string // "disk" or "tmpfs"
	Dir  string
}

// Case is one (medium, mode, G) cell with every system's runs.
type Case struct {
	Medium     string `json:"medium"`
	Wait       bool   `json:"wait"`
	Goroutines int    `json:"goroutines"`
	// Runs holds every system's result of every round it completed.
	Runs []Result `json:"runs"`
	// Median gives per system the medians over rounds.
	Median map[string]Summary `json:"median"`
	// Limit is, on the disk with wait=true, what one fdatasync per
	// Strata group commit allows.
	Limit *Limit `json:"fdatasync_limit,omitempty"`
}

// Summary is one system's medians over the rounds of a case.
type Summary struct {
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	Rounds    int     `json:"rounds"`
}

// Limit is the physical bound of a disk cell: a barrier per record, each
// carrying the bytes Strata's records carried, measured on the medium.
type Limit struct {
	OpsPerSec       float64 `json:"ops_per_sec"`
	BarrierUs       float64 `json:"barrier_us"`
	BytesPerBarrier float64 `json:"bytes_per_barrier"`
}

func (c *Case) label() string {
	return fmt.Sprintf("%s %s G=%d", c.Medium, modeName(c.Wait), c.Goroutines)
}

func modeName(wait bool) string {
	if wait {
		return "wait"
	}
	return "nowait"
}

func (c *Case) result(sys string, round int) (Result, bool) {
	for _, r := range c.Runs {
		if r.System == sys && r.Round == round {
			return r, true
		}
	}
	return Result{}, false
}

// Run builds the peer, then runs every case for cfg.Rounds rounds, the
// systems in the order kit.Order gives each round, each run in its own
// process on a fresh file. A Strata run that fails ends the benchmark; a
// peer run that fails is recorded in the report's failures.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if cfg.Rounds < 1 || cfg.Duration <= 0 || cfg.FlushEvery < 0 || len(cfg.Goroutines) == 0 || len(cfg.Waits) == 0 || len(cfg.Media) == 0 {
		return nil, errors.New("journal bench: need rounds >= 1, duration > 0, flush-every >= 0, and at least one goroutine count, mode and medium")
	}
	if len(cfg.PeerBarriers) == 0 {
		return nil, errors.New("journal bench: no peer barrier")
	}
	for _, b := range cfg.PeerBarriers {
		if b != BarrierFdatasync && b != BarrierFsync {
			return nil, fmt.Errorf("journal bench: peer barrier %q: want %s or %s", b, BarrierFdatasync, BarrierFsync)
		}
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	peerBin, vers, err := buildPeer(ctx, cfg.PeerSrc, progress)
	if err != nil {
		return nil, err
	}
	rep := kit.NewReport("journal", runSettings(cfg))
	rep.System(Strata, kit.Settings{
		"version":     kit.StrataVersion(),
		"journal":     "strata/journal (this binary, run as `strata bench journal --worker`)",
		"barrier":     "fdatasync (journal/disk.FileDisk.Barrier)",
		"disk":        "journal/disk.FileDisk: os.OpenFile O_RDWR, pread/pwritev",
		"log_blocks":  cfg.LogBlocks,
		"commit":      "Op.Commit(wait); with nowait, Journal.Flush every flush_every ops per goroutine",
		"goroutines":  cfg.Goroutines,
		"flush_every": cfg.FlushEvery,
	})
	for _, b := range cfg.PeerBarriers {
		s := kit.Settings{
			"version":     fmt.Sprintf("github.com/mit-pdos/go-journal %s, github.com/goose-lang/goose %s (built with %s)", vers.GoJournal, vers.Goose, vers.Go),
			"journal":     "go-journal obj.Log through jrnl.Begin/OverWrite/CommitWait (bench/journal/gojournal)",
			"log_blocks":  fmt.Sprintf("%d (wal.LOGSZ, fixed)", peerLogBlocks),
			"commit":      "CommitWait(wait); with nowait, log.Flush every flush_every ops per goroutine",
			"goroutines":  cfg.Goroutines,
			"flush_every": cfg.FlushEvery,
		}
		if b == BarrierFdatasync {
			s["barrier"] = "fdatasync (goose FileDisk with its Barrier replaced: the same barrier as Strata)"
			s["disk"] = "goose disk.NewFileDisk (O_RDWR|O_CREAT, pread/pwrite) wrapped: Barrier = unix.Fdatasync"
		} else {
			s["barrier"] = "fsync (goose disk.FileDisk unchanged: GoJournal's own default)"
			s["disk"] = "goose disk.NewFileDisk (O_RDWR|O_CREAT, pread/pwrite), Barrier = unix.Fsync"
		}
		rep.System(peerSystem(b), s)
	}
	systems := []string{Strata}
	for _, b := range cfg.PeerBarriers {
		systems = append(systems, peerSystem(b))
	}

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
			return nil, fmt.Errorf("journal bench: %s folder: %w", m.Name, err)
		}
		dirOf[m.Name] = m.Dir
	}
	total := len(cases) * cfg.Rounds * len(systems)
	n := 0
	for r := 1; r <= cfg.Rounds; r++ {
		for _, c := range cases {
			for _, sys := range kit.Order(r-1, systems) {
				n++
				res, err := runOne(ctx, cfg, peerBin, sys, dirOf[c.Medium], c)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if err != nil {
					if sys == Strata {
						return nil, fmt.Errorf("%s %s round %d: %w", sys, c.label(), r, err)
					}
					rep.Fail("%s %s round %d: %s", sys, c.label(), r, firstLine(err.Error()))
					fmt.Fprintf(progress, "[%d/%d] round %d %-22s %-16s FAILED: %v\n", n, total, r, c.label(), sys, err)
					continue
				}
				res.Round = r
				c.Runs = append(c.Runs, res)
				fmt.Fprintf(progress, "[%d/%d] round %d %-22s %-16s %10.0f ops/s  p50 %8.1f µs\n", n, total, r, c.label(), sys, res.OpsPerSec, res.P50us)
			}
		}
	}
	summarize(cases, systems, cfg.Rounds).Summarize(rep)
	for _, c := range cases {
		if c.Medium != "disk" || !c.Wait {
			continue
		}
		if err := limit(c, dirOf[c.Medium]); err != nil {
			return nil, err
		}
	}
	rep.Results = cases
	return rep, nil
}

// summarize fills each case's medians and pairs Strata with each peer
// round by round (a round where either failed gives no pair).
func summarize(cases []*Case, systems []string, rounds int) kit.Ratios {
	rs := kit.Ratios{}
	for _, c := range cases {
		c.Median = map[string]Summary{}
		for _, sys := range systems {
			var ops, p50, p99 []float64
			for _, x := range c.Runs {
				if x.System == sys {
					ops, p50, p99 = append(ops, x.OpsPerSec), append(p50, x.P50us), append(p99, x.P99us)
				}
			}
			if len(ops) > 0 {
				c.Median[sys] = Summary{OpsPerSec: kit.Median(ops), P50us: kit.Median(p50), P99us: kit.Median(p99), Rounds: len(ops)}
			}
		}
		for _, peer := range systems[1:] {
			for r := 1; r <= rounds; r++ {
				s, ok1 := c.result(Strata, r)
				p, ok2 := c.result(peer, r)
				if ok1 && ok2 {
					rs.Higher("ops/s strata/"+peer+" "+c.label(), s.OpsPerSec, p.OpsPerSec)
					rs.Lower("p50 latency strata/"+peer+" "+c.label(), s.P50us, p.P50us)
				}
			}
		}
	}
	return rs
}

// limit fills c.Limit: the bytes Strata's records carried per barrier and
// its operations per record (medians over rounds), and the median time to
// write that much and fdatasync, measured in dir.
func limit(c *Case, dir string) error {
	var bytesPer, opsPer []float64
	for _, x := range c.Runs {
		if x.System == Strata && x.Records > 0 {
			bytesPer = append(bytesPer, float64(x.RingBlocks)/float64(x.Records)*disk.BlockSize+disk.BlockSize)
			opsPer = append(opsPer, float64(x.Ops)/float64(x.Records))
		}
	}
	if len(bytesPer) == 0 {
		return nil
	}
	b := kit.Median(bytesPer)
	lat, err := BarrierLatency(dir, int(b), 60)
	if err != nil {
		return fmt.Errorf("journal bench: barrier latency in %s: %w", dir, err)
	}
	c.Limit = &Limit{BytesPerBarrier: b, BarrierUs: float64(lat.Microseconds()), OpsPerSec: kit.Median(opsPer) / lat.Seconds()}
	return nil
}

func runSettings(cfg Config) kit.Settings {
	media := map[string]string{}
	for _, m := range cfg.Media {
		media[m.Name] = m.Dir
	}
	var modes []string
	for _, w := range cfg.Waits {
		modes = append(modes, modeName(w))
	}
	return kit.Settings{
		"rounds":      cfg.Rounds,
		"duration":    cfg.Duration.String(),
		"warmup":      warmup.String(),
		"goroutines":  cfg.Goroutines,
		"modes":       modes,
		"flush_every": cfg.FlushEvery,
		"media":       media,
		"file":        fmt.Sprintf("%d MiB per run, fresh: created, fallocated, every block written with zeros and fsynced before the system starts (the same preparation, journal/disk.CreateFile, for both)", DiskBlocks*disk.BlockSize>>20),
		"order":       "every system in its own process per run; the order rotates every round (kit.Order)",
		"workload":    "per op: overwrite the goroutine's own 128-byte inode object and 4 KiB data block, commit",
	}
}

// buildPeer builds the GoJournal worker from its module and asks it for
// the versions it was built with.
func buildPeer(ctx context.Context, src string, progress io.Writer) (string, peerVersions, error) {
	if src == "" {
		var err error
		if src, err = kit.Module("journal/gojournal"); err != nil {
			return "", peerVersions{}, fmt.Errorf("journal bench: %w (or pass --peer-src)", err)
		}
	}
	dir, err := kit.BuildGo(ctx, src, []string{"."}, progress)
	if err != nil {
		return "", peerVersions{}, fmt.Errorf("journal bench: building the go-journal worker: %w", err)
	}
	bin := filepath.Join(dir, "peer")
	out, err := kit.Output(ctx, kit.Cmd{Name: "go-journal worker -version", Argv: []string{bin, "-version"}})
	if err != nil {
		return "", peerVersions{}, fmt.Errorf("journal bench: %w", err)
	}
	var v peerVersions
	if err := json.Unmarshal(kit.LastLine(out), &v); err != nil || v.GoJournal == "" {
		return "", peerVersions{}, fmt.Errorf("journal bench: the go-journal worker's -version printed %q (%v)", out, err)
	}
	return bin, v, nil
}

// peerVersions is what the peer's -version prints.
type peerVersions struct {
	GoJournal string `json:"go_journal"`
	Goose     string `json:"goose"`
	Go        string `json:"go"`
}

func runOne(ctx context.Context, cfg Config, peerBin, sys, dir string, c *Case) (Result, error) {
	file := filepath.Join(dir, fmt.Sprintf("bench-%s.img", sys))
	defer os.Remove(file)
	var argv []string
	wait := strconv.FormatBool(c.Wait)
	barrier := ""
	if sys == Strata {
		argv = append(slices.Clone(cfg.StrataCmd), "--file", file, "--g", strconv.Itoa(c.Goroutines),
			"--duration", cfg.Duration.String(), "--wait="+wait, "--flush-every", strconv.Itoa(cfg.FlushEvery),
			"--log-blocks", strconv.FormatUint(cfg.LogBlocks, 10))
	} else {
		barrier = BarrierFdatasync
		if sys == PeerFsyncName {
			barrier = BarrierFsync
		}
		// The same file preparation as Strata's worker does for itself.
		d, err := disk.CreateFile(file, DiskBlocks, ZeroBlocks)
		if err != nil {
			return Result{}, err
		}
		d.Close()
		argv = []string{peerBin, "-file", file, "-blocks", strconv.Itoa(DiskBlocks), "-goroutines", strconv.Itoa(c.Goroutines),
			"-duration", cfg.Duration.String(), "-wait=" + wait, "-flush-every", strconv.Itoa(cfg.FlushEvery), "-barrier", barrier}
	}
	out, err := kit.Output(ctx, kit.Cmd{Name: sys + " worker", Argv: argv})
	if err != nil {
		return Result{}, err
	}
	var res Result
	if err := json.Unmarshal(kit.LastLine(out), &res); err != nil {
		return Result{}, fmt.Errorf("worker output %q: %w", out, err)
	}
	if res.Goroutines != c.Goroutines || res.Wait != c.Wait || res.Barrier != barrier {
		return Result{}, fmt.Errorf("worker ran G=%d wait=%v barrier=%q, asked for G=%d wait=%v barrier=%q", res.Goroutines, res.Wait, res.Barrier, c.Goroutines, c.Wait, barrier)
	}
	if res.Ops == 0 {
		return Result{}, fmt.Errorf("worker completed no operation: %s", out)
	}
	res.System = sys
	return res, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Print writes the tables, then the settings and the ratios.
func Print(w io.Writer, rep *kit.Report) error {
	cases, ok := rep.Results.([]*Case)
	if !ok {
		return fmt.Errorf("journal bench: report results are %T, not journal cases", rep.Results)
	}
	run := rep.Config["run"]
	fmt.Fprintf(w, "journal benchmark: Strata vs GoJournal, %v round(s) of %v per cell, order rotating each round; ratio = strata/peer throughput (>1: Strata faster)\n", run["rounds"], run["duration"])
	var peers []string
	for _, p := range []string{PeerName, PeerFsyncName} {
		if s, ok := rep.Config[p]; ok {
			peers = append(peers, p)
			fmt.Fprintf(w, "barriers: strata %s; %s %s\n", "fdatasync", p, s["barrier"])
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "medium\tmode\tG\tstrata ops/s\tpeer\tpeer ops/s\tratio\t(min–max)\tstrata p50/p99 µs\tpeer p50/p99 µs\tp50 lat ratio\t")
	for _, c := range cases {
		s, hasS := c.Median[Strata]
		for _, p := range peers {
			pm, hasP := c.Median[p]
			key := c.label()
			cell := func(m Summary, has bool) (string, string) {
				if !has {
					return "failed", "-"
				}
				return fmt.Sprintf("%.0f", m.OpsPerSec), fmt.Sprintf("%.0f/%.0f", m.P50us, m.P99us)
			}
			sOps, sLat := cell(s, hasS)
			pOps, pLat := cell(pm, hasP)
			ratio, spread, lat := "-", "", "-"
			if v, ok := rep.Ratios["ops/s strata/"+p+" "+key]; ok {
				sp := rep.Spread["ops/s strata/"+p+" "+key]
				ratio, spread = fmt.Sprintf("%.2fx", v), fmt.Sprintf("(%.2f–%.2f)", sp[0], sp[1])
			}
			if v, ok := rep.Ratios["p50 latency strata/"+p+" "+key]; ok {
				lat = fmt.Sprintf("%.2fx", v)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
				c.Medium, modeName(c.Wait), c.Goroutines, sOps, p, pOps, ratio, spread, sLat, pLat, lat)
		}
	}
	tw.Flush()
	var lim []*Case
	for _, c := range cases {
		if c.Limit != nil && c.Limit.OpsPerSec > 0 {
			lim = append(lim, c)
		}
	}
	if len(lim) > 0 {
		fmt.Fprintf(w, "\nphysical limit on the disk (wait=true): one fdatasync per group commit, each carrying the bytes Strata's records carried\n\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "G\tKiB/barrier\tbarrier µs\tlimit ops/s\tstrata ops/s\t% of limit\t")
		for _, c := range lim {
			s := c.Median[Strata].OpsPerSec
			fmt.Fprintf(tw, "%d\t%.1f\t%.0f\t%.0f\t%.0f\t%.0f%%\t\n", c.Goroutines, c.Limit.BytesPerBarrier/1024, c.Limit.BarrierUs, c.Limit.OpsPerSec, s, 100*s/c.Limit.OpsPerSec)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	rep.PrintConfig(w)
	rep.PrintRatios(w)
	return nil
}

// Plot writes throughput-vs-goroutines curves, one panel per medium and
// mode, Strata against each peer.
func Plot(rep *kit.Report, path string) error {
	cases, ok := rep.Results.([]*Case)
	if !ok {
		return fmt.Errorf("journal bench: report results are %T, not journal cases", rep.Results)
	}
	systems := []string{Strata}
	for _, p := range []string{PeerName, PeerFsyncName} {
		if _, ok := rep.Config[p]; ok {
			systems = append(systems, p)
		}
	}
	var panels []plot.Panel
	index := map[string]int{}
	for _, c := range cases {
		mode := "wait=true"
		if !c.Wait {
			mode = fmt.Sprintf("wait=false, Flush every %v", rep.Config["run"]["flush_every"])
		}
		key := c.Medium + " " + mode
		i, ok := index[key]
		if !ok {
			p := plot.Panel{Title: key, XLabel: "goroutines", YLabel: "ops/s", LogX: true}
			for k, s := range systems {
				name := s
				if s != Strata {
					name += " (" + barrierOf(rep, s) + ")"
				}
				p.Series = append(p.Series, plot.Series{Name: name, Color: plot.Palette[k%len(plot.Palette)]})
			}
			panels = append(panels, p)
			i = len(panels) - 1
			index[key] = i
		}
		for k, s := range systems {
			if m, ok := c.Median[s]; ok {
				sr := &panels[i].Series[k]
				sr.X = append(sr.X, float64(c.Goroutines))
				sr.Y = append(sr.Y, m.OpsPerSec)
			}
		}
	}
	return plot.Render(path, panels, 2)
}

// barrierOf is the first word of a system's barrier setting.
func barrierOf(rep *kit.Report, sys string) string {
	b, _ := rep.Config[sys]["barrier"].(string)
	w, _, _ := strings.Cut(b, " ")
	return w
}
