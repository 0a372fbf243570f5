package log

// The curves of `strata bench log --curves`: the WormSpace paper's
// Figures 11 and 12 (§7.3) for WormLog over both WOR engines. No peer:
// the curves compare Strata's paxos engine with its chain engine, with
// the same WormLog code on top.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	worbench "strata/bench/wor"
	"strata/internal/freeport"
	"strata/internal/plot"
	"strata/stack"
	"strata/wor"
	"strata/wormlog"
)

// The two figures, as Point.Figure names them.
const (
	// FigThroughput is Figure 11's shape: append latency against
	// throughput, more and more concurrent appenders, 3 wormservers.
	FigThroughput = "latency-throughput"
	// FigServers is Figure 12's shape: the latency of one appender
	// against the number of wormservers.
	FigServers = "latency-servers"
)

// The PNG files the curves are drawn into, in CurveConfig.PlotDir.
const (
	PlotThroughput = "wormlog-latency-throughput.png"
	PlotServers    = "wormlog-latency-servers.png"
)

// CurveEngines are the WOR engines the curves compare, in this order.
var CurveEngines = []string{"paxos", "chain"}

// throughputServers is the number of wormservers behind Figure 11's curve.
const throughputServers = 3

// CurveConfig is one run of the curves.
type CurveConfig struct {
	Strata    string // the strata binary the servers run (default: this executable)
	Dir       string // the servers' data: DIR/curves (emptied first; each point's removed after it)
	PlotDir   string // where the two PNGs go ("": not drawn)
	ValueSize int
	// Appenders are Figure 11's points: concurrent appenders, one append
	// outstanding each, against 3 wormservers.
	Appenders []int
	// Servers are Figure 12's points: wormservers, one appender.
	Servers []int
	// Records are the measured appends of each Figure 11 point,
	// ServerRecords of each Figure 12 point; each after a warm-up of a
	// tenth (at least 10), not measured.
	Records, ServerRecords int
	Progress               io.Writer
}

