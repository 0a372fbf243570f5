package geo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"strata/internal/stats"
)

// GapVolume (§5.1.1) compares a protocol's achievable (read, write,
// storage) region with the lower bound's inside a box: read latency up to
// ReadCap, write latency up to WriteCap, storage overhead up to
// MaxStorage (7 in the paper). ReadCap is the largest, over the compared
// protocols and the bound, of the smallest read latency each can reach at
// storage MaxStorage; WriteCap the largest of their smallest write
// latencies at read ReadCap and storage MaxStorage: so every protocol has
// a plan at the box's far corner. With minS(r, w) the smallest storage a
// protocol needs for read ≤ r and write ≤ w, its region is
// {(r, w, s): s ≥ minS(r, w)} and
//
//	GapVolume = vol(bound's region − protocol's region) / vol(bound's region).
//
// The read axis is sampled at Grid points ReadCap·i/Grid; along the write
// axis minS is exact (a staircase found by alternating storage and write
// solves), so the integral over w is exact.

// Approaches compared by the campaign. EPRSP is the union of EPaxos and
// RS-Paxos (a point is reachable if either reaches it).
const (
	EPRSP = "ep∪rsp"
)

// GapOptions tunes GapVolume.
type GapOptions struct {
	Grid       int     // read-axis samples (default 12)
	MaxStorage float64 // default 7
}

// GapResult is GapVolume for one access set.
type GapResult struct {
	Access   []string           `json:"access"`
	ReadCap  float64            `json:"read_cap_ms"`
	WriteCap float64            `json:"write_cap_ms"`
	Gap      map[string]float64 `json:"gap"` // by protocol name, and EPRSP
	Summary  Summary            `json:"summary"`
	Solves   int                `json:"solves"`
	// BelowBound counts (grid row, staircase step) points where a
	// protocol needs less storage than the bound; zero when the matrix
	// obeys the triangle inequality, which the bound's one-round model
	// relies on.
	BelowBound int `json:"below_bound"`
}

// Summary holds, per metric ("read", "write", "storage") and approach,
// the sum of log(value / EPaxos's value) over SLO pairs every protocol
// meets, and their count: the geometric mean is exp(LogSum/N) (Figure 9).
type Summary map[string]map[string]*LogMean

// LogMean accumulates logarithms.
type LogMean struct {
	LogSum float64 `json:"log_sum"`
	N      int     `json:"n"`
}

// Mean is the geometric mean (NaN if empty).
func (l *LogMean) Mean() float64 {
	if l == nil || l.N == 0 {
		return math.NaN()
	}
	return math.Exp(l.LogSum / float64(l.N))
}

func (s Summary) add(metric, approach string, ratio float64) {
	if s[metric] == nil {
		s[metric] = map[string]*LogMean{}
	}
	if s[metric][approach] == nil {
		s[metric][approach] = &LogMean{}
	}
	s[metric][approach].LogSum += math.Log(ratio)
	s[metric][approach].N++
}

func (s Summary) merge(o Summary) {
	for m, byA := range o {
		for a, l := range byA {
			if s[m] == nil {
				s[m] = map[string]*LogMean{}
			}
			if s[m][a] == nil {
				s[m][a] = &LogMean{}
			}
			s[m][a].LogSum += l.LogSum
			s[m][a].N += l.N
		}
	}
}

// stair is minS as a function of w: minS(w) = min{s_l : w_l ≤ w}.
type stair []struct{ w, s float64 }

func (st stair) at(w float64) float64 {
	best := math.Inf(1)
	for _, x := range st {
		if x.w <= w && x.s < best {
			best = x.s
		}
	}
	return best
}

// minWrite is the smallest w with minS(w) ≤ s.
func (st stair) minWrite(s float64) float64 {
	best := math.Inf(1)
	for _, x := range st {
		if x.s <= s*(1+1e-12) && x.w < best {
			best = x.w
		}
	}
	return best
}

var gapProtocols = []Protocol{Pando, EPaxos, RSPaxos}

