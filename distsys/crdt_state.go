package distsys

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strings"

	"strata/distsys/tla"
)

// This file holds the pure part of the state-based CRDTs behind the CRDT
// resource (crdt.go): each replica's state is an element of a
// join-semilattice, client operations move it up, and Join is the
// lattice's least upper bound, so it is commutative, associative and
// idempotent, and replicas that have joined the same states hold the same
// state whatever the order and repetition of the joins (Shapiro et al.,
// "Conflict-free replicated data types", 2011). The states are plain Go
// (maps), not TLA+ values: a join runs on every gossip message.

// CRDTKind names a state-based CRDT.
type CRDTKind uint8

const (
	// GCounterKind is a grow-only counter: crdt[self] reads the sum of
	// every replica's increments; a write <<"inc", k>> (k >= 0) adds k.
	GCounterKind CRDTKind = 1
	// AWORSetKind is an add-wins observed-remove set: crdt[self] reads
	// the set; a write <<"add", x>> or <<"remove", x>> adds or removes x.
	// A remove removes the adds of x the replica has seen; an add
	// concurrent with it (not seen by the remover) wins.
	AWORSetKind CRDTKind = 2
)

func (k CRDTKind) String() string {
	switch k {
	case GCounterKind:
		return "gcounter"
	case AWORSetKind:
		return "aworset"
	}
	return fmt.Sprintf("crdt kind %d", uint8(k))
}

// ParseCRDTKind parses "gcounter" or "aworset".
func ParseCRDTKind(s string) (CRDTKind, error) {
	switch s {
	case "gcounter":
		return GCounterKind, nil
	case "aworset":
		return AWORSetKind, nil
	}
	return 0, fmt.Errorf("unknown CRDT %q (want gcounter or aworset)", s)
}

// ErrCRDT matches the errors of CRDT operations and decoding.
var ErrCRDT = errors.New("crdt")

func crdtErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCRDT, fmt.Sprintf(format, args...))
}

// CRDTState is one replica's state of a state-based CRDT. Methods that
// take another state require one of the same kind. A CRDTState is not
// safe for concurrent use; the CRDT resource guards its own.
type CRDTState interface {
	Kind() CRDTKind
	// Update applies the client operation op at replica r: <<"inc", k>>
	// for a GCounter, <<"add", x>> or <<"remove", x>> for an AWORSet,
	// <<"read", x>> (any x) for either, which changes nothing. A
	// malformed operation is an error matching ErrCRDT and changes
	// nothing.
	Update(r string, op tla.Value) error
	// Join merges o into the state (the lattice's least upper bound).
	Join(o CRDTState) error
	// Value is the state's value as the archetype reads it.
	Value() tla.Value
	Clone() CRDTState
	// AppendBinary appends the state's encoding (DecodeCRDTState).
	AppendBinary(b []byte) []byte
}

// NewCRDTState returns the initial (bottom) state of kind k.
func NewCRDTState(k CRDTKind) (CRDTState, error) {
	switch k {
	case GCounterKind:
		return NewGCounter(), nil
	case AWORSetKind:
		return NewAWORSet(), nil
	}
	return nil, crdtErrorf("unknown kind %d", uint8(k))
}

// EqualCRDT reports whether a and b are the same state.
func EqualCRDT(a, b CRDTState) bool {
	switch a := a.(type) {
	case *GCounter:
		b, ok := b.(*GCounter)
		return ok && maps.Equal(a.counts, b.counts)
	case *AWORSet:
		b, ok := b.(*AWORSet)
		return ok && a.equal(b)
	}
	return false
}

// checkOp splits a client operation <<kind, arg>>.
func checkOp(op tla.Value, kinds ...string) (string, tla.Value, error) {
	n, err := tla.Len(op)
	if l, _ := n.AsInt64(); err != nil || l != 2 {
		return "", tla.Value{}, crdtErrorf("operation %v is not a pair <<kind, argument>>", op)
	}
	k, _ := tla.Apply(op, tla.Int(1))
	arg, _ := tla.Apply(op, tla.Int(2))
	ks, err := k.AsString()
	if err == nil && (ks == "read" || slices.Contains(kinds, ks)) {
		return ks, arg, nil
	}
	return "", tla.Value{}, crdtErrorf("operation %v: kind %v is not one of %q", op, k, append(kinds, "read"))
}

