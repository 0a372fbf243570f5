package geokv

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/stack"
	"strata/stack/layers"
	"strata/wor"
)

// TputSystem is one configuration of Figure 14: K data splits over N
// servers, quorums the smallest the rules allow (wor.ECPlanFor).
type TputSystem struct {
	Name string
	N, K int
}

// TputSystems are Figure 14's: 3 replicas, and k=2 with r=3 (less
// storage than replication: 2.5x) and r=4 (the same: 3x).
var TputSystems = []TputSystem{{"replication", 3, 1}, {"ec-k2r3", 5, 2}, {"ec-k2r4", 6, 2}}

// TputSizes are Figure 14's value sizes.
var TputSizes = []int{1 << 10, 10 << 10, 100 << 10}

// TputConfig is the throughput part of a run.
type TputConfig struct {
	Strata   string
	Dir      string
	Window   time.Duration // measured window per cell
	Clients  int           // concurrent closed-loop clients
	Rounds   int
	Sizes    []int
	Progress io.Writer
}

// TputResult is one cell of Figure 14.
type TputResult struct {
	Figure    string  `json:"figure"` // "14"
	System    string  `json:"system"`
	N         int     `json:"n"`
	K         int     `json:"k"`
	Op        string  `json:"op"`
	Bytes     int     `json:"value_bytes"`
	Round     int     `json:"round"`
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_s"`
	// PerServer is OpsPerSec / N.
	PerServer float64 `json:"ops_per_s_per_server"`
}

// TputKey names a Figure 14 ratio: EC's throughput over replication's
// (> 1: the erasure-coded configuration better).
func TputKey(op string, bytes int, sys string) string {
	return fmt.Sprintf("fig14 %s %dKiB: %s/replication", op, bytes>>10, sys)
}

