package tla

import (
	"bytes"
	"maps"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	"strata/internal/testseed"
)

// snapshot is a deep, representation-level copy of v for the
// immutability checks: its encoding (which reads every element of every
// representation) and its printed form.
type snapshot struct {
	enc []byte
	str string
}

func snap(v Value) snapshot {
	b, err := v.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return snapshot{b, v.String()}
}

func (s snapshot) same(v Value) bool {
	t := snap(v)
	return bytes.Equal(s.enc, t.enc) && s.str == t.str
}

// randomOps applies every operator to a and b (and some derived
// arguments), ignoring results and errors: the immutability property
// is about the inputs.
func randomOps(r *rand.Rand, a, b Value) []Value {
	var out []Value
	keep := func(v Value, _ error) { out = append(out, v) }
	keep(Plus(a, b))
	keep(Union(a, b))
	keep(Intersect(a, b))
	keep(SetMinus(a, b))
	keep(SubsetEq(a, b))
	keep(BigUnion(a))
	keep(Apply(a, b))
	keep(Except(a, []Value{b}, b))
	keep(Except(a, []Value{Int(1), Int(1)}, b))
	keep(ExceptWith(a, []Value{Int(int64(r.IntN(3)))}, func(old Value) (Value, error) { return Tuple(old), nil }))
	keep(Merge(a, b))
	keep(Domain(a))
	keep(Append(a, b))
	keep(Append(a, a))
	keep(Concat(a, b))
	keep(Tail(a))
	keep(Head(a))
	keep(SubSeq(a, Int(1), Int(int64(r.IntN(3)))))
	keep(SelectSeq(a, func(x Value) (bool, error) { return x.Kind() == KindInt, nil }))
	keep(Filter(a, func(x Value) (bool, error) { return x.Kind() == KindInt, nil }))
	keep(Map(a, func(x Value) (Value, error) { return Tuple(x), nil }))
	keep(Function(a, func(x Value) (Value, error) { return x, nil }))
	keep(In(b, a))
	keep(InSeq(a, b))
	keep(Cardinality(a))
	out = append(out, MapsTo(a, b), Eq(a, b), Set(a, b), Tuple(a, b))
	return out
}

// TestImmutability: no operation changes its inputs, and no later
// operation on an output changes an earlier output (the in-place Append
// and the structural sharing of Tail, SubSeq, EXCEPT and DOMAIN are
// where that could go wrong).
func TestImmutability(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 300)...) {
		r := rand.New(rand.NewPCG(seed, 1))
		a, b := genValue(r, 3), genValue(r, 3)
		sa, sb := snap(a), snap(b)
		outs := randomOps(r, a, b)
		var snaps []snapshot
		for _, o := range outs {
			if o.IsValid() {
				snaps = append(snaps, snap(o))
			} else {
				snaps = append(snaps, snapshot{})
			}
		}
		// Operate on the outputs too (appending to a Tail, EXCEPT of an
		// EXCEPT, ...).
		for i := range outs {
			randomOps(r, outs[i], outs[r.IntN(len(outs))])
		}
		if !sa.same(a) || !sb.same(b) {
			t.Fatalf("inputs changed: %s -> %v, %s -> %v", sa.str, a, sb.str, b)
		}
		for i, o := range outs {
			if o.IsValid() && !snaps[i].same(o) {
				t.Fatalf("output %d changed: %s -> %v", i, snaps[i].str, o)
			}
		}
	}
}

