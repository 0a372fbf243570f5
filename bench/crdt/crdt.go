// Package crdt is the convergence benchmark of the CRDT set compiled from
// MPCal (`strata bench crdt`), after the PGo paper's Figure 7
// (../shared/papers/pgo-mpcal.txt, §7.6): every replica runs rounds; in
// round r replica n adds the pair <<r, n>> to the set and then waits until
// its own copy holds <<r, i>> for every replica i. The time from the add's
// commit to that moment is the replica's convergence time for the round.
// Replicas broadcast their whole state every Interval (50 ms, as in the
// paper).
//
// Two systems, on the same resource (distsys.CRDT over one stack node per
// replica on loopback UDP, in this process): "generated" applies each add
// through the ANode archetype compiled from models/crdt/AWORSet.tla (an
// input channel, the archetype's critical sections, an output channel for
// the reply), "handwritten" writes and commits the resource directly from
// Go. The paper compared PGo-CRDT with Roshi; there is no Roshi here, so
// the comparison isolates what the generated code adds. Each run of a
// cluster size runs both systems in kit.Order's alternating order.
package crdt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"strata/bench/kit"
	"strata/distsys"
	"strata/distsys/tla"
	"strata/models/crdt/gen/aworset"
	"strata/stack"
	"strata/stack/layers"
)

// The systems.
const (
	Generated   = "generated"
	Handwritten = "handwritten"
)

// Props is the replicas' stack.
const Props = "Reliable,FIFO,Fragment"

// Config describes a run.
type Config struct {
	Nodes    []int         // cluster sizes
	Rounds   int           // rounds per replica (the paper: 100)
	Runs     int           // repetitions of each size and system
	Interval time.Duration // gossip period
	Progress io.Writer
}

// Cell is one system at one size in one run: the convergence times of
// every replica's every round.
type Cell struct {
	Run     int     `json:"run"`
	Nodes   int     `json:"nodes"`
	System  string  `json:"system"`
	First   bool    `json:"first"`
	Samples int     `json:"samples"`
	MeanMs  float64 `json:"mean_ms"`
	P50Ms   float64 `json:"p50_ms"`
	P90Ms   float64 `json:"p90_ms"`
	P99Ms   float64 `json:"p99_ms"`
	Merged  uint64  `json:"states_merged"`
	Dropped uint64  `json:"dropped"`
	Aborts  uint64  `json:"aborts,omitempty"` // generated: aborted sections
}

