package geo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The brute force below is written from the paper's rules, not from the
// planner: it enumerates every site set, every quorum size (and k) that
// the rules allow, evaluates each front-end's latency with every possible
// delegate by sorting, and keeps the achieved (read, write, storage)
// points. A query's optimum is then a scan of those points.

type point struct{ read, write, storage float64 }

// randomInstance returns a matrix of nc candidate sites c0.. and extra
// regions x0.., planar (triangle inequality holds) or noisy asymmetric.
func randomInstance(rng *rand.Rand, nc, nx int, metric bool) *Matrix {
	n := nc + nx
	names := make([]string, n)
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range n {
		if i < nc {
			names[i] = fmt.Sprintf("c%d", i)
		} else {
			names[i] = fmt.Sprintf("x%d", i-nc)
		}
		xs[i], ys[i] = rng.Float64()*100, rng.Float64()*100
	}
	rtt := make([][]float64, n)
	for i := range n {
		rtt[i] = make([]float64, n)
		for j := range n {
			if i == j {
				continue
			}
			d := 2 * math.Hypot(xs[i]-xs[j], ys[i]-ys[j])
			if !metric {
				d = math.Round(d + rng.Float64()*30) // integers, like the real data
			}
			rtt[i][j] = d
		}
	}
	if metric { // make it exactly symmetric
		for i := range n {
			for j := range i {
				rtt[i][j] = rtt[j][i]
			}
		}
	}
	m, err := NewMatrix(names, rtt)
	if err != nil {
		panic(err)
	}
	return m
}

func nthOf(v []float64, q int) float64 {
	if q < 1 || q > len(v) {
		return math.Inf(1)
	}
	w := slices.Clone(v)
	slices.Sort(w)
	return w[q-1]
}

// bruteRules are the size rules, restated from the paper (§2.3, §3.1,
// §3.4, appendix A) for the test.
func bruteRules(p Protocol, n, k, a, b, w, f int) bool {
	switch p {
	case Pando:
		// 1a∩2 ≥ 1, 1b∩2 ≥ k, 2∩2 ≥ k; 1a ≥ max(k, f+1); 1b, 2 ≥ f+k;
		// a 1b and a 2 quorum left after f failures.
		return a+w > n && b+w-n >= k && 2*w-n >= k && a >= k && a >= f+1 &&
			b >= f+k && w >= f+k && b <= n-f && w <= n-f
	case EPaxos:
		F := n / 2
		return k == 1 && n >= 2*f+1 && a >= f+1 && a+w > n && 2*w > n &&
			w >= F+(F+1)/2 && a <= n-f && w <= n-f && w >= f+1
	case RSPaxos:
		return a == w && b == w && 2*w-n >= k && w >= k+f && w <= n-f
	case MultiPaxos:
		return k == 1 && n >= 2*f+1 && a == w && b == w && w == n/2+1
	}
	return false
}

// brutePoints enumerates every deployment of p.
func brutePoints(m *Matrix, access, cands []string, p Protocol, f, kmax int) []point {
	idx := func(s string) int { return m.Index(s) }
	rtt := func(a, b int) float64 { return m.RTT[a][b] }
	var out []point
	nc := len(cands)
	for S := 1; S < 1<<nc; S++ {
		var sites []int
		for j := range nc {
			if S&(1<<j) != 0 {
				sites = append(sites, idx(cands[j]))
			}
		}
		n := len(sites)
		for k := 1; k <= min(n, kmax); k++ {
			for a := 1; a <= n; a++ {
				for b := 1; b <= n; b++ {
					for w := 1; w <= n; w++ {
						if !bruteRules(p, n, k, a, b, w, f) {
							continue
						}
						// q1b does not enter latency: skip duplicates.
						if p == Pando && b != max(f+k, n+k-w) {
							continue
						}
						pt := point{storage: float64(n) / float64(k)}
						if p == MultiPaxos {
							best := point{read: math.Inf(1), write: math.Inf(1), storage: pt.storage}
							for _, L := range sites {
								worst := 0.0
								for _, fe := range access {
									F := idx(fe)
									v := make([]float64, 0, n)
									for _, s := range sites {
										v = append(v, rtt(F, L)+rtt(L, s))
									}
									worst = math.Max(worst, nthOf(v, w))
								}
								if worst < best.read {
									best.read, best.write = worst, worst
								}
							}
							out = append(out, best)
							continue
						}
						for _, fe := range access {
							F := idx(fe)
							var rd []float64
							for _, s := range sites {
								rd = append(rd, rtt(F, s))
							}
							read := nthOf(rd, a)
							write := math.Inf(1)
							switch p {
							case Pando:
								write = nthOf(rd, a) + nthOf(rd, w)
								for _, D := range sites {
									var p1, p2 []float64
									for _, s := range sites {
										p1 = append(p1, rtt(F, s)/2+rtt(s, D)/2)
										p2 = append(p2, rtt(D, s)/2+rtt(s, F)/2)
									}
									write = math.Min(write, math.Max(rtt(F, D)/2, nthOf(p1, a))+nthOf(p2, w))
								}
							case EPaxos, RSPaxos:
								rounds := 1.0
								if p == RSPaxos {
									rounds = 2
									write = 2 * nthOf(rd, w)
								}
								for _, D := range sites {
									var v []float64
									for _, s := range sites {
										v = append(v, rounds*rtt(D, s))
									}
									write = math.Min(write, rtt(F, D)+nthOf(v, w))
								}
							}
							pt.read = math.Max(pt.read, read)
							pt.write = math.Max(pt.write, write)
						}
						out = append(out, pt)
					}
				}
			}
		}
	}
	return out
}