// TestAppendSharing: appends to one sequence from several places (and
// several goroutines, under -race) each see their own element.
func TestAppendSharing(t *testing.T) {
	base := m(Append(m(Append(EmptyTuple, Int(0))), Int(1))) // has spare capacity
	var wg sync.WaitGroup
	results := make([]Value, 16)
	for g := range results {
		wg.Go(func() {
			v := base
			for i := range 50 {
				v = m(Append(v, Int(int64(g*1000+i))))
			}
			results[g] = v
		})
	}
	wg.Wait()
	for g, v := range results {
		want := []Value{Int(0), Int(1)}
		for i := range 50 {
			want = append(want, Int(int64(g*1000+i)))
		}
		if !Equal(v, Tuple(want...)) {
			t.Fatalf("goroutine %d built %v", g, v)
		}
	}
	if base.String() != "<<0, 1>>" {
		t.Fatalf("base changed: %v", base)
	}
	// Concat claims the same slots Append would.
	x := m(Append(base, Int(2)))
	y := m(Concat(base, Tuple(Int(7), Int(8))))
	z := m(Append(m(Tail(base)), Int(3)))
	if x.String() != "<<0, 1, 2>>" || y.String() != "<<0, 1, 7, 8>>" || z.String() != "<<1, 3>>" {
		t.Fatalf("x=%v y=%v z=%v", x, y, z)
	}
}

// TestOrderAndHash: Compare is a total order consistent with Equal, and
// Hash is consistent with Equal, over random values and rebuilt
// (differently represented) copies of them.
func TestOrderAndHash(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 100)...) {
		r := rand.New(rand.NewPCG(seed, 2))
		var vs []Value
		for range 40 {
			v := genValue(r, 3)
			vs = append(vs, v, rebuild(r, v))
		}
		for i, a := range vs {
			if i%2 == 1 {
				b := vs[i-1]
				if !Equal(a, b) || Compare(a, b) != 0 || Compare(b, a) != 0 {
					t.Fatalf("rebuilt value differs: %v vs %v (Equal %v, Compare %d)", a, b, Equal(a, b), Compare(a, b))
				}
				if a.Hash() != b.Hash() {
					t.Fatalf("equal values %v and %v hash %x and %x", a, b, a.Hash(), b.Hash())
				}
			}
			for _, b := range vs {
				c := Compare(a, b)
				if c != -Compare(b, a) {
					t.Fatalf("Compare not antisymmetric: %v, %v", a, b)
				}
				if (c == 0) != Equal(a, b) {
					t.Fatalf("Compare(%v, %v) = %d but Equal = %v", a, b, c, Equal(a, b))
				}
				if Equal(a, b) && a.Hash() != b.Hash() {
					t.Fatalf("equal values hash differently: %v, %v", a, b)
				}
			}
		}
		// Transitivity, checked over a sort: after sorting, every pair is
		// in order (a non-transitive relation leaves some pair inverted).
		s := slices.Clone(vs)
		slices.SortFunc(s, Compare)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if Compare(s[i], s[j]) > 0 {
					t.Fatalf("order not transitive: %v sorted before %v", s[i], s[j])
				}
			}
		}
	}
}

// refSet is the reference model of a set: a list with no duplicates.
func refSet(v Value) []Value {
	es, err := Elements(v)
	if err != nil {
		panic(err)
	}
	return es
}

func refHas(xs []Value, x Value) bool {
	return slices.ContainsFunc(xs, func(y Value) bool { return Equal(x, y) })
}

