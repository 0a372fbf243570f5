// Package tx is `strata bench tx`: WormTX's commit latency per protocol
// variant (the WormSpace paper's Figure 13: decreasing from A8 to E3) on
// loopback, with persistent wormservers and RMs that fsync their vote
// logs.
package tx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"strata/bench/kit"
	worbench "strata/bench/wor"
	"strata/internal/plot"
	"strata/internal/stats"
	"strata/stack"
	"strata/stack/layers"
	"strata/wor"
	"strata/wormtx"
)

// Config is one run.
type Config struct {
	Strata    string // the strata binary (its wormservers)
	Dir       string // data of the wormservers and the RMs (emptied first)
	Transfers int    // measured transactions per variant and round
	Rounds    int
	Engine    string // paxos or chain
	PlotPath  string // PNG of p50 per variant ("" for none)
	Progress  io.Writer
}

// Result is one variant's cell of one round.
type Result struct {
	Round     int     `json:"round"`
	Variant   string  `json:"variant"`
	Delays    int     `json:"message_delays"`
	N         int     `json:"transactions"`
	Retries   int     `json:"retries"` // lock conflicts retried (in the measured part)
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	OpsPerSec float64 `json:"ops_per_sec"`
}

func (cfg *Config) check() error {
	switch {
	case cfg.Strata == "" || cfg.Dir == "":
		return errors.New("bench tx: the strata binary and a data folder are needed")
	case cfg.Transfers < 10:
		return fmt.Errorf("--transfers %d: at least 10", cfg.Transfers)
	case cfg.Rounds < 1:
		return fmt.Errorf("--rounds %d: at least 1", cfg.Rounds)
	case cfg.Engine != "paxos" && cfg.Engine != "chain":
		return fmt.Errorf("--engine %q: paxos or chain", cfg.Engine)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	return nil
}

// props is the peers' stack, as strata tx serve's.
const props = "Reliable,Fragment,RPC"

// cluster is a TM and three RMs in this process, on real UDP sockets,
// over wormserver processes.
type cluster struct {
	nodes []*stack.Node
	peers []*wormtx.Peer
	files []*wormtx.FileStore
	rms   []*wormtx.Peer
}

func (c *cluster) close() {
	for _, p := range c.peers {
		p.Close()
	}
	for _, n := range c.nodes {
		n.Close()
	}
	for _, f := range c.files {
		f.Close()
	}
}

func startCluster(ctx context.Context, cfg Config, servers []stack.Addr, dir string) (*cluster, error) {
	c := &cluster{}
	listen := func() (*stack.Node, error) {
		n, err := layers.Listen("udp:127.0.0.1:0", props)
		if err == nil {
			c.nodes = append(c.nodes, n)
		}
		return n, err
	}
	var txNodes []*stack.Node
	for range 4 { // the TM, then 3 RMs
		n, err := listen()
		if err != nil {
			c.close()
			return nil, err
		}
		txNodes = append(txNodes, n)
	}
	var rms []stack.Addr
	for _, n := range txNodes[1:] {
		rms = append(rms, n.Local())
	}
	for i, n := range txNodes {
		en, err := listen()
		if err != nil {
			c.close()
			return nil, err
		}
		var e wormtx.Engine
		id := uint64(100 + i)
		if cfg.Engine == "chain" {
			e, err = wor.NewChain(en, servers, id, time.Second)
		} else {
			e, err = wor.NewPaxos(en, servers, id, time.Second)
		}
		if err != nil {
			c.close()
			return nil, err
		}
		pc := wormtx.Config{RMs: rms, TM: txNodes[0].Local(), Node: n, Engine: e, VoteSeg: 1<<38 | uint64(i)<<20,
			Timeout: 2 * time.Second, Learn: []uint64{1 << 38, 1<<38 | 1<<20, 1<<38 | 2<<20, 1<<38 | 3<<20}}
		if i > 0 {
			pc.ID = uint32(i - 1)
			fs, err := wormtx.OpenFileStore(filepath.Join(dir, fmt.Sprintf("rm-%d", i-1)))
			if err != nil {
				c.close()
				return nil, err
			}
			c.files = append(c.files, fs)
			pc.Store = fs
		}
		p, err := wormtx.NewPeer(pc)
		if err != nil {
			c.close()
			return nil, err
		}
		c.peers = append(c.peers, p)
		if i > 0 {
			c.rms = append(c.rms, p)
		}
	}
	// Capture every coordinator's first slots and let the learner
	// registrations land.
	for _, p := range c.peers {
		ready := make(chan struct{})
		p.Prime(func() { close(ready) })
		select {
		case <-ready:
		case <-ctx.Done():
			c.close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			c.close()
			return nil, errors.New("bench tx: a coordinator could not capture vote registers")
		}
	}
	time.Sleep(200 * time.Millisecond)
	// Money to move: the transfers take 1 at a time from this account.
	done := make(chan error, 1)
	var out wormtx.Outcome
	c.rms[0].Submit(wormtx.E3, []wormtx.Op{{Kind: wormtx.Add, Key: accountOn(0), Delta: 1 << 40}}, func(r wormtx.Result, err error) { out = r.Outcome; done <- err })
	if err := <-done; err != nil || out != wormtx.Committed {
		c.close()
		return nil, fmt.Errorf("bench tx: the opening deposit: %v %v", out, err)
	}
	return c, nil
}

// accountOn returns an account held by RM r of 3.
func accountOn(r uint32) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("acct%d", i); wormtx.Partition(k, 3) == r {
			return k
		}
	}
}