// GapVolume computes the GapVolume of Pando, EPaxos, RS-Paxos and their
// union EPRSP for the problem's access set, candidates and F (the
// problem's bounds, objective and protocol are ignored).
func GapVolume(ctx context.Context, p Problem, o GapOptions) (GapResult, error) {
	if o.Grid <= 0 {
		o.Grid = 12
	}
	if o.MaxStorage == 0 {
		o.MaxStorage = 7
	}
	p.Protocol, p.Objective = Pando, MinRead
	p.ReadBound, p.WriteBound, p.StorageBound = 0, 0, 0
	in, err := newInst(p)
	if err != nil {
		return GapResult{}, err
	}
	res := GapResult{Access: p.Access, Gap: map[string]float64{}, Summary: Summary{}}
	all := append(slices.Clone(gapProtocols), LowerBound)
	S := o.MaxStorage
	solve := func(proto Protocol, obj Objective, rb, wb, sb float64) (Plan, bool, error) {
		res.Solves++
		pl, err := in.query(ctx, proto, obj, rb, wb, sb)
		if errors.Is(err, ErrInfeasible) {
			return Plan{}, false, nil
		}
		return pl, err == nil, err
	}
	// Caps: each protocol's whole trade-off surface fits in the box. For
	// each protocol find its smallest storage s*, the smallest read r* at
	// s*, the smallest write w* at (r*, s*); also every protocol's
	// smallest read at storage S and smallest write at that read.
	for _, a := range gapProtocols {
		ps, ok, err := solve(a, MinStorage, 0, 0, S)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, fmt.Errorf("geo: %s cannot serve %v within storage %g", a, p.Access, S)
		}
		pr, _, err := solve(a, MinRead, 0, 0, ps.Storage)
		if err != nil {
			return res, err
		}
		pw, _, err := solve(a, MinWrite, pr.ReadMs, 0, ps.Storage)
		if err != nil {
			return res, err
		}
		res.ReadCap, res.WriteCap = math.Max(res.ReadCap, pr.ReadMs), math.Max(res.WriteCap, pw.WriteMs)
	}
	for _, a := range all {
		pl, ok, err := solve(a, MinRead, 0, 0, S)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, fmt.Errorf("geo: %s cannot serve %v within storage %g", a, p.Access, S)
		}
		res.ReadCap = math.Max(res.ReadCap, pl.ReadMs)
	}
	for _, a := range all {
		pl, ok, err := solve(a, MinWrite, res.ReadCap, 0, S)
		if err != nil {
			return res, err
		}
		if !ok {
			return res, fmt.Errorf("geo: %s has no plan at read %.1f ms within storage %g", a, res.ReadCap, S)
		}
		res.WriteCap = math.Max(res.WriteCap, pl.WriteMs)
	}
	G := o.Grid
	rs := make([]float64, G)
	st := make(map[Protocol][]stair, len(all))
	for i := range G {
		rs[i] = res.ReadCap * float64(i+1) / float64(G)
	}
	for _, a := range gapProtocols {
		st[a] = make([]stair, G)
		for i, r := range rs {
			wb := res.WriteCap
			for wb > 0 {
				pl, ok, err := solve(a, MinStorage, r, wb, S)
				if err != nil {
					return res, err
				}
				if !ok {
					break
				}
				pw, ok, err := solve(a, MinWrite, r, 0, pl.Storage)
				if err != nil {
					return res, err
				}
				if !ok || pw.WriteMs > wb {
					return res, fmt.Errorf("geo: internal error: %s staircase at read %.1f", a, r)
				}
				st[a][i] = append(st[a][i], struct{ w, s float64 }{pw.WriteMs, pl.Storage})
				wb = pw.WriteMs - 1e-6
			}
		}
	}
	// The bound: its storage changes only where a write ball does.
	var ws []float64
	for F := range in.fe {
		for _, v := range in.rd[F] {
			if v <= res.WriteCap {
				ws = append(ws, v)
			}
		}
	}
	ws = distinct(ws)
	st[LowerBound] = make([]stair, G)
	for i, r := range rs {
		prev := math.Inf(1)
		for _, w := range ws {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Solves++
			v, _, ok, err := in.lbStorageCached(r, w)
			if err != nil {
				return res, err
			}
			if ok && v <= S*(1+1e-9) && v < prev-1e-12 {
				st[LowerBound][i] = append(st[LowerBound][i], struct{ w, s float64 }{w, v})
				prev = v
			}
		}
	}
	for _, a := range gapProtocols {
		for i := range G {
			for _, x := range st[a][i] {
				if st[LowerBound][i].at(x.w) > x.s+1e-9 {
					res.BelowBound++
				}
			}
		}
	}
	// Integrate over w exactly, row by row.
	union := func(i int, w float64) float64 { return math.Min(st[EPaxos][i].at(w), st[RSPaxos][i].at(w)) }
	lbVol := 0.0
	gap := map[string]float64{}
	for i := range G {
		var bp []float64
		for _, a := range all {
			for _, x := range st[a][i] {
				bp = append(bp, x.w)
			}
		}
		bp = append(bp, 0, res.WriteCap)
		bp = distinct(bp)
		for k := 0; k+1 < len(bp); k++ {
			w, dw := bp[k], bp[k+1]-bp[k]
			if w >= res.WriteCap {
				break
			}
			lb := st[LowerBound][i].at(w)
			room := math.Max(0, S-lb)
			lbVol += room * dw
			for _, a := range gapProtocols {
				gap[string(a)] += (room - math.Max(0, S-math.Max(lb, st[a][i].at(w)))) * dw
			}
			gap[EPRSP] += (room - math.Max(0, S-math.Max(lb, union(i, w)))) * dw
		}
	}
	for k, v := range gap {
		if lbVol > 0 {
			res.Gap[k] = v / lbVol
		}
	}
	// Figure 9: each metric minimised under SLO pairs of the other two
	// that EPaxos, RS-Paxos and Pando all meet, relative to EPaxos.
	ratios := func(metric string, val map[Protocol]float64) {
		for _, a := range all {
			if math.IsInf(val[a], 1) || val[a] <= 0 {
				return
			}
		}
		for _, a := range []Protocol{Pando, RSPaxos, LowerBound} {
			res.Summary.add(metric, string(a), val[a]/val[EPaxos])
		}
	}
	levels := []float64{2, 3, 4, 5, 6, 7}
	wgrid := make([]float64, G)
	for j := range G {
		wgrid[j] = res.WriteCap * float64(j+1) / float64(G)
	}
	for i := range G {
		for _, w := range wgrid {
			val := map[Protocol]float64{}
			for _, a := range all {
				val[a] = st[a][i].at(w)
			}
			ratios("storage", val)
		}
		for _, s := range levels {
			val := map[Protocol]float64{}
			for _, a := range all {
				val[a] = st[a][i].minWrite(s)
			}
			ratios("write", val)
		}
	}
	for _, w := range wgrid {
		for _, s := range levels {
			val := map[Protocol]float64{}
			for _, a := range all {
				val[a] = math.Inf(1)
				for i := range G {
					if st[a][i].at(w) <= s*(1+1e-12) {
						val[a] = rs[i]
						break
					}
				}
			}
			ratios("read", val)
		}
	}
	return res, nil
}

