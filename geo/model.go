package geo

import (
	"math"
	"math/bits"
)

// cfg is a protocol's sizes: k splits over n sites, and quorum sizes.
// EPaxos: k = 1, q1a = R, q2 = W (fast quorum). RS-Paxos: q1a = q1b = q2
// = Q. Multi-Paxos: k = 1, q1a = q2 = Q (the leader's quorum).
type cfg struct{ k, n, q1a, q1b, q2 int }

func (c cfg) storage() float64 { return float64(c.n) / float64(c.k) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// epaxosFast is EPaxos's fast-path quorum for N replicas: F + ⌊(F+1)/2⌋
// with F = ⌊N/2⌋ (Moraru et al., SOSP 2013; the Pando paper's MIP).
func epaxosFast(n int) int { F := n / 2; return F + (F+1)/2 }

// validPando reports whether sizes obey §3.4 and appendix A for f failures.
func validPando(c cfg, f int) bool {
	k, n := c.k, c.n
	return k >= 1 && n-k >= 2*f &&
		c.q1a >= k && c.q1a >= f+1 && c.q1a <= n &&
		c.q1b >= f+k && c.q2 >= f+k &&
		c.q1a+c.q2-n >= 1 && // Phase 1a ∩ Phase 2 ≥ 1 site
		c.q1b+c.q2-n >= k && // Phase 1b ∩ Phase 2 ≥ k sites
		2*c.q2-n >= k && // Phase 2 ∩ Phase 2 ≥ k sites
		c.q1b <= n-f && c.q2 <= n-f // a 1b and a 2 quorum survive f failures
}

func validEPaxos(c cfg, f int) bool {
	n, r, w := c.n, c.q1a, c.q2
	return c.k == 1 && n >= 2*f+1 && r >= f+1 && w >= f+1 &&
		r+w >= n+1 && 2*w >= n+1 && w >= epaxosFast(n) &&
		r <= n-f && w <= n-f && c.q1b == r
}

func validRSPaxos(c cfg, f int) bool {
	k, n, q := c.k, c.n, c.q2
	return k >= 1 && n-k >= 2*f && q >= k+f && 2*q-n >= k && q <= n-f &&
		c.q1a == q && c.q1b == q
}

func validMultiPaxos(c cfg, f int) bool {
	return c.k == 1 && c.n >= 2*f+1 && c.q2 == c.n/2+1 && c.q1a == c.q2 && c.q1b == c.q2 && c.q2 <= c.n-f
}

func valid(p Protocol, c cfg, f int) bool {
	switch p {
	case Pando:
		return validPando(c, f)
	case EPaxos:
		return validEPaxos(c, f)
	case RSPaxos:
		return validRSPaxos(c, f)
	case MultiPaxos:
		return validMultiPaxos(c, f)
	}
	return false
}

// configs lists the valid sizes with at most in.m sites and storage within
// the bound. For Pando only the smallest q1a and q1b for each (k, n, q2)
// are listed: latencies fall as quorums shrink and q1b does not enter
// them.
func (in *inst) configs(p Protocol) []cfg {
	f := in.p.F
	var out []cfg
	ok := func(c cfg) bool { return c.storage() <= in.sb*(1+1e-12) && valid(p, c, f) }
	switch p {
	case Pando:
		for k := 1; k <= in.kmax; k++ {
			for n := k + 2*f; n <= in.m; n++ {
				for q2 := f + k; q2 <= n-f; q2++ {
					c := cfg{k: k, n: n, q2: q2}
					c.q1a = max(k, f+1, n+1-q2)
					c.q1b = max(f+k, n+k-q2)
					if ok(c) {
						out = append(out, c)
					}
				}
			}
		}
	case EPaxos:
		for n := 2*f + 1; n <= in.m; n++ {
			for r := f + 1; r <= n-f; r++ {
				w := max(n-r+1, f+1, epaxosFast(n), n/2+1)
				c := cfg{k: 1, n: n, q1a: r, q1b: r, q2: w}
				if ok(c) {
					out = append(out, c)
				}
			}
		}
	case RSPaxos:
		for k := 1; k <= in.kmax; k++ {
			for n := k + 2*f; n <= in.m; n++ {
				q := max(k+f, ceilDiv(n+k, 2))
				c := cfg{k: k, n: n, q1a: q, q1b: q, q2: q}
				if ok(c) {
					out = append(out, c)
				}
			}
		}
	case MultiPaxos:
		for n := 2*f + 1; n <= in.m; n++ {
			q := n/2 + 1
			c := cfg{k: 1, n: n, q1a: q, q1b: q, q2: q}
			if ok(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// feEval is one front-end's latencies in a deployment.
type feEval struct {
	read, write float64
	del         int // delegate / leader candidate index, -1 for the front-end itself
	rq, wq      uint64
}

// kth returns the q-th smallest of val(j) over j in s, and the set of
// the q sites achieving it (ties broken by index). +Inf if |s| < q.
func kth(s uint64, q int, val func(j int) float64) (float64, uint64) {
	if q <= 0 {
		return 0, 0
	}
	var idx [64]int
	var v [64]float64
	n := 0
	for x := s; x != 0; x &= x - 1 {
		j := bits.TrailingZeros64(x)
		idx[n], v[n] = j, val(j)
		n++
	}
	if n < q {
		return math.Inf(1), 0
	}
	var set uint64
	var last float64
	for i := range q { // partial selection sort
		b := i
		for j := i + 1; j < n; j++ {
			if v[j] < v[b] || (v[j] == v[b] && idx[j] < idx[b]) {
				b = j
			}
		}
		v[i], v[b] = v[b], v[i]
		idx[i], idx[b] = idx[b], idx[i]
		set |= 1 << idx[i]
		last = v[i]
	}
	return last, set
}

// eval computes every front-end's read and write latency for sites s and
// sizes c under protocol p (leader is Multi-Paxos's leader). This is the
// latency model of docs/geo.md, evaluated directly.
func (in *inst) eval(p Protocol, s uint64, c cfg, leader int) []feEval {
	out := make([]feEval, len(in.fe))
	for F := range in.fe {
		rd := in.rd[F]
		e := &out[F]
		e.del = -1
		switch p {
		case Pando:
			e.read, e.rq = kth(s, c.q1a, func(j int) float64 { return rd[j] })
			e.write, e.wq = in.pandoWrite(F, s, c, -1)
			for x := s; x != 0; x &= x - 1 {
				D := bits.TrailingZeros64(x)
				if w, wq := in.pandoWrite(F, s, c, D); w < e.write {
					e.write, e.wq, e.del = w, wq, D
				}
			}
		case EPaxos:
			e.read, e.rq = kth(s, c.q1a, func(j int) float64 { return rd[j] })
			e.write = math.Inf(1)
			for x := s; x != 0; x &= x - 1 {
				D := bits.TrailingZeros64(x)
				ccD := in.cc[D]
				w, wq := kth(s, c.q2, func(j int) float64 { return rd[D] + ccD[j] })
				if w < e.write {
					e.write, e.wq, e.del = w, wq, D
				}
			}
		case RSPaxos:
			e.read, e.rq = kth(s, c.q1a, func(j int) float64 { return rd[j] })
			e.write, e.wq = kth(s, c.q2, func(j int) float64 { return 2 * rd[j] })
			for x := s; x != 0; x &= x - 1 {
				D := bits.TrailingZeros64(x)
				ccD := in.cc[D]
				w, wq := kth(s, c.q2, func(j int) float64 { return rd[D] + 2*ccD[j] })
				if w < e.write {
					e.write, e.wq, e.del = w, wq, D
				}
			}
		case MultiPaxos:
			ccL := in.cc[leader]
			v, q := kth(s, c.q2, func(j int) float64 { return rd[leader] + ccL[j] })
			e.read, e.write, e.rq, e.wq, e.del = v, v, q, q, leader
		}
	}
	return out
}

// pandoWrite is front-end F's write latency on sites s with delegate D
// (-1: the front-end runs both phases itself), and its Phase 2 quorum.
// With a delegate, Phase 1 requests go F -> site and the promises go site
// -> D; D starts Phase 2 once it holds q1a promises and F's value; the
// acceptances go site -> F. One-way delays are half round trips.
func (in *inst) pandoWrite(F int, s uint64, c cfg, D int) (float64, uint64) {
	rd, cf := in.rd[F], in.cf[F]
	if D < 0 {
		p1, _ := kth(s, c.q1a, func(j int) float64 { return rd[j] })
		p2, wq := kth(s, c.q2, func(j int) float64 { return rd[j] })
		return p1 + p2, wq
	}
	ccD := in.cc[D]
	p1, _ := kth(s, c.q1a, func(j int) float64 { return (rd[j] + in.cc[j][D]) / 2 })
	t1 := math.Max(rd[D]/2, p1)
	p2, wq := kth(s, c.q2, func(j int) float64 { return (ccD[j] + cf[j]) / 2 })
	return t1 + p2, wq
}

// cost is the monthly dollar cost of sizes c (docs/geo.md, "Cost").
func (in *inst) cost(p Protocol, c cfg) float64 {
	pr, wl := in.p.Prices, in.p.Workload
	if pr == nil {
		return 0
	}
	gb := wl.ObjectKB / 1e6
	var readGB, writeGB, readReq, writeReq float64
	k, n := float64(c.k), float64(c.n)
	switch p {
	case Pando, RSPaxos:
		readGB, readReq = float64(c.q1a)/k*gb, float64(c.q1a)
		writeGB, writeReq = n/k*gb+gb, float64(c.q1a)+n
	case EPaxos:
		readGB, readReq = gb, float64(c.q1a)
		writeGB, writeReq = n*gb+gb, n
	case MultiPaxos:
		readGB, readReq = gb, float64(c.q2)
		writeGB, writeReq = n*gb+gb, n
	}
	return gb*c.storage()*pr.StorageGBMonth +
		wl.ReadsPerMonth*(readGB*pr.TransferGB+readReq*pr.Request) +
		wl.WritesPerMonth*(writeGB*pr.TransferGB+writeReq*pr.Request)
}