// TestSetLaws: the set operators agree with a naive list model, and the
// algebra laws hold.
func TestSetLaws(t *testing.T) {
	genSet := func(r *rand.Rand) Value {
		switch r.IntN(4) {
		case 0:
			lo := int64(r.IntN(10))
			v, _ := Range(lo, lo+int64(r.IntN(12))-1)
			return v
		case 1: // large: exercises the binary-search union path
			vs := make([]Value, 40+r.IntN(60))
			for i := range vs {
				vs[i] = Int(int64(r.IntN(200)))
			}
			return Set(vs...)
		}
		vs := make([]Value, r.IntN(8))
		for i := range vs {
			if r.IntN(3) == 0 {
				vs[i] = genValue(r, 1)
			} else {
				vs[i] = Int(int64(r.IntN(15)))
			}
		}
		return Set(vs...)
	}
	for seed := range testseed.Each(t, testseed.Range(1, 300)...) {
		r := rand.New(rand.NewPCG(seed, 3))
		a, b, c := genSet(r), genSet(r), genSet(r)
		u, i, d := m(Union(a, b)), m(Intersect(a, b)), m(SetMinus(a, b))
		ra, rb := refSet(a), refSet(b)
		// Membership in each result matches the model, for every
		// candidate element.
		for _, x := range append(append(slices.Clone(ra), rb...), Int(-1), String("zz")) {
			inA, inB := refHas(ra, x), refHas(rb, x)
			check := func(name string, s Value, want bool) {
				if got := member(x, s); got != want {
					t.Fatalf("%v \\in (%v %s %v) = %v, want %v (result %v)", x, a, name, b, got, want, s)
				}
			}
			check(`\union`, u, inA || inB)
			check(`\intersect`, i, inA && inB)
			check(`\`, d, inA && !inB)
		}
		for _, s := range []Value{u, i, d} {
			if es := refSet(s); !slices.IsSortedFunc(es, Compare) || len(slices.CompactFunc(slices.Clone(es), Equal)) != len(es) {
				t.Fatalf("result not canonical: %v", s)
			}
		}
		law := func(name string, x, y Value) {
			if !Equal(x, y) {
				t.Fatalf("%s fails for A=%v B=%v C=%v: %v vs %v", name, a, b, c, x, y)
			}
		}
		law("A∪B = B∪A", u, m(Union(b, a)))
		law("A∩B = B∩A", i, m(Intersect(b, a)))
		law("(A∪B)∪C = A∪(B∪C)", m(Union(u, c)), m(Union(a, m(Union(b, c)))))
		law("A∩(B∪C) = (A∩B)∪(A∩C)", m(Intersect(a, m(Union(b, c)))), m(Union(i, m(Intersect(a, c)))))
		law("(A\\B)∪(A∩B) = A", m(Union(d, i)), a)
		law("(A\\B)∩B = {}", m(Intersect(d, b)), EmptySet)
		law("|A∪B| = |A|+|B|-|A∩B|", m(Cardinality(u)), m(Minus(m(Plus(m(Cardinality(a)), m(Cardinality(b)))), m(Cardinality(i)))))
		law("A ⊆ A∪B", m(SubsetEq(a, u)), True)
		law("A∩B ⊆ B", m(SubsetEq(i, b)), True)
		law("A ⊆ B <=> A∪B = B", m(SubsetEq(a, b)), Bool(Equal(u, b)))
		law("A∪A = A", m(Union(a, a)), a)
		law("UNION {A, B} = A∪B", m(BigUnion(Set(a, b))), u)
		if n := len(ra); n <= 8 {
			law("|SUBSET A| = 2^|A|", m(Cardinality(m(Subset(a)))), Int(1<<n))
			law("A \\in SUBSET A", m(In(a, m(Subset(a)))), True)
		}
	}
}

// refFn is the reference model of a function: a Go map from the
// encoding of each domain element.
func refFn(v Value) map[string]Value {
	keys, vals, err := Entries(v)
	if err != nil {
		panic(err)
	}
	out := make(map[string]Value, len(keys))
	for i, k := range keys {
		out[string(snap(k).enc)] = vals[i]
	}
	return out
}

// refExcept is [f EXCEPT ![path] = v] computed on Go maps: copy the map,
// replace one entry, recurse into the value on the path.
func refExcept(f Value, path []Value, v Value) map[string]Value {
	mp := refFn(f)
	k := string(snap(path[0]).enc)
	old, ok := mp[k]
	if !ok {
		return mp
	}
	if len(path) == 1 {
		mp[k] = v
		return mp
	}
	if old.Kind() != KindFunction {
		return nil // an error case
	}
	inner := refExcept(old, path[1:], v)
	if inner == nil {
		return nil
	}
	nk, nv := make([]Value, 0, len(inner)), make([]Value, 0, len(inner))
	for kk, vv := range inner {
		d, _ := Decode([]byte(kk))
		nk, nv = append(nk, d), append(nv, vv)
	}
	mp[k] = m(FunctionFromPairs(nk, nv))
	return mp
}

// TestExceptMatchesMaps: EXCEPT with random nested paths (some outside
// the domain) agrees with the same update done on Go maps, and leaves
// its input unchanged.
func TestExceptMatchesMaps(t *testing.T) {
	genFn := func(r *rand.Rand, depth int) Value {
		var build func(d int) Value
		build = func(d int) Value {
			n := 1 + r.IntN(6)
			var keys, vals []Value
			for i := range n {
				var k Value
				switch r.IntN(3) {
				case 0:
					k = Int(int64(i + 1)) // often 1..n: a sequence
				case 1:
					k = String(string(rune('a' + i)))
				default:
					k = Int(int64(r.IntN(20)))
				}
				if refHas(keys, k) {
					continue
				}
				var v Value
				if d > 0 && r.IntN(2) == 0 {
					v = build(d - 1)
				} else {
					v = genValue(r, 1)
				}
				keys, vals = append(keys, k), append(vals, v)
			}
			return m(FunctionFromPairs(keys, vals))
		}
		return build(depth)
	}
	for seed := range testseed.Each(t, testseed.Range(1, 300)...) {
		r := rand.New(rand.NewPCG(seed, 4))
		f := genFn(r, 2)
		before := snap(f)
		path := make([]Value, 1+r.IntN(3))
		for i := range path {
			switch r.IntN(3) {
			case 0:
				path[i] = Int(int64(1 + r.IntN(6)))
			case 1:
				path[i] = String(string(rune('a' + r.IntN(6))))
			default:
				path[i] = Int(int64(r.IntN(20)))
			}
		}
		v := genValue(r, 1)
		got, err := Except(f, path, v)
		want := refExcept(f, path, v)
		if !before.same(f) {
			t.Fatalf("EXCEPT changed its input %s -> %v", before.str, f)
		}
		if want == nil {
			if err == nil {
				t.Fatalf("[%v EXCEPT !%v = %v] = %v, want an error", f, path, v, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("[%v EXCEPT !%v = %v]: %v", f, path, v, err)
		}
		gm := refFn(got)
		if len(gm) != len(want) {
			t.Fatalf("[%v EXCEPT !%v = %v] = %v: domain size %d, want %d", f, path, v, got, len(gm), len(want))
		}
		for k, wv := range want {
			if gv, ok := gm[k]; !ok || !Equal(gv, wv) {
				t.Fatalf("[%v EXCEPT !%v = %v] = %v: at key %x got %v want %v", f, path, v, got, k, gv, wv)
			}
		}
		// And the result is the value built from the reference map.
		nk, nv := make([]Value, 0), make([]Value, 0)
		for k, vv := range want {
			d, _ := Decode([]byte(k))
			nk, nv = append(nk, d), append(nv, vv)
		}
		if ref := m(FunctionFromPairs(nk, nv)); !Equal(ref, got) || ref.Hash() != got.Hash() {
			t.Fatalf("EXCEPT result %v differs from reference %v", got, ref)
		}
	}
}

// TestArithmeticMatchesBig: the int64 fast paths agree with math/big on
// random operands near the overflow boundaries.
func TestArithmeticMatchesBig(t *testing.T) {
	edges := []int64{0, 1, -1, 2, -2, 3, 1 << 31, -1 << 31, 1<<62 + 7, -1 << 62, 1<<63 - 1, -1 << 63, 3037000499, -3037000500}
	for seed := range testseed.Each(t, testseed.Range(1, 50)...) {
		r := rand.New(rand.NewPCG(seed, 5))
		pick := func() int64 {
			if r.IntN(2) == 0 {
				return edges[r.IntN(len(edges))] + int64(r.IntN(5)) - 2
			}
			return int64(r.Uint64())
		}
		for range 200 {
			x, y := pick(), pick()
			a, b := Int(x), Int(y)
			check := func(name string, got Value, want Value) {
				if !Equal(got, want) || got.r != want.r {
					t.Fatalf("%d %s %d = %v (rep %d), want %v", x, name, y, got, got.r, want)
				}
			}
			bx, by := bigOf(a), bigOf(b)
			check("+", m(Plus(a, b)), normBig(new(big.Int).Add(bx, by)))
			check("-", m(Minus(a, b)), normBig(new(big.Int).Sub(bx, by)))
			check("*", m(Times(a, b)), normBig(new(big.Int).Mul(bx, by)))
			if y != 0 {
				// floor division reference: q = floor(x/y) via big.Rat-free math.
				q, md := new(big.Int).DivMod(bx, by, new(big.Int))
				if md.Sign() != 0 && by.Sign() < 0 {
					q.Sub(q, big.NewInt(1))
				}
				check(`\div`, m(Div(a, b)), normBig(q))
				// a = b * (a \div b) + r with r between 0 and b (sign of b).
				back := m(Plus(m(Times(b, m(Div(a, b)))), m(Minus(a, m(Times(b, m(Div(a, b))))))))
				check("round trip", back, a)
			}
			if y > 0 {
				rm := m(Mod(a, b))
				if rm.Kind() != KindInt || compareInt(rm, Int(0)) < 0 || compareInt(rm, b) >= 0 {
					t.Fatalf("%d %% %d = %v, not in 0..%d", x, y, rm, y-1)
				}
				check("%", rm, normBig(new(big.Int).Mod(bx, by)))
			}
			check("neg", m(Neg(a)), normBig(new(big.Int).Neg(bx)))
		}
	}
}

// TestLargeFunctionVersions: a chunked function (more than chunkedAbove
// entries) updated many times agrees with a Go map after every update,
// and every earlier version keeps its contents.
func TestLargeFunctionVersions(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 20)...) {
		r := rand.New(rand.NewPCG(seed, 8))
		n := chunkedAbove + 1 + r.IntN(300)
		keys, vals := make([]Value, n), make([]Value, n)
		ref := make(map[string]int64, n)
		for i := range keys {
			name := "k" + strconv.Itoa(i)
			keys[i], vals[i] = String(name), Int(int64(i))
			ref[name] = int64(i)
		}
		f := m(FunctionFromPairs(keys, vals))
		if f.fn().chunks == nil {
			t.Fatalf("%d entries not chunked", n)
		}
		type version struct {
			f   Value
			ref map[string]int64
		}
		var versions []version
		for step := range 200 {
			i := r.IntN(n + 5) // sometimes outside the domain
			name := "k" + strconv.Itoa(i)
			f = m(Except(f, []Value{String(name)}, Int(int64(-step))))
			if _, ok := ref[name]; ok {
				ref = maps.Clone(ref)
				ref[name] = int64(-step)
			}
			versions = append(versions, version{f, ref})
		}
		for vi, v := range versions {
			if fnLen(v.f) != len(v.ref) {
				t.Fatalf("version %d has %d entries, want %d", vi, fnLen(v.f), len(v.ref))
			}
			for name, want := range v.ref {
				if got := m(Apply(v.f, String(name))); !Equal(got, Int(want)) {
					t.Fatalf("version %d: f[%q] = %v, want %d", vi, name, got, want)
				}
			}
		}
		// Equality and hashing see through chunking: rebuild the last
		// version flat-from-pairs and compare.
		last := versions[len(versions)-1]
		ks, vs := make([]Value, 0, n), make([]Value, 0, n)
		for name, x := range last.ref {
			ks, vs = append(ks, String(name)), append(vs, Int(x))
		}
		rebuilt := m(FunctionFromPairs(ks, vs))
		if !Equal(rebuilt, last.f) || rebuilt.Hash() != last.f.Hash() || rebuilt.String() != last.f.String() {
			t.Fatalf("rebuilt function differs")
		}
		if w := m(Decode(m2(last.f.MarshalBinary()))); !Equal(w, last.f) {
			t.Fatalf("chunked function does not round-trip")
		}
	}
}

func m2(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
