package tla

import (
	"math/big"
	"slices"
	"strata/internal/tlastring"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Kind is what a value is in TLA+ terms. Tuples, sequences and records
// are all KindFunction: TLA+ does not tell them apart. The order of the
// constants is the order Compare puts kinds in.
type Kind uint8

const (
	KindInvalid    Kind = iota // the zero Value
	KindBool                   // TRUE, FALSE
	KindInt                    // integers, unbounded
	KindString                 // "abc"
	KindModelValue             // TLC model values
	KindFunction               // functions, tuples/sequences, records
	KindSet                    // finite sets, intervals
)

func (k Kind) String() string {
	switch k {
	case KindBool:
		return "boolean"
	case KindInt:
		return "integer"
	case KindString:
		return "string"
	case KindModelValue:
		return "model value"
	case KindFunction:
		return "function"
	case KindSet:
		return "set"
	}
	return "invalid value"
}

// rep is how a value is held; several reps may hold one Kind.
type rep uint8

const (
	repInvalid  rep = iota
	repBool         // n: 0 or 1
	repInt          // n: the integer
	repBigInt       // p: *big.Int, never within int64 (normalized)
	repString       // p, n: the string's bytes and length
	repModel        // p, n: the model value's name
	repTuple        // p: *seqArr; n: offset<<32 | length
	repFn           // p: *fnData; domain never exactly 1..n (that is a repTuple)
	repSet          // p: *setData
	repInterval     // p: *intervalData, never empty (that is an empty repSet)
)

var repKind = [...]Kind{
	repInvalid:  KindInvalid,
	repBool:     KindBool,
	repInt:      KindInt,
	repBigInt:   KindInt,
	repString:   KindString,
	repModel:    KindModelValue,
	repTuple:    KindFunction,
	repFn:       KindFunction,
	repSet:      KindSet,
	repInterval: KindSet,
}

// Value is an immutable TLA+ value. The zero Value is invalid (see
// IsValid). Values are compared with Equal, never with ==: == compares
// representations, and <<1>> = (1 :> 1) built two ways are different
// representations of one value.
//
// A Value is 24 bytes and is passed by value. Scalars live in it
// entirely; compound values point to an immutable heap object. One
// unsafe.Pointer serves every kind (the tag says which type it points
// to) so that a string needs no boxing and the struct stays at three
// words; an interface field would add a word and box strings.
type Value struct {
	p unsafe.Pointer
	n int64
	r rep
}

// seqArr is the backing array of one or more sequences. used is how many
// slots some sequence has claimed; a sequence ending exactly at used may
// claim the next slot (compare-and-swap) and write it in place, every
// other append copies. Slots below used are never written again.
type seqArr struct {
	vals []Value // len(vals) == cap: the whole array
	used atomic.Int64
}

// fnData is a function that is not a sequence. keys is sorted in
// canonical order, duplicate-free, and shared with every function that
// has the same domain (EXCEPT never changes the domain). The value at
// keys[i] is vals[i] for small functions and chunks[i/32][i%32] for
// large ones (see chunkedAbove).
type fnData struct {
	keys   []Value
	vals   []Value       // len(keys) <= chunkedAbove
	chunks [][]Value     // len(keys) > chunkedAbove: full chunks of chunkSize, the last maybe shorter
	hash   atomic.Uint64 // 0: not computed yet
}

// Large functions keep their values in chunks of chunkSize, a two-level
// persistent array: an EXCEPT copies the chunk index (n/32 pointers)
// and one chunk (32 values) instead of all n values. At 1,000 entries a
// flat copy is 24 KB per update, which measured ten times slower than a
// HAMT update; chunked it is about 1 KB. Below chunkedAbove the flat
// slice is smaller and its copy cheaper than the extra allocations.
const (
	chunkBits    = 5
	chunkSize    = 1 << chunkBits
	chunkedAbove = 64
)

// newFnData holds keys and vals (both owned), chunking large ones.
func newFnData(keys, vals []Value) *fnData {
	if len(vals) <= chunkedAbove {
		return &fnData{keys: keys, vals: vals}
	}
	chunks := make([][]Value, (len(vals)+chunkSize-1)/chunkSize)
	for c := range chunks {
		chunks[c] = vals[c*chunkSize : min((c+1)*chunkSize, len(vals)) : min((c+1)*chunkSize, len(vals))]
	}
	return &fnData{keys: keys, chunks: chunks}
}

// val is the value at keys[i].
func (f *fnData) val(i int) Value {
	if f.chunks != nil {
		return f.chunks[i>>chunkBits][i&(chunkSize-1)]
	}
	return f.vals[i]
}

// with is f with the value at keys[i] replaced: f is not changed, and
// the result shares f's keys and every chunk but one.
func (f *fnData) with(i int, v Value) *fnData {
	if f.chunks == nil {
		vals := slices.Clone(f.vals)
		vals[i] = v
		return &fnData{keys: f.keys, vals: vals}
	}
	chunks := slices.Clone(f.chunks)
	c := slices.Clone(chunks[i>>chunkBits])
	c[i&(chunkSize-1)] = v
	chunks[i>>chunkBits] = c
	return &fnData{keys: f.keys, chunks: chunks}
}

// setData is a finite set: elements sorted in canonical order, distinct.
type setData struct {
	elems []Value
	hash  atomic.Uint64
}

// intervalData is lo..hi with lo <= hi and hi-lo+1 within int64.
type intervalData struct {
	lo, hi int64
	hash   atomic.Uint64
}

// ---- constructors ----

var (
	// True and False are the booleans.
	True  = Value{r: repBool, n: 1}
	False = Value{r: repBool, n: 0}

	emptySetData = &setData{}
	emptySeqArr  = &seqArr{}

	// EmptySet is {}.
	EmptySet = Value{r: repSet, p: unsafe.Pointer(emptySetData)}
	// EmptyTuple is << >>, which is also the function with an empty
	// domain and the empty sequence.
	EmptyTuple = Value{r: repTuple, p: unsafe.Pointer(emptySeqArr)}
)

// Bool returns TRUE or FALSE.
func Bool(b bool) Value {
	if b {
		return True
	}
	return False
}

// Int returns the integer i.
func Int(i int64) Value { return Value{r: repInt, n: i} }

// BigInt returns the integer x (copied).
func BigInt(x *big.Int) Value {
	if x == nil {
		return Value{}
	}
	return normBig(new(big.Int).Set(x))
}

// normBig returns x as a Value, demoting it to int64 if it fits. x must
// not be shared with anyone who changes it later.
func normBig(x *big.Int) Value {
	if x.IsInt64() {
		return Int(x.Int64())
	}
	return Value{r: repBigInt, p: unsafe.Pointer(x)}
}

// String returns the TLA+ string s.
func String(s string) Value {
	return Value{r: repString, p: unsafe.Pointer(unsafe.StringData(s)), n: int64(len(s))}
}

// ModelValue returns the TLC model value called name. Two model values
// are equal exactly when their names are; a model value equals nothing
// else.
func ModelValue(name string) Value {
	return Value{r: repModel, p: unsafe.Pointer(unsafe.StringData(name)), n: int64(len(name))}
}

// Tuple returns <<vs[0], ..., vs[n-1]>> (vs is copied).
func Tuple(vs ...Value) Value {
	if len(vs) == 0 {
		return EmptyTuple
	}
	return tupleOwned(slices.Clone(vs))
}

// maxSeqLen bounds sequence lengths: offset and length share one int64.
const maxSeqLen = 1<<31 - 1

// tupleOwned makes a sequence of vs, which the caller gives up (it
// becomes the backing array). len(vs) <= maxSeqLen.
func tupleOwned(vs []Value) Value {
	if len(vs) == 0 {
		return EmptyTuple
	}
	a := &seqArr{vals: vs[:cap(vs)]}
	a.used.Store(int64(len(vs)))
	return Value{r: repTuple, p: unsafe.Pointer(a), n: int64(len(vs))}
}

// FieldValue is one field of a record literal.
type FieldValue struct {
	Name  string
	Value Value
}

// F is shorthand for FieldValue{name, v} in record literals:
// Record(F("type", String("req")), F("from", self)).
func F(name string, v Value) FieldValue { return FieldValue{name, v} }

// Record returns [f1 |-> v1, ...]. A name given twice keeps its last
// value (TLA+ forbids the repetition; the generator never emits it).
func Record(fields ...FieldValue) Value {
	if len(fields) == 0 {
		return EmptyTuple
	}
	// Keys and values in one allocation; the keys are later shared by
	// every EXCEPT of this record.
	kv := make([]Value, 2*len(fields))
	keys, vals := kv[:len(fields):len(fields)], kv[len(fields):]
	if slices.IsSortedFunc(fields, func(a, b FieldValue) int { return strings.Compare(a.Name, b.Name) }) {
		// The generator emits fields sorted: no permutation needed.
		n := 0
		for i, f := range fields {
			if i+1 < len(fields) && fields[i+1].Name == f.Name {
				continue
			}
			keys[n], vals[n] = String(f.Name), f.Value
			n++
		}
		return Value{r: repFn, p: unsafe.Pointer(newFnData(keys[:n:n], vals[:n:n]))}
	}
	ord := make([]int, len(fields))
	for i := range ord {
		ord[i] = i
	}
	// Stable, so that among equal names the last stays last.
	slices.SortStableFunc(ord, func(a, b int) int { return strings.Compare(fields[a].Name, fields[b].Name) })
	n := 0
	for j, i := range ord {
		if j+1 < len(ord) && fields[ord[j+1]].Name == fields[i].Name {
			continue
		}
		keys[n] = String(fields[i].Name)
		vals[n] = fields[i].Value
		n++
	}
	return Value{r: repFn, p: unsafe.Pointer(newFnData(keys[:n:n], vals[:n:n]))}
}

// Range returns the interval lo..hi; {} if lo > hi. It fails only if the
// interval has more than 2^63-1 elements.
func Range(lo, hi int64) (Value, error) {
	if lo > hi {
		return EmptySet, nil
	}
	if hi-lo < 0 || hi-lo == 1<<63-1 { // size overflows int64
		return Value{}, tooLarge("..", "interval %d..%d has more than 2^63-1 elements", lo, hi)
	}
	return Value{r: repInterval, p: unsafe.Pointer(&intervalData{lo: lo, hi: hi})}, nil
}

// Interval is lo..hi on values: both must be integers.
func Interval(lo, hi Value) (Value, error) {
	if lo.Kind() != KindInt {
		return Value{}, typeError("..", "an integer", lo)
	}
	if hi.Kind() != KindInt {
		return Value{}, typeError("..", "an integer", hi)
	}
	if lo.r != repInt || hi.r != repInt {
		if Compare(lo, hi) > 0 {
			return EmptySet, nil
		}
		return Value{}, tooLarge("..", "interval %s..%s has a bound beyond int64", lo, hi)
	}
	return Range(lo.n, hi.n)
}

// Set returns {vs[0], ..., vs[n-1]}: vs is copied, sorted and
// deduplicated; vs may contain invalid Values only at the caller's risk
// (they sort first and make later operations fail).
func Set(vs ...Value) Value {
	return setOwned(slices.Clone(vs))
}

// setOwned makes a set of vs, which it sorts in place.
func setOwned(vs []Value) Value {
	if len(vs) == 0 {
		return EmptySet
	}
	if len(vs) > 1 && !sortedStrict(vs) {
		slices.SortFunc(vs, Compare)
		vs = slices.CompactFunc(vs, Equal)
	}
	return setSorted(vs)
}

// setSorted wraps vs, already sorted and distinct.
func setSorted(vs []Value) Value {
	if len(vs) == 0 {
		return EmptySet
	}
	return Value{r: repSet, p: unsafe.Pointer(&setData{elems: vs})}
}

func sortedStrict(vs []Value) bool {
	for i := 1; i < len(vs); i++ {
		if Compare(vs[i-1], vs[i]) >= 0 {
			return false
		}
	}
	return true
}

// ---- accessors ----

// Kind returns what v is.
func (v Value) Kind() Kind { return repKind[v.r] }

// IsValid reports whether v is a value (not the zero Value).
func (v Value) IsValid() bool { return v.r != repInvalid }

// AsBool returns v as a Go bool; an error if v is not a boolean. This is
// how generated code turns a TLA+ condition into a Go condition.
func (v Value) AsBool() (bool, error) {
	if v.r != repBool {
		return false, typeError("condition", "a boolean", v)
	}
	return v.n != 0, nil
}

// AsInt64 returns v as an int64; an error if v is not an integer or does
// not fit.
func (v Value) AsInt64() (int64, error) {
	switch v.r {
	case repInt:
		return v.n, nil
	case repBigInt:
		return 0, errorf("integer", "%s does not fit in int64", v)
	}
	return 0, typeError("integer", "an integer", v)
}

// AsBig returns v as a new big.Int; an error if v is not an integer.
func (v Value) AsBig() (*big.Int, error) {
	switch v.r {
	case repInt:
		return big.NewInt(v.n), nil
	case repBigInt:
		return new(big.Int).Set(v.big()), nil
	}
	return nil, typeError("integer", "an integer", v)
}

// AsString returns the Go string of a TLA+ string or the name of a model
// value; an error for anything else.
func (v Value) AsString() (string, error) {
	if v.r != repString && v.r != repModel {
		return "", typeError("string", "a string", v)
	}
	return v.str(), nil
}

func (v Value) str() string         { return unsafe.String((*byte)(v.p), int(v.n)) }
func (v Value) big() *big.Int       { return (*big.Int)(v.p) }
func (v Value) seqArr() *seqArr     { return (*seqArr)(v.p) }
func (v Value) fn() *fnData         { return (*fnData)(v.p) }
func (v Value) set() *setData       { return (*setData)(v.p) }
func (v Value) ival() *intervalData { return (*intervalData)(v.p) }

// seq returns the elements of a repTuple. The result is shared: callers
// never write to it.
func (v Value) seq() []Value {
	off, n := v.n>>32, v.n&0xffffffff
	return v.seqArr().vals[off : off+n : off+n]
}

func seqValue(a *seqArr, off, n int) Value {
	if n == 0 {
		return EmptyTuple
	}
	return Value{r: repTuple, p: unsafe.Pointer(a), n: int64(off)<<32 | int64(n)}
}

// ---- printing ----

// String prints v in TLA+ syntax, the way TLC prints values in traces:
// TRUE, 42, "s", <<1, 2>>, << >>, [a |-> 1, b |-> 2], (1 :> 2 @@ 3 :> 4),
// {1, 2}, 1..5. A function whose domain is a set of strings that are
// TLA+ names prints as a record, one whose domain is 1..n as a tuple,
// as TLC does.
func (v Value) String() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v Value) write(b *strings.Builder) {
	switch v.r {
	case repInvalid:
		b.WriteString("<invalid>")
	case repBool:
		if v.n != 0 {
			b.WriteString("TRUE")
		} else {
			b.WriteString("FALSE")
		}
	case repInt:
		b.WriteString(strconv.FormatInt(v.n, 10))
	case repBigInt:
		b.WriteString(v.big().String())
	case repString:
		writeQuoted(b, v.str())
	case repModel:
		b.WriteString(v.str())
	case repTuple:
		s := v.seq()
		if len(s) == 0 {
			b.WriteString("<< >>")
			return
		}
		b.WriteString("<<")
		for i, e := range s {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteString(">>")
	case repFn:
		f := v.fn()
		if isRecordDomain(f.keys) {
			b.WriteString("[")
			for i, k := range f.keys {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(k.str())
				b.WriteString(" |-> ")
				f.val(i).write(b)
			}
			b.WriteString("]")
			return
		}
		b.WriteString("(")
		for i, k := range f.keys {
			if i > 0 {
				b.WriteString(" @@ ")
			}
			k.write(b)
			b.WriteString(" :> ")
			f.val(i).write(b)
		}
		b.WriteString(")")
	case repSet:
		b.WriteString("{")
		for i, e := range v.set().elems {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteString("}")
	case repInterval:
		iv := v.ival()
		b.WriteString(strconv.FormatInt(iv.lo, 10))
		b.WriteString("..")
		b.WriteString(strconv.FormatInt(iv.hi, 10))
	}
}

// isRecordDomain reports whether every key is a string that is a TLA+
// name (TLC's test for printing a function as a record).
func isRecordDomain(keys []Value) bool {
	for _, k := range keys {
		if k.r != repString || !isName(k.str()) {
			return false
		}
	}
	return len(keys) > 0
}

// isName is TLC's FcnRcdValue.isName: letters, digits and _, at least
// one letter, not WF_/SF_ prefixed.
func isName(s string) bool {
	letter := false
	for _, c := range s {
		switch {
		case c == '_':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return letter && (len(s) < 4 || (!strings.HasPrefix(s, "WF_") && !strings.HasPrefix(s, "SF_")))
}

// writeQuoted writes s as a TLA+ string literal.
func writeQuoted(b *strings.Builder, s string) { tlastring.Write(b, s) }
