package geokv

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/geo"
	"strata/wor"
)

// ContentionSet is the access set of Figure 13 (the paper spreads 16
// front ends over five continents; here the GL set's four front ends,
// with its Pando plan).
const ContentionSet = "GL"

// maxAttempts bounds a leaderless writer's proposals per trial.
const maxAttempts = 64

// ContResult is one cell of Figure 13: writers concurrent writers, each
// trial on a fresh register, with or without the leader fallback.
type ContResult struct {
	Figure  string `json:"figure"` // "13"
	Mode    string `json:"mode"`   // "leaderless" or "leader"
	Writers int    `json:"writers"`
	Round   int    `json:"round"`
	Trials  int    `json:"trials"`
	// Latency of the successful write per trial (the writer whose value
	// was chosen), ms: p5, p50, p95.
	P5  float64 `json:"p5_ms"`
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	// Proposals (captures) of that writer: the most in any trial, and
	// over all writers of a trial the most.
	MaxAttempts    int `json:"max_attempts_winner"`
	MaxAttemptsAll int `json:"max_attempts_any_writer"`
	Failed         int `json:"failed_trials"`
}

// ContKey names a Figure 13 ratio: the leaderless p95 over the leader
// fallback's (> 1: the fallback better).
func ContKey(writers int) string {
	return fmt.Sprintf("fig13 write-p95 %d writers: leaderless/leader", writers)
}

// RunContention measures Figure 13 on the GL set's Pando plan: for 1 to
// maxWriters writers at the set's front ends, trials registers each
// written by all of them at once, leaderless (a preempted writer captures
// again) and with the leader fallback (a leader on the plan's first data
// site; a writer preempted in Phase 2 hands its value to it).
func RunContention(ctx context.Context, cfg Config, maxWriters, trials int, rep *kit.Report, ratios kit.Ratios) []ContResult {
	sets, _ := SelectSets([]string{ContentionSet})
	set := sets[0]
	pl, _, _, err := PlanFor(ctx, set, geo.Pando, cfg.F, cfg.Storage)
	if err != nil {
		rep.Fail("fig13: planning: %v", err)
		return nil
	}
	maxWriters = min(maxWriters, len(set.Regions))
	rep.System("fig13", kit.Settings{"set": set.Name, "plan": fmt.Sprintf("pando k=%d r=%d q1a=%d q1b=%d q2=%d sites %v", pl.K, pl.R, pl.Q1a, pl.Q1b, pl.Q2, pl.Sites),
		"writers": fmt.Sprintf("1..%d, at %v in order", maxWriters, set.Regions[:maxWriters]), "trials": trials, "leader": "a wor.EC proposer in this process on " + pl.Sites[0] + "'s host (wor.ServeECLeader)",
		"leaderless": fmt.Sprintf("a preempted writer captures again at once, at most %d proposals", maxAttempts), "value_bytes": cfg.ValueSize})
	var out []ContResult
	for r := 1; r <= cfg.Rounds; r++ {
		got := map[string]ContResult{}
		for _, mode := range kit.Order(r-1, []string{"leaderless", "leader"}) {
			if ctx.Err() != nil {
				return out
			}
			res, err := contentionCell(ctx, cfg, set, pl, mode, maxWriters, trials, r)
			if err != nil {
				rep.Fail("fig13 round %d %s: %v", r, mode, err)
				continue
			}
			for _, x := range res {
				fmt.Fprintf(cfg.Progress, "geo-kv: fig13 round %d %s %d writers: p50 %.1f ms p95 %.1f ms, max proposals %d (winner) %d (any)\n",
					r, mode, x.Writers, x.P50, x.P95, x.MaxAttempts, x.MaxAttemptsAll)
				got[fmt.Sprintf("%s/%d", mode, x.Writers)] = x
				out = append(out, x)
			}
		}
		for w := 1; w <= maxWriters; w++ {
			ratios.Lower(ContKey(w), got[fmt.Sprintf("leader/%d", w)].P95, got[fmt.Sprintf("leaderless/%d", w)].P95)
		}
	}
	return out
}

