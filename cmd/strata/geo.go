package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"strata/geo"
	"strata/internal/plot"
)

func geoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "geo",
		Short: "Plan geo-distributed deployments (Pando's ConfigManager) and compare protocols",
		Long: `geo chooses where an object's data lives, how it is erasure-coded, the
quorum sizes and each front-end's delegate, for Pando, EPaxos, RS-Paxos,
Multi-Paxos and the lower bound of the Pando paper (NSDI 2020). The latency
matrix is the paper's median round trips between 46 cloud regions (embedded;
--matrix DIR reads loc-index-map.txt and net-only-latency.txt from DIR);
candidate data sites default to the 25 Azure regions. See docs/geo.md.`,
	}
	c.AddCommand(geoPlanCmd(), geoTradeoffsCmd(), geoGapCmd())
	return c
}

// geoFlags are the flags shared by the geo subcommands.
type geoFlags struct {
	access, candidates, matrix string
	f, maxSplits               int
}

func (g *geoFlags) register(c *cobra.Command, needAccess bool) {
	help := "comma-separated regions whose front-ends read and write the object"
	if !needAccess {
		help += " (empty: run the §5.1 campaign)"
	}
	c.Flags().StringVar(&g.access, "access-set", "", help)
	c.Flags().StringVar(&g.candidates, "candidates", "", "comma-separated candidate data sites (default: every az_ region)")
	c.Flags().StringVar(&g.matrix, "matrix", "", "folder with loc-index-map.txt and net-only-latency.txt (default: the embedded data)")
	c.Flags().IntVar(&g.f, "f", 1, "data-center failures to tolerate")
	c.Flags().IntVar(&g.maxSplits, "max-splits", 6, "largest k (data splits) for erasure coding")
}

func (g *geoFlags) problem(needAccess bool) (geo.Problem, error) {
	p := geo.Problem{F: g.f, MaxSplits: g.maxSplits}
	if g.maxSplits < 1 {
		return p, fmt.Errorf("--max-splits must be at least 1, got %d", g.maxSplits)
	}
	if g.f < 0 {
		return p, fmt.Errorf("--f must be at least 0, got %d", g.f)
	}
	if g.matrix != "" {
		m, err := geo.LoadMatrixDir(g.matrix)
		if err != nil {
			return p, fmt.Errorf("--matrix: %w", err)
		}
		p.Matrix = m
	}
	p.Access = splitList(g.access)
	if needAccess && len(p.Access) == 0 {
		return p, fmt.Errorf("--access-set is required (e.g. az_eastus,az_westeurope,az_southeastasia)")
	}
	p.Candidates = splitList(g.candidates)
	return p, nil
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// parseMs reads a latency bound: a Go duration (100ms, 1.5s) or a plain
// number of milliseconds; "" means none.
func parseMs(flag, s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("--%s must be positive, got %q", flag, s)
		}
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--%s: want a duration such as 100ms, got %q", flag, s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("--%s must be positive, got %q", flag, s)
	}
	return float64(d) / float64(time.Millisecond), nil
}