// cell runs n sequential transactions across the 3 RMs from RM 0.
func (c *cluster) cell(ctx context.Context, v wormtx.Variant, n int) (lat []time.Duration, retries int, took time.Duration, err error) {
	a, b, x := accountOn(0), accountOn(1), accountOn(2)
	ops := []wormtx.Op{{Kind: wormtx.Add, Key: a, Delta: -1}, {Kind: wormtx.Add, Key: b, Delta: 1}, {Kind: wormtx.Get, Key: x}}
	warm := max(n/10, 5)
	start := time.Now()
	for i := 0; i < warm+n; i++ {
		if i == warm {
			start = time.Now()
		}
		if ctx.Err() != nil {
			return nil, 0, 0, ctx.Err()
		}
		t0 := time.Now()
		var out wormtx.Outcome
		for try := 0; ; try++ {
			done := make(chan error, 1)
			c.rms[0].Submit(v, ops, func(r wormtx.Result, err error) { out = r.Outcome; done <- err })
			select {
			case err := <-done:
				if err != nil {
					return nil, 0, 0, err
				}
			case <-time.After(30 * time.Second):
				return nil, 0, 0, fmt.Errorf("%s: no outcome in 30 s", v)
			}
			// In D4 and E3 the initiator knows the outcome before every
			// participant has applied it and unlocked: the next
			// transaction can meet the last one's lock and is retried
			// (Immediate-Restart), its latency counting every try.
			if out != wormtx.Conflict || try == 100 {
				break
			}
			retries++
			time.Sleep(100 * time.Microsecond)
		}
		if out != wormtx.Committed {
			return nil, 0, 0, fmt.Errorf("%s: a transaction ended %v (nothing else runs: it should commit)", v, out)
		}
		if i == warm-1 {
			retries = 0
		}
		if i >= warm {
			lat = append(lat, time.Since(t0))
		}
	}
	return lat, retries, time.Since(start), nil
}

