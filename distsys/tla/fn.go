package tla

import (
	"slices"
	"strings"
	"unsafe"
)

// ---- functions and records ----

func checkFn(op string, v Value) error {
	if v.Kind() != KindFunction {
		return typeError(op, "a function", v)
	}
	return nil
}

// fnIndex finds x in f's domain: its position in canonical order.
func fnIndex(f, x Value) (int, bool) {
	if f.r == repTuple {
		n := f.n & 0xffffffff
		if x.r == repInt && 1 <= x.n && x.n <= n {
			return int(x.n - 1), true
		}
		return 0, false
	}
	return search(f.fn().keys, x)
}

// Apply is f[x]. Applying a function outside its domain is an error, as
// in TLC. (f[a, b] is f[<<a, b>>]: pass the tuple.)
func Apply(f, x Value) (Value, error) {
	if f.r == repTuple && x.r == repInt {
		// The sequence fast path: s[i] is an index.
		s := f.seq()
		if 1 <= x.n && x.n <= int64(len(s)) {
			return s[x.n-1], nil
		}
	} else if f.r == repFn {
		if i, ok := search(f.fn().keys, x); ok {
			return f.fn().val(i), nil
		}
	}
	if err := checkFn("f[x]", f); err != nil {
		return Value{}, err
	}
	return Value{}, errorf("f[x]", "%s is not in the domain of %s", show(x), show(f))
}

// Field is r.name, the field of a record.
func Field(r Value, name string) (Value, error) {
	if r.r == repFn {
		if i, ok := search(r.fn().keys, String(name)); ok {
			return r.fn().val(i), nil
		}
	}
	if err := checkFn("r.f", r); err != nil {
		return Value{}, err
	}
	return Value{}, errorf("r."+name, "no field %q in %s", name, show(r))
}

// Domain is DOMAIN f.
func Domain(f Value) (Value, error) {
	switch f.r {
	case repTuple:
		return Range(1, f.n&0xffffffff)
	case repFn:
		// The key slice is already a canonical set; share it.
		return setSorted(f.fn().keys), nil
	}
	return Value{}, typeError("DOMAIN", "a function", f)
}

// Except is [f EXCEPT ![p1][p2]...[pk] = v]. A path element outside the
// domain of the function it indexes leaves the function unchanged (TLA+'s
// definition; TLC agrees). The domain is never copied: the result shares
// f's key slice, and only the values along the path are copied.
// [f EXCEPT !.a = v] is a path of String("a"); several EXCEPT clauses
// are successive calls.
func Except(f Value, path []Value, v Value) (Value, error) {
	return except(f, path, func(Value) (Value, error) { return v, nil })
}

// ExceptWith is [f EXCEPT ![p1]...[pk] = e] where e mentions @, the old
// value at the path: update receives it.
func ExceptWith(f Value, path []Value, update func(old Value) (Value, error)) (Value, error) {
	return except(f, path, update)
}

func except(f Value, path []Value, update func(Value) (Value, error)) (Value, error) {
	if len(path) == 0 {
		return update(f)
	}
	if err := checkFn("EXCEPT", f); err != nil {
		return Value{}, err
	}
	i, ok := fnIndex(f, path[0])
	if !ok {
		return f, nil
	}
	old := fnValAt(f, i)
	nv, err := except(old, path[1:], update)
	if err != nil {
		return Value{}, err
	}
	if nv.r == old.r && nv.p == old.p && nv.n == old.n {
		return f, nil // nothing changed: keep sharing f
	}
	if f.r == repTuple {
		vals := slices.Clone(f.seq())
		vals[i] = nv
		return tupleOwned(vals), nil
	}
	return Value{r: repFn, p: unsafe.Pointer(f.fn().with(i, nv))}, nil
}

// fnSorted makes the function keys[i] :> vals[i]; keys sorted, distinct,
// both slices owned. A domain of exactly 1..n makes a sequence: the
// normalization every function constructor goes through.
func fnSorted(keys, vals []Value) Value {
	n := len(keys)
	if n == 0 {
		return EmptyTuple
	}
	// Between two integers in canonical order there are only integers,
	// and big integers lie outside 1..n: checking the ends suffices.
	if keys[0].r == repInt && keys[0].n == 1 && keys[n-1].r == repInt && keys[n-1].n == int64(n) {
		return tupleOwned(vals)
	}
	return Value{r: repFn, p: unsafe.Pointer(newFnData(keys, vals))}
}

