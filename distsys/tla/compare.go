package tla

import (
	"cmp"
	"encoding/binary"
	"math/big"
	"math/bits"
	"strings"
)

// Compare returns -1, 0 or +1 as a is before, equal to or after b in the
// canonical total order (see the package comment). Compare(a, b) == 0
// exactly when Equal(a, b).
func Compare(a, b Value) int {
	if a.r == b.r {
		switch a.r {
		case repInt, repBool:
			return cmp.Compare(a.n, b.n)
		case repString, repModel:
			return strings.Compare(a.str(), b.str())
		}
	}
	ka, kb := repKind[a.r], repKind[b.r]
	if ka != kb {
		return cmp.Compare(ka, kb)
	}
	switch ka {
	case KindInt:
		return compareInt(a, b)
	case KindFunction:
		return compareFn(a, b)
	case KindSet:
		return compareSet(a, b)
	}
	return 0 // both invalid
}

// compareInt compares integers of which at least one is big. A big
// integer is never within int64 (normalized), so its sign decides
// against a small one.
func compareInt(a, b Value) int {
	switch {
	case a.r == repInt && b.r == repInt:
		return cmp.Compare(a.n, b.n)
	case a.r == repInt:
		return -b.big().Sign()
	case b.r == repInt:
		return a.big().Sign()
	}
	return a.big().Cmp(b.big())
}

