package tla

import (
	"fmt"
	"math/bits"
	"strconv"
	"testing"
)

// The benchmarks of the issue: record update, set union and membership,
// function EXCEPT, on small values (what MPCal models mostly hold) and
// on 1,000-element ones, each beside the same operation on a boxed
// persistent hash-array-mapped trie (hamt below), the representation
// PGo's distsys uses for every compound value. Run:
//
//	go test ./distsys/tla -run '^$' -bench . -benchmem

var sink Value
var sinkBool bool

// sizes of the compound values measured.
var sizes = []int{5, 100, 1000}

// benchRecord is a record of n fields f0..f(n-1).
func benchRecord(n int) Value {
	fs := make([]FieldValue, n)
	for i := range fs {
		fs[i] = F("f"+strconv.Itoa(i), Int(int64(i)))
	}
	return Record(fs...)
}

func BenchmarkRecordUpdate(b *testing.B) {
	for _, n := range sizes {
		r := benchRecord(n)
		path := []Value{String("f" + strconv.Itoa(n/2))}
		b.Run(fmt.Sprintf("n=%d/tla", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink, _ = Except(r, path, Int(int64(i)))
			}
		})
		h := hamtOf(r)
		b.Run(fmt.Sprintf("n=%d/hamt", n), func(b *testing.B) {
			b.ReportAllocs()
			var out *hamt
			for i := range b.N {
				out = h.set(path[0], Int(int64(i)))
			}
			_ = out
		})
	}
}

// benchSet is {0, 2, 4, ..., 2(n-1)}: odd numbers are absent.
func benchSet(n int) Value {
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = Int(int64(2 * i))
	}
	return Set(vs...)
}

func BenchmarkSetUnion(b *testing.B) {
	for _, n := range sizes {
		s := benchSet(n)
		odd := func(i int) Value { return Int(int64(2*(i%n) + 1)) }
		b.Run(fmt.Sprintf("n=%d/add-new/tla", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink, _ = Union(s, Set(odd(i)))
			}
		})
		b.Run(fmt.Sprintf("n=%d/add-present/tla", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				sink, _ = Union(s, Set(Int(int64(2*(i%n)))))
			}
		})
		other := make([]Value, n)
		for i := range other {
			other[i] = Int(int64(2*i + 1))
		}
		t := Set(other...)
		b.Run(fmt.Sprintf("n=%d/union-disjoint-%d/tla", n, n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				sink, _ = Union(s, t)
			}
		})
		h, ht := hamtOf(s), hamtOf(t)
		b.Run(fmt.Sprintf("n=%d/add-new/hamt", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				_ = h.set(odd(i), True)
			}
		})
		b.Run(fmt.Sprintf("n=%d/union-disjoint-%d/hamt", n, n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				u := h
				ht.each(func(k, _ Value) { u = u.set(k, True) })
			}
		})
	}
}

func BenchmarkSetMembership(b *testing.B) {
	for _, n := range sizes {
		s := benchSet(n)
		b.Run(fmt.Sprintf("n=%d/tla", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				v, _ := In(Int(int64(i%(2*n))), s)
				sinkBool = v.n != 0
			}
		})
		h := hamtOf(s)
		b.Run(fmt.Sprintf("n=%d/hamt", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				_, sinkBool = h.get(Int(int64(i % (2 * n))))
			}
		})
	}
}

func BenchmarkFunctionExcept(b *testing.B) {
	for _, n := range sizes {
		// A function over model values (a domain that is not 1..n):
		// network[self], state per node.
		keys, vals := make([]Value, n), make([]Value, n)
		for i := range keys {
			keys[i], vals[i] = ModelValue("n"+strconv.Itoa(i)), Int(int64(i))
		}
		f, _ := FunctionFromPairs(keys, vals)
		b.Run(fmt.Sprintf("n=%d/fn/tla", n), func(b *testing.B) {
			b.ReportAllocs()
			path := []Value{keys[n/2]}
			for i := range b.N {
				sink, _ = Except(f, path, Int(int64(i)))
			}
		})
		// A sequence (domain 1..n): a log.
		seq := Tuple(vals...)
		b.Run(fmt.Sprintf("n=%d/seq/tla", n), func(b *testing.B) {
			b.ReportAllocs()
			path := []Value{Int(int64(n / 2))}
			for i := range b.N {
				sink, _ = Except(seq, path, Int(int64(i)))
			}
		})
		// Nested: [f EXCEPT ![k].a = v] with records as values.
		recs := make([]Value, n)
		for i := range recs {
			recs[i] = Record(F("a", Int(int64(i))), F("b", True))
		}
		g, _ := FunctionFromPairs(keys, recs)
		b.Run(fmt.Sprintf("n=%d/nested/tla", n), func(b *testing.B) {
			b.ReportAllocs()
			path := []Value{keys[n/2], String("a")}
			for i := range b.N {
				sink, _ = Except(g, path, Int(int64(i)))
			}
		})
		h := hamtOf(f)
		b.Run(fmt.Sprintf("n=%d/fn/hamt", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				_ = h.set(keys[n/2], Int(int64(i)))
			}
		})
		b.Run(fmt.Sprintf("n=%d/apply/tla", n), func(b *testing.B) {
			for i := range b.N {
				sink, _ = Apply(f, keys[i%n])
			}
		})
		b.Run(fmt.Sprintf("n=%d/apply/hamt", n), func(b *testing.B) {
			for i := range b.N {
				sink, _ = h.get(keys[i%n])
			}
		})
	}
}

