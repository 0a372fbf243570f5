package tla

import (
	"math/big"
	"math/rand/v2"
	"slices"
)

// genValue builds a random value of nesting at most depth, through the
// public constructors and operators (so every representation and every
// normalization path shows up): small and big integers, strings, model
// values, tuples built by Tuple, Append, Tail and SubSeq, records,
// functions from pairs, :> and @@, sets and intervals.
func genValue(r *rand.Rand, depth int) Value {
	k := r.IntN(12)
	if depth <= 0 {
		k = r.IntN(5)
	}
	switch k {
	case 0:
		return Bool(r.IntN(2) == 0)
	case 1:
		return Int(int64(r.IntN(9)) - 3)
	case 2:
		switch r.IntN(4) {
		case 0:
			x := new(big.Int).Lsh(big.NewInt(int64(r.IntN(5)+1)), uint(60+r.IntN(10)))
			if r.IntN(2) == 0 {
				x.Neg(x)
			}
			return BigInt(x)
		case 1:
			return Int([]int64{1<<63 - 1, -1 << 63, 1 << 40}[r.IntN(3)])
		}
		return Int(int64(r.IntN(5)))
	case 3:
		return String([]string{"", "a", "b", "ab", "x y", "1"}[r.IntN(6)])
	case 4:
		return ModelValue([]string{"m1", "m2", "a"}[r.IntN(3)])
	case 5, 6:
		n := r.IntN(5)
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = genValue(r, depth-1)
		}
		switch r.IntN(3) {
		case 0:
			return Tuple(vs...)
		case 1:
			t := EmptyTuple
			for _, v := range vs {
				t, _ = Append(t, v)
			}
			return t
		}
		// A slice out of a longer sequence.
		t := Tuple(append(append([]Value{Int(7)}, vs...), Int(8))...)
		t, _ = Tail(t)
		t, _ = SubSeq(t, Int(1), Int(int64(n)))
		return t
	case 7:
		n := r.IntN(4)
		fs := make([]FieldValue, n)
		for i := range fs {
			fs[i] = F([]string{"a", "b", "c", "type"}[r.IntN(4)], genValue(r, depth-1))
		}
		return Record(fs...)
	case 8:
		n := r.IntN(5)
		var keys, vals []Value
		for range n {
			k := genValue(r, depth-1)
			if slices.ContainsFunc(keys, func(x Value) bool { return Equal(x, k) }) {
				continue
			}
			keys, vals = append(keys, k), append(vals, genValue(r, depth-1))
		}
		f, err := FunctionFromPairs(keys, vals)
		if err != nil {
			panic(err)
		}
		return f
	case 9:
		f := MapsTo(genValue(r, depth-1), genValue(r, depth-1))
		g, _ := Merge(f, MapsTo(Int(int64(r.IntN(3))), genValue(r, depth-1)))
		return g
	case 10:
		n := r.IntN(6)
		vs := make([]Value, n)
		for i := range vs {
			vs[i] = genValue(r, depth-1)
		}
		return Set(vs...)
	}
	lo := int64(r.IntN(5)) - 2
	v, _ := Range(lo, lo+int64(r.IntN(5))-1)
	return v
}

// rebuild returns a value equal to v built another way: sets as unions
// of singletons (intervals enumerated, enumerated runs of integers as
// intervals where possible), sequences by Append from << >> or as
// functions from pairs, records and functions from shuffled pairs.
func rebuild(r *rand.Rand, v Value) Value {
	switch v.Kind() {
	case KindFunction:
		keys, vals, _ := Entries(v)
		for i := range vals {
			vals[i] = rebuild(r, vals[i])
			keys[i] = rebuild(r, keys[i])
		}
		if v.r == repTuple && r.IntN(2) == 0 {
			t := EmptyTuple
			for _, x := range vals {
				t, _ = Append(t, x)
			}
			return t
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i]; vals[i], vals[j] = vals[j], vals[i] })
		if len(keys) > 0 && r.IntN(2) == 0 {
			acc := MapsTo(keys[0], vals[0])
			for i := 1; i < len(keys); i++ {
				acc, _ = Merge(acc, MapsTo(keys[i], vals[i]))
			}
			return acc
		}
		f, err := FunctionFromPairs(keys, vals)
		if err != nil {
			panic(err)
		}
		return f
	case KindSet:
		es, _ := Elements(v)
		if len(es) > 0 && es[0].r == repInt && es[len(es)-1].r == repInt &&
			es[len(es)-1].n-es[0].n == int64(len(es)-1) && r.IntN(2) == 0 {
			iv, _ := Range(es[0].n, es[len(es)-1].n)
			return iv
		}
		r.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
		acc := EmptySet
		for _, e := range es {
			acc, _ = Union(acc, Set(rebuild(r, e)))
		}
		return acc
	case KindString:
		s, _ := v.AsString()
		return String(string([]byte(s))) // another backing array
	case KindInt:
		if v.r == repBigInt {
			b, _ := v.AsBig()
			return BigInt(b)
		}
	}
	return v
}