// Function is [x \in S |-> body(x)].
func Function(s Value, body func(x Value) (Value, error)) (Value, error) {
	if s.r == repInterval && s.ival().lo == 1 {
		n := setLen(s)
		if n > maxSeqLen || n > MaxElements {
			return Value{}, tooLarge("[x \\in S |-> e]", "domain %s too large", show(s))
		}
		vals := make([]Value, n)
		for i := range vals {
			v, err := body(Int(int64(i) + 1))
			if err != nil {
				return Value{}, err
			}
			vals[i] = v
		}
		return tupleOwned(vals), nil
	}
	keys, err := elemsOf("[x \\in S |-> e]", s)
	if err != nil {
		return Value{}, err
	}
	vals := make([]Value, len(keys))
	for i, k := range keys {
		if vals[i], err = body(k); err != nil {
			return Value{}, err
		}
	}
	// keys is the set's own slice (or a fresh one for an interval):
	// immutable either way, so the function shares it.
	return fnSorted(keys, vals), nil
}

// FunctionFromPairs is the function keys[i] :> vals[i] (the slices are
// copied). A key given twice is an error.
func FunctionFromPairs(keys, vals []Value) (Value, error) {
	if len(keys) != len(vals) {
		return Value{}, errorf("function", "%d keys, %d values", len(keys), len(vals))
	}
	ord := make([]int, len(keys))
	for i := range ord {
		ord[i] = i
	}
	slices.SortFunc(ord, func(a, b int) int { return Compare(keys[a], keys[b]) })
	k, v := make([]Value, len(keys)), make([]Value, len(keys))
	for j, i := range ord {
		if j > 0 && Equal(keys[ord[j-1]], keys[i]) {
			return Value{}, errorf("function", "key %s given twice", show(keys[i]))
		}
		k[j], v[j] = keys[i], vals[i]
	}
	return fnSorted(k, v), nil
}

// MapsTo is k :> v, the function with domain {k}.
func MapsTo(k, v Value) Value {
	return fnSorted([]Value{k}, []Value{v})
}

// Merge is f @@ g: f on DOMAIN f, g on the rest of DOMAIN g.
func Merge(f, g Value) (Value, error) {
	if err := checkFn("@@", f); err != nil {
		return Value{}, err
	}
	if err := checkFn("@@", g); err != nil {
		return Value{}, err
	}
	n, m := fnLen(f), fnLen(g)
	if m == 0 {
		return f, nil
	}
	if n == 0 {
		return g, nil
	}
	keys := make([]Value, 0, n+m)
	vals := make([]Value, 0, n+m)
	i, j := 0, 0
	for i < n && j < m {
		switch c := Compare(fnKeyAt(f, i), fnKeyAt(g, j)); {
		case c < 0:
			keys, vals = append(keys, fnKeyAt(f, i)), append(vals, fnValAt(f, i))
			i++
		case c > 0:
			keys, vals = append(keys, fnKeyAt(g, j)), append(vals, fnValAt(g, j))
			j++
		default:
			keys, vals = append(keys, fnKeyAt(f, i)), append(vals, fnValAt(f, i))
			i++
			j++
		}
	}
	for ; i < n; i++ {
		keys, vals = append(keys, fnKeyAt(f, i)), append(vals, fnValAt(f, i))
	}
	for ; j < m; j++ {
		keys, vals = append(keys, fnKeyAt(g, j)), append(vals, fnValAt(g, j))
	}
	if len(keys) == n {
		return f, nil
	}
	return fnSorted(keys, vals), nil
}

// Entries returns copies of f's domain (in canonical order) and the
// values at those points.
func Entries(f Value) (keys, vals []Value, err error) {
	if err := checkFn("entries", f); err != nil {
		return nil, nil, err
	}
	n := fnLen(f)
	keys, vals = make([]Value, n), make([]Value, n)
	for i := range n {
		keys[i], vals[i] = fnKeyAt(f, i), fnValAt(f, i)
	}
	return keys, vals, nil
}