// compareFn orders functions as TLC does: by domain size, then domain
// element by element, then values element by element.
func compareFn(a, b Value) int {
	if a.r == repTuple && b.r == repTuple {
		x, y := a.seq(), b.seq()
		if c := cmp.Compare(len(x), len(y)); c != 0 {
			return c
		}
		for i := range x {
			if c := Compare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return 0
	}
	n, m := fnLen(a), fnLen(b)
	if c := cmp.Compare(n, m); c != 0 {
		return c
	}
	if a.r == repFn && b.r == repFn && &a.fn().keys[0] == &b.fn().keys[0] {
		// Shared domain (one is an EXCEPT of the other, or both of a
		// third): skip comparing it.
	} else {
		for i := 0; i < n; i++ {
			if c := Compare(fnKeyAt(a, i), fnKeyAt(b, i)); c != 0 {
				return c
			}
		}
	}
	for i := 0; i < n; i++ {
		if c := Compare(fnValAt(a, i), fnValAt(b, i)); c != 0 {
			return c
		}
	}
	return 0
}

// compareSet orders sets as TLC does: by size, then element by element.
func compareSet(a, b Value) int {
	n, m := setLen(a), setLen(b)
	if c := cmp.Compare(n, m); c != 0 {
		return c
	}
	if a.r == repInterval && b.r == repInterval {
		// Same size: the first elements decide.
		return cmp.Compare(a.ival().lo, b.ival().lo)
	}
	for i := int64(0); i < n; i++ {
		if c := Compare(setAt(a, i), setAt(b, i)); c != 0 {
			return c
		}
	}
	return 0
}

// Equal is TLA+ equality of a and b (see the package comment).
func Equal(a, b Value) bool {
	if a.r == b.r && a.p == b.p && a.n == b.n {
		return true // one representation
	}
	switch a.r {
	case repInt, repBool, repInvalid:
		return false // a scalar equals only its own representation
	case repString, repModel:
		return a.r == b.r && a.n == b.n && a.str() == b.str()
	case repTuple, repFn:
		if b.Kind() != KindFunction || fnLen(a) != fnLen(b) {
			return false
		}
	case repSet, repInterval:
		if b.Kind() != KindSet || setLen(a) != setLen(b) {
			return false
		}
	}
	return Compare(a, b) == 0
}

// fnLen is the size of a function's domain.
func fnLen(v Value) int {
	if v.r == repTuple {
		return int(v.n & 0xffffffff)
	}
	return len(v.fn().keys)
}

// fnKeyAt is the i'th element of the domain in canonical order.
func fnKeyAt(v Value, i int) Value {
	if v.r == repTuple {
		return Int(int64(i) + 1)
	}
	return v.fn().keys[i]
}

func fnValAt(v Value, i int) Value {
	if v.r == repTuple {
		return v.seq()[i]
	}
	return v.fn().val(i)
}

// setLen is a set's cardinality.
func setLen(v Value) int64 {
	if v.r == repInterval {
		iv := v.ival()
		return iv.hi - iv.lo + 1
	}
	return int64(len(v.set().elems))
}

// setAt is the i'th element in canonical order.
func setAt(v Value, i int64) Value {
	if v.r == repInterval {
		return Int(v.ival().lo + i)
	}
	return v.set().elems[i]
}

// ---- hashing ----

// Seeds per kind, so that 1, "\x01" and TRUE do not collide by
// construction.
const (
	hashBool   = 0x243f6a8885a308d3
	hashInt    = 0x13198a2e03707344
	hashBig    = 0xa4093822299f31d0
	hashString = 0x082efa98ec4e6c89
	hashModel  = 0x452821e638d01377
	hashFn     = 0xbe5466cf34e90c6c
	hashSet    = 0xc0ac29b7c97c50dd
)

// hashFull is the largest set hashed element by element. Larger sets
// hash their size and their hashSample first and last elements: the
// hash of an interval must equal that of the enumerated set with the
// same elements, and must not take time proportional to a huge interval.
const (
	hashFull   = 4096
	hashSample = 64
)

// Hash returns a hash of v consistent with Equal: Equal(a, b) implies
// a.Hash() == b.Hash(), whatever the representations. It is the same in
// every process (no random seed), so it may be stored. Compound values
// cache their hash (sequences, which have no header to keep it in,
// recompute it).
func (v Value) Hash() uint64 {
	switch v.r {
	case repBool:
		return mix(hashBool, uint64(v.n))
	case repInt:
		return mix(hashInt, uint64(v.n))
	case repBigInt:
		h := uint64(hashBig)
		if v.big().Sign() < 0 {
			h = mix(h, 1)
		}
		for _, w := range v.big().Bits() {
			h = mix(h, uint64(w))
		}
		return h
	case repString:
		return hashStr(hashString, v.str())
	case repModel:
		return hashStr(hashModel, v.str())
	case repTuple:
		return hashFnValue(v)
	case repFn:
		f := v.fn()
		if h := f.hash.Load(); h != 0 {
			return h
		}
		h := nonzero(hashFnValue(v))
		f.hash.Store(h)
		return h
	case repSet:
		s := v.set()
		if h := s.hash.Load(); h != 0 {
			return h
		}
		h := nonzero(hashSetValue(v))
		s.hash.Store(h)
		return h
	case repInterval:
		iv := v.ival()
		if h := iv.hash.Load(); h != 0 {
			return h
		}
		h := nonzero(hashSetValue(v))
		iv.hash.Store(h)
		return h
	}
	return 0
}

// nonzero maps 0 (the "not computed" mark) to 1.
func nonzero(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

func hashFnValue(v Value) uint64 {
	n := fnLen(v)
	h := mix(hashFn, uint64(n))
	for i := 0; i < n; i++ {
		h = mix(h, fnKeyAt(v, i).Hash())
		h = mix(h, fnValAt(v, i).Hash())
	}
	return nonzero(h)
}

func hashSetValue(v Value) uint64 {
	n := setLen(v)
	h := mix(hashSet, uint64(n))
	if n <= hashFull {
		for i := int64(0); i < n; i++ {
			h = mix(h, setAt(v, i).Hash())
		}
		return h
	}
	for i := int64(0); i < hashSample; i++ {
		h = mix(h, setAt(v, i).Hash())
		h = mix(h, setAt(v, n-1-i).Hash())
	}
	return h
}

// mix folds x into h (a multiply-xorshift step; good avalanche, cheap).
func mix(h, x uint64) uint64 {
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	h = bits.RotateLeft64(h^x, 27)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	return h ^ h>>31
}

func hashStr(seed uint64, s string) uint64 {
	h := mix(seed, uint64(len(s)))
	for len(s) >= 8 {
		h = mix(h, binary.LittleEndian.Uint64([]byte(s[:8])))
		s = s[8:]
	}
	var tail uint64
	for i := 0; i < len(s); i++ {
		tail |= uint64(s[i]) << (8 * i)
	}
	return mix(h, tail)
}

// bigOf returns an integer value as a big.Int (new for small ones).
func bigOf(v Value) *big.Int {
	if v.r == repInt {
		return big.NewInt(v.n)
	}
	return v.big()
}