// Summary is the median over runs of a system's figures at a size.
type Summary struct {
	Nodes  int     `json:"nodes"`
	System string  `json:"system"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
}

// Results are a report's results.
type Results struct {
	Cells   []Cell    `json:"cells"`
	Summary []Summary `json:"summary"`
}

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (*kit.Report, error) {
	if len(cfg.Nodes) == 0 || cfg.Rounds < 1 || cfg.Runs < 1 || cfg.Interval <= 0 {
		return nil, fmt.Errorf("crdt: need cluster sizes, at least 1 round and 1 run, and a positive interval")
	}
	for _, n := range cfg.Nodes {
		if n < 2 || n > 64 {
			return nil, fmt.Errorf("crdt: cluster size %d: want 2..64", n)
		}
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	rep := kit.NewReport("crdt", kit.Settings{"nodes": cfg.Nodes, "rounds": cfg.Rounds, "runs": cfg.Runs,
		"gossip_interval": cfg.Interval.String(), "crdt": "AWORSet (distsys.CRDT: dots and version vectors)",
		"placement": "one process, one stack node per replica on loopback UDP (127.0.0.1)",
		"method":    "PGo paper Fig. 7: in round r replica n adds <<r, n>>, then waits until it holds <<r, i>> for every i; time from the add's commit"})
	common := kit.Settings{"transport": "udp:127.0.0.1", "stack_props": Props, "resource": "distsys.CRDT, whole state to every peer every interval"}
	gen, hand := kit.Settings{}, kit.Settings{}
	for k, v := range common {
		gen[k], hand[k] = v, v
	}
	gen["model"] = "models/crdt/AWORSet.tla, archetype ANode (strata mpcal gogen: models/crdt/gen/aworset)"
	gen["per_add"] = "distsys.Input -> sections take, apply -> distsys.Output"
	hand["per_add"] = "Index(self).Write, PreCommit, Commit on the resource from Go"
	rep.System(Generated, gen)
	rep.System(Handwritten, hand)

	res := &Results{}
	ratios := kit.Ratios{}
	systems := []string{Generated, Handwritten}
	for run := range cfg.Runs {
		for _, n := range cfg.Nodes {
			p50 := map[string]float64{}
			for i, sys := range kit.Order(run, systems) {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				cell, err := runOnce(ctx, sys, n, cfg.Rounds, cfg.Interval)
				if err != nil {
					rep.Fail("run %d, %d nodes, %s: %v", run+1, n, sys, err)
					continue
				}
				cell.Run, cell.First = run+1, i == 0
				res.Cells = append(res.Cells, cell)
				p50[sys] = cell.P50Ms
				fmt.Fprintf(progress, "run %d, %d nodes, %s: p50 %.1f ms, p90 %.1f ms (%d samples)\n", run+1, n, sys, cell.P50Ms, cell.P90Ms, cell.Samples)
			}
			ratios.Lower(fmt.Sprintf("convergence p50 generated/handwritten %d nodes", n), p50[Generated], p50[Handwritten])
		}
	}
	ratios.Summarize(rep)
	for _, n := range cfg.Nodes {
		for _, sys := range systems {
			var mean, p50, p90 []float64
			for _, c := range res.Cells {
				if c.Nodes == n && c.System == sys {
					mean, p50, p90 = append(mean, c.MeanMs), append(p50, c.P50Ms), append(p90, c.P90Ms)
				}
			}
			if len(mean) > 0 {
				res.Summary = append(res.Summary, Summary{Nodes: n, System: sys,
					MeanMs: kit.Round3(kit.Median(mean)), P50Ms: kit.Round3(kit.Median(p50)), P90Ms: kit.Round3(kit.Median(p90))})
			}
		}
	}
	rep.Results = res
	return rep, nil
}

// replica is one replica of a run.
type replica struct {
	node *stack.Node
	crdt *distsys.CRDT
	// generated
	actx *distsys.Context
	in   chan tla.Value
	out  chan tla.Value
	errc chan error
}

// add applies <<"add", x>> and returns once it has committed.
func (r *replica) add(ctx context.Context, self tla.Value, x tla.Value) error {
	op := tla.Tuple(tla.String("add"), x)
	if r.actx == nil {
		res, err := r.crdt.Index(self)
		if err != nil {
			return err
		}
		if err := res.Write(ctx, op); err != nil {
			return err
		}
		if err := res.PreCommit(ctx); err != nil {
			return err
		}
		return res.Commit(ctx)
	}
	select {
	case r.in <- op:
	case err := <-r.errc:
		return fmt.Errorf("archetype stopped: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-r.out:
		return nil
	case err := <-r.errc:
		return fmt.Errorf("archetype stopped: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func runOnce(ctx context.Context, sys string, n, rounds int, interval time.Duration) (Cell, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var m *aworset.Module
	if sys == Generated {
		var err error
		m, err = aworset.New(aworset.Constants{NumNodes: tla.Int(int64(n)), Budget: tla.Int(0), Elems: tla.Set(), BugMerge: tla.String("none")})
		if err != nil {
			return Cell{}, err
		}
	}
	rs := make([]*replica, n)
	var addrs []stack.Addr
	defer func() {
		for _, r := range rs {
			if r == nil {
				continue
			}
			if r.crdt != nil {
				r.crdt.Close()
			}
			r.node.Close()
		}
	}()
	for i := range rs {
		nd, err := layers.Listen("udp:127.0.0.1:0", Props)
		if err != nil {
			return Cell{}, err
		}
		rs[i] = &replica{node: nd}
		addrs = append(addrs, nd.Local())
	}
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel (deferred later runs first)
	defer cancel()
	for i, r := range rs {
		self := tla.Int(int64(i + 1))
		c, err := distsys.NewCRDT(r.node, self, distsys.AWORSetKind, addrs, distsys.CRDTOptions{Interval: interval})
		if err != nil {
			return Cell{}, err
		}
		r.crdt = c
		if m != nil {
			r.in, r.out, r.errc = make(chan tla.Value), make(chan tla.Value, 1), make(chan error, 1)
			in := distsys.NewInput(r.in)
			in.Wait = time.Second // as strata crdt serve: no abort and back-off while idle
			r.actx, err = distsys.NewContext(m.ANode(), self, distsys.BindIndexed("crdt", c),
				distsys.BindRef("in", in), distsys.BindRef("out", distsys.NewOutput(r.out)))
			if err != nil {
				return Cell{}, err
			}
			wg.Add(1)
			go func() { defer wg.Done(); r.errc <- r.actx.Run(ctx) }()
		}
	}
	lat := make([][]time.Duration, n) // each replica's, written by its goroutine
	errs := make([]error, n)
	var rw sync.WaitGroup
	for i, r := range rs {
		rw.Add(1)
		go func() {
			defer rw.Done()
			self := tla.Int(int64(i + 1))
			for round := 1; round <= rounds; round++ {
				rv := tla.Int(int64(round))
				if err := r.add(ctx, self, tla.Tuple(rv, self)); err != nil {
					errs[i] = err
					return
				}
				start := time.Now()
				err := r.crdt.Wait(ctx, func(v tla.Value) bool {
					for j := 1; j <= n; j++ {
						if in, err := tla.In(tla.Tuple(rv, tla.Int(int64(j))), v); err != nil || !tla.Equal(in, tla.True) {
							return false
						}
					}
					return true
				})
				if err != nil {
					errs[i] = fmt.Errorf("round %d: %w", round, err)
					return
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		}()
	}
	rw.Wait()
	if err := errors.Join(errs...); err != nil {
		return Cell{}, err
	}
	var all []time.Duration
	cell := Cell{Nodes: n, System: sys}
	for i, r := range rs {
		all = append(all, lat[i]...)
		cell.Merged += r.crdt.Merged()
		cell.Dropped += r.crdt.Dropped()
		if r.actx != nil {
			cell.Aborts += r.actx.Aborts()
		}
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	ms := func(d time.Duration) float64 { return kit.Round3(float64(d) / 1e6) }
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	cell.Samples = len(all)
	cell.MeanMs = ms(sum / time.Duration(len(all)))
	cell.P50Ms, cell.P90Ms, cell.P99Ms = ms(pct(0.5)), ms(pct(0.9)), ms(pct(0.99))
	return cell, nil
}

// Print prints a report as a table.
func Print(w io.Writer, rep *kit.Report) error {
	rep.PrintConfig(w)
	res, ok := rep.Results.(*Results)
	if !ok {
		return fmt.Errorf("crdt: report without results")
	}
	fmt.Fprintln(w, "convergence time after an add (median over runs of each run's figure):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  nodes\tsystem\tmean ms\tp50 ms\tp90 ms\t")
	for _, s := range res.Summary {
		fmt.Fprintf(tw, "  %d\t%s\t%.1f\t%.1f\t%.1f\t\n", s.Nodes, s.System, s.MeanMs, s.P50Ms, s.P90Ms)
	}
	tw.Flush()
	rep.PrintRatios(w)
	return nil
}
