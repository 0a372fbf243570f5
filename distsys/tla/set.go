package tla

import (
	"cmp"
	"slices"
	"strings"
)

// MaxElements bounds how many elements an operation enumerates: an
// interval like 1..2^40 is a fine value (two bounds) but building,
// filtering or printing its elements one by one would exhaust memory or
// never finish. Operations that would enumerate more return an error
// matching ErrTooLarge.
const MaxElements = 1 << 24

// maxPowerset bounds SUBSET S to sets of at most this many elements
// (2^20 subsets).
const maxPowerset = 20

func checkSet(op string, v Value) error {
	if v.Kind() != KindSet {
		return typeError(op, "a set", v)
	}
	return nil
}

// elemsOf returns S's elements in canonical order; an interval is
// materialized (at most MaxElements). The result is shared: never
// written.
func elemsOf(op string, s Value) ([]Value, error) {
	switch s.r {
	case repSet:
		return s.set().elems, nil
	case repInterval:
		n := setLen(s)
		if n > MaxElements {
			return nil, tooLarge(op, "%s has %d elements, more than the %d this package enumerates", show(s), n, MaxElements)
		}
		out := make([]Value, n)
		for i := range out {
			out[i] = Int(s.ival().lo + int64(i))
		}
		return out, nil
	}
	return nil, typeError(op, "a set", s)
}

// Elements returns a copy of S's elements in canonical order (the order
// CHOOSE and TLC's printing use).
func Elements(s Value) ([]Value, error) {
	e, err := elemsOf("elements", s)
	if err != nil {
		return nil, err
	}
	if s.r == repSet {
		e = slices.Clone(e)
	}
	return e, nil
}

// Cardinality is Cardinality(S).
func Cardinality(s Value) (Value, error) {
	if err := checkSet("Cardinality", s); err != nil {
		return Value{}, err
	}
	return Int(setLen(s)), nil
}

// member is x \in S for a set S (checked by the caller).
func member(x, s Value) bool {
	if s.r == repInterval {
		iv := s.ival()
		return x.r == repInt && iv.lo <= x.n && x.n <= iv.hi
	}
	_, ok := search(s.set().elems, x)
	return ok
}

// search finds x in the sorted slice es: its index, or where it would
// go. It is the inner loop of membership, function application and
// field access, so integer and string keys (nearly all keys) compare
// inline instead of through Compare; other kinds take the general path.
func search(es []Value, x Value) (int, bool) {
	lo, hi := 0, len(es)
	switch x.r {
	case repInt:
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			e := &es[h]
			var c int
			if e.r == repInt {
				c = cmp.Compare(e.n, x.n)
			} else {
				c = Compare(*e, x)
			}
			switch {
			case c < 0:
				lo = h + 1
			case c > 0:
				hi = h
			default:
				return h, true
			}
		}
		return lo, false
	case repString, repModel:
		xs := x.str()
		for lo < hi {
			h := int(uint(lo+hi) >> 1)
			e := &es[h]
			var c int
			switch {
			case e.r == x.r && e.p == x.p && e.n == x.n:
				return h, true // same bytes: keys made from one literal
			case e.r == x.r:
				c = strings.Compare(e.str(), xs)
			default:
				c = Compare(*e, x)
			}
			switch {
			case c < 0:
				lo = h + 1
			case c > 0:
				hi = h
			default:
				return h, true
			}
		}
		return lo, false
	}
	return slices.BinarySearchFunc(es, x, Compare)
}

// In is x \in S.
func In(x, s Value) (Value, error) {
	if err := checkSet(`\in`, s); err != nil {
		return Value{}, err
	}
	return Bool(member(x, s)), nil
}

// NotIn is x \notin S.
func NotIn(x, s Value) (Value, error) {
	if err := checkSet(`\notin`, s); err != nil {
		return Value{}, err
	}
	return Bool(!member(x, s)), nil
}

// Union is A \union B.
func Union(a, b Value) (Value, error) {
	if err := checkSet(`\union`, a); err != nil {
		return Value{}, err
	}
	if err := checkSet(`\union`, b); err != nil {
		return Value{}, err
	}
	switch {
	case setLen(a) == 0:
		return b, nil
	case setLen(b) == 0:
		return a, nil
	case a.r == repInterval && b.r == repInterval:
		x, y := a.ival(), b.ival()
		if x.lo > y.lo {
			x, y = y, x
		}
		if y.lo <= x.hi || y.lo-1 == x.hi { // overlapping or adjacent
			return Range(x.lo, max(x.hi, y.hi))
		}
	}
	if setLen(a) < setLen(b) {
		a, b = b, a // a is the larger
	}
	ea, err := elemsOf(`\union`, a)
	if err != nil {
		return Value{}, err
	}
	eb, err := elemsOf(`\union`, b)
	if err != nil {
		return Value{}, err
	}
	if len(eb)*8 <= len(ea) {
		return insertSorted(a, ea, eb), nil
	}
	out := make([]Value, 0, len(ea)+len(eb))
	i, j := 0, 0
	for i < len(ea) && j < len(eb) {
		switch c := Compare(ea[i], eb[j]); {
		case c < 0:
			out = append(out, ea[i])
			i++
		case c > 0:
			out = append(out, eb[j])
			j++
		default:
			out = append(out, ea[i])
			i++
			j++
		}
	}
	out = append(out, ea[i:]...)
	out = append(out, eb[j:]...)
	if len(out) == len(ea) {
		return a, nil // b was a subset: keep a's representation
	}
	return setSorted(out[:len(out):len(out)]), nil
}

