package distsys

import (
	"errors"
	"math/rand/v2"
	"testing"

	"strata/distsys/tla"
	"strata/internal/testseed"
)

// sim is a random run of replicas of one CRDT: client operations at
// random replicas and joins of one replica's state into another's. Next
// to each replica it keeps the replica's causal history (the operations
// it has applied or received, with what each remove observed), from
// which the specification computes the value independently of the CRDT.
type sim struct {
	kind     CRDTKind
	replicas []CRDTState
	hist     []map[int]simOp // per replica: op id -> op
	ops      int             // ids given so far
	elems    []tla.Value
	// mutateJoin, if set, replaces Join (for the mutation checks).
	mutateJoin func(dst, src CRDTState)
}

type simOp struct {
	kind string // "add", "remove", "inc"
	x    tla.Value
	k    int64
	obs  map[int]bool // a remove: the ids of the adds of x its replica had seen
}

// oneTwo is 1..2, an interval: equal to {1, 2} but represented (and
// encoded) differently.
var oneTwo, _ = tla.Range(1, 2)

func newSim(kind CRDTKind, n int) *sim {
	s := &sim{kind: kind, elems: []tla.Value{tla.String("a"), tla.String("b"), tla.Int(1), oneTwo}}
	for range n {
		st, _ := NewCRDTState(kind)
		s.replicas = append(s.replicas, st)
		s.hist = append(s.hist, map[int]simOp{})
	}
	return s
}

func replicaName(i int) string { return tla.Int(int64(i)).String() }

// step does one random operation or join.
func (s *sim) step(r *rand.Rand) error {
	i := r.IntN(len(s.replicas))
	if r.IntN(3) == 0 {
		j := r.IntN(len(s.replicas))
		if s.mutateJoin != nil {
			s.mutateJoin(s.replicas[i], s.replicas[j])
		} else if err := s.replicas[i].Join(s.replicas[j].Clone()); err != nil {
			return err
		}
		for id, op := range s.hist[j] {
			s.hist[i][id] = op
		}
		return nil
	}
	var op simOp
	var v tla.Value
	switch {
	case s.kind == GCounterKind:
		op = simOp{kind: "inc", k: int64(r.IntN(3))}
		v = tla.Tuple(tla.String("inc"), tla.Int(op.k))
	case r.IntN(2) == 0:
		op = simOp{kind: "add", x: s.elems[r.IntN(len(s.elems))]}
		v = tla.Tuple(tla.String("add"), op.x)
	default:
		// Remove an element as a differently built equal value
		// sometimes ({1, 2} for 1..2): removes go by equality.
		op = simOp{kind: "remove", x: s.elems[r.IntN(len(s.elems))], obs: map[int]bool{}}
		x := op.x
		if tla.Equal(x, oneTwo) && r.IntN(2) == 0 {
			x = tla.Set(tla.Int(2), tla.Int(1))
		}
		v = tla.Tuple(tla.String("remove"), x)
		for id, o := range s.hist[i] {
			if o.kind == "add" && tla.Equal(o.x, op.x) {
				op.obs[id] = true
			}
		}
	}
	if err := s.replicas[i].Update(replicaName(i), v); err != nil {
		return err
	}
	s.ops++
	s.hist[i][s.ops] = op
	return nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// expected is the specification's value of a history: the sum of the
// increments; the elements with an add that no remove observed.
func expected(kind CRDTKind, h map[int]simOp) tla.Value {
	if kind == GCounterKind {
		var sum int64
		for _, o := range h {
			sum += o.k
		}
		return tla.Int(sum)
	}
	var in []tla.Value
	for id, o := range h {
		if o.kind != "add" {
			continue
		}
		removed := false
		for _, r := range h {
			removed = removed || r.kind == "remove" && r.obs[id]
		}
		if !removed {
			in = append(in, o.x)
		}
	}
	return tla.Set(in...)
}

// check: every replica's value is its history's (which implies strong
// convergence: equal histories, equal values).
func (s *sim) check() error {
	for i, st := range s.replicas {
		if want := expected(s.kind, s.hist[i]); !tla.Equal(st.Value(), want) {
			return errors.New("replica " + replicaName(i) + ": value " + st.Value().String() + ", history says " + want.String())
		}
	}
	return nil
}

// converge joins every replica into every other, twice round.
func (s *sim) converge(t *testing.T) {
	for range 2 {
		for i := range s.replicas {
			for j := range s.replicas {
				if err := s.replicas[i].Join(s.replicas[j].Clone()); err != nil {
					t.Fatal(err)
				}
				for id, op := range s.hist[j] {
					s.hist[i][id] = op
				}
			}
		}
	}
}

// TestCRDTMatchesSpecification: in random runs of 3 replicas
// (operations and joins in any order, repeated joins included), every
// replica's value is always the specification's value of its causal
// history: the sum of its increments for a GCounter; for an AWORSet, the
// elements with an add that no remove observed (add wins over a
// concurrent remove). After every replica has joined every other, all
// states are equal. 60 seeds per CRDT (STRATA_SEEDS for more).
func TestCRDTMatchesSpecification(t *testing.T) {
	for _, kind := range []CRDTKind{GCounterKind, AWORSetKind} {
		t.Run(kind.String(), func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Range(1, 60)...) {
				r := rand.New(rand.NewPCG(seed, 7))
				s := newSim(kind, 3)
				for range 60 {
					must(t, s.step(r))
					if err := s.check(); err != nil {
						t.Fatal(err)
					}
				}
				s.converge(t)
				if err := s.check(); err != nil {
					t.Fatal(err)
				}
				for i := range s.replicas {
					if !EqualCRDT(s.replicas[i], s.replicas[0]) {
						t.Fatalf("after full gossip replica %d holds %v, replica 0 %v", i, s.replicas[i], s.replicas[0])
					}
				}
			}
		})
	}
}