func geoPlanCmd() *cobra.Command {
	var (
		g                     geoFlags
		read, write, minimize string
		protocol              string
		storage               float64
		asJSON                bool
		objectKB, reads, wrts float64
		pStore, pXfer, pReq   float64
	)
	c := &cobra.Command{
		Use:   "plan",
		Short: "Print the optimal deployment plan for an access set and two bounds",
		Long: `plan optimizes one of read latency, write latency, storage overhead (or,
with --minimize cost, dollars per month) given bounds on the others: by
default the one of --read, --write, --storage left out is minimized.
Latencies are the maximum over the access set's front-ends. --protocol all
plans every protocol and prints a comparison.

Example: strata geo plan --access-set az_eastus,az_westeurope,az_southeastasia --f 1 --read 100ms --storage 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.problem(true)
			if err != nil {
				return err
			}
			if p.ReadBound, err = parseMs("read", read); err != nil {
				return err
			}
			if p.WriteBound, err = parseMs("write", write); err != nil {
				return err
			}
			if storage < 0 || (storage > 0 && storage < 1) {
				return fmt.Errorf("--storage must be at least 1 (the overhead of one copy), got %g", storage)
			}
			p.StorageBound = storage
			if p.Objective, err = geoObjective(minimize, p); err != nil {
				return err
			}
			if p.Objective == geo.MinCost || objectKB > 0 {
				if objectKB <= 0 || reads < 0 || wrts < 0 {
					return fmt.Errorf("the cost model needs --object-kb > 0 and non-negative --reads/--writes per month")
				}
				p.Prices = &geo.Prices{StorageGBMonth: pStore, TransferGB: pXfer, Request: pReq}
				p.Workload = geo.Workload{ObjectKB: objectKB, ReadsPerMonth: reads, WritesPerMonth: wrts}
			}
			protos := geo.Protocols
			if protocol != "all" {
				pr, err := geo.ParseProtocol(protocol)
				if err != nil {
					return fmt.Errorf("--protocol: %w", err)
				}
				protos = []geo.Protocol{pr}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			var plans []geo.Plan
			var took []time.Duration
			var errs []string
			for _, pr := range protos {
				q := p
				q.Protocol = pr
				if pr == geo.LowerBound && q.Objective == geo.MinCost {
					continue
				}
				t0 := time.Now()
				pl, err := geo.Solve(ctx, q)
				if errors.Is(err, geo.ErrInfeasible) && len(protos) > 1 {
					errs = append(errs, fmt.Sprintf("%s: no plan meets the bounds", pr))
					continue
				}
				if err != nil {
					return err
				}
				if err := pl.Check(q); err != nil {
					return fmt.Errorf("internal error: %s plan fails its check: %w", pr, err)
				}
				took = append(took, time.Since(t0))
				plans = append(plans, pl)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if len(protos) == 1 {
					return enc.Encode(plans[0])
				}
				return enc.Encode(plans)
			}
			for i, pl := range plans {
				if i > 0 {
					fmt.Fprintln(out)
				}
				printPlan(out, pl)
				fmt.Fprintf(out, "(optimal %s; planned in %v)\n", p.Objective, took[i].Round(time.Microsecond))
			}
			if len(plans) > 1 {
				fmt.Fprintln(out)
				printComparison(out, plans)
			}
			for _, e := range errs {
				fmt.Fprintln(out, e)
			}
			return nil
		},
	}
	g.register(c, true)
	f := c.Flags()
	f.StringVar(&read, "read", "", "bound on read latency (e.g. 100ms)")
	f.StringVar(&write, "write", "", "bound on write latency (e.g. 300ms)")
	f.Float64Var(&storage, "storage", 0, "bound on storage overhead (bytes stored / object size)")
	f.StringVar(&minimize, "minimize", "", "read, write, storage or cost (default: the unbounded one)")
	f.StringVar(&protocol, "protocol", "pando", "pando, epaxos, rspaxos, multipaxos, lowerbound or all")
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON")
	f.Float64Var(&objectKB, "object-kb", 0, "cost model: object size in KB")
	f.Float64Var(&reads, "reads", 1e6, "cost model: reads per month")
	f.Float64Var(&wrts, "writes", 1e5, "cost model: writes per month")
	f.Float64Var(&pStore, "price-storage", 0.25, "cost model: $ per GB-month stored")
	f.Float64Var(&pXfer, "price-transfer", 0.02, "cost model: $ per GB sent between data centers")
	f.Float64Var(&pReq, "price-request", 0.4e-6, "cost model: $ per storage request")
	return c
}

func geoObjective(minimize string, p geo.Problem) (geo.Objective, error) {
	if minimize != "" {
		switch o := geo.Objective(minimize); o {
		case geo.MinRead, geo.MinWrite, geo.MinStorage, geo.MinCost:
			return o, nil
		}
		return "", fmt.Errorf("--minimize: want read, write, storage or cost, got %q", minimize)
	}
	var free []geo.Objective
	if p.ReadBound == 0 {
		free = append(free, geo.MinRead)
	}
	if p.WriteBound == 0 {
		free = append(free, geo.MinWrite)
	}
	if p.StorageBound == 0 {
		free = append(free, geo.MinStorage)
	}
	if len(free) != 1 {
		return "", fmt.Errorf("give bounds on exactly two of --read, --write, --storage (the third is minimized), or say --minimize")
	}
	return free[0], nil
}

func geoMs(v float64) string {
	if math.IsInf(v, 1) {
		return "∞"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func printPlan(out io.Writer, pl geo.Plan) {
	fmt.Fprintf(out, "protocol %s, f = %d: %d sites, storage overhead %.3g", pl.Protocol, pl.F, len(pl.Sites), pl.Storage)
	switch {
	case pl.Protocol == geo.LowerBound:
		fmt.Fprintf(out, " (fractions of the object per site)\n")
	case pl.Protocol == geo.Pando || pl.Protocol == geo.RSPaxos:
		fmt.Fprintf(out, ", k = %d data + r = %d parity splits, quorums 1a/1b/2 = %d/%d/%d\n", pl.K, pl.R, pl.Q1a, pl.Q1b, pl.Q2)
	case pl.Protocol == geo.EPaxos:
		fmt.Fprintf(out, " (replicas), read quorum R = %d, write (fast) quorum W = %d\n", pl.Q1a, pl.Q2)
	default:
		fmt.Fprintf(out, " (replicas), leader %s, quorum %d\n", pl.Leader, pl.Q2)
	}
	if pl.Protocol == geo.LowerBound {
		var parts []string
		for i, s := range pl.Sites {
			if pl.Fractions[i] > 1e-9 {
				parts = append(parts, fmt.Sprintf("%s=%.3g", s, pl.Fractions[i]))
			}
		}
		fmt.Fprintf(out, "data: %s (others hold metadata only)\n", strings.Join(parts, " "))
	} else {
		fmt.Fprintf(out, "sites: %s\n", strings.Join(pl.Sites, " "))
	}
	if pl.CostPerMonth > 0 {
		fmt.Fprintf(out, "cost: $%.6g per month\n", pl.CostPerMonth)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "front-end\tdelegate\tread ms\twrite ms\tread quorum\twrite quorum")
	for _, fe := range pl.FrontEnds {
		d := fe.Delegate
		if d == "" {
			d = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", fe.Name, d, geoMs(fe.ReadMs), geoMs(fe.WriteMs),
			shortList(fe.ReadQuorum), shortList(fe.WriteQuorum))
	}
	fmt.Fprintf(tw, "max\t\t%s\t%s\t\t\n", geoMs(pl.ReadMs), geoMs(pl.WriteMs))
	tw.Flush()
}

func shortList(s []string) string {
	if len(s) > 6 {
		return fmt.Sprintf("%s … (%d sites)", strings.Join(s[:5], ","), len(s))
	}
	return strings.Join(s, ",")
}

func printComparison(out io.Writer, plans []geo.Plan) {
	cost := false
	for _, pl := range plans {
		cost = cost || pl.CostPerMonth > 0
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "protocol\tsites\tk\tstorage\tread ms\twrite ms")
	if cost {
		fmt.Fprint(tw, "\t$/month")
	}
	fmt.Fprintln(tw)
	for _, pl := range plans {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3g\t%s\t%s", pl.Protocol, len(pl.Sites), pl.K, pl.Storage, geoMs(pl.ReadMs), geoMs(pl.WriteMs))
		if cost {
			fmt.Fprintf(tw, "\t%.4g", pl.CostPerMonth)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

func geoTradeoffsCmd() *cobra.Command {
	var (
		g               geoFlags
		write, from, to string
		step            string
		storage         float64
		plotPath        string
		asJSON          bool
	)
	c := &cobra.Command{
		Use:   "tradeoffs",
		Short: "Figure-2-style curves: min storage and min write latency versus the read bound",
		Long: `tradeoffs sweeps the read latency bound and prints, for Pando, EPaxos,
RS-Paxos and the lower bound, (a) the minimum storage overhead with write
latency at most --write and (b) the minimum write latency with storage at
most --storage (the paper's Figure 2 uses 300 ms and 6). --plot draws both
as a PNG. "-" marks a read bound the protocol cannot meet.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.problem(true)
			if err != nil {
				return err
			}
			wb, err := parseMs("write", write)
			if err != nil {
				return err
			}
			if storage < 1 {
				return fmt.Errorf("--storage must be at least 1, got %g", storage)
			}
			lo, err := parseMs("from", from)
			if err != nil {
				return err
			}
			hi, err := parseMs("to", to)
			if err != nil {
				return err
			}
			st, err := parseMs("step", step)
			if err != nil {
				return err
			}
			if st == 0 {
				st = 10
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			protos := []geo.Protocol{geo.Pando, geo.EPaxos, geo.RSPaxos, geo.LowerBound}
			if lo == 0 || hi == 0 {
				// Default range: from the bound's smallest read latency to
				// beyond every protocol's smallest one.
				lo0, hi0 := math.Inf(1), 0.0
				for _, pr := range protos {
					q := p
					q.Protocol, q.Objective, q.StorageBound = pr, geo.MinRead, math.Max(storage, 7)
					pl, err := geo.Solve(ctx, q)
					if err != nil && !errors.Is(err, geo.ErrInfeasible) {
						return err
					}
					if err == nil {
						lo0, hi0 = math.Min(lo0, pl.ReadMs), math.Max(hi0, pl.ReadMs)
					}
				}
				if math.IsInf(lo0, 1) {
					return fmt.Errorf("no protocol can serve this access set")
				}
				if lo == 0 {
					lo = math.Floor(lo0/st) * st
				}
				if hi == 0 {
					hi = math.Ceil(hi0/st)*st + 5*st
				}
			}
			if hi < lo || (hi-lo)/st > 1000 {
				return fmt.Errorf("read sweep %g..%g ms in steps of %g: want from ≤ to and at most 1000 steps", lo, hi, st)
			}
			type row struct {
				Read    float64            `json:"read_bound_ms"`
				Storage map[string]float64 `json:"min_storage"`
				Write   map[string]float64 `json:"min_write_ms"`
			}
			var rows []row
			for r := lo; r <= hi+1e-9; r += st {
				rw := row{Read: r, Storage: map[string]float64{}, Write: map[string]float64{}}
				for _, pr := range protos {
					q := p
					q.Protocol, q.ReadBound = pr, r
					q.Objective, q.WriteBound, q.StorageBound = geo.MinStorage, wb, 0
					if pl, err := geo.Solve(ctx, q); err == nil {
						rw.Storage[string(pr)] = pl.Storage
					} else if !errors.Is(err, geo.ErrInfeasible) {
						return err
					}
					q.Objective, q.WriteBound, q.StorageBound = geo.MinWrite, 0, storage
					if pl, err := geo.Solve(ctx, q); err == nil {
						rw.Write[string(pr)] = pl.WriteMs
					} else if !errors.Is(err, geo.ErrInfeasible) {
						return err
					}
				}
				rows = append(rows, rw)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rows); err != nil {
					return err
				}
			} else {
				wlabel := "unbounded"
				if wb > 0 {
					wlabel = geoMs(wb) + " ms"
				}
				fmt.Fprintf(out, "access set %s, f = %d; (a) storage with write ≤ %s; (b) write ms with storage ≤ %g\n",
					strings.Join(p.Access, ","), p.F, wlabel, storage)
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
				fmt.Fprint(tw, "read ≤ ms\t")
				for _, pr := range protos {
					fmt.Fprintf(tw, "(a) %s\t", pr)
				}
				for _, pr := range protos {
					fmt.Fprintf(tw, "(b) %s\t", pr)
				}
				fmt.Fprintln(tw)
				cell := func(m map[string]float64, pr geo.Protocol, f string) string {
					if v, ok := m[string(pr)]; ok {
						return fmt.Sprintf(f, v)
					}
					return "-"
				}
				for _, rw := range rows {
					fmt.Fprintf(tw, "%s\t", geoMs(rw.Read))
					for _, pr := range protos {
						fmt.Fprintf(tw, "%s\t", cell(rw.Storage, pr, "%.3g"))
					}
					for _, pr := range protos {
						fmt.Fprintf(tw, "%s\t", cell(rw.Write, pr, "%.1f"))
					}
					fmt.Fprintln(tw)
				}
				tw.Flush()
			}
			if plotPath == "" {
				return nil
			}
			wl := "write unbounded" // the plot font is ASCII only
			if wb > 0 {
				wl = "write <= " + geoMs(wb) + " ms"
			}
			pa := plot.Panel{Title: "(a) min storage overhead, " + wl, XLabel: "read latency bound (ms)", YLabel: "storage"}
			pb := plot.Panel{Title: fmt.Sprintf("(b) min write latency (ms), storage <= %g", storage), XLabel: "read latency bound (ms)", YLabel: "write ms"}
			for i, pr := range protos {
				sa := plot.Series{Name: string(pr), Color: plot.Palette[i%len(plot.Palette)]}
				sb := sa
				for _, rw := range rows {
					if v, ok := rw.Storage[string(pr)]; ok {
						sa.X, sa.Y = append(sa.X, rw.Read), append(sa.Y, v)
					}
					if v, ok := rw.Write[string(pr)]; ok {
						sb.X, sb.Y = append(sb.X, rw.Read), append(sb.Y, v)
					}
				}
				pa.Series, pb.Series = append(pa.Series, sa), append(pb.Series, sb)
			}
			if err := plot.Render(plotPath, []plot.Panel{pa, pb}, 2); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", plotPath)
			return nil
		},
	}
	g.register(c, true)
	f := c.Flags()
	f.StringVar(&write, "write", "300ms", "write bound for curve (a); empty for none")
	f.Float64Var(&storage, "storage", 6, "storage bound for curve (b)")
	f.StringVar(&from, "from", "", "first read bound (default: the lower bound's smallest read latency)")
	f.StringVar(&to, "to", "", "last read bound (default: past every protocol's smallest read latency)")
	f.StringVar(&step, "step", "10ms", "read bound step")
	f.StringVar(&plotPath, "plot", "", "write the curves to this PNG file")
	f.BoolVar(&asJSON, "json", false, "print the rows as JSON")
	return c
}