// GCounter is a grow-only counter: one count per replica; the value is
// their sum, the join their pointwise maximum.
type GCounter struct {
	counts map[string]uint64 // by replica; zero counts are absent
}

// NewGCounter returns a counter at 0.
func NewGCounter() *GCounter { return &GCounter{counts: map[string]uint64{}} }

func (g *GCounter) Kind() CRDTKind { return GCounterKind }

// Inc adds k to replica r's count.
func (g *GCounter) Inc(r string, k uint64) error {
	if k == 0 {
		return nil
	}
	if g.counts[r] > math.MaxUint64-k {
		return crdtErrorf("replica %s's count %d + %d overflows", r, g.counts[r], k)
	}
	g.counts[r] += k
	return nil
}

func (g *GCounter) Update(r string, op tla.Value) error {
	kind, arg, err := checkOp(op, "inc")
	if err != nil || kind == "read" {
		return err
	}
	k, err := arg.AsInt64()
	if err != nil || k < 0 {
		return crdtErrorf("operation %v: the increment must be a natural number below 2^63", op)
	}
	return g.Inc(r, uint64(k))
}

func (g *GCounter) Join(o CRDTState) error {
	og, ok := o.(*GCounter)
	if !ok {
		return crdtErrorf("cannot join a %v into a gcounter", o.Kind())
	}
	for r, c := range og.counts {
		if c > g.counts[r] {
			g.counts[r] = c
		}
	}
	return nil
}

// Count is replica r's count.
func (g *GCounter) Count(r string) uint64 { return g.counts[r] }

func (g *GCounter) Value() tla.Value {
	sum := new(big.Int)
	for _, c := range g.counts {
		sum.Add(sum, new(big.Int).SetUint64(c))
	}
	return tla.BigInt(sum)
}