// TestAddWins: the cases that tell add-wins from remove-wins and from a
// set that forgets removes, written out.
func TestAddWins(t *testing.T) {
	add := func(x string) tla.Value { return tla.Tuple(tla.String("add"), tla.String(x)) }
	rm := func(x string) tla.Value { return tla.Tuple(tla.String("remove"), tla.String(x)) }
	a, b := NewAWORSet(), NewAWORSet()
	must := func(err error) { t.Helper(); must(t, err) }
	must(a.Update("1", add("x")))
	must(b.Join(a.Clone()))
	// Concurrently: a removes x (it saw only its own add), b adds x again.
	must(a.Update("1", rm("x")))
	must(b.Update("2", add("x")))
	must(a.Join(b.Clone()))
	must(b.Join(a.Clone()))
	if !a.Has(tla.String("x")) || !b.Has(tla.String("x")) {
		t.Fatalf("concurrent add and remove: the add must win: %v / %v", a, b)
	}
	// A remove that saw every add removes for good.
	must(a.Update("1", rm("x")))
	must(b.Join(a.Clone()))
	must(a.Join(b.Clone()))
	if a.Has(tla.String("x")) || b.Has(tla.String("x")) || !EqualCRDT(a, b) {
		t.Fatalf("an observed remove must win: %v / %v", a, b)
	}
	// An old state joined again does not bring x back.
	old := NewAWORSet()
	must(old.Update("1", add("x")))
	must(a.Join(old))
	if a.Has(tla.String("x")) {
		t.Fatalf("a stale state resurrected x: %v", a)
	}
}

// TestCRDTJoinLaws: on states reached by random runs, Join is
// commutative, associative and idempotent, and its result is above both
// inputs (joining either input again changes nothing).
func TestCRDTJoinLaws(t *testing.T) {
	join := func(t *testing.T, a, b CRDTState) CRDTState {
		c := a.Clone()
		if err := c.Join(b); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, kind := range []CRDTKind{GCounterKind, AWORSetKind} {
		t.Run(kind.String(), func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Range(1, 100)...) {
				r := rand.New(rand.NewPCG(seed, 11))
				s := newSim(kind, 3)
				var seen []CRDTState
				for range 40 {
					must(t, s.step(r))
					seen = append(seen, s.replicas[r.IntN(3)].Clone())
				}
				for range 30 {
					a, b, c := seen[r.IntN(len(seen))], seen[r.IntN(len(seen))], seen[r.IntN(len(seen))]
					ab, ba := join(t, a, b), join(t, b, a)
					if !EqualCRDT(ab, ba) {
						t.Fatalf("not commutative: %v ⊔ %v = %v, reversed %v", a, b, ab, ba)
					}
					if l, rr := join(t, ab, c), join(t, a, join(t, b, c)); !EqualCRDT(l, rr) {
						t.Fatalf("not associative: (%v ⊔ %v) ⊔ %v = %v, other way %v", a, b, c, l, rr)
					}
					if aa := join(t, a, a); !EqualCRDT(aa, a) {
						t.Fatalf("not idempotent: %v ⊔ itself = %v", a, aa)
					}
					if !EqualCRDT(join(t, ab, a), ab) || !EqualCRDT(join(t, ab, b), ab) {
						t.Fatalf("%v is not above its inputs %v, %v", ab, a, b)
					}
				}
			}
		})
	}
}