func geoGapCmd() *cobra.Command {
	var (
		g          geoFlags
		sets, grid int
		seed       uint64
		types      string
		asJSON     bool
		workers    int
	)
	c := &cobra.Command{
		Use:   "gapvolume",
		Short: "GapVolume (§5.1.1) for an access set, or the §5.1 campaign (Table 1, Figure 9)",
		Long: `With --access-set, prints the GapVolume of Pando, EPaxos, RS-Paxos and
EPaxos ∪ RS-Paxos for that access set: the share of the lower bound's
(read, write, storage) region, storage up to 7, that the protocol cannot
reach. Without it, runs the campaign of §5.1: --sets random access sets of
each type NA, NA-EU, NA-AS, GL (3 to 5 Azure front-ends; NA-AS and GL
front-ends at least 20 ms apart), in parallel on every core, and prints
the median GapVolume per type (the paper's Table 1) and a Figure 9 summary:
geometric means, over SLO pairs every protocol meets, of each metric
relative to EPaxos. Progress goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.problem(false)
			if err != nil {
				return err
			}
			if grid < 2 || grid > 200 {
				return fmt.Errorf("--grid must be in [2, 200], got %d", grid)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			out := cmd.OutOrStdout()
			gopt := geo.GapOptions{Grid: grid}
			if len(p.Access) > 0 {
				t0 := time.Now()
				r, err := geo.GapVolume(ctx, p, gopt)
				if err != nil {
					return err
				}
				if asJSON {
					return json.NewEncoder(out).Encode(r)
				}
				fmt.Fprintf(out, "access set %s, f = %d: box read ≤ %.1f ms, write ≤ %.1f ms, storage ≤ 7 (%d solves, %v)\n",
					strings.Join(r.Access, ","), p.F, r.ReadCap, r.WriteCap, r.Solves, time.Since(t0).Round(time.Millisecond))
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "approach\tGapVolume")
				for _, a := range []string{string(geo.Pando), geo.EPRSP, string(geo.EPaxos), string(geo.RSPaxos)} {
					fmt.Fprintf(tw, "%s\t%.3f\n", a, r.Gap[a])
				}
				tw.Flush()
				if r.BelowBound > 0 {
					fmt.Fprintf(out, "note: %d staircase points beat the lower bound (the matrix breaks the triangle inequality there)\n", r.BelowBound)
				}
				return nil
			}
			if sets < 1 {
				return fmt.Errorf("--sets must be at least 1, got %d", sets)
			}
			o := geo.CampaignOptions{Sets: sets, Seed: seed, Types: splitList(types), Workers: workers, Gap: gopt, F: p.F, Matrix: p.Matrix}
			for _, t := range o.Types {
				if !slices.Contains(geo.AccessTypes, t) {
					return fmt.Errorf("--types: unknown type %q (want NA, NA-EU, NA-AS, GL)", t)
				}
			}
			if len(p.Candidates) > 0 {
				return fmt.Errorf("--candidates applies to one access set; the campaign uses the 25 Azure regions")
			}
			if o.Workers <= 0 {
				o.Workers = runtime.NumCPU()
			}
			t0 := time.Now()
			errw := cmd.ErrOrStderr()
			o.Progress = func(done, total int) {
				el := time.Since(t0)
				eta := time.Duration(float64(el) / float64(done) * float64(total-done))
				fmt.Fprintf(errw, "\rgapvolume: %d/%d access sets (%d%%), %v elapsed, ~%v left   ",
					done, total, 100*done/total, el.Round(time.Second), eta.Round(time.Second))
				if done == total {
					fmt.Fprintln(errw)
				}
			}
			res, err := geo.Campaign(ctx, o)
			if err != nil {
				return err
			}
			elapsed := time.Since(t0)
			if asJSON {
				return json.NewEncoder(out).Encode(res)
			}
			ts := o.Types
			if len(ts) == 0 {
				ts = geo.AccessTypes
			}
			fmt.Fprintf(out, "GapVolume campaign: %d access sets per type, seed %d, f = %d, read grid %d, %v on %d workers\n\n",
				sets, seed, p.F, grid, elapsed.Round(time.Second), o.Workers)
			paper := map[string][]string{
				string(geo.Pando): {"0.06", "0.07", "0.04", "0.07"}, geo.EPRSP: {"0.37", "0.40", "0.34", "0.34"},
				string(geo.EPaxos): {"0.44", "0.48", "0.44", "0.49"}, string(geo.RSPaxos): {"0.52", "0.59", "0.53", "0.48"},
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprint(tw, "median GapVolume\t")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t", t)
			}
			fmt.Fprintln(tw, "paper (NA, NA-EU, NA-AS, GL)")
			for _, a := range []string{string(geo.Pando), geo.EPRSP, string(geo.EPaxos), string(geo.RSPaxos)} {
				fmt.Fprintf(tw, "%s\t", a)
				for _, t := range ts {
					fmt.Fprintf(tw, "%.2f\t", res.Median[t][a])
				}
				fmt.Fprintln(tw, strings.Join(paper[a], " / "))
			}
			tw.Flush()
			fmt.Fprintln(out, "\nFigure 9 summary: geometric mean relative to EPaxos (lower is better; over SLO pairs all protocols meet)")
			tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "type\tmetric\tpando\trspaxos\tlowerbound\tpairs")
			for _, t := range ts {
				for _, m := range []string{"read", "write", "storage"} {
					s := res.Summary[t][m]
					fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%.3f\t%d\n", t, m, s[string(geo.Pando)].Mean(), s[string(geo.RSPaxos)].Mean(),
						s[string(geo.LowerBound)].Mean(), geoCount(s[string(geo.Pando)]))
				}
			}
			tw.Flush()
			return nil
		},
	}
	g.register(c, false)
	f := c.Flags()
	f.IntVar(&sets, "sets", 200, "campaign: access sets per type")
	f.Uint64Var(&seed, "seed", 1, "campaign: random seed")
	f.StringVar(&types, "types", "", "campaign: comma-separated types (default NA,NA-EU,NA-AS,GL)")
	f.IntVar(&grid, "grid", 12, "read-axis samples of the GapVolume integral")
	f.IntVar(&workers, "workers", 0, "campaign: parallel workers (default: every core)")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	return c
}

func geoCount(l *geo.LogMean) int {
	if l == nil {
		return 0
	}
	return l.N
}