// insertSorted is a \union b for b much smaller than a (ea, eb their
// elements): one binary search per element of b and one copy of a,
// instead of comparing every element of a. If b adds nothing, a itself
// is returned (msgs \union {m} for an m already sent allocates nothing).
func insertSorted(a Value, ea, eb []Value) Value {
	var pos [8]int
	idx := pos[:0]
	var add []Value
	lo := 0
	for _, x := range eb {
		i, found := search(ea[lo:], x)
		i += lo
		lo = i
		if !found {
			idx = append(idx, i)
			add = append(add, x)
		}
	}
	if len(add) == 0 {
		return a
	}
	out := make([]Value, len(ea)+len(add))
	from, to := 0, 0
	for k, i := range idx {
		to += copy(out[to:], ea[from:i])
		out[to] = add[k]
		to++
		from = i
	}
	copy(out[to:], ea[from:])
	return setSorted(out)
}

// Intersect is A \intersect B.
func Intersect(a, b Value) (Value, error) {
	if err := checkSet(`\intersect`, a); err != nil {
		return Value{}, err
	}
	if err := checkSet(`\intersect`, b); err != nil {
		return Value{}, err
	}
	if a.r == repInterval && b.r == repInterval {
		x, y := a.ival(), b.ival()
		return Range(max(x.lo, y.lo), min(x.hi, y.hi))
	}
	if setLen(a) > setLen(b) {
		a, b = b, a // a is the smaller: enumerate it, look up in b
	}
	ea, err := elemsOf(`\intersect`, a)
	if err != nil {
		return Value{}, err
	}
	var out []Value
	for _, x := range ea {
		if member(x, b) {
			out = append(out, x)
		}
	}
	if len(out) == len(ea) {
		return a, nil
	}
	return setSorted(out), nil
}