// lbStorageCached memoizes lbStorage by the quorum balls it depends on.
func (in *inst) lbStorageCached(r, w float64) (float64, []float64, bool, error) {
	var b strings.Builder
	for F := range in.fe {
		var rm, wm uint64
		for j := range in.m {
			if in.rd[F][j] <= r {
				rm |= 1 << j
			}
			if in.rd[F][j] <= w {
				wm |= 1 << j
			}
		}
		fmt.Fprintf(&b, "%x/%x,", rm, wm)
	}
	k := b.String()
	if v, ok := in.lbCache[k]; ok {
		return v.v, v.c, v.ok, nil
	}
	v, c, ok, err := in.lbStorage(r, w)
	if err != nil {
		return 0, nil, false, err
	}
	if in.lbCache == nil {
		in.lbCache = map[string]lbResult{}
	}
	in.lbCache[k] = lbResult{v, c, ok}
	return v, c, ok, nil
}

type lbResult struct {
	v  float64
	c  []float64
	ok bool
}

// Access-set types of §5.1 over the Azure regions.
var (
	naRegions = []string{"az_canadacentral", "az_canadaeast", "az_centralus", "az_eastus", "az_eastus2",
		"az_northcentralus", "az_southcentralus", "az_westcentralus", "az_westus", "az_westus2"}
	euRegions = []string{"az_northeurope", "az_westeurope", "az_uksouth", "az_ukwest"}
	asRegions = []string{"az_eastasia", "az_japaneast", "az_japanwest", "az_koreacentral", "az_koreasouth",
		"az_southeastasia", "az_centralindia", "az_southindia"}
)

// AccessTypes are the campaign's access-set types, in table order.
var AccessTypes = []string{"NA", "NA-EU", "NA-AS", "GL"}

