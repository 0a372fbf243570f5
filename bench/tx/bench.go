// Package tx is `strata bench tx`: WormTX's commit latency per protocol
// variant (the WormSpace paper's Figure 13: decreasing from A8 to E3) on
// loopback, with persistent wormservers and RMs that fsync their vote
// logs.
package tx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"strata/bench/kit"
	kvbench "strata/bench/kv"
	worbench "strata/bench/wor"
	"strata/bench/ycsb"
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

	// The bank workload against etcd (skipped with no BankClients).
	BankClients  []int
	BankAccounts int
	BankWarmup   time.Duration
	BankWindow   time.Duration
	NoEtcd       bool
}

// Results are what the report carries.
type Results struct {
	Variants []Result   `json:"variants"`
	Bank     []BankCell `json:"bank,omitempty"`
}

// BankCell is one system's bank cell of one round.
type BankCell struct {
	Round   int    `json:"round"`
	System  string `json:"system"`
	Clients int    `json:"clients"`
	ycsb.BankResult
}

// bankInitial is every account's opening balance: transfers of 1..10
// rarely run one dry.
const bankInitial = 1_000_000

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
	files []*wormtx.JournalStore
	rms   []*wormtx.Peer
	addrs []stack.Addr // the RMs' addresses (they Serve clients there)
}

