package geo

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The exact search. With quorum sizes fixed, every latency of every
// protocol is monotone in the site set: adding a site never raises an
// order statistic nor removes a delegate. So "is there a site set of at
// most n sites whose read and write latencies are within thresholds?" is
// a covering question over bitmasks: for each front-end, at least q1a
// chosen sites must lie in its read ball, and for at least one option
// (delegate D and Phase 1 finish time t) the chosen sites must put q1a
// sites in the option's Phase 1 ball and q2 in its Phase 2 ball. decide
// answers it exactly by depth-first include/exclude search with two
// prunes (the union of included and undecided sites must still cover
// everything; and it must do so with the slots left). Minimising a latency
// is a descent: find a plan, then ask for one strictly better than it,
// until there is none; minimising storage or cost tries sizes in
// increasing order of the objective.

type opt struct{ need, m1, m2 uint64 }

type cover struct {
	rmask uint64
	opts  []opt
}

type decider struct {
	ctx            context.Context
	covers         []cover
	cr, c1, c2     int
	checkR, checkW bool
	nmax           int
	nodes          int
	err            error
	found          uint64
	// alive[depth][F] lists the options of front-end F that may still be
	// met below this node; an option dead at a node stays dead below it
	// (the bound only falls as sites are decided).
	alive [][][]int32
	reqs  []req // scratch, valid only until the recursive call
}

func pc(x uint64) int { return bits.OnesCount64(x) }

// req is one unsatisfied requirement at a node: at least deficit more
// sites must be chosen among help.
type req struct {
	deficit int
	help    uint64
}

// rec explores the subtree where the sites in I are chosen and those in U
// undecided; doneR and doneW mark front-ends whose read (write)
// requirement I already meets (it stays met below).
func (d *decider) rec(depth int, I, U, doneR, doneW uint64) bool {
	d.nodes++
	if d.nodes&1023 == 0 && d.ctx.Err() != nil {
		d.err = d.ctx.Err()
	}
	if d.err != nil {
		return false
	}
	nI := pc(I)
	slots := d.nmax - nI
	X := I | U
	if depth+1 >= len(d.alive) {
		d.alive = append(d.alive, make([][]int32, len(d.covers)))
	}
	cur := d.alive[depth+1]
	reqs := d.reqs[:0]
	for F := range d.covers {
		cv := &d.covers[F]
		if d.checkR && doneR&(1<<F) == 0 {
			if have := pc(I & cv.rmask); have < d.cr {
				if have+min(slots, pc(U&cv.rmask)) < d.cr {
					return false
				}
				reqs = append(reqs, req{d.cr - have, cv.rmask & U})
			} else {
				doneR |= 1 << F
			}
		}
		if !d.checkW || doneW&(1<<F) != 0 {
			continue
		}
		cur[F] = cur[F][:0]
		met := false
		deficit := math.MaxInt
		var help uint64
		for _, i := range d.alive[depth][F] {
			o := &cv.opts[i]
			h1, h2 := pc(I&o.m1), pc(I&o.m2)
			inI := o.need == 0 || I&o.need != 0
			if inI && h1 >= d.c1 && h2 >= d.c2 {
				met = true
				break
			}
			if !(o.need == 0 || X&o.need != 0) ||
				h1+min(slots, pc(U&o.m1)) < d.c1 || h2+min(slots, pc(U&o.m2)) < d.c2 {
				continue // dead here, hence in the whole subtree
			}
			cur[F] = append(cur[F], i)
			df := max(d.c1-h1, d.c2-h2)
			if !inI {
				df = max(df, 1)
			}
			deficit = min(deficit, df)
			help |= (o.need | o.m1 | o.m2) & U
		}
		if met {
			doneW |= 1 << F
			continue
		}
		if len(cur[F]) == 0 {
			return false
		}
		reqs = append(reqs, req{deficit, help})
	}
	d.reqs = reqs
	if len(reqs) == 0 { // I meets everything
		d.found = I
		return true
	}
	if slots == 0 {
		return false
	}
	// Packing bound: requirements that no common undecided site can help
	// need their deficits summed. Greedy by deficit, largest first.
	slices.SortFunc(reqs, func(a, b req) int { return b.deficit - a.deficit })
	var used uint64
	need := 0
	for _, r := range reqs {
		if r.help&used == 0 {
			used |= r.help
			need += r.deficit
		}
	}
	if need > slots {
		return false
	}
	// Branch on the undecided site that helps the most requirements,
	// weighting each by how few sites can help it; include it first.
	var any uint64
	for _, r := range reqs {
		any |= r.help
	}
	bestScore, b := -1.0, uint64(0)
	for x := any; x != 0; x &= x - 1 {
		bit := x & -x
		sc := 0.0
		for _, r := range reqs {
			if r.help&bit != 0 {
				sc += float64(r.deficit) / float64(pc(r.help))
			}
		}
		if sc > bestScore {
			bestScore, b = sc, bit
		}
	}
	if d.rec(depth+1, I|b, U&^b, doneR, doneW) {
		return true
	}
	return d.rec(depth+1, I, U&^b, doneR, doneW)
}