// contentionCell runs one mode for 1..maxWriters writers on one cluster.
func contentionCell(ctx context.Context, cfg Config, set AccessSet, pl geo.Plan, mode string, maxWriters, trials, round int) ([]ContResult, error) {
	gc, err := startCluster(ctx, cfg, pl, set.Regions, filepath.Join(cfg.Dir, fmt.Sprintf("fig13-%s-r%d", mode, round)))
	if err != nil {
		return nil, err
	}
	defer gc.stop()
	writers := make([]*wor.EC, maxWriters)
	for i := range writers {
		if writers[i], err = gc.engine(cfg, set.Regions[i], uint64(i+1)); err != nil {
			return nil, err
		}
	}
	if mode == "leader" {
		n, err := gc.node(pl.Sites[0])
		if err != nil {
			return nil, err
		}
		le, err := wor.NewEC(n, gc.servers, 99, cfg.Timeout, gc.l.EC)
		if err != nil {
			return nil, err
		}
		wor.ServeECLeader(n, le)
		for _, w := range writers {
			w.SetLeader(n.Local())
		}
	}
	var out []ContResult
	seg := uint64(1)
	for nw := 1; nw <= maxWriters; nw++ {
		res := ContResult{Figure: "13", Mode: mode, Writers: nw, Round: round, Trials: trials}
		var lat []float64
		for t := range trials {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			addr := wor.Addr(seg, uint64(1+t))
			ms, winAtt, allAtt, err := contend(writers[:nw], addr, cfg.ValueSize)
			res.MaxAttemptsAll = max(res.MaxAttemptsAll, allAtt)
			if err != nil {
				res.Failed++
				continue
			}
			lat = append(lat, ms)
			res.MaxAttempts = max(res.MaxAttempts, winAtt)
		}
		seg++
		res.P5, res.P50, res.P95 = round1(Percentile(lat, 5)), round1(Percentile(lat, 50)), round1(Percentile(lat, 95))
		out = append(out, res)
	}
	return out, nil
}

func round1(x float64) float64 {
	if x != x { // NaN
		return 0
	}
	return float64(int64(x*10+0.5)) / 10
}

// contend has every writer write its own value to addr at once: each
// captures and writes, capturing again while preempted. It returns the
// latency and proposals of the writer whose value was chosen, and the
// most proposals of any writer.
func contend(writers []*wor.EC, addr uint64, size int) (ms float64, winAttempts, allAttempts int, err error) {
	type outcome struct {
		ms       float64
		attempts int
		won      bool
		err      error
	}
	outs := make([]outcome, len(writers))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, e := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := make([]byte, size)
			_, _ = rand.Read(v)
			<-start
			t0 := time.Now()
			o := outcome{}
			for o.attempts < maxAttempts {
				o.attempts++
				cid, err := call(func(cb func(wor.CaptureID, error)) { e.Capture(addr, cb) })
				if err == nil {
					_, err = call(func(cb func(struct{}, error)) { e.Write(addr, v, cid, func(err error) { cb(struct{}{}, err) }) })
				}
				var we *wor.WrittenError
				switch {
				case err == nil:
					o.won = true
				case errors.As(err, &we):
					// another value was chosen (or ours, completed)
					o.won = string(we.Value) == string(v)
				case errors.Is(err, wor.ErrPreempted):
					continue
				default:
					o.err = err
				}
				break
			}
			if !o.won && o.err == nil && o.attempts >= maxAttempts {
				o.err = fmt.Errorf("no value chosen after %d proposals", maxAttempts)
			}
			o.ms = float64(time.Since(t0)) / float64(time.Millisecond)
			outs[i] = o
		}()
	}
	close(start)
	wg.Wait()
	won := -1
	for i, o := range outs {
		allAttempts = max(allAttempts, o.attempts)
		if o.won && won < 0 {
			won = i
		}
	}
	if won < 0 {
		for _, o := range outs {
			if o.err != nil {
				return 0, 0, allAttempts, o.err
			}
		}
		return 0, 0, allAttempts, errors.New("no writer's value was chosen")
	}
	return outs[won].ms, outs[won].attempts, allAttempts, nil
}

// PrintContention prints Figure 13's table.
func PrintContention(w io.Writer, rs []ContResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "Figure 13: concurrent writers on one register (GL's Pando plan), latency of the write that won:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\twriters\tround\ttrials\tp5 ms\tp50 ms\tp95 ms\tmax proposals (winner)\tmax proposals (any)\tfailed\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t\n", r.Mode, r.Writers, r.Round, r.Trials, r.P5, r.P50, r.P95, r.MaxAttempts, r.MaxAttemptsAll, r.Failed)
	}
	tw.Flush()
}