// TestCRDTSpecificationCatchesMutants: the checks above fail for wrong
// joins: a GCounter that adds counts (not idempotent), an AWORSet that
// keeps every dot (removes undone), one that keeps only common dots
// (remove-wins: absence beats a concurrent add).
func TestCRDTSpecificationCatchesMutants(t *testing.T) {
	mutants := map[string]struct {
		kind CRDTKind
		join func(dst, src CRDTState)
	}{
		"gcounter-sum": {GCounterKind, func(dst, src CRDTState) {
			d, s := dst.(*GCounter), src.(*GCounter)
			for r, c := range s.counts {
				d.counts[r] += c
			}
		}},
		"aworset-union": {AWORSetKind, func(dst, src CRDTState) {
			d, s := dst.(*AWORSet), src.(*AWORSet).Clone().(*AWORSet)
			for _, e := range s.elems {
				if i, ok := d.find(e.v); ok {
					d.elems[i].dots = joinDots(d.elems[i].dots, e.dots, map[string]uint64{}, map[string]uint64{})
				} else {
					d.elems = append(d.elems[:i], append([]awElem{e}, d.elems[i:]...)...)
				}
			}
			for r, n := range s.vv {
				d.vv[r] = max(d.vv[r], n)
			}
		}},
		"aworset-remove-wins": {AWORSetKind, func(dst, src CRDTState) {
			d, s := dst.(*AWORSet), src.(*AWORSet)
			var kept []awElem
			for _, e := range d.elems {
				if i, ok := s.find(e.v); ok {
					if dots := joinDots(e.dots, s.elems[i].dots, d.vv, s.vv); len(dots) > 0 {
						kept = append(kept, awElem{e.v, dots})
					}
				}
			}
			d.elems = kept
			for r, n := range s.vv {
				d.vv[r] = max(d.vv[r], n)
			}
		}},
	}
	for name, m := range mutants {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 50; seed++ {
				r := rand.New(rand.NewPCG(seed, 7))
				s := newSim(m.kind, 3)
				s.mutateJoin = m.join
				for range 60 {
					must(t, s.step(r))
					if s.check() != nil {
						return // caught
					}
				}
			}
			t.Fatal("50 runs of the mutant passed the specification check")
		})
	}
}

// TestCRDTUpdateRejects: malformed operations are errors matching ErrCRDT
// and change nothing.
func TestCRDTUpdateRejects(t *testing.T) {
	for _, c := range []struct {
		kind CRDTKind
		op   tla.Value
	}{
		{GCounterKind, tla.Int(1)},
		{GCounterKind, tla.Tuple(tla.String("inc"))},
		{GCounterKind, tla.Tuple(tla.String("inc"), tla.Int(-1))},
		{GCounterKind, tla.Tuple(tla.String("inc"), tla.String("x"))},
		{GCounterKind, tla.Tuple(tla.String("add"), tla.Int(1))},
		{AWORSetKind, tla.Tuple(tla.String("inc"), tla.Int(1))},
		{AWORSetKind, tla.Tuple(tla.String("add"), tla.Int(1), tla.Int(2))},
		{AWORSetKind, tla.Set(tla.String("add"))},
		{AWORSetKind, tla.Value{}},
	} {
		st, _ := NewCRDTState(c.kind)
		before := st.AppendBinary(nil)
		if err := st.Update("1", c.op); !errors.Is(err, ErrCRDT) {
			t.Errorf("%v %v: err = %v, want ErrCRDT", c.kind, c.op, err)
		}
		if string(st.AppendBinary(nil)) != string(before) {
			t.Errorf("%v %v changed the state", c.kind, c.op)
		}
	}
	g := NewGCounter()
	if err := g.Inc("1", 1<<63); err != nil {
		t.Fatal(err)
	}
	if err := g.Inc("1", 1<<63); !errors.Is(err, ErrCRDT) {
		t.Errorf("overflow: err = %v", err)
	}
	if err := g.Inc("2", 5); err != nil || g.Value().String() != "9223372036854775813" {
		t.Errorf("sum above 2^63: %v, %v", g.Value(), err)
	}
	if err := g.Join(NewAWORSet()); !errors.Is(err, ErrCRDT) {
		t.Errorf("joining another kind: %v", err)
	}
}