// FunctionSet is [S -> T], the set of all functions from S to T.
func FunctionSet(s, t Value) (Value, error) {
	ks, err := elemsOf("[S -> T]", s)
	if err != nil {
		return Value{}, err
	}
	ts, err := elemsOf("[S -> T]", t)
	if err != nil {
		return Value{}, err
	}
	total := int64(1)
	for range ks {
		total *= int64(len(ts))
		if total > MaxElements {
			return Value{}, tooLarge("[S -> T]", "more than %d functions", MaxElements)
		}
	}
	out := make([]Value, 0, total)
	idx := make([]int, len(ks))
	for range total {
		vals := make([]Value, len(ks))
		for i := range ks {
			vals[i] = ts[idx[i]]
		}
		out = append(out, fnSorted(ks, vals))
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < len(ts) {
				break
			}
			idx[k] = 0
		}
	}
	return setOwned(out), nil
}

// FieldSet is one field of a set of records [name: Set].
type FieldSet struct {
	Name string
	Set  Value
}

// RecordSet is [f1 : S1, f2 : S2, ...], the set of records.
func RecordSet(fields ...FieldSet) (Value, error) {
	fields = slices.Clone(fields) // sorted below; the caller's slice is not ours
	slices.SortFunc(fields, func(a, b FieldSet) int { return strings.Compare(a.Name, b.Name) })
	keys := make([]Value, len(fields))
	lists := make([][]Value, len(fields))
	total := int64(1)
	for i, f := range fields {
		if i > 0 && fields[i-1].Name == f.Name {
			return Value{}, errorf("[f : S]", "field %q given twice", f.Name)
		}
		keys[i] = String(f.Name)
		es, err := elemsOf("[f : S]", f.Set)
		if err != nil {
			return Value{}, err
		}
		lists[i] = es
		if total *= int64(len(es)); total > MaxElements {
			return Value{}, tooLarge("[f : S]", "more than %d records", MaxElements)
		}
	}
	out := make([]Value, 0, total)
	idx := make([]int, len(fields))
	for range total {
		vals := make([]Value, len(fields))
		for i, l := range lists {
			vals[i] = l[idx[i]]
		}
		out = append(out, fnSorted(keys, vals))
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < len(lists[k]) {
				break
			}
			idx[k] = 0
		}
	}
	return setOwned(out), nil
}

// ---- sequences ----

func checkSeq(op string, s Value) ([]Value, error) {
	if s.r == repTuple {
		return s.seq(), nil
	}
	if s.r == repFn {
		// Normalization makes every function with domain 1..n a
		// repTuple, so this one is not a sequence.
		return nil, errorf(op, "%s is a function whose domain is not 1..n, not a sequence", show(s))
	}
	return nil, typeError(op, "a sequence", s)
}

// Len is Len(s) for a sequence, or the length in bytes of a string (TLC
// accepts strings; TLA+ strings are ASCII in practice).
func Len(s Value) (Value, error) {
	if s.r == repString {
		return Int(s.n), nil
	}
	q, err := checkSeq("Len", s)
	return Int(int64(len(q))), err
}

// Append is Append(s, x). When s ends at the high-water mark of a backing
// array with room left, x is written into the next slot, which s and
// every other sequence sharing the array do not contain (see seqArr); so
// a sequence built by repeated Append costs amortized O(1) per element,
// as a Go slice does. Otherwise the elements are copied into a new array
// with room to grow.
func Append(s, x Value) (Value, error) {
	if s.r != repTuple {
		_, err := checkSeq("Append", s)
		return Value{}, err
	}
	a := s.seqArr()
	off, n := int(s.n>>32), int(s.n&0xffffffff)
	end := off + n
	if end < len(a.vals) && a.used.CompareAndSwap(int64(end), int64(end+1)) {
		a.vals[end] = x
		return seqValue(a, off, n+1), nil
	}
	if n+1 > maxSeqLen {
		return Value{}, tooLarge("Append", "sequence longer than %d", maxSeqLen)
	}
	vals := make([]Value, n+1, max(4, 2*n))
	copy(vals, a.vals[off:end])
	vals[n] = x
	return tupleOwned(vals), nil
}