// bruteBest scans the points for a query; ok is false if none fits.
func bruteBest(pts []point, obj Objective, rb, wb, sb float64) (float64, bool) {
	best, ok := math.Inf(1), false
	for _, p := range pts {
		if p.read > bound(rb) || p.write > bound(wb) || p.storage > bound(sb)*(1+1e-12) ||
			math.IsInf(p.read, 1) || math.IsInf(p.write, 1) {
			continue
		}
		v := map[Objective]float64{MinRead: p.read, MinWrite: p.write, MinStorage: p.storage}[obj]
		if v < best {
			best, ok = v, true
		}
	}
	return best, ok
}

func objValue(pl Plan, obj Objective) float64 {
	return map[Objective]float64{MinRead: pl.ReadMs, MinWrite: pl.WriteMs, MinStorage: pl.Storage}[obj]
}

func TestSolveMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	protos := []Protocol{Pando, EPaxos, RSPaxos, MultiPaxos}
	queries, feasible := 0, 0
	for inst := range 8 {
		metric := inst%2 == 0
		m := randomInstance(rng, 8, 3, metric)
		var cands []string
		for i := range 8 {
			cands = append(cands, fmt.Sprintf("c%d", i))
		}
		// 2 or 3 front-ends, some colocated with candidate sites.
		pool := []string{"x0", "x1", "x2", "c1", "c5"}
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		access := pool[:2+inst%2]
		f := 1
		if inst == 7 {
			f = 2
		}
		kmax := 3
		for _, proto := range protos {
			pts := brutePoints(m, access, cands, proto, f, kmax)
			for q := range 9 {
				obj := []Objective{MinRead, MinWrite, MinStorage}[q%3]
				rb, wb, sb := 40+rng.Float64()*200, 80+rng.Float64()*400, []float64{0, 1.5, 2, 3, 4}[rng.IntN(5)]
				switch obj {
				case MinRead:
					rb = 0
				case MinWrite:
					wb = 0
				case MinStorage:
					sb = 0
				}
				p := Problem{Matrix: m, Access: access, Candidates: cands, F: f, ReadBound: rb, WriteBound: wb,
					StorageBound: sb, Objective: obj, Protocol: proto, MaxSplits: kmax}
				want, ok := bruteBest(pts, obj, rb, wb, sb)
				pl, err := Solve(context.Background(), p)
				queries++
				if !ok {
					if !errors.Is(err, ErrInfeasible) {
						t.Errorf("instance %d %s %s r≤%.1f w≤%.1f s≤%g: brute force finds nothing, Solve: %+v, %v", inst, proto, obj, rb, wb, sb, pl, err)
					}
					continue
				}
				feasible++
				if err != nil {
					t.Errorf("instance %d %s %s r≤%.1f w≤%.1f s≤%g: brute force %.4f, Solve: %v", inst, proto, obj, rb, wb, sb, want, err)
					continue
				}
				if got := objValue(pl, obj); math.Abs(got-want) > 1e-9 {
					t.Errorf("instance %d %s %s r≤%.1f w≤%.1f s≤%g: Solve %.4f, brute force %.4f", inst, proto, obj, rb, wb, sb, got, want)
				}
				if err := pl.Check(p); err != nil {
					t.Errorf("instance %d %s %s: plan fails its check: %v", inst, proto, obj, err)
				}
			}
		}
	}
	if feasible < queries/3 || feasible == queries {
		t.Errorf("only %d of %d queries feasible: the test does not exercise both outcomes", feasible, queries)
	}
	t.Logf("%d queries, %d feasible", queries, feasible)
}