// do runs one transaction from RM p and waits for its outcome.
func do(ctx context.Context, p *wormtx.Peer, v wormtx.Variant, ops []wormtx.Op) (wormtx.Result, error) {
	done := make(chan struct{})
	var res wormtx.Result
	var err error
	p.Submit(v, ops, func(r wormtx.Result, e error) { res, err = r, e; close(done) })
	select {
	case <-done:
		return res, err
	case <-ctx.Done():
		return wormtx.Result{}, ctx.Err()
	}
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
	c.addrs = rms
	for i, n := range txNodes {
		en, err := listen()
		if err != nil {
			c.close()
			return nil, err
		}
		e, err := wor.NewEngine(cfg.Engine, en, servers, uint64(100+i), time.Second)
		if err != nil {
			c.close()
			return nil, err
		}
		pc := wormtx.Config{RMs: rms, TM: txNodes[0].Local(), Node: n, Engine: e, VoteSeg: 1<<38 | uint64(i)<<20,
			Timeout: 2 * time.Second, Learn: []uint64{1 << 38, 1<<38 | 1<<20, 1<<38 | 2<<20, 1<<38 | 3<<20}}
		if i > 0 {
			pc.ID = uint32(i - 1)
			fs, err := wormtx.OpenJournalDir(filepath.Join(dir, fmt.Sprintf("rm-%d", i-1)), 0)
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
			p.Serve()
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
	r, err := do(ctx, c.rms[0], wormtx.E3, []wormtx.Op{{Kind: wormtx.Add, Key: accountOn(0), Delta: 1 << 40}})
	if err != nil || r.Outcome != wormtx.Committed {
		c.close()
		return nil, fmt.Errorf("bench tx: the opening deposit: %v %v", r.Outcome, err)
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
			tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			r, err := do(tctx, c.rms[0], v, ops)
			cancel()
			if err != nil {
				return nil, 0, 0, fmt.Errorf("%s: %w", v, err)
			}
			out = r.Outcome
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
		"peers":        "a TM and 3 RMs in this process (wormtx.Peer, UDP on 127.0.0.1), each RM's vote log a wormtx.JournalStore (Strata's journal in a file: a vote's record durable, by a journal flush, before the vote is written; concurrent prepares share a flush)",
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
	out := &Results{Variants: results}
	rep.Results = out
	if len(cfg.BankClients) > 0 {
		bank(ctx, cfg, rep, c, out)
	}
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
	var rs []Result
	var bank []BankCell
	if r, ok := rep.Results.(*Results); ok {
		rs, bank = r.Variants, r.Bank
	}
	fmt.Fprintf(w, "\n%-8s %7s %12s\n", "variant", "delays", "p50 µs")
	for i, m := range Medians(rs) {
		fmt.Fprintf(w, "%-8s %7d %12.0f\n", wormtx.Variants[i], wormtx.Variants[i].Delays(), m)
	}
	if len(bank) > 0 {
		fmt.Fprintf(w, "\n%-7s %-7s %8s %10s %10s %8s\n", "round", "system", "clients", "transfers/s", "p50 µs", "retries")
		for _, b := range bank {
			fmt.Fprintf(w, "%-7d %-7s %8d %10.0f %10.0f %8d\n", b.Round, b.System, b.Clients, b.OpsPerSec, b.P50us, b.Retries)
		}
	}
	rep.PrintRatios(w) // and the notes
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
}

// strataBank is the bank on WormTX: a transfer is one E3 transaction
// (two Adds; the source's refuses to go negative) that a client sends
// over UDP to a random RM (wormtx.Call), as etcd's client sends its Txns
// over gRPC.
type strataBank struct {
	c    *cluster
	node *stack.Node // the clients' node
}

func (b strataBank) Transfer(ctx context.Context, from, to string, amount int64) error {
	res, err := wormtx.Call(ctx, b.node, b.c.addrs[rand.IntN(len(b.c.addrs))], wormtx.E3,
		[]wormtx.Op{{Kind: wormtx.Add, Key: from, Delta: -amount}, {Kind: wormtx.Add, Key: to, Delta: amount}})
	switch {
	case err != nil:
		return err
	case res.Outcome == wormtx.Committed:
		return nil
	case res.Outcome == wormtx.Insufficient:
		return ycsb.ErrInsufficient
	default: // a lock conflict, or a participant timed out: no effect
		return ycsb.ErrConflict
	}
}

// load deposits the opening balance into every account, 50 accounts a
// transaction.
func (b strataBank) load(ctx context.Context, accounts int, initial int64) error {
	for i := 0; i < accounts; i += 50 {
		var ops []wormtx.Op
		for j := i; j < min(i+50, accounts); j++ {
			ops = append(ops, wormtx.Op{Kind: wormtx.Add, Key: ycsb.BankAccount(j), Delta: initial})
		}
		for try := 0; ; try++ {
			res, err := do(ctx, b.c.rms[0], wormtx.E3, ops)
			if err == nil && res.Outcome == wormtx.Committed {
				break
			}
			if try == 20 {
				return fmt.Errorf("bank load: %v %v", res.Outcome, err)
			}
		}
	}
	return nil
}

// bank runs the bank workload on WormTX and on etcd, rounds alternating
// which goes first, and puts ops/s strata/etcd per client count in the
// report's ratios.
func bank(ctx context.Context, cfg Config, rep *kit.Report, c *cluster, out *Results) {
	accounts := max(cfg.BankAccounts, 2)
	node, err := layers.Listen("udp:127.0.0.1:0", props)
	if err != nil {
		rep.Fail("bank: client node: %v", err)
		return
	}
	defer node.Close()
	sb := strataBank{c, node}
	if err := sb.load(ctx, accounts, bankInitial); err != nil {
		rep.Fail("bank: strata load: %v", err)
		return
	}
	bc := ycsb.BankConfig{Accounts: accounts, Initial: bankInitial, Warmup: cfg.BankWarmup, Measure: cfg.BankWindow, Seed: 1}
	rep.Note("bank: %d accounts of %d, transfers of 1..10 between two random accounts, each a transaction; %v warm-up then a %v window per cell; a transfer that loses a race (a lock conflict on Strata, a failed compare on etcd) is retried and its latency counts every try", accounts, bankInitial, cfg.BankWarmup, cfg.BankWindow)
	var client string
	var etcd *worbench.EtcdCluster
	rep.Config["strata"]["bank"] = "the harness's clients (goroutines) send each transfer over UDP to a random RM (wormtx.Call), which runs it as an E3 transaction: Add(from, -x) refusing to go negative, Add(to, +x); a lock conflict retried"
	if !cfg.NoEtcd {
		if client, err = kvbench.YCSBClient(ctx, cfg.Progress); err == nil {
			etcd, err = worbench.StartEtcd(ctx, filepath.Join(cfg.Dir, "etcd"), cfg.Progress)
		}
		if err != nil {
			rep.Fail("bank: etcd: %v", err)
			return
		}
		defer etcd.Stop()
		rep.System("etcd", etcd.Settings)
		rep.Config["etcd"]["bank"] = "etcd's own clientv3 in a child process (bench/etcd/ycsb -phase bank): a Txn of two Gets, then a Txn comparing both keys' mod revisions and putting both balances"
		if _, err := kit.Output(ctx, kit.Cmd{Name: "etcd bank load", Argv: []string{client, "-endpoints", strings.Join(etcd.Endpoints, ","), "-phase", "bank-load",
			"-records", fmt.Sprint(accounts), "-value-size", fmt.Sprint(bankInitial)}, Stderr: cfg.Progress}); err != nil {
			rep.Fail("bank: etcd load: %v", err)
			return
		}
	}
	ratios := kit.Ratios{}
	for r := 1; r <= cfg.Rounds; r++ {
		got := map[string]map[int]float64{"strata": {}, "etcd": {}}
		for _, sys := range kit.Order(r, []string{"strata", "etcd"}) {
			if sys == "etcd" && etcd == nil {
				continue
			}
			for _, n := range cfg.BankClients {
				bc.Clients = n
				var res ycsb.BankResult
				var err error
				if sys == "strata" {
					res, err = ycsb.RunBank(ctx, sb, bc)
				} else {
					res, err = etcdBankCell(ctx, client, etcd, bc)
				}
				if err != nil {
					rep.Fail("bank round %d %s clients=%d: %v", r, sys, n, err)
					fmt.Fprintf(cfg.Progress, "FAILED: bank round %d %s clients=%d: %v\n", r, sys, n, err)
					continue
				}
				out.Bank = append(out.Bank, BankCell{Round: r, System: sys, Clients: n, BankResult: res})
				got[sys][n] = res.OpsPerSec
				fmt.Fprintf(cfg.Progress, "bank round %d %-6s clients=%-3d %7.0f transfers/s  p50 %6.0f µs  p99 %6.0f µs  retries %d\n",
					r, sys, n, res.OpsPerSec, res.P50us, res.P99us, res.Retries)
			}
		}
		for _, n := range cfg.BankClients {
			s, e := got["strata"][n], got["etcd"][n]
			if s > 0 && e > 0 {
				ratios.Higher(fmt.Sprintf("transfers/s strata/etcd bank clients=%d", n), s, e)
			}
		}
	}
	ratios.Summarize(rep)
}

// etcdBankCell runs one bank cell with the etcd client process.
func etcdBankCell(ctx context.Context, client string, etcd *worbench.EtcdCluster, bc ycsb.BankConfig) (ycsb.BankResult, error) {
	b, err := kit.Output(ctx, kit.Cmd{Name: "etcd bank", Argv: []string{client, "-endpoints", strings.Join(etcd.Endpoints, ","), "-phase", "bank",
		"-records", fmt.Sprint(bc.Accounts), "-clients", fmt.Sprint(bc.Clients), "-warmup", bc.Warmup.String(), "-duration", bc.Measure.String(), "-seed", fmt.Sprint(bc.Seed)}})
	if err != nil {
		return ycsb.BankResult{}, err
	}
	var o struct {
		Bank *ycsb.BankResult `json:"bank"`
	}
	if err := json.Unmarshal(kit.LastLine(b), &o); err != nil || o.Bank == nil {
		return ycsb.BankResult{}, fmt.Errorf("etcd bank: output %q: %v", kit.LastLine(b), err)
	}
	return *o.Bank, nil
}
