package geo

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The lower bound of §2.3. Reads and writes take one round trip from the
// front-end to each site of its read (write) quorum; any fraction c_s in
// [0, 1] of the object may sit at any site; quorums of different
// front-ends may differ in size. Constraints: at least 2f+1 sites; every
// read quorum has at least f+1 sites and holds at least one copy; every
// write quorum holds at least one copy after any f of its sites fail;
// every read quorum meets every write quorum and write quorums meet each
// other. A site with c_s = 0 may still be a quorum member (it stores
// metadata only), as in the paper's formulation.
//
// Given latency thresholds r and w, enlarging a quorum never violates a
// constraint, so each front-end may as well use every candidate within r
// (for reads) and within w (for writes), and every candidate is a site.
// What remains is a linear program in the fractions: minimise Σ c_s. Its
// optimum is the minimum storage for (r, w); it is monotone in r and w,
// and the optimal latency is one of the matrix's round trips, so the
// minimum read (write) latency under the other bounds is found exactly by
// binary search over the sorted round trips.

// lbStorage returns the minimum storage for thresholds r and w, the
// fractions, and whether (r, w) is feasible at all.
func (in *inst) lbStorage(r, w float64) (float64, []float64, bool, error) {
	f := in.p.F
	nF := len(in.fe)
	rm := make([]uint64, nF)
	wm := make([]uint64, nF)
	for F := range nF {
		for j := range in.m {
			if in.rd[F][j] <= r {
				rm[F] |= 1 << j
			}
			if in.rd[F][j] <= w {
				wm[F] |= 1 << j
			}
		}
		if pc(rm[F]) < f+1 || pc(wm[F]) < f+1 {
			return 0, nil, false, nil
		}
	}
	for F := range nF {
		for G := range nF {
			if rm[F]&wm[G] == 0 || (F != G && wm[F]&wm[G] == 0) {
				return 0, nil, false, nil
			}
		}
	}
	// Covering rows: each read quorum, and each write quorum minus any f
	// of its sites.
	var rows []uint64
	rows = append(rows, rm...)
	for F := range nF {
		var idx []int
		for x := wm[F]; x != 0; x &= x - 1 {
			idx = append(idx, bits.TrailingZeros64(x))
		}
		if binom(len(idx), f) > 100000 {
			return 0, nil, false, fmt.Errorf("%w: the lower bound with f = %d over %d sites is too large to enumerate", ErrBadProblem, f, len(idx))
		}
		combos(idx, f, func(x uint64) { rows = append(rows, wm[F]&^x) })
	}
	rows = minimalRows(rows)
	v, c, err := coverLP(rows, in.m)
	if err != nil {
		return 0, nil, false, err
	}
	return v, c, true, nil
}

func binom(n, k int) float64 {
	r := 1.0
	for i := range k {
		r = r * float64(n-i) / float64(i+1)
	}
	return r
}

// combos calls fn with every k-subset of idx as a bitmask.
func combos(idx []int, k int, fn func(uint64)) {
	var rec func(start, left int, acc uint64)
	rec = func(start, left int, acc uint64) {
		if left == 0 {
			fn(acc)
			return
		}
		for i := start; i <= len(idx)-left; i++ {
			rec(i+1, left-1, acc|1<<idx[i])
		}
	}
	rec(0, k, 0)
}

// minimalRows drops duplicate rows and rows that contain another row
// (their covering constraint is implied).
func minimalRows(rows []uint64) []uint64 {
	slices.SortFunc(rows, func(a, b uint64) int { return pc(a) - pc(b) })
	var out []uint64
	for _, r := range rows {
		implied := false
		for _, q := range out {
			if r&q == q {
				implied = true
				break
			}
		}
		if !implied {
			out = append(out, r)
		}
	}
	return out
}