// bruteLBPoints enumerates every choice of a read and a write quorum per
// front-end (any subsets of the candidates) that meets the bound's
// combinatorial rules, with the storage of its best fractions (the LP,
// tested on its own in TestCoverLPAgainstGrid).
func bruteLBPoints(m *Matrix, access, cands []string, f int) []point {
	nc := len(cands)
	rtt := func(fe string, j int) float64 { return m.RTT[m.Index(fe)][m.Index(cands[j])] }
	nF := len(access)
	var out []point
	q := make([]int, 2*nF) // R_0, W_0, R_1, W_1, ... as bitmasks
	var rec func(i int)
	rec = func(i int) {
		if i < 2*nF {
			for x := 1; x < 1<<nc; x++ {
				q[i] = x
				rec(i + 1)
			}
			return
		}
		var rows []uint64
		pt := point{}
		for F := range nF {
			R, W := q[2*F], q[2*F+1]
			if pc(uint64(R)) < f+1 || pc(uint64(W)) < f+1 {
				return
			}
			for G := range nF {
				if R&q[2*G+1] == 0 || (F != G && W&q[2*G+1] == 0) {
					return
				}
			}
			rows = append(rows, uint64(R))
			for X := 0; X < 1<<nc; X++ {
				if X&W == X && pc(uint64(X)) == f {
					rows = append(rows, uint64(W&^X))
				}
			}
			for j := range nc {
				if R&(1<<j) != 0 {
					pt.read = math.Max(pt.read, rtt(access[F], j))
				}
				if W&(1<<j) != 0 {
					pt.write = math.Max(pt.write, rtt(access[F], j))
				}
			}
		}
		v, _, err := coverLP(rows, nc)
		if err != nil {
			panic(err)
		}
		pt.storage = v
		out = append(out, pt)
	}
	rec(0)
	return out
}

func TestLowerBoundMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	checked := 0
	for inst := range 4 {
		nc, access := 6, []string{"x0"}
		if inst >= 2 {
			nc, access = 4, []string{"x0", "x1"}
		}
		m := randomInstance(rng, nc, 2, inst%2 == 0)
		var cands []string
		for i := range nc {
			cands = append(cands, fmt.Sprintf("c%d", i))
		}
		pts := bruteLBPoints(m, access, cands, 1)
		for q := range 12 {
			obj := []Objective{MinRead, MinWrite, MinStorage}[q%3]
			rb, wb, sb := 40+rng.Float64()*150, 60+rng.Float64()*200, []float64{0, 1.5, 2, 3}[rng.IntN(4)]
			switch obj {
			case MinRead:
				rb = 0
			case MinWrite:
				wb = 0
			case MinStorage:
				sb = 0
			}
			want, ok := bruteBest(pts, obj, rb, wb, sb)
			p := Problem{Matrix: m, Access: access, Candidates: cands, F: 1, ReadBound: rb, WriteBound: wb,
				StorageBound: sb, Objective: obj, Protocol: LowerBound}
			pl, err := Solve(context.Background(), p)
			if !ok {
				if !errors.Is(err, ErrInfeasible) {
					t.Errorf("instance %d %s: brute force finds nothing, Solve %+v %v", inst, obj, pl, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("instance %d %s r≤%.1f w≤%.1f s≤%g: brute force %.4f, Solve: %v", inst, obj, rb, wb, sb, want, err)
				continue
			}
			checked++
			if got := objValue(pl, obj); math.Abs(got-want) > 1e-6 {
				t.Errorf("instance %d %s r≤%.1f w≤%.1f s≤%g: Solve %.4f, brute force %.4f", inst, obj, rb, wb, sb, got, want)
			}
			if err := pl.Check(p); err != nil {
				t.Errorf("instance %d %s: %v", inst, obj, err)
			}
		}
	}
	if checked < 15 {
		t.Errorf("only %d feasible comparisons", checked)
	}
}