func le(v, t float64, strict bool) bool {
	if strict {
		return v < t
	}
	return v <= t
}

// covers builds the covering constraints of protocol p for a read
// threshold r and a write threshold w (strict: latency must be below it).
// The option lists do not depend on quorum sizes except through c1 > 0.
func (in *inst) buildCovers(p Protocol, r float64, rs bool, w float64, ws bool) []cover {
	cvs := make([]cover, len(in.fe))
	for F := range in.fe {
		rd, cf := in.rd[F], in.cf[F]
		var rm uint64
		for j := range in.m {
			if le(rd[j], r, rs) {
				rm |= 1 << j
			}
		}
		cvs[F].rmask = rm
		if math.IsInf(w, 1) && !ws {
			continue
		}
		var opts []opt
		add := func(o opt) {
			if o.m2 != 0 {
				opts = append(opts, o)
			}
		}
		switch p {
		case Pando:
			// The front-end runs both phases: Phase 1 ends at t, one of
			// its round trips.
			for _, t := range distinct(rd) {
				var m1, m2 uint64
				for j := range in.m {
					if rd[j] <= t {
						m1 |= 1 << j
					}
					if le(rd[j]+t, w, ws) {
						m2 |= 1 << j
					}
				}
				add(opt{0, m1, m2})
			}
			// Delegate D: Phase 1 ends at max(d(F,D), q1a-th p1).
			p1 := make([]float64, in.m)
			for D := range in.m {
				for j := range in.m {
					p1[j] = (rd[j] + in.cc[j][D]) / 2
				}
				dFD := rd[D] / 2
				ts := []float64{dFD}
				for _, t := range distinct(p1) {
					if t > dFD {
						ts = append(ts, t)
					}
				}
				ccD := in.cc[D]
				for _, t := range ts {
					var m1, m2 uint64
					for j := range in.m {
						if p1[j] <= t {
							m1 |= 1 << j
						}
						if le((ccD[j]+cf[j])/2+t, w, ws) {
							m2 |= 1 << j
						}
					}
					add(opt{1 << D, m1, m2})
				}
			}
		case EPaxos, RSPaxos:
			if p == RSPaxos {
				var m2 uint64
				for j := range in.m {
					if le(2*rd[j], w, ws) {
						m2 |= 1 << j
					}
				}
				add(opt{0, 0, m2})
			}
			for D := range in.m {
				ccD := in.cc[D]
				var m2 uint64
				for j := range in.m {
					v := rd[D] + ccD[j]
					if p == RSPaxos {
						v = rd[D] + 2*ccD[j]
					}
					if le(v, w, ws) {
						m2 |= 1 << j
					}
				}
				add(opt{1 << D, 0, m2})
			}
		}
		cvs[F].opts = pruneDominated(opts)
	}
	return cvs
}

// pruneDominated drops exact duplicates and options that a front-end-run
// option (no delegate needed) makes redundant.
func pruneDominated(o []opt) []opt {
	out := o[:0]
	var free []opt
	for _, a := range o {
		if a.need == 0 {
			free = append(free, a)
		}
	}
	for i, a := range o {
		if i > 0 && o[i-1] == a {
			continue
		}
		dom := false
		if a.need != 0 {
			for _, b := range free {
				if a.m1&b.m1 == a.m1 && a.m2&b.m2 == a.m2 {
					dom = true
					break
				}
			}
		}
		if !dom {
			out = append(out, a)
		}
	}
	return out
}