// RandomAccessSet draws an access set of the given type (NA, NA-EU,
// NA-AS or GL) with 3 to 5 front-ends. NA-EU and NA-AS include at least
// one region of each continent; NA-AS and GL front-ends are pairwise at
// least 20 ms apart (both directions).
func RandomAccessSet(rng *rand.Rand, m *Matrix, typ string) ([]string, error) {
	var pool []string
	var must [][]string
	spread := false
	switch typ {
	case "NA":
		pool = naRegions
	case "NA-EU":
		pool, must = append(slices.Clone(naRegions), euRegions...), [][]string{naRegions, euRegions}
	case "NA-AS":
		pool, must, spread = append(slices.Clone(naRegions), asRegions...), [][]string{naRegions, asRegions}, true
	case "GL":
		pool, spread = AzureRegions(m), true
	default:
		return nil, fmt.Errorf("%w: unknown access-set type %q (want NA, NA-EU, NA-AS or GL)", ErrBadProblem, typ)
	}
	for _, r := range pool {
		if m.Index(r) < 0 {
			return nil, fmt.Errorf("%w: the matrix lacks region %q", ErrBadProblem, r)
		}
	}
	far := func(a, b string) bool {
		i, j := m.Index(a), m.Index(b)
		return m.RTT[i][j] >= 20 && m.RTT[j][i] >= 20
	}
	for range 10000 {
		n := 3 + rng.IntN(3)
		perm := rng.Perm(len(pool))
		var set []string
		for _, i := range perm {
			if len(set) == n {
				break
			}
			ok := true
			if spread {
				for _, s := range set {
					if !far(s, pool[i]) {
						ok = false
						break
					}
				}
			}
			if ok {
				set = append(set, pool[i])
			}
		}
		if len(set) < n {
			continue
		}
		ok := true
		for _, group := range must {
			hit := false
			for _, s := range set {
				hit = hit || slices.Contains(group, s)
			}
			ok = ok && hit
		}
		if ok {
			sort.Strings(set)
			return set, nil
		}
	}
	return nil, fmt.Errorf("geo: could not draw a %s access set", typ)
}

// CampaignOptions configures the §5.1 campaign.
type CampaignOptions struct {
	Sets     int      // access sets per type (default 200)
	Seed     uint64   // random seed for the access sets
	Types    []string // default AccessTypes
	Workers  int      // default runtime.NumCPU()
	Gap      GapOptions
	F        int     // failures tolerated (the paper: 1)
	Matrix   *Matrix // nil: Default()
	Progress func(done, total int)
}

// CampaignResult holds every access set's result by type, the median
// GapVolume per type and approach (Table 1), and the Figure 9 summary per
// type.
type CampaignResult struct {
	Sets    map[string][]GapResult        `json:"sets"`
	Median  map[string]map[string]float64 `json:"median_gap"`
	Summary map[string]Summary            `json:"summary"`
}

// Campaign draws Sets access sets of each type and computes their
// GapVolume in parallel.
func Campaign(ctx context.Context, o CampaignOptions) (CampaignResult, error) {
	if o.Sets <= 0 {
		o.Sets = 200
	}
	if len(o.Types) == 0 {
		o.Types = AccessTypes
	}
	if o.Workers <= 0 {
		o.Workers = runtime.NumCPU()
	}
	m := o.Matrix
	if m == nil {
		m = Default()
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	type job struct {
		typ    string
		i      int
		access []string
	}
	var jobs []job
	for _, t := range o.Types {
		for i := range o.Sets {
			a, err := RandomAccessSet(rng, m, t)
			if err != nil {
				return CampaignResult{}, err
			}
			jobs = append(jobs, job{t, i, a})
		}
	}
	res := CampaignResult{Sets: map[string][]GapResult{}, Median: map[string]map[string]float64{}, Summary: map[string]Summary{}}
	for _, t := range o.Types {
		res.Sets[t] = make([]GapResult, o.Sets)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	ch := make(chan job)
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				r, err := GapVolume(ctx, Problem{Matrix: m, Access: j.access, F: o.F}, o.Gap)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s access set %v: %w", j.typ, j.access, err)
					cancel()
				}
				res.Sets[j.typ][j.i] = r
				done++
				if o.Progress != nil {
					o.Progress(done, len(jobs))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case ch <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if firstErr != nil {
		return res, firstErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	for _, t := range o.Types {
		res.Median[t] = map[string]float64{}
		res.Summary[t] = Summary{}
		for _, a := range []string{string(Pando), EPRSP, string(EPaxos), string(RSPaxos)} {
			var v []float64
			for _, r := range res.Sets[t] {
				v = append(v, r.Gap[a])
			}
			res.Median[t][a] = math.NaN()
			if len(v) > 0 {
				res.Median[t][a] = stats.Median(v)
			}
		}
		for _, r := range res.Sets[t] {
			res.Summary[t].merge(r.Summary)
		}
	}
	return res, nil
}