// BenchmarkQueue is a mailbox: Append at the back, Tail at the front.
func BenchmarkQueue(b *testing.B) {
	b.ReportAllocs()
	q := EmptyTuple
	for i := range 16 {
		q, _ = Append(q, Int(int64(i)))
	}
	for i := range b.N {
		q, _ = Append(q, Int(int64(i)))
		q, _ = Tail(q)
	}
	sink = q
}

// BenchmarkRecordBuild is a message literal [type |-> ..., from |-> ..., ...].
func BenchmarkRecordBuild(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		sink = Record(F("body", Int(int64(i))), F("from", Int(1)), F("to", Int(2)), F("type", String("req")))
	}
}

// ---- the baseline: a boxed persistent HAMT ----

// hamt is a persistent hash-array-mapped trie from Value to Value with
// boxed entries, the structure PGo's distsys (through
// github.com/benbjohnson/immutable) keeps records, functions and sets
// in: 32-way nodes indexed by 5 hash bits, a population bitmap, path
// copying on update, collision lists at the bottom. Written here so the
// comparison needs no dependency; it is as lean as that library's
// (no hasher interface dispatch, no per-node mutability flags).
type hamt struct {
	root *hamtNode
	size int
}

type hamtNode struct {
	bitmap uint32
	kids   []any // *hamtNode or *hamtLeaf, in bit order
}

type hamtLeaf struct {
	hash uint64
	ents []*hamtEntry // collisions share a leaf
}

type hamtEntry struct{ k, v Value }

func hamtOf(v Value) *hamt {
	h := &hamt{root: &hamtNode{}}
	switch v.Kind() {
	case KindSet:
		es, _ := Elements(v)
		for _, e := range es {
			h = h.set(e, True)
		}
	case KindFunction:
		ks, vs, _ := Entries(v)
		for i := range ks {
			h = h.set(ks[i], vs[i])
		}
	}
	return h
}

func (h *hamt) get(k Value) (Value, bool) {
	hash := k.Hash()
	n := h.root
	for shift := uint(0); ; shift += 5 {
		bit := uint32(1) << ((hash >> shift) & 31)
		if n.bitmap&bit == 0 {
			return Value{}, false
		}
		switch kid := n.kids[bits.OnesCount32(n.bitmap&(bit-1))].(type) {
		case *hamtNode:
			n = kid
		case *hamtLeaf:
			if kid.hash == hash {
				for _, e := range kid.ents {
					if Equal(e.k, k) {
						return e.v, true
					}
				}
			}
			return Value{}, false
		}
	}
}

func (h *hamt) set(k, v Value) *hamt {
	root, added := h.root.set(k.Hash(), 0, &hamtEntry{k, v})
	size := h.size
	if added {
		size++
	}
	return &hamt{root: root, size: size}
}

func (n *hamtNode) set(hash uint64, shift uint, e *hamtEntry) (*hamtNode, bool) {
	bit := uint32(1) << ((hash >> shift) & 31)
	idx := bits.OnesCount32(n.bitmap & (bit - 1))
	c := &hamtNode{bitmap: n.bitmap | bit}
	if n.bitmap&bit == 0 {
		c.kids = make([]any, len(n.kids)+1)
		copy(c.kids, n.kids[:idx])
		c.kids[idx] = &hamtLeaf{hash: hash, ents: []*hamtEntry{e}}
		copy(c.kids[idx+1:], n.kids[idx:])
		return c, true
	}
	c.kids = make([]any, len(n.kids))
	copy(c.kids, n.kids)
	added := false
	switch kid := n.kids[idx].(type) {
	case *hamtNode:
		c.kids[idx], added = kid.set(hash, shift+5, e)
	case *hamtLeaf:
		switch {
		case kid.hash == hash:
			ents := make([]*hamtEntry, 0, len(kid.ents)+1)
			added = true
			for _, x := range kid.ents {
				if Equal(x.k, e.k) {
					added = false
					continue
				}
				ents = append(ents, x)
			}
			c.kids[idx] = &hamtLeaf{hash: hash, ents: append(ents, e)}
		case shift >= 60:
			panic("hamt: hash exhausted")
		default:
			sub := &hamtNode{}
			for _, x := range kid.ents {
				sub, _ = sub.set(kid.hash, shift+5, x)
			}
			c.kids[idx], added = sub.set(hash, shift+5, e)
		}
	}
	return c, added
}

func (h *hamt) each(f func(k, v Value)) { h.root.each(f) }

func (n *hamtNode) each(f func(k, v Value)) {
	for _, kid := range n.kids {
		switch kid := kid.(type) {
		case *hamtNode:
			kid.each(f)
		case *hamtLeaf:
			for _, e := range kid.ents {
				f(e.k, e.v)
			}
		}
	}
}

// TestHAMTBaseline: the baseline is a correct map, so the comparison is
// between two working structures.
func TestHAMTBaseline(t *testing.T) {
	f := benchRecord(300)
	h := hamtOf(f)
	ks, vs, _ := Entries(f)
	for i, k := range ks {
		if got, ok := h.get(k); !ok || !Equal(got, vs[i]) {
			t.Fatalf("hamt[%v] = %v, %v", k, got, ok)
		}
	}
	h2 := h.set(ks[7], String("new"))
	if got, _ := h.get(ks[7]); !Equal(got, vs[7]) {
		t.Fatalf("hamt set changed the old map")
	}
	if got, _ := h2.get(ks[7]); !Equal(got, String("new")) || h2.size != h.size {
		t.Fatalf("hamt set: %v, size %d", got, h2.size)
	}
	if _, ok := h.get(String("absent")); ok {
		t.Fatalf("absent key found")
	}
}