// RunThroughput measures Figure 14 into rep (results appended to
// *results, ratios into ratios).
func RunThroughput(ctx context.Context, cfg TputConfig, rep *kit.Report, ratios kit.Ratios) []TputResult {
	if cfg.Clients <= 0 {
		cfg.Clients = 16
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 1
	}
	if len(cfg.Sizes) == 0 {
		cfg.Sizes = TputSizes
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	names := make([]string, len(TputSystems))
	for i, s := range TputSystems {
		names[i] = s.Name
		p, err := wor.ECPlanFor(s.N, s.K)
		if err != nil {
			rep.Fail("fig14 %s: %v", s.Name, err)
			continue
		}
		rep.System("fig14/"+s.Name, kit.Settings{"servers": fmt.Sprintf("%d x strata wor serve, memory (no --dir), udp 127.0.0.1, no WAN delays", s.N),
			"k": p.K, "r": p.R, "q1a": p.Q1a, "q1b": p.Q1b, "q2": p.Q2, "storage_overhead": float64(s.N) / float64(s.K),
			"clients": fmt.Sprintf("%d closed-loop goroutines on one wor.EC client in this process", cfg.Clients), "window": cfg.Window.String()})
	}
	var out []TputResult
	for r := 1; r <= cfg.Rounds; r++ {
		for _, size := range cfg.Sizes {
			got := map[string]TputResult{}
			for _, name := range kit.Order(r-1, names) {
				var sys TputSystem
				for _, s := range TputSystems {
					if s.Name == name {
						sys = s
					}
				}
				if ctx.Err() != nil {
					return out
				}
				res, err := tputCell(ctx, cfg, sys, size, r)
				if err != nil {
					rep.Fail("fig14 round %d %s %d KiB: %v", r, sys.Name, size>>10, err)
					continue
				}
				for _, x := range res {
					fmt.Fprintf(cfg.Progress, "geo-kv: fig14 round %d %s %s %d KiB: %.0f ops/s (%.0f per server)\n", r, x.System, x.Op, size>>10, x.OpsPerSec, x.PerServer)
					got[x.System+"/"+x.Op] = x
					out = append(out, x)
				}
			}
			for _, s := range TputSystems[1:] {
				for _, op := range []string{"write", "read"} {
					ratios.Higher(TputKey(op, size, s.Name), got[s.Name+"/"+op].OpsPerSec, got["replication/"+op].OpsPerSec)
				}
			}
		}
	}
	return out
}

// tputCell starts sys's servers and measures writes, then reads, of size.
func tputCell(ctx context.Context, cfg TputConfig, sys TputSystem, size, round int) ([]TputResult, error) {
	plan, err := wor.ECPlanFor(sys.N, sys.K)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("fig14-%s-%d-r%d", sys.Name, size, round))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var procs []*kit.Proc
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
	}()
	servers := make([]stack.Addr, sys.N)
	for i := range sys.N {
		p, err := kit.Start(ctx, kit.Cmd{
			Name:  fmt.Sprintf("wormserver %d", i+1),
			Argv:  []string{cfg.Strata, "wor", "serve", "--listen", "udp:127.0.0.1:0"},
			Env:   []string{"STRATA_WAN=", "STRATA_WAN_SITE="},
			Stdin: true,
			Ready: func(line string) bool { return strings.HasPrefix(line, "listening on ") },
		})
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
		servers[i] = stack.Addr(strings.TrimSpace(strings.TrimPrefix(p.Ready, "listening on ")))
	}
	n, err := layers.Listen("udp:127.0.0.1:0", props)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	e, err := wor.NewEC(n, servers, 1, 5*time.Second, plan)
	if err != nil {
		return nil, err
	}
	var next atomic.Uint64
	value := make([]byte, size)
	_, _ = rand.Read(value)
	write := func() error {
		a := wor.Addr(7, next.Add(1))
		cid, err := call(func(cb func(wor.CaptureID, error)) { e.Capture(a, cb) })
		if err != nil {
			return err
		}
		_, err = call(func(cb func(struct{}, error)) { e.Write(a, value, cid, func(err error) { cb(struct{}{}, err) }) })
		return err
	}
	written := func() uint64 { return next.Load() }
	read := func(rng *mrand.Rand) error {
		if written() == 0 {
			return fmt.Errorf("no register written to read")
		}
		a := wor.Addr(7, 1+rng.Uint64N(written()))
		_, err := call(func(cb func([]byte, error)) { e.Read(a, cb) })
		return err
	}
	var out []TputResult
	for _, op := range []string{"write", "read"} {
		ops, err := closedLoop(ctx, cfg.Clients, cfg.Window, func(rng *mrand.Rand) error {
			if op == "write" {
				return write()
			}
			return read(rng)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		ps := float64(ops) / cfg.Window.Seconds()
		out = append(out, TputResult{Figure: "14", System: sys.Name, N: sys.N, K: sys.K, Op: op, Bytes: size, Round: round, Ops: ops,
			OpsPerSec: kit.Round3(ps), PerServer: kit.Round3(ps / float64(sys.N))})
	}
	return out, nil
}

// closedLoop runs clients goroutines calling op for a tenth of window
// (warm-up), then counts the calls completed in window.
func closedLoop(ctx context.Context, clients int, window time.Duration, op func(*mrand.Rand) error) (int64, error) {
	var count atomic.Int64
	var counting, stop atomic.Bool
	var wg sync.WaitGroup
	errs := make([]error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(uint64(c), 1))
			for !stop.Load() && ctx.Err() == nil {
				if err := op(rng); err != nil {
					errs[c] = err
					return
				}
				if counting.Load() {
					count.Add(1)
				}
			}
		}()
	}
	sleep := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	sleep(window / 10)
	counting.Store(true)
	sleep(window)
	n := count.Load()
	stop.Store(true)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return n, err
		}
	}
	return n, ctx.Err()
}

// PrintThroughput prints Figure 14's table.
func PrintThroughput(w io.Writer, rs []TputResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "Figure 14: throughput on loopback without delays (all servers and the client on this one machine):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tn\tk\top\tvalue\tround\tops/s\tops/s per server\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d KiB\t%d\t%.0f\t%.0f\t\n", r.System, r.N, r.K, r.Op, r.Bytes>>10, r.Round, r.OpsPerSec, r.PerServer)
	}
	tw.Flush()
}