// Head is Head(s); an error for << >>.
func Head(s Value) (Value, error) {
	q, err := checkSeq("Head", s)
	if err != nil {
		return Value{}, err
	}
	if len(q) == 0 {
		return Value{}, errorf("Head", "Head of the empty sequence")
	}
	return q[0], nil
}

// Tail is Tail(s); an error for << >>. The result shares s's array (O(1)).
func Tail(s Value) (Value, error) {
	q, err := checkSeq("Tail", s)
	if err != nil {
		return Value{}, err
	}
	if len(q) == 0 {
		return Value{}, errorf("Tail", "Tail of the empty sequence")
	}
	return seqValue(s.seqArr(), int(s.n>>32)+1, len(q)-1), nil
}

// SubSeq is SubSeq(s, m, n): << >> if m > n, otherwise s[m..n], which
// must lie within 1..Len(s). The result shares s's array (O(1)).
func SubSeq(s, m, n Value) (Value, error) {
	q, err := checkSeq("SubSeq", s)
	if err != nil {
		return Value{}, err
	}
	if m.r != repInt || n.r != repInt {
		if m.Kind() != KindInt {
			return Value{}, typeError("SubSeq", "an integer", m)
		}
		if n.Kind() != KindInt {
			return Value{}, typeError("SubSeq", "an integer", n)
		}
		if compareInt(m, n) > 0 {
			return EmptyTuple, nil
		}
		return Value{}, errorf("SubSeq", "indices %s..%s outside 1..%d", m, n, len(q))
	}
	if m.n > n.n {
		return EmptyTuple, nil
	}
	if m.n < 1 || n.n > int64(len(q)) {
		return Value{}, errorf("SubSeq", "indices %d..%d outside 1..%d", m.n, n.n, len(q))
	}
	return seqValue(s.seqArr(), int(s.n>>32)+int(m.n-1), int(n.n-m.n+1)), nil
}

// Concat is s \o t, for sequences or for strings.
func Concat(s, t Value) (Value, error) {
	if s.r == repString && t.r == repString {
		return String(s.str() + t.str()), nil
	}
	q, err := checkSeq(`\o`, s)
	if err != nil {
		return Value{}, err
	}
	r, err := checkSeq(`\o`, t)
	if err != nil {
		return Value{}, err
	}
	if len(r) == 0 {
		return s, nil
	}
	if len(q) == 0 {
		return t, nil
	}
	if len(q)+len(r) > maxSeqLen {
		return Value{}, tooLarge(`\o`, "sequence longer than %d", maxSeqLen)
	}
	// As in Append: extend s's array in place if s owns its end.
	a := s.seqArr()
	off := int(s.n >> 32)
	end := off + len(q)
	if end+len(r) <= len(a.vals) && a.used.CompareAndSwap(int64(end), int64(end+len(r))) {
		copy(a.vals[end:], r)
		return seqValue(a, off, len(q)+len(r)), nil
	}
	vals := make([]Value, len(q)+len(r), 2*(len(q)+len(r)))
	copy(vals, q)
	copy(vals[len(q):], r)
	return tupleOwned(vals), nil
}

// SelectSeq is SelectSeq(s, test).
func SelectSeq(s Value, test func(Value) (bool, error)) (Value, error) {
	q, err := checkSeq("SelectSeq", s)
	if err != nil {
		return Value{}, err
	}
	var out []Value
	for _, x := range q {
		ok, err := test(x)
		if err != nil {
			return Value{}, err
		}
		if ok {
			out = append(out, x)
		}
	}
	if len(out) == len(q) {
		return s, nil
	}
	return tupleOwned(out), nil
}

// InSeq is s \in Seq(S): s is a sequence (a function with domain 1..n)
// whose elements are all in S.
func InSeq(s, set Value) (Value, error) {
	if err := checkSet("Seq(S)", set); err != nil {
		return Value{}, err
	}
	if s.r != repTuple {
		return False, nil
	}
	for _, x := range s.seq() {
		if !member(x, set) {
			return False, nil
		}
	}
	return True, nil
}