// Run measures every variant, rounds rotating the order.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rep := kit.NewReport("tx", kit.Settings{"transfers": cfg.Transfers, "rounds": cfg.Rounds, "engine": cfg.Engine})
	rep.System("strata", kit.Settings{
		"wormservers":  fmt.Sprintf("3 `%s wor serve` processes (UDP on 127.0.0.1), persistent: fdatasync before every reply", filepath.Base(cfg.Strata)),
		"peers":        "a TM and 3 RMs in this process (wormtx.Peer, UDP on 127.0.0.1), each RM's vote log a wormtx.FileStore with an fsync per record",
		"transaction":  "Add -1 on an account of RM 0, Add +1 on one of RM 1, Get on one of RM 2, initiated at RM 0; one at a time",
		"engine":       cfg.Engine,
		"warm-up":      "a tenth of each cell (at least 5), not measured",
		"peer systems": "none: the variants are compared with each other (the paper's Figure 13)",
	})
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	srv, err := worbench.StartServers(ctx, cfg.Strata, 3, filepath.Join(cfg.Dir, "wor"))
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	c, err := startCluster(ctx, cfg, srv.Addrs, cfg.Dir)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var results []Result
	names := make([]string, len(wormtx.Variants))
	for i, v := range wormtx.Variants {
		names[i] = v.String()
	}
	for r := 1; r <= cfg.Rounds; r++ {
		for _, name := range kit.Order(r, names) {
			v, _ := wormtx.ParseVariant(name)
			lat, ok, took, err := c.cell(ctx, v, cfg.Transfers)
			if err != nil {
				rep.Fail("round %d %s: %v", r, v, err)
				fmt.Fprintf(cfg.Progress, "FAILED: round %d %s: %v\n", r, v, err)
				continue
			}
			us := make([]float64, len(lat))
			for i, d := range lat {
				us[i] = float64(d.Microseconds())
			}
			slices.Sort(us)
			res := Result{Round: r, Variant: name, Delays: v.Delays(), N: len(lat), Retries: ok,
				P50us: stats.Median(us), P99us: us[min(len(us)-1, len(us)*99/100)], OpsPerSec: float64(len(lat)) / took.Seconds()}
			results = append(results, res)
			fmt.Fprintf(cfg.Progress, "round %d %s (%d delays): p50 %6.0f µs  p99 %6.0f µs  %5.0f tx/s  (%d transactions, %d retried after a lock conflict)\n",
				r, name, res.Delays, res.P50us, res.P99us, res.OpsPerSec, res.N, ok)
		}
	}
	rep.Results = results
	rep.Note("p50 per variant, median over rounds: the paper's Figure 13 shape is a decrease from A8 to E3, about one message delay per step")
	if cfg.PlotPath != "" && len(results) > 0 {
		if err := plotVariants(results, cfg.PlotPath); err != nil {
			rep.Note("plot not written: %v", err)
		}
	}
	return rep, nil
}

// Medians returns, per variant in Variants order, the median p50 over
// rounds (0 where no round succeeded).
func Medians(rs []Result) []float64 {
	out := make([]float64, len(wormtx.Variants))
	for i, v := range wormtx.Variants {
		var xs []float64
		for _, r := range rs {
			if r.Variant == v.String() {
				xs = append(xs, r.P50us)
			}
		}
		if len(xs) > 0 {
			out[i] = stats.Median(xs)
		}
	}
	return out
}

func plotVariants(rs []Result, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	s := plot.Series{Name: "p50 (median over rounds)", Color: plot.Palette[0]}
	for i, m := range Medians(rs) {
		s.X = append(s.X, float64(wormtx.Variants[i].Delays()))
		s.Y = append(s.Y, m)
	}
	p := plot.Panel{Title: "WormTX commit latency per variant (A8..E3), loopback", XLabel: "message delays of the variant", YLabel: "p50 us", Series: []plot.Series{s}}
	return plot.Render(path, []plot.Panel{p}, 1)
}

// Print writes the results as a table.
func Print(w io.Writer, rep *kit.Report) {
	rep.PrintConfig(w)
	rs, _ := rep.Results.([]Result)
	fmt.Fprintf(w, "\n%-8s %7s %12s\n", "variant", "delays", "p50 µs")
	for i, m := range Medians(rs) {
		fmt.Fprintf(w, "%-8s %7d %12.0f\n", wormtx.Variants[i], wormtx.Variants[i].Delays(), m)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
}