// coverLP solves min Σ c_j subject to Σ_{j in row} c_j ≥ 1 for every row
// and 0 ≤ c_j ≤ 1, over m variables, through its dual
//
//	max Σ y_i − Σ z_j  s.t.  Σ_{i: j in row i} y_i − z_j ≤ 1,  y, z ≥ 0,
//
// whose origin is feasible, with the simplex method and Bland's rule (no
// cycling). The primal solution is read off the dual's final objective
// row. Every row must be non-empty (then the primal is feasible).
func coverLP(rows []uint64, m int) (float64, []float64, error) {
	p := len(rows)
	nc := p + m + m // y, z, slacks
	T := make([][]float64, m+1)
	for j := range m {
		T[j] = make([]float64, nc+1)
		for i, r := range rows {
			if r&(1<<j) != 0 {
				T[j][i] = 1
			}
		}
		T[j][p+j] = -1
		T[j][p+m+j] = 1
		T[j][nc] = 1
	}
	obj := make([]float64, nc+1)
	for i := range p {
		obj[i] = -1
	}
	for j := range m {
		obj[p+j] = 1
	}
	T[m] = obj
	basis := make([]int, m)
	for j := range m {
		basis[j] = p + m + j
	}
	const eps = 1e-9
	for iter := 0; ; iter++ {
		if iter > 100000 {
			return 0, nil, fmt.Errorf("geo: lower-bound LP did not converge")
		}
		e := -1
		for c := range nc {
			if obj[c] < -eps {
				e = c
				break
			}
		}
		if e < 0 {
			break
		}
		l := -1
		best := math.Inf(1)
		for r := range m {
			if T[r][e] > eps {
				q := T[r][nc] / T[r][e]
				if q < best-eps || (math.Abs(q-best) <= eps && basis[r] < basis[l]) {
					best, l = q, r
				}
			}
		}
		if l < 0 {
			return 0, nil, fmt.Errorf("geo: lower-bound LP is infeasible (an empty quorum)")
		}
		pv := T[l][e]
		for c := range T[l] {
			T[l][c] /= pv
		}
		for r := range T {
			if r != l && T[r][e] != 0 {
				k := T[r][e]
				for c := range T[r] {
					T[r][c] -= k * T[l][c]
				}
			}
		}
		basis[l] = e
	}
	c := make([]float64, m)
	for j := range m {
		c[j] = math.Min(1, math.Max(0, obj[p+m+j]))
	}
	return obj[nc], c, nil
}

// solveLB answers the problem for the lower bound.
func (in *inst) solveLB(ctx context.Context) (Plan, error) {
	switch in.p.Objective {
	case MinStorage:
		v, c, ok, err := in.lbStorage(in.rb, in.wb)
		if err != nil {
			return Plan{}, err
		}
		if !ok || v > in.sb*(1+1e-9) {
			return Plan{}, ErrInfeasible
		}
		return in.lbPlan(in.rb, in.wb, v, c), nil
	case MinRead, MinWrite:
		var vals []float64
		for F := range in.fe {
			vals = append(vals, in.rd[F]...)
		}
		vals = distinct(vals)
		fixed := in.wb
		if in.p.Objective == MinWrite {
			fixed = in.rb
		}
		own := in.rb
		if in.p.Objective == MinWrite {
			own = in.wb
		}
		var vals2 []float64
		for _, v := range vals {
			if v <= own {
				vals2 = append(vals2, v)
			}
		}
		feasible := func(t float64) (bool, float64, []float64, error) {
			if ctx.Err() != nil {
				return false, 0, nil, ctx.Err()
			}
			r, w := t, fixed
			if in.p.Objective == MinWrite {
				r, w = fixed, t
			}
			v, c, ok, err := in.lbStorage(r, w)
			return ok && v <= in.sb*(1+1e-9), v, c, err
		}
		lo, hi := 0, len(vals2) // answer index in [lo, hi); hi = none
		for lo < hi {
			mid := (lo + hi) / 2
			ok, _, _, err := feasible(vals2[mid])
			if err != nil {
				return Plan{}, err
			}
			if ok {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if lo == len(vals2) {
			return Plan{}, ErrInfeasible
		}
		t := vals2[lo]
		_, v, c, err := feasible(t)
		if err != nil {
			return Plan{}, err
		}
		if in.p.Objective == MinRead {
			return in.lbPlan(t, fixed, v, c), nil
		}
		return in.lbPlan(fixed, t, v, c), nil
	}
	return Plan{}, fmt.Errorf("%w: objective %q for the lower bound", ErrBadProblem, in.p.Objective)
}

func (in *inst) lbPlan(r, w, v float64, c []float64) Plan {
	pl := Plan{Protocol: LowerBound, F: in.p.F, Storage: v}
	name := func(j int) string { return in.mtx.Names[in.cand[j]] }
	for j := range in.m {
		pl.Sites = append(pl.Sites, name(j))
		pl.Fractions = append(pl.Fractions, c[j])
	}
	for F := range in.fe {
		fe := FrontEnd{Name: in.mtx.Names[in.fe[F]], ReadQuorum: []string{}, WriteQuorum: []string{}}
		for j := range in.m {
			if in.rd[F][j] <= r {
				fe.ReadQuorum = append(fe.ReadQuorum, name(j))
				fe.ReadMs = math.Max(fe.ReadMs, in.rd[F][j])
			}
			if in.rd[F][j] <= w {
				fe.WriteQuorum = append(fe.WriteQuorum, name(j))
				fe.WriteMs = math.Max(fe.WriteMs, in.rd[F][j])
			}
		}
		pl.FrontEnds = append(pl.FrontEnds, fe)
		pl.ReadMs = math.Max(pl.ReadMs, fe.ReadMs)
		pl.WriteMs = math.Max(pl.WriteMs, fe.WriteMs)
	}
	return pl
}