func (g *GCounter) Clone() CRDTState {
	c := NewGCounter()
	for r, n := range g.counts {
		c.counts[r] = n
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBinary: kind, count of replicas, then each replica (sorted) and
// its count.
func (g *GCounter) AppendBinary(b []byte) []byte {
	b = append(b, byte(GCounterKind))
	b = binary.AppendUvarint(b, uint64(len(g.counts)))
	for _, r := range sortedKeys(g.counts) {
		b = appendString(b, r)
		b = binary.AppendUvarint(b, g.counts[r])
	}
	return b
}

func (g *GCounter) String() string {
	var s strings.Builder
	s.WriteString("gcounter{")
	for i, r := range sortedKeys(g.counts) {
		if i > 0 {
			s.WriteString(", ")
		}
		fmt.Fprintf(&s, "%s: %d", r, g.counts[r])
	}
	s.WriteString("}")
	return s.String()
}

// Dot identifies one add: the replica that made it and its sequence
// number there (1, 2, ...).
type Dot struct {
	Replica string
	Seq     uint64
}

func compareDots(a, b Dot) int {
	if c := strings.Compare(a.Replica, b.Replica); c != 0 {
		return c
	}
	switch {
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// AWORSet is an add-wins observed-remove set without tombstones (the
// optimized OR-set of Bieniusa et al., 2012): each element present has
// the dots of the adds that put it there, and a version vector vv counts
// the adds seen from each replica. An add at replica r takes the dot
// (r, vv[r]+1) and replaces the element's other dots; a remove drops the
// element's dots. The join keeps a dot both states have, and a dot one
// state has unless the other has seen it (its vv covers it) and so
// removed it. Invariant: every dot is covered by the state's own vv.
type AWORSet struct {
	// elems are sorted by tla.Compare on their values (which, unlike
	// the values' encodings, is the same for equal values of different
	// representations, such as 1..3 and {1, 2, 3}).
	elems []awElem
	vv    map[string]uint64 // by replica; zero entries are absent
}

type awElem struct {
	v    tla.Value
	dots []Dot // sorted, at least one
}

// NewAWORSet returns an empty set.
func NewAWORSet() *AWORSet { return &AWORSet{vv: map[string]uint64{}} }

func (s *AWORSet) Kind() CRDTKind { return AWORSetKind }

func (s *AWORSet) find(x tla.Value) (int, bool) {
	return slices.BinarySearchFunc(s.elems, x, func(e awElem, x tla.Value) int { return tla.Compare(e.v, x) })
}

// Add adds x at replica r.
func (s *AWORSet) Add(r string, x tla.Value) error {
	if !x.IsValid() {
		return crdtErrorf("add of an invalid value")
	}
	if s.vv[r] == math.MaxUint64 {
		return crdtErrorf("replica %s's sequence numbers are exhausted", r)
	}
	s.vv[r]++
	e := awElem{v: x, dots: []Dot{{r, s.vv[r]}}}
	if i, ok := s.find(x); ok {
		s.elems[i] = e
	} else {
		s.elems = slices.Insert(s.elems, i, e)
	}
	return nil
}

// Remove removes x (the adds of x this replica has seen).
func (s *AWORSet) Remove(x tla.Value) {
	if i, ok := s.find(x); ok {
		s.elems = slices.Delete(s.elems, i, i+1)
	}
}

func (s *AWORSet) Update(r string, op tla.Value) error {
	kind, x, err := checkOp(op, "add", "remove")
	if err != nil {
		return err
	}
	switch kind {
	case "add":
		return s.Add(r, x)
	case "remove":
		s.Remove(x)
	}
	return nil
}

func (s *AWORSet) Join(o CRDTState) error {
	os, ok := o.(*AWORSet)
	if !ok {
		return crdtErrorf("cannot join a %v into an aworset", o.Kind())
	}
	out := make([]awElem, 0, max(len(s.elems), len(os.elems)))
	i, j := 0, 0
	for i < len(s.elems) || j < len(os.elems) {
		var e awElem
		switch c := cmpElems(s.elems, os.elems, i, j); {
		case c < 0:
			e = awElem{s.elems[i].v, joinDots(s.elems[i].dots, nil, s.vv, os.vv)}
			i++
		case c > 0:
			e = awElem{os.elems[j].v, joinDots(nil, os.elems[j].dots, s.vv, os.vv)}
			j++
		default:
			e = awElem{s.elems[i].v, joinDots(s.elems[i].dots, os.elems[j].dots, s.vv, os.vv)}
			i++
			j++
		}
		if len(e.dots) > 0 {
			out = append(out, e)
		}
	}
	s.elems = out
	for r, n := range os.vv {
		if n > s.vv[r] {
			s.vv[r] = n
		}
	}
	return nil
}

// cmpElems orders a[i] against b[j], an exhausted side last.
func cmpElems(a, b []awElem, i, j int) int {
	switch {
	case j == len(b):
		return -1
	case i == len(a):
		return 1
	}
	return tla.Compare(a[i].v, b[j].v)
}

// joinDots joins one element's sorted dots a (with version vector avv)
// and b (bvv) into a new sorted slice.
func joinDots(a, b []Dot, avv, bvv map[string]uint64) []Dot {
	out := make([]Dot, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && compareDots(a[i], b[j]) < 0):
			if d := a[i]; d.Seq > bvv[d.Replica] {
				out = append(out, d)
			}
			i++
		case i == len(a) || compareDots(a[i], b[j]) > 0:
			if d := b[j]; d.Seq > avv[d.Replica] {
				out = append(out, d)
			}
			j++
		default: // in both
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func (s *AWORSet) Value() tla.Value {
	vs := make([]tla.Value, len(s.elems))
	for i, e := range s.elems {
		vs[i] = e.v
	}
	return tla.Set(vs...)
}

// Has reports whether x is in the set.
func (s *AWORSet) Has(x tla.Value) bool {
	_, ok := s.find(x)
	return ok
}

// Len is the number of elements.
func (s *AWORSet) Len() int { return len(s.elems) }

func (s *AWORSet) Clone() CRDTState {
	c := &AWORSet{elems: make([]awElem, len(s.elems)), vv: make(map[string]uint64, len(s.vv))}
	for i, e := range s.elems {
		c.elems[i] = awElem{v: e.v, dots: slices.Clone(e.dots)}
	}
	for r, n := range s.vv {
		c.vv[r] = n
	}
	return c
}

func (s *AWORSet) equal(o *AWORSet) bool {
	if len(s.vv) != len(o.vv) || len(s.elems) != len(o.elems) {
		return false
	}
	for r, n := range s.vv {
		if o.vv[r] != n {
			return false
		}
	}
	for i, e := range s.elems {
		if !tla.Equal(e.v, o.elems[i].v) || !slices.Equal(e.dots, o.elems[i].dots) {
			return false
		}
	}
	return true
}

// AppendBinary: kind; the version vector (count, then replica and count,
// sorted); the elements in order (count, then each element's encoding,
// its dot count and dots: replica, sequence).
func (s *AWORSet) AppendBinary(b []byte) []byte {
	b = append(b, byte(AWORSetKind))
	b = binary.AppendUvarint(b, uint64(len(s.vv)))
	for _, r := range sortedKeys(s.vv) {
		b = appendString(b, r)
		b = binary.AppendUvarint(b, s.vv[r])
	}
	b = binary.AppendUvarint(b, uint64(len(s.elems)))
	var scratch []byte
	for _, e := range s.elems {
		// Values built by tla's constructors always encode; an element
		// that did not would have been refused by Add.
		scratch, _ = e.v.AppendBinary(scratch[:0])
		b = appendString(b, string(scratch))
		b = binary.AppendUvarint(b, uint64(len(e.dots)))
		for _, d := range e.dots {
			b = appendString(b, d.Replica)
			b = binary.AppendUvarint(b, d.Seq)
		}
	}
	return b
}

func (s *AWORSet) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aworset{vv: %v, elems:", s.vv)
	for _, e := range s.elems {
		fmt.Fprintf(&b, " %v%v", e.v, e.dots)
	}
	b.WriteString("}")
	return b.String()
}

// decoder reads the encodings above; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = crdtErrorf(format, args...)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.b = d.b[k:]
	return v
}

// count reads a count of items of at least min bytes each, refusing
// counts the rest of the input cannot hold (so that a hostile count
// cannot make the decoder allocate).
func (d *decoder) count(what string, min int) int {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail("%s %d exceeds what the message holds", what, n)
		return 0
	}
	return int(n)
}

func (d *decoder) string(what string) string {
	n := d.uvarint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("%s of %d bytes exceeds the message", what, n)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// DecodeCRDTState decodes a state encoded by AppendBinary. Malformed
// input (truncated, trailing bytes, unsorted or repeated entries, zero
// counts, a dot its own version vector does not cover, an element that
// is not a TLA+ value encoding) is an error matching ErrCRDT; it never
// panics.
func DecodeCRDTState(b []byte) (CRDTState, error) {
	if len(b) == 0 {
		return nil, crdtErrorf("empty state")
	}
	d := &decoder{b: b[1:]}
	var st CRDTState
	switch CRDTKind(b[0]) {
	case GCounterKind:
		g := NewGCounter()
		n := d.count("replica count", 2)
		prev := ""
		for i := 0; i < n && d.err == nil; i++ {
			r := d.string("replica")
			c := d.uvarint("count")
			if d.err == nil && (i > 0 && r <= prev || c == 0) {
				d.fail("replica %q: unsorted, repeated or zero entry", r)
			}
			g.counts[r], prev = c, r
		}
		st = g
	case AWORSetKind:
		s := NewAWORSet()
		n := d.count("version vector size", 2)
		prev := ""
		for i := 0; i < n && d.err == nil; i++ {
			r := d.string("replica")
			c := d.uvarint("version")
			if d.err == nil && (i > 0 && r <= prev || c == 0) {
				d.fail("version vector entry %q: unsorted, repeated or zero", r)
			}
			s.vv[r], prev = c, r
		}
		n = d.count("element count", 4)
		for i := 0; i < n && d.err == nil; i++ {
			enc := d.string("element")
			v, err := tla.Decode([]byte(enc))
			if d.err == nil && err != nil {
				d.fail("element: %v", err)
			}
			if d.err == nil && i > 0 && tla.Compare(s.elems[i-1].v, v) >= 0 {
				d.fail("elements unsorted or repeated at %v", v)
			}
			nd := d.count("dot count", 2)
			if d.err == nil && nd == 0 {
				d.fail("element %v without dots", v)
			}
			e := awElem{v: v, dots: make([]Dot, 0, nd)}
			for j := 0; j < nd && d.err == nil; j++ {
				dot := Dot{d.string("dot replica"), d.uvarint("dot sequence")}
				if d.err != nil {
					break
				}
				if dot.Seq == 0 || dot.Seq > s.vv[dot.Replica] {
					d.fail("dot %v of %v is not covered by the version vector", dot, v)
				}
				if j > 0 && compareDots(e.dots[j-1], dot) >= 0 {
					d.fail("dots of %v unsorted or repeated", v)
				}
				e.dots = append(e.dots, dot)
			}
			s.elems = append(s.elems, e)
		}
		st = s
	default:
		return nil, crdtErrorf("unknown kind %d", b[0])
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return st, nil
}