// TestCRDTEncodeRoundTrip: states of random runs decode to equal states,
// and no proper prefix of an encoding decodes.
func TestCRDTEncodeRoundTrip(t *testing.T) {
	for _, kind := range []CRDTKind{GCounterKind, AWORSetKind} {
		for seed := range testseed.Each(t, testseed.Range(1, 50)...) {
			r := rand.New(rand.NewPCG(seed, 3))
			s := newSim(kind, 3)
			for range 30 {
				must(t, s.step(r))
			}
			for _, st := range s.replicas {
				b := st.AppendBinary(nil)
				got, err := DecodeCRDTState(b)
				if err != nil || !EqualCRDT(got, st) {
					t.Fatalf("%v: decoded %v, %v; want %v", kind, got, err, st)
				}
				for i := range b {
					if _, err := DecodeCRDTState(b[:i]); err == nil {
						t.Fatalf("%v: the prefix of %d of %d bytes decoded", kind, i, len(b))
					}
				}
			}
		}
	}
}

// TestCRDTDecodeRejects: hand-made malformed states are errors.
func TestCRDTDecodeRejects(t *testing.T) {
	x, _ := tla.String("x").MarshalBinary()
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for name, b := range map[string][]byte{
		"empty":              nil,
		"unknown kind":       {9, 0},
		"gcounter trailing":  {1, 0, 0},
		"gcounter zero":      cat([]byte{1, 1}, str("1"), []byte{0}),
		"gcounter unsorted":  cat([]byte{1, 2}, str("2"), []byte{1}, str("1"), []byte{1}),
		"gcounter repeated":  cat([]byte{1, 2}, str("1"), []byte{1}, str("1"), []byte{2}),
		"gcounter huge":      {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"long string":        cat([]byte{1, 1, 50}, []byte("1")),
		"dot not covered":    cat([]byte{2, 1}, str("1"), []byte{1, 1}, str(string(x)), []byte{1}, str("1"), []byte{2}),
		"dot of no replica":  cat([]byte{2, 0, 1}, str(string(x)), []byte{1}, str("1"), []byte{1}),
		"no dots":            cat([]byte{2, 1}, str("1"), []byte{1, 1}, str(string(x)), []byte{0}),
		"dot zero":           cat([]byte{2, 1}, str("1"), []byte{1, 1}, str(string(x)), []byte{1}, str("1"), []byte{0}),
		"repeated dots":      cat([]byte{2, 1}, str("1"), []byte{2, 1}, str(string(x)), []byte{2}, str("1"), []byte{1}, str("1"), []byte{1}),
		"repeated elements":  cat([]byte{2, 1}, str("1"), []byte{2, 2}, str(string(x)), []byte{1}, str("1"), []byte{1}, str(string(x)), []byte{1}, str("1"), []byte{2}),
		"element not a TLA+": cat([]byte{2, 1}, str("1"), []byte{1, 1}, str("\xff"), []byte{1}, str("1"), []byte{1}),
	} {
		if st, err := DecodeCRDTState(b); !errors.Is(err, ErrCRDT) {
			t.Errorf("%s: decoded %v, err %v", name, st, err)
		}
	}
	// And a well-formed one, to show the builders above are right.
	ok := cat([]byte{2, 1}, str("1"), []byte{1, 1}, str(string(x)), []byte{1}, str("1"), []byte{1})
	if st, err := DecodeCRDTState(ok); err != nil || st.Value().String() != `{"x"}` {
		t.Fatalf("well-formed state: %v, %v", st, err)
	}
}

// FuzzCRDTDecode: arbitrary bytes never panic; whatever decodes encodes
// back to a state that decodes equal, and joins without error.
func FuzzCRDTDecode(f *testing.F) {
	s := newSim(AWORSetKind, 2)
	r := rand.New(rand.NewPCG(1, 1))
	for range 10 {
		_ = s.step(r)
	}
	f.Add(s.replicas[0].AppendBinary(nil))
	g := newSim(GCounterKind, 2)
	for range 10 {
		_ = g.step(r)
	}
	f.Add(g.replicas[0].AppendBinary(nil))
	f.Add([]byte{2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeCRDTState(b)
		if err != nil {
			if !errors.Is(err, ErrCRDT) {
				t.Fatalf("error %v does not match ErrCRDT", err)
			}
			return
		}
		again, err := DecodeCRDTState(st.AppendBinary(nil))
		if err != nil || !EqualCRDT(again, st) {
			t.Fatalf("re-encoding: %v, %v; want %v", again, err, st)
		}
		bottom, _ := NewCRDTState(st.Kind())
		if err := bottom.Join(st); err != nil || !EqualCRDT(bottom, st) {
			t.Fatalf("bottom ⊔ %v = %v, %v", st, bottom, err)
		}
		_ = st.Value()
	})
}
