package geo

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

const tol = 1e-6

// Check validates the plan against the problem without the search code:
// quorum sizes and intersections, availability and reconstructibility
// after every possible set of F failed sites, each front-end's latencies
// recomputed from its delegate (or leader) and the sites, the maxima, the
// storage overhead, and the problem's bounds. It does not check
// optimality.
func (pl Plan) Check(p Problem) error {
	in, err := newInst(p)
	if err != nil {
		return err
	}
	if pl.Protocol != p.Protocol {
		return fmt.Errorf("geo: plan is for %s, problem for %s", pl.Protocol, p.Protocol)
	}
	if pl.F != p.F {
		return fmt.Errorf("geo: plan tolerates f = %d, problem asks f = %d", pl.F, p.F)
	}
	cidx := map[string]int{}
	for j, c := range in.cand {
		cidx[in.mtx.Names[c]] = j
	}
	sites := make([]int, 0, len(pl.Sites))
	var S uint64
	for _, s := range pl.Sites {
		j, ok := cidx[s]
		if !ok {
			return fmt.Errorf("geo: site %q is not a candidate", s)
		}
		if S&(1<<j) != 0 {
			return fmt.Errorf("geo: site %q listed twice", s)
		}
		S |= 1 << j
		sites = append(sites, j)
	}
	if len(pl.FrontEnds) != len(in.fe) {
		return fmt.Errorf("geo: plan has %d front-ends, problem %d", len(pl.FrontEnds), len(in.fe))
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if pl.Protocol == LowerBound {
		checkLB(in, pl, sites, bad)
	} else {
		checkQuorums(in, pl, sites, bad)
		checkLatencies(in, pl, sites, cidx, bad)
	}
	maxR, maxW := 0.0, 0.0
	for _, fe := range pl.FrontEnds {
		maxR, maxW = math.Max(maxR, fe.ReadMs), math.Max(maxW, fe.WriteMs)
	}
	if math.Abs(maxR-pl.ReadMs) > tol || math.Abs(maxW-pl.WriteMs) > tol {
		bad("maxima %.3f/%.3f ms differ from the front-ends' %.3f/%.3f ms", pl.ReadMs, pl.WriteMs, maxR, maxW)
	}
	if pl.ReadMs > in.rb+tol || pl.WriteMs > in.wb+tol || pl.Storage > in.sb*(1+1e-9) {
		bad("plan (read %.3f ms, write %.3f ms, storage %.3f) exceeds the bounds", pl.ReadMs, pl.WriteMs, pl.Storage)
	}
	return errors.Join(errs...)
}

// checkQuorums verifies §3.4 / appendix A (and the other protocols'
// rules) on the actual site set, failure set by failure set.
func checkQuorums(in *inst, pl Plan, sites []int, bad func(string, ...any)) {
	n, k, f := len(sites), pl.K, pl.F
	if k < 1 || k+pl.R != n {
		bad("k = %d, r = %d but %d sites", k, pl.R, n)
		return
	}
	if want := float64(n) / float64(k); math.Abs(pl.Storage-want) > tol {
		bad("storage %.3f, want n/k = %.3f", pl.Storage, want)
	}
	a, b, w := pl.Q1a, pl.Q1b, pl.Q2
	for _, q := range []int{a, b, w} {
		if q < 1 || q > n {
			bad("quorum size %d outside 1..%d", q, n)
			return
		}
	}
	// Any two subsets of sizes x and y of n sites share at least
	// max(0, x+y-n) sites, and some pair shares exactly that many.
	meet := func(x, y int) int { return max(0, x+y-n) }
	switch pl.Protocol {
	case Pando:
		if meet(a, w) < 1 || meet(b, w) < k || meet(w, w) < k {
			bad("pando quorums %d/%d/%d over %d sites: 1a∩2 = %d (need 1), 1b∩2 = %d, 2∩2 = %d (need k = %d)",
				a, b, w, n, meet(a, w), meet(b, w), meet(w, w), k)
		}
		if a < k || a < f+1 || b < f+k || w < f+k {
			bad("pando quorum sizes %d/%d/%d below max(k, f+1) / f+k / f+k", a, b, w)
		}
	case EPaxos:
		if k != 1 || a < f+1 || meet(a, w) < 1 || meet(w, w) < 1 || w < epaxosFast(n) {
			bad("epaxos quorums R = %d, W = %d over %d replicas", a, w, n)
		}
	case RSPaxos:
		if a != w || b != w || meet(w, w) < k || w < f+k {
			bad("rs-paxos quorum %d over %d sites with k = %d", w, n, k)
		}
	case MultiPaxos:
		if k != 1 || a != w || w != n/2+1 {
			bad("multi-paxos quorum %d over %d replicas", w, n)
		}
	}
	// After every set of f failures, some Phase 1b and some Phase 2 quorum
	// is fully available, and any such surviving quorum holds at least k
	// distinct splits (one split per site), so it can rebuild the object.
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if f <= n {
		combos(idx, f, func(x uint64) {
			alive := n - pc(x)
			for _, q := range []int{b, w} {
				if alive < q {
					bad("after failing sites %b only %d of %d sites are up: no quorum of %d", x, alive, n, q)
				} else if q < k {
					bad("a quorum of %d sites holds fewer than k = %d splits", q, k)
				}
			}
		})
	}
}

// checkLatencies recomputes every front-end's latencies from the sites,
// its stated delegate, and the model, and checks the delegate is the best.
func checkLatencies(in *inst, pl Plan, sites []int, cidx map[string]int, bad func(string, ...any)) {
	c := cfg{k: pl.K, n: len(sites), q1a: pl.Q1a, q1b: pl.Q1b, q2: pl.Q2}
	nth := func(q int, val func(j int) float64) float64 {
		v := make([]float64, 0, len(sites))
		for _, j := range sites {
			v = append(v, val(j))
		}
		slices.Sort(v)
		if q < 1 || q > len(v) {
			return math.Inf(1)
		}
		return v[q-1]
	}
	leader := -1
	if pl.Protocol == MultiPaxos {
		l, ok := cidx[pl.Leader]
		if !ok || !slices.Contains(sites, l) {
			bad("leader %q is not a site", pl.Leader)
			return
		}
		leader = l
	}
	// write(D) for delegate D (-1: the front-end itself).
	write := func(F, D int) float64 {
		rd, cf := in.rd[F], in.cf[F]
		switch pl.Protocol {
		case Pando:
			if D < 0 {
				return nth(c.q1a, func(j int) float64 { return rd[j] }) + nth(c.q2, func(j int) float64 { return rd[j] })
			}
			t1 := math.Max(rd[D]/2, nth(c.q1a, func(j int) float64 { return (rd[j] + in.cc[j][D]) / 2 }))
			return t1 + nth(c.q2, func(j int) float64 { return (in.cc[D][j] + cf[j]) / 2 })
		case EPaxos:
			if D < 0 {
				return math.Inf(1)
			}
			return rd[D] + nth(c.q2, func(j int) float64 { return in.cc[D][j] })
		case RSPaxos:
			if D < 0 {
				return 2 * nth(c.q2, func(j int) float64 { return rd[j] })
			}
			return rd[D] + 2*nth(c.q2, func(j int) float64 { return in.cc[D][j] })
		case MultiPaxos:
			return rd[leader] + nth(c.q2, func(j int) float64 { return in.cc[leader][j] })
		}
		return math.NaN()
	}
	for F, fe := range pl.FrontEnds {
		if fe.Name != in.mtx.Names[in.fe[F]] {
			bad("front-end %d is %q, want %q", F, fe.Name, in.mtx.Names[in.fe[F]])
			continue
		}
		var read float64
		if pl.Protocol == MultiPaxos {
			read = write(F, leader)
		} else {
			read = nth(c.q1a, func(j int) float64 { return in.rd[F][j] })
		}
		D := -1
		if fe.Delegate != "" {
			d, ok := cidx[fe.Delegate]
			if !ok || !slices.Contains(sites, d) {
				bad("%s: delegate %q is not a site", fe.Name, fe.Delegate)
				continue
			}
			D = d
		}
		w := write(F, D)
		if math.Abs(read-fe.ReadMs) > tol || math.Abs(w-fe.WriteMs) > tol {
			bad("%s: stated read/write %.3f/%.3f ms, recomputed %.3f/%.3f ms", fe.Name, fe.ReadMs, fe.WriteMs, read, w)
		}
		if pl.Protocol != MultiPaxos {
			for _, d := range append([]int{-1}, sites...) {
				if alt := write(F, d); alt < w-tol {
					bad("%s: delegate %d gives %.3f ms, better than the plan's %.3f ms", fe.Name, d, alt, w)
				}
			}
		}
	}
}

// checkLB verifies a lower-bound plan: the fractions, quorum sizes,
// copies per quorum after f failures, intersections, latencies.
func checkLB(in *inst, pl Plan, sites []int, bad func(string, ...any)) {
	f := pl.F
	if len(pl.Fractions) != len(sites) {
		bad("%d fractions for %d sites", len(pl.Fractions), len(sites))
		return
	}
	frac := map[string]float64{}
	sum := 0.0
	for i, s := range pl.Sites {
		c := pl.Fractions[i]
		if c < -tol || c > 1+tol {
			bad("fraction %.4f at %s outside [0, 1]", c, s)
		}
		frac[s] = c
		sum += c
	}
	if math.Abs(sum-pl.Storage) > 1e-4 {
		bad("fractions sum to %.4f, storage says %.4f", sum, pl.Storage)
	}
	if len(sites) < 2*f+1 {
		bad("%d sites, need 2f+1 = %d", len(sites), 2*f+1)
	}
	set := func(q []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range q {
			if _, ok := frac[s]; !ok {
				bad("quorum member %q is not a site", s)
			}
			m[s] = true
		}
		return m
	}
	for F, fe := range pl.FrontEnds {
		R, W := set(fe.ReadQuorum), set(fe.WriteQuorum)
		if len(R) < f+1 {
			bad("%s: read quorum of %d sites, need f+1", fe.Name, len(R))
		}
		cr := 0.0
		maxR, maxW := 0.0, 0.0
		var wf []float64
		for s := range R {
			cr += frac[s]
			maxR = math.Max(maxR, in.rd[F][in.indexOfCand(s)])
		}
		for s := range W {
			wf = append(wf, frac[s])
			maxW = math.Max(maxW, in.rd[F][in.indexOfCand(s)])
		}
		if cr < 1-1e-6 {
			bad("%s: read quorum holds %.4f copies", fe.Name, cr)
		}
		slices.Sort(wf)
		cw := 0.0
		for i := 0; i < len(wf)-f; i++ {
			cw += wf[i]
		}
		if len(wf) <= f || cw < 1-1e-6 {
			bad("%s: write quorum holds %.4f copies after its f largest shares fail", fe.Name, cw)
		}
		if math.Abs(maxR-fe.ReadMs) > tol || math.Abs(maxW-fe.WriteMs) > tol {
			bad("%s: stated %.3f/%.3f ms, quorums give %.3f/%.3f ms", fe.Name, fe.ReadMs, fe.WriteMs, maxR, maxW)
		}
		for G, ge := range pl.FrontEnds {
			W2 := set(ge.WriteQuorum)
			if !meets(R, W2) || (F != G && !meets(W, W2)) {
				bad("quorums of %s and %s do not intersect", fe.Name, ge.Name)
			}
		}
	}
}

func meets(a, b map[string]bool) bool {
	for s := range a {
		if b[s] {
			return true
		}
	}
	return false
}

func (in *inst) indexOfCand(name string) int {
	for j, c := range in.cand {
		if in.mtx.Names[c] == name {
			return j
		}
	}
	return -1
}