// SetMinus is A \ B.
func SetMinus(a, b Value) (Value, error) {
	if err := checkSet(`\`, a); err != nil {
		return Value{}, err
	}
	if err := checkSet(`\`, b); err != nil {
		return Value{}, err
	}
	if setLen(b) == 0 {
		return a, nil
	}
	ea, err := elemsOf(`\`, a)
	if err != nil {
		return Value{}, err
	}
	// Find the first element to drop before allocating anything, so
	// that S \ {x} for an x not in S costs no allocation.
	first := -1
	for i, x := range ea {
		if member(x, b) {
			first = i
			break
		}
	}
	if first < 0 {
		return a, nil
	}
	out := make([]Value, first, len(ea)-1)
	copy(out, ea[:first])
	for _, x := range ea[first+1:] {
		if !member(x, b) {
			out = append(out, x)
		}
	}
	return setSorted(out), nil
}

// subsetEq is A \subseteq B for sets.
func subsetEq(a, b Value) (bool, error) {
	if setLen(a) > setLen(b) {
		return false, nil
	}
	if a.r == repInterval && b.r == repInterval {
		return b.ival().lo <= a.ival().lo && a.ival().hi <= b.ival().hi, nil
	}
	ea, err := elemsOf(`\subseteq`, a)
	if err != nil {
		return false, err
	}
	for _, x := range ea {
		if !member(x, b) {
			return false, nil
		}
	}
	return true, nil
}

// SubsetEq is A \subseteq B (also x \in SUBSET B without building SUBSET B).
func SubsetEq(a, b Value) (Value, error) {
	if err := checkSet(`\subseteq`, a); err != nil {
		return Value{}, err
	}
	if err := checkSet(`\subseteq`, b); err != nil {
		return Value{}, err
	}
	ok, err := subsetEq(a, b)
	return Bool(ok), err
}

// Subset is SUBSET S, the set of all subsets of S, for S of at most 20
// elements.
func Subset(s Value) (Value, error) {
	if err := checkSet("SUBSET", s); err != nil {
		return Value{}, err
	}
	if setLen(s) > maxPowerset {
		return Value{}, tooLarge("SUBSET", "%s has %d elements; SUBSET is built for at most %d", show(s), setLen(s), maxPowerset)
	}
	es, err := elemsOf("SUBSET", s)
	if err != nil {
		return Value{}, err
	}
	out := make([]Value, 0, 1<<len(es))
	for mask := 0; mask < 1<<len(es); mask++ {
		var sub []Value
		for i, e := range es {
			if mask&(1<<i) != 0 {
				sub = append(sub, e) // stays sorted: es is
			}
		}
		out = append(out, setSorted(sub))
	}
	return setOwned(out), nil
}

// BigUnion is UNION S: the union of the sets in S.
func BigUnion(s Value) (Value, error) {
	es, err := elemsOf("UNION", s)
	if err != nil {
		return Value{}, err
	}
	var all []Value
	for _, x := range es {
		ex, err := elemsOf("UNION", x)
		if err != nil {
			return Value{}, err
		}
		if len(all)+len(ex) > MaxElements {
			return Value{}, tooLarge("UNION", "more than %d elements", MaxElements)
		}
		all = append(all, ex...)
	}
	return setOwned(all), nil
}

// Filter is {x \in S : pred(x)}.
func Filter(s Value, pred func(Value) (bool, error)) (Value, error) {
	es, err := elemsOf("{x \\in S : P}", s)
	if err != nil {
		return Value{}, err
	}
	var out []Value
	for _, x := range es {
		ok, err := pred(x)
		if err != nil {
			return Value{}, err
		}
		if ok {
			out = append(out, x)
		}
	}
	if len(out) == len(es) {
		return s, nil
	}
	return setSorted(out), nil
}

// Map is {f(x) : x \in S}.
func Map(s Value, f func(Value) (Value, error)) (Value, error) {
	es, err := elemsOf("{e : x \\in S}", s)
	if err != nil {
		return Value{}, err
	}
	out := make([]Value, len(es))
	for i, x := range es {
		if out[i], err = f(x); err != nil {
			return Value{}, err
		}
	}
	return setOwned(out), nil
}

// Exists is \E x \in S : pred(x), trying elements in canonical order and
// stopping at the first that satisfies pred.
func Exists(s Value, pred func(Value) (bool, error)) (Value, error) {
	_, found, err := choose(`\E`, s, pred)
	return Bool(found), err
}

// Forall is \A x \in S : pred(x), stopping at the first counterexample.
func Forall(s Value, pred func(Value) (bool, error)) (Value, error) {
	_, found, err := choose(`\A`, s, func(x Value) (bool, error) {
		ok, err := pred(x)
		return !ok, err
	})
	return Bool(!found), err
}

// Choose is CHOOSE x \in S : pred(x): the least element of S in
// canonical order that satisfies pred (what TLC picks), or an error if
// none does.
func Choose(s Value, pred func(Value) (bool, error)) (Value, error) {
	x, found, err := choose("CHOOSE", s, pred)
	if err != nil {
		return Value{}, err
	}
	if !found {
		return Value{}, errorf("CHOOSE", "no element of %s satisfies the predicate", show(s))
	}
	return x, nil
}

func choose(op string, s Value, pred func(Value) (bool, error)) (Value, bool, error) {
	if err := checkSet(op, s); err != nil {
		return Value{}, false, err
	}
	n := setLen(s)
	if s.r == repInterval && n > MaxElements {
		return Value{}, false, tooLarge(op, "%s has more than %d elements", show(s), MaxElements)
	}
	for i := int64(0); i < n; i++ {
		x := setAt(s, i)
		ok, err := pred(x)
		if err != nil {
			return Value{}, false, err
		}
		if ok {
			return x, true, nil
		}
	}
	return Value{}, false, nil
}

// CrossProduct is S1 \X S2 \X ...: the set of tuples.
func CrossProduct(sets ...Value) (Value, error) {
	lists := make([][]Value, len(sets))
	total := int64(1)
	for i, s := range sets {
		es, err := elemsOf(`\X`, s)
		if err != nil {
			return Value{}, err
		}
		lists[i] = es
		total *= int64(len(es))
		if total > MaxElements {
			return Value{}, tooLarge(`\X`, "more than %d tuples", MaxElements)
		}
	}
	if len(sets) == 0 {
		return Set(EmptyTuple), nil
	}
	out := make([]Value, 0, total)
	idx := make([]int, len(sets))
	for total > 0 {
		t := make([]Value, len(sets))
		for i, l := range lists {
			t[i] = l[idx[i]]
		}
		out = append(out, tupleOwned(t))
		// Odometer; the last position turns fastest, which makes the
		// output sorted already (tuples of one length compare
		// lexicographically).
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(lists[k]) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	return setSorted(out), nil
}