// Point is one measured point of a curve.
type Point struct {
	Figure    string  `json:"figure"` // FigThroughput or FigServers
	Engine    string  `json:"engine"` // paxos or chain
	Servers   int     `json:"servers"`
	Appenders int     `json:"appenders"`
	Appends   int     `json:"appends"`
	PerSec    float64 `json:"appends_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
}

func (cfg *CurveConfig) check() error {
	if len(cfg.Appenders) == 0 && len(cfg.Servers) == 0 {
		return errors.New("curves: no appender counts and no server counts: nothing to measure")
	}
	for _, k := range cfg.Appenders {
		if k < 1 || k > 1024 {
			return fmt.Errorf("curves: %d appenders: want 1..1024", k)
		}
	}
	for _, n := range cfg.Servers {
		if n < 1 || n > 15 {
			return fmt.Errorf("curves: %d wormservers: want 1..15", n)
		}
	}
	if cfg.Records < 10 || cfg.ServerRecords < 10 {
		return fmt.Errorf("curves: %d and %d records per point: want at least 10", cfg.Records, cfg.ServerRecords)
	}
	if cfg.ValueSize < 1 || cfg.ValueSize > wormlog.MaxEntry {
		return fmt.Errorf("value size %d: want 1..%d", cfg.ValueSize, wormlog.MaxEntry)
	}
	if cfg.Dir == "" {
		return errors.New("curves: no data folder")
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Strata == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cfg.Strata = exe
	}
	return nil
}

// curvePlan is one point to measure.
type curvePlan struct {
	fig                string
	engine             string
	servers, appenders int
	records            int
}

// plan lists the points in the order they run: Figure 11's, then Figure
// 12's; at each point the engine that goes first alternates.
func (cfg *CurveConfig) plan() []curvePlan {
	var out []curvePlan
	i := 0
	for _, k := range cfg.Appenders {
		for _, e := range kit.Order(i, CurveEngines) {
			out = append(out, curvePlan{FigThroughput, e, throughputServers, k, cfg.Records})
		}
		i++
	}
	for _, n := range cfg.Servers {
		for _, e := range kit.Order(i, CurveEngines) {
			out = append(out, curvePlan{FigServers, e, n, 1, cfg.ServerRecords})
		}
		i++
	}
	return out
}

// RunCurves measures the curves. The report holds the points measured
// (Results: []Point); the plots are drawn only when the run was not
// interrupted. A point that failed is listed under the report's failures
// and the run goes on; the error then wraps ErrCurveFailed.
func RunCurves(ctx context.Context, cfg CurveConfig) (*kit.Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Dir, "curves")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	rep := kit.NewReport("log", kit.Settings{
		"curves":         "the WormSpace paper's Figures 11 and 12 (§7.3) for WormLog over the paxos and the chain engine; no peer",
		"appenders":      cfg.Appenders,
		"servers":        cfg.Servers,
		"records":        cfg.Records,
		"server records": cfg.ServerRecords,
		"value size":     cfg.ValueSize,
		"dir":            dir,
		"plots":          plotPaths(cfg.PlotDir),
		FigThroughput: fmt.Sprintf("Figure 11: %d wormservers, each point with K appenders (one append outstanding each, closed loop, no rate limit), %d appends measured after a warm-up of %d",
			throughputServers, cfg.Records, warmupOf(cfg.Records)),
		FigServers: fmt.Sprintf("Figure 12: N wormservers, one appender (closed loop), %d appends measured after a warm-up of %d", cfg.ServerRecords, warmupOf(cfg.ServerRecords)),
		"schedule": "fresh servers (and data) at every point; Figure 11's points, then Figure 12's; the engine that goes first alternates from point to point",
	})
	rep.System("strata", kit.Settings{
		"version":     kit.StrataVersion(),
		"wormservers": "N `strata wor serve` processes (UDP on 127.0.0.1), persistent: a journal file each under the data folder, sized for the point; a reply leaves after a journal flush ending in fdatasync",
		"engines":     "paxos: majority quorums, thrifty (a write goes to one majority of the N servers in parallel, the others only when one of it is slow); chain: client-driven chain replication as in CORFU (a write visits the N servers one after another, head first); an append is a token from the sequencer, then that write",
		"log servers": "2 `strata log serve` processes (the sequencer and a standby) over the same engine, segments of 1,024 registers pre-captured ahead of need",
		"client":      "a wormlog.Client in the harness process: a token from the sequencer, then one write to the wormservers",
	})
	var points []Point
	failed := 0
	for _, p := range cfg.plan() {
		if ctx.Err() != nil {
			break
		}
		pt, err := curvePoint(ctx, cfg, dir, p)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failed++
			rep.Fail("%s %s servers=%d appenders=%d: %v", p.fig, p.engine, p.servers, p.appenders, firstLine(err))
			fmt.Fprintf(cfg.Progress, "FAILED: %s %s servers=%d appenders=%d: %v\n", p.fig, p.engine, p.servers, p.appenders, err)
			continue
		}
		fmt.Fprintf(cfg.Progress, "%-18s %-5s servers=%-2d appenders=%-3d %8.0f appends/s  p50 %7.0f µs  p99 %7.0f µs\n",
			pt.Figure, pt.Engine, pt.Servers, pt.Appenders, pt.PerSec, pt.P50us, pt.P99us)
		points = append(points, pt)
	}
	rep.Results = points
	rep.Note("latency: from the Append call to its return (token and write); appends/s: the point's measured appends over its wall time")
	rep.Note("Figure 12: a paxos write waits for the slowest of N/2+1 servers written in parallel (each an fdatasync), a chain write for N servers one after another")
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if cfg.PlotDir != "" && len(points) > 0 {
		paths, err := plotCurves(points, cfg.PlotDir)
		if err != nil {
			return rep, err
		}
		for _, p := range paths {
			fmt.Fprintf(cfg.Progress, "wrote %s\n", p)
		}
	}
	if failed > 0 {
		return rep, fmt.Errorf("%w: %d", ErrCurveFailed, failed)
	}
	return rep, nil
}

// ErrCurveFailed is returned, with the report, when points failed.
var ErrCurveFailed = errors.New("failed curve points")

func plotPaths(dir string) string {
	if dir == "" {
		return "none"
	}
	return filepath.Join(dir, PlotThroughput) + ", " + filepath.Join(dir, PlotServers)
}

// curvePoint starts a fresh cluster for one point, measures it and
// removes its data.
func curvePoint(ctx context.Context, cfg CurveConfig, dir string, p curvePlan) (Point, error) {
	pdir := filepath.Join(dir, fmt.Sprintf("%s-%s-n%d-k%d", p.fig, p.engine, p.servers, p.appenders))
	defer os.RemoveAll(pdir)
	warm := warmupOf(p.records)
	cl, err := startCluster(ctx, cfg.Strata, pdir, p.servers, p.engine, journalBlocksFor(p.records+warm))
	if err != nil {
		return Point{}, err
	}
	defer cl.stop()
	if _, err := appendCell(ctx, cl.c, p.appenders, warm, cfg.ValueSize, 0); err != nil {
		return Point{}, fmt.Errorf("warm-up: %w", err)
	}
	r, err := appendCell(ctx, cl.c, p.appenders, p.records, cfg.ValueSize, 0)
	if err != nil {
		return Point{}, err
	}
	return Point{Figure: p.fig, Engine: p.engine, Servers: p.servers, Appenders: p.appenders,
		Appends: r.Appends, PerSec: r.PerSec, P50us: r.P50us, P99us: r.P99us}, nil
}

// journalBlocksFor sizes a wormserver's journal for appends entries:
// the journal's log (4,096 blocks and 2 headers) and one block (slot) for
// every captured register: the sequencer captures whole segments of
// 1,024, the current one and the next, plus an eighth and 1,024 slots to
// spare (segment metadata, the log servers' probes). The file is
// allocated whole, so it is no larger than needed.
func journalBlocksFor(appends int) int {
	segs := (appends+wormlog.DefaultSegmentSize-1)/wormlog.DefaultSegmentSize + 2
	return 4098 + segs*wormlog.DefaultSegmentSize*9/8 + 1024
}

// logCluster is one WormLog: wormservers, two log servers and a client.
type logCluster struct {
	c     *wormlog.Client
	stops []func()
}

func (l *logCluster) stop() {
	for _, s := range slices.Backward(l.stops) {
		s()
	}
}

// startCluster starts n persistent wormservers (a journal of blocks
// blocks each, under dir), a cluster file naming engine, two log servers
// on it and a client, and waits for the first append (a sequencer elected
// and its segment captured).
func startCluster(ctx context.Context, bin, dir string, n int, engine string, blocks int) (_ *logCluster, err error) {
	l := &logCluster{}
	defer func() {
		if err != nil {
			l.stop()
		}
	}()
	var addrs []stack.Addr
	for i := range n {
		p, err := kit.Start(ctx, kit.Cmd{Name: fmt.Sprintf("wormserver %d", i),
			Argv:  []string{bin, "wor", "serve", "--listen", "udp:127.0.0.1:0", "--dir", filepath.Join(dir, fmt.Sprint(i)), "--blocks", fmt.Sprint(blocks)},
			Ready: func(line string) bool { return strings.HasPrefix(line, "listening on ") }})
		if err != nil {
			return nil, err
		}
		l.stops = append(l.stops, func() { p.Stop() })
		addrs = append(addrs, stack.Addr(strings.TrimSpace(strings.TrimPrefix(p.Ready, "listening on "))))
	}
	var saddrs []string
	for _, a := range addrs {
		saddrs = append(saddrs, string(a))
	}
	clusterFile := filepath.Join(dir, "cluster.json")
	b, err := json.Marshal(wor.ClusterConfig{Engine: engine, Directory: saddrs, Partitions: [][]string{saddrs}})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(clusterFile, b, 0o644); err != nil {
		return nil, err
	}
	ports, err := freeport.TCP(2)
	if err != nil {
		return nil, err
	}
	var logAddrs []stack.Addr
	for i := range 2 {
		p, err := kit.Start(ctx, kit.Cmd{Name: fmt.Sprintf("log server %d", i+1),
			Argv:  []string{bin, "log", "serve", "--listen", fmt.Sprintf("udp:127.0.0.1:%d", ports[i]), "--cluster", clusterFile, "--id", fmt.Sprint(i + 1)},
			Ready: func(line string) bool { return strings.HasPrefix(line, "listening on ") }})
		if err != nil {
			return nil, err
		}
		l.stops = append(l.stops, func() { p.Stop() })
		logAddrs = append(logAddrs, stack.Addr(strings.TrimSpace(strings.TrimPrefix(p.Ready, "listening on "))))
	}
	w, node, err := worbench.Dial(addrs, engine)
	if err != nil {
		return nil, err
	}
	l.stops = append(l.stops, func() { node.Close() })
	if l.c, err = wormlog.NewClient(wormlog.ClientConfig{Node: node, WOR: w, Servers: logAddrs, Base: defaultLogBase}); err != nil {
		return nil, err
	}
	// The first append waits for a sequencer.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_, err = l.c.Append(wctx, []byte("first"))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("first append: %w", err)
	}
	return l, nil
}

// curveSeries returns one series per engine of a figure's points, in
// CurveEngines' order, points sorted along the figure's sweep (appenders
// or servers): x is the throughput (Figure 11) or the number of servers
// (Figure 12), y the p50 or (p99) the 99th percentile in µs.
func curveSeries(points []Point, fig string, p99 bool) []plot.Series {
	var out []plot.Series
	for i, e := range CurveEngines {
		var ps []Point
		for _, p := range points {
			if p.Figure == fig && p.Engine == e {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			continue
		}
		slices.SortStableFunc(ps, func(a, b Point) int {
			if fig == FigServers {
				return a.Servers - b.Servers
			}
			return a.Appenders - b.Appenders
		})
		s := plot.Series{Name: e, Color: plot.Palette[i%len(plot.Palette)]}
		for _, p := range ps {
			x := float64(p.Servers)
			if fig == FigThroughput {
				x = p.PerSec
			}
			y := p.P50us
			if p99 {
				y = p.P99us
			}
			s.X = append(s.X, x)
			s.Y = append(s.Y, y)
		}
		out = append(out, s)
	}
	return out
}

// curvePanels are a figure's two panels, p50 and p99.
func curvePanels(points []Point, fig string) []plot.Panel {
	var panels []plot.Panel
	for _, p99 := range []bool{false, true} {
		q := "p50"
		if p99 {
			q = "p99"
		}
		p := plot.Panel{YLabel: q + " us", Series: curveSeries(points, fig, p99)}
		switch fig {
		case FigThroughput:
			p.Title = fmt.Sprintf("WormLog append %s vs throughput, %d wormservers", q, throughputServers)
			p.XLabel = "appends/s (1 KiB, more appenders to the right)"
		default:
			p.Title = fmt.Sprintf("WormLog append %s, one appender", q)
			p.XLabel = "wormservers"
		}
		panels = append(panels, p)
	}
	return panels
}

// plotCurves draws the figures that have points into dir.
func plotCurves(points []Point, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct{ fig, file string }{{FigThroughput, PlotThroughput}, {FigServers, PlotServers}} {
		panels := curvePanels(points, f.fig)
		if len(panels[0].Series) == 0 {
			continue
		}
		path := filepath.Join(dir, f.file)
		if err := plot.Render(path, panels, 2); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// serverRow is one line of Figure 12's table: both engines at n servers.
type serverRow struct {
	servers      int
	paxos, chain *Point
}

// serverRows pairs Figure 12's points by number of servers, in
// increasing order.
func serverRows(points []Point) []serverRow {
	var rows []serverRow
	for _, p := range points {
		if p.Figure != FigServers {
			continue
		}
		i := slices.IndexFunc(rows, func(r serverRow) bool { return r.servers == p.Servers })
		if i < 0 {
			rows = append(rows, serverRow{servers: p.Servers})
			i = len(rows) - 1
		}
		switch p.Engine {
		case "paxos":
			rows[i].paxos = &p
		case "chain":
			rows[i].chain = &p
		}
	}
	slices.SortFunc(rows, func(a, b serverRow) int { return a.servers - b.servers })
	return rows
}

// printCurves writes the points as two tables (Figure 11: one line per
// engine and appender count; Figure 12: one line per number of servers,
// both engines and chain's p50 over paxos's).
func printCurves(w io.Writer, points []Point) {
	var fig11 []Point
	for _, p := range points {
		if p.Figure == FigThroughput {
			fig11 = append(fig11, p)
		}
	}
	slices.SortStableFunc(fig11, func(a, b Point) int {
		if c := slices.Index(CurveEngines, a.Engine) - slices.Index(CurveEngines, b.Engine); c != 0 {
			return c
		}
		return a.Appenders - b.Appenders
	})
	if len(fig11) > 0 {
		fmt.Fprintf(w, "Figure 11 shape (%s): %d wormservers\n", FigThroughput, throughputServers)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "engine\tappenders\tappends/s\tp50 µs\tp99 µs\t")
		for _, p := range fig11 {
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t\n", p.Engine, p.Appenders, p.PerSec, p.P50us, p.P99us)
		}
		tw.Flush()
	}
	rows := serverRows(points)
	if len(rows) > 0 {
		fmt.Fprintf(w, "Figure 12 shape (%s): one appender\n", FigServers)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "servers\tpaxos p50 µs\tpaxos p99 µs\tchain p50 µs\tchain p99 µs\tchain/paxos p50\t")
		cell := func(p *Point, p99 bool) string {
			switch {
			case p == nil:
				return "-"
			case p99:
				return fmt.Sprintf("%.0f", p.P99us)
			}
			return fmt.Sprintf("%.0f", p.P50us)
		}
		for _, r := range rows {
			ratio := "-"
			if r.paxos != nil && r.chain != nil && r.paxos.P50us > 0 {
				ratio = fmt.Sprintf("%.2f", r.chain.P50us/r.paxos.P50us)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t\n", r.servers, cell(r.paxos, false), cell(r.paxos, true), cell(r.chain, false), cell(r.chain, true), ratio)
		}
		tw.Flush()
	}
}