func distinct(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsInf(x, 1) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// decide looks for at most c.n sites meeting the thresholds; it returns
// them padded to exactly c.n sites.
func (in *inst) decide(ctx context.Context, p Protocol, c cfg, r float64, rs bool, w float64, ws bool) (uint64, bool, error) {
	// Answers already known: a site set found earlier that meets these
	// thresholds, or an earlier failure at thresholds no stricter.
	key := memoKey{p, c.q1a, c.q2, c.n}
	t := thr{r, w, rs, ws}
	for _, x := range in.memoYes[key] {
		if le(x.read, r, rs) && le(x.write, w, ws) {
			return x.s, true, nil
		}
	}
	for _, x := range in.memoNo[key] {
		if t.asStrictAs(x) {
			return 0, false, nil
		}
	}
	s, ok, err := in.decideSearch(ctx, p, c, r, rs, w, ws)
	if err != nil {
		return 0, false, err
	}
	if in.memoYes == nil {
		in.memoYes, in.memoNo = map[memoKey][]witness{}, map[memoKey][]thr{}
	}
	if ok {
		x := witness{s: s}
		for _, e := range in.eval(p, s, c, -1) {
			x.read, x.write = math.Max(x.read, e.read), math.Max(x.write, e.write)
		}
		in.memoYes[key] = appendCapped(in.memoYes[key], x)
	} else {
		in.memoNo[key] = appendCapped(in.memoNo[key], t)
	}
	return s, ok, nil
}

type memoKey struct {
	p           Protocol
	q1a, q2, nn int
}

// thr is a pair of thresholds; strict ones exclude their value.
type thr struct {
	r, w   float64
	rs, ws bool
}

func stricterOrEq(x float64, xs bool, y float64, ys bool) bool {
	return x < y || (x == y && (xs || !ys))
}

// asStrictAs reports whether meeting t implies meeting u.
func (t thr) asStrictAs(u thr) bool {
	return stricterOrEq(t.r, t.rs, u.r, u.rs) && stricterOrEq(t.w, t.ws, u.w, u.ws)
}

type witness struct {
	s           uint64
	read, write float64
}

func appendCapped[T any](l []T, x T) []T {
	if len(l) >= 32 {
		l = l[1:]
	}
	return append(l, x)
}

// decideSearch runs the search for decide.
func (in *inst) decideSearch(ctx context.Context, p Protocol, c cfg, r float64, rs bool, w float64, ws bool) (uint64, bool, error) {
	d := &decider{ctx: ctx, nmax: c.n, cr: c.q1a, c2: c.q2}
	if p == Pando {
		d.c1 = c.q1a
	}
	d.checkR = !(math.IsInf(r, 1) && !rs)
	d.checkW = !(math.IsInf(w, 1) && !ws)
	d.covers = in.covers(p, r, rs, w, ws)
	var useful uint64
	for _, cv := range d.covers {
		if d.checkR {
			useful |= cv.rmask
		}
		for _, o := range cv.opts {
			useful |= o.need | o.m1 | o.m2
		}
		if d.checkW && len(cv.opts) == 0 {
			return 0, false, nil
		}
	}
	U := useful
	d.alive = [][][]int32{make([][]int32, len(d.covers))}
	for F, cv := range d.covers {
		for i := range cv.opts {
			d.alive[0][F] = append(d.alive[0][F], int32(i))
		}
	}
	if !d.rec(0, 0, U, 0, 0) {
		return 0, false, d.err
	}
	s := d.found
	for _, j := range in.order {
		if pc(s) >= c.n {
			break
		}
		s |= 1 << j
	}
	return s, true, nil
}

func (in *inst) metric(p Protocol, c cfg) float64 {
	if in.p.Objective == MinCost {
		return in.cost(p, c)
	}
	return c.storage()
}

// solveSearch solves Pando, EPaxos and RS-Paxos problems.
func (in *inst) solveSearch(ctx context.Context, p Protocol) (Plan, error) {
	cfgs := in.configs(p)
	if len(cfgs) == 0 {
		return Plan{}, fmt.Errorf("%w: no %s configuration fits %d candidate sites, f = %d and the storage bound", ErrInfeasible, p, in.m, in.p.F)
	}
	switch in.p.Objective {
	case MinStorage, MinCost:
		slices.SortStableFunc(cfgs, func(a, b cfg) int {
			ma, mb := in.metric(p, a), in.metric(p, b)
			switch {
			case ma < mb:
				return -1
			case ma > mb:
				return 1
			}
			return (a.q1a + a.q2) - (b.q1a + b.q2)
		})
		var no []cfg // infeasible sizes: anything needing more of less is too
		for _, c := range cfgs {
			if implied(no, c) {
				continue
			}
			s, ok, err := in.decide(ctx, p, c, in.rb, false, in.wb, false)
			if err != nil {
				return Plan{}, err
			}
			if ok {
				return in.plan(p, s, c, -1), nil
			}
			no = append(no, c)
		}
		return Plan{}, ErrInfeasible
	}
	// Latency objective: drop sizes dominated by smaller quorums on at
	// least as many sites, then descend.
	var keep []cfg
	for i, a := range cfgs {
		dom := false
		for j, b := range cfgs {
			if i != j && b.q1a <= a.q1a && b.q2 <= a.q2 && b.n >= a.n && (b != a || j < i) &&
				(b.q1a < a.q1a || b.q2 < a.q2 || b.n > a.n || j < i) {
				dom = true
				break
			}
		}
		if !dom {
			keep = append(keep, a)
		}
	}
	slices.SortStableFunc(keep, func(a, b cfg) int { return (a.q1a + a.q2) - (b.q1a + b.q2) })
	best := math.Inf(1)
	var bestPlan Plan
	var no []cfg // infeasible at the current threshold, hence at stricter ones
	for _, c := range keep {
		for !implied(no, c) {
			r, rs, w, ws := in.rb, false, in.wb, false
			if in.p.Objective == MinRead && !math.IsInf(best, 1) {
				r, rs = best, true
			}
			if in.p.Objective == MinWrite && !math.IsInf(best, 1) {
				w, ws = best, true
			}
			s, ok, err := in.decide(ctx, p, c, r, rs, w, ws)
			if err != nil {
				return Plan{}, err
			}
			if !ok {
				no = append(no, c)
				break
			}
			pl := in.plan(p, s, c, -1)
			v := pl.ReadMs
			if in.p.Objective == MinWrite {
				v = pl.WriteMs
			}
			if !(v < best) {
				return Plan{}, fmt.Errorf("geo: internal error: search did not improve (%v then %v)", best, v)
			}
			best, bestPlan = v, pl
		}
	}
	if math.IsInf(best, 1) {
		return Plan{}, ErrInfeasible
	}
	return bestPlan, nil
}

// implied reports whether c is at least as hard as some infeasible sizes:
// quorums no smaller and no more sites.
func implied(no []cfg, c cfg) bool {
	for _, x := range no {
		if x.q1a <= c.q1a && x.q2 <= c.q2 && x.n >= c.n {
			return true
		}
	}
	return false
}

// solveMultiPaxos tries every leader and size: the best sites for a leader
// are the ones nearest to it.
func (in *inst) solveMultiPaxos(ctx context.Context) (Plan, error) {
	best := math.Inf(1)
	var bestPlan Plan
	found := false
	for _, c := range in.configs(MultiPaxos) {
		if ctx.Err() != nil {
			return Plan{}, ctx.Err()
		}
		for L := range in.m {
			_, near := kth(in.full(), c.n, func(j int) float64 { return in.cc[L][j] })
			if near == 0 {
				continue
			}
			near |= 1 << L
			if pc(near) > c.n { // L tied out of its own nearest set
				_, near = kth(near&^(1<<L), c.n-1, func(j int) float64 { return in.cc[L][j] })
				near |= 1 << L
			}
			pl := in.plan(MultiPaxos, near, c, L)
			if pl.ReadMs > in.rb || pl.WriteMs > in.wb {
				continue
			}
			var v float64
			switch in.p.Objective {
			case MinRead:
				v = pl.ReadMs
			case MinWrite:
				v = pl.WriteMs
			default:
				v = in.metric(MultiPaxos, c)
			}
			if v < best {
				best, bestPlan, found = v, pl, true
			}
		}
	}
	if !found {
		return Plan{}, ErrInfeasible
	}
	return bestPlan, nil
}

// plan turns sites and sizes into a Plan with its evaluated latencies.
func (in *inst) plan(p Protocol, s uint64, c cfg, leader int) Plan {
	name := func(j int) string { return in.mtx.Names[in.cand[j]] }
	names := func(x uint64) []string {
		out := []string{}
		for ; x != 0; x &= x - 1 {
			out = append(out, name(bits.TrailingZeros64(x)))
		}
		return out
	}
	ev := in.eval(p, s, c, leader)
	pl := Plan{Protocol: p, F: in.p.F, Sites: names(s), K: c.k, R: c.n - c.k,
		Q1a: c.q1a, Q1b: c.q1b, Q2: c.q2, Storage: c.storage()}
	if p == MultiPaxos {
		pl.Leader = name(leader)
	}
	for F, e := range ev {
		fe := FrontEnd{Name: in.mtx.Names[in.fe[F]], ReadMs: e.read, WriteMs: e.write,
			ReadQuorum: names(e.rq), WriteQuorum: names(e.wq)}
		if e.del >= 0 && p != MultiPaxos {
			fe.Delegate = name(e.del)
		}
		pl.FrontEnds = append(pl.FrontEnds, fe)
		pl.ReadMs = math.Max(pl.ReadMs, e.read)
		pl.WriteMs = math.Max(pl.WriteMs, e.write)
	}
	if in.p.Prices != nil {
		pl.CostPerMonth = in.cost(p, c)
	}
	return pl
}

// Solve returns an optimal plan for the problem, or an error wrapping
// ErrInfeasible or ErrBadProblem.
func Solve(ctx context.Context, p Problem) (Plan, error) {
	in, err := newInst(p)
	if err != nil {
		return Plan{}, err
	}
	return in.solve(ctx)
}

// query re-targets a resolved instance (same matrix, access set,
// candidates and f) at another protocol, objective and bounds, keeping
// its caches: the campaign asks one instance many questions.
func (in *inst) query(ctx context.Context, proto Protocol, obj Objective, rb, wb, sb float64) (Plan, error) {
	in.p.Protocol, in.p.Objective = proto, obj
	in.p.ReadBound, in.p.WriteBound, in.p.StorageBound = rb, wb, sb
	in.rb, in.wb, in.sb = bound(rb), bound(wb), bound(sb)
	return in.solve(ctx)
}

func (in *inst) solve(ctx context.Context) (Plan, error) {
	var pl Plan
	var err error
	switch in.p.Protocol {
	case Pando, EPaxos, RSPaxos:
		pl, err = in.solveSearch(ctx, in.p.Protocol)
	case MultiPaxos:
		pl, err = in.solveMultiPaxos(ctx)
	case LowerBound:
		pl, err = in.solveLB(ctx)
	}
	if err != nil {
		return Plan{}, fmt.Errorf("%s: %w", in.p.Protocol, err)
	}
	return pl, nil
}

func (in *inst) full() uint64 {
	if in.m == 64 {
		return ^uint64(0)
	}
	return uint64(1)<<in.m - 1
}

type coverKey struct {
	p      Protocol
	r, w   float64
	rs, ws bool
}

// covers memoizes buildCovers: the descent and the size loop ask for the
// same thresholds many times.
func (in *inst) covers(p Protocol, r float64, rs bool, w float64, ws bool) []cover {
	k := coverKey{p, r, w, rs, ws}
	if c, ok := in.coverCache[k]; ok {
		return c
	}
	if in.coverCache == nil || len(in.coverCache) > 4096 {
		in.coverCache = map[coverKey][]cover{}
	}
	c := in.buildCovers(p, r, rs, w, ws)
	in.coverCache[k] = c
	return c
}
