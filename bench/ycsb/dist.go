package ycsb

import (
	"math"
	"sync"
	"sync/atomic"
)

// ZipfianGen is YCSB's ZipfianGenerator (Gray et al., "Quickly Generating
// Billion-Record Synthetic Databases", SIGMOD 1994): item base is the most
// popular, base+1 the next, and so on. Its draws take the uniform number u
// in [0,1) from the caller, so that tests can drive it and clients use
// their own seeded sources. Not safe for concurrent use (Latest grows its
// item count).
type ZipfianGen struct {
	// items is the item count the generator was made for: YCSB's eta
	// keeps using it after the count grows, and so does this one, to draw
	// what YCSB draws.
	items        int64
	base         int64
	theta        float64
	zeta2theta   float64
	alpha        float64
	zetan        float64
	eta          float64
	countForZeta int64
}

// Zeta is the sum over i in [st, n) of 1/(i+1)^theta, added to initial:
// zeta(n, theta) when st = 0 and initial = 0, extended incrementally
// otherwise.
func Zeta(st, n int64, theta, initial float64) float64 {
	sum := initial
	for i := st; i < n; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	return sum
}

// NewZipfianGen returns a generator of items min..max (inclusive) with
// constant theta, computing zeta over max-min+1 items (linear in them).
func NewZipfianGen(min, max int64, theta float64) *ZipfianGen {
	return newZipfianZeta(min, max, theta, Zeta(0, max-min+1, theta, 0))
}

// newZipfianZeta is NewZipfianGen with zeta already known.
func newZipfianZeta(min, max int64, theta, zetan float64) *ZipfianGen {
	z := &ZipfianGen{items: max - min + 1, base: min, theta: theta, zetan: zetan}
	z.zeta2theta = Zeta(0, 2, theta, 0)
	z.alpha = 1 / (1 - theta)
	z.countForZeta = z.items
	z.eta = (1 - math.Pow(2/float64(z.items), 1-theta)) / (1 - z.zeta2theta/z.zetan)
	return z
}

// Next draws an item of the generator's own count from u in [0,1).
func (z *ZipfianGen) Next(u float64) int64 { return z.NextN(u, z.items) }

// NextN draws an item in base..base+itemcount-1 from u in [0,1). A count
// larger than the last one extends zeta incrementally (YCSB's nextLong);
// a smaller one keeps the larger count's zeta, as YCSB does by default.
func (z *ZipfianGen) NextN(u float64, itemcount int64) int64 {
	if itemcount > z.countForZeta {
		z.zetan = Zeta(z.countForZeta, itemcount, z.theta, z.zetan)
		z.countForZeta = itemcount
		z.eta = (1 - math.Pow(2/float64(z.items), 1-z.theta)) / (1 - z.zeta2theta/z.zetan)
	}
	uz := u * z.zetan
	if uz < 1 {
		return z.base
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return z.base + 1
	}
	return z.base + int64(float64(itemcount)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// clone returns an independent copy (each client grows its own).
func (z *ZipfianGen) clone() *ZipfianGen { c := *z; return &c }

// Scrambled-zipfian constants of YCSB 0.17: the underlying zipfian draws
// from 10^10 items, whose zeta for theta 0.99 YCSB precomputed.
const (
	scrambledItems = 10_000_000_000
	scrambledZetan = 26.46902820178302
)

// ScrambledZipfian is YCSB's ScrambledZipfianGenerator: a zipfian item
// out of 10^10, hashed (FNVHash64) and reduced modulo the item count, so
// that the popular items are scattered over min..max. It keeps no state
// between draws and is safe for concurrent use.
type ScrambledZipfian struct {
	gen       *ZipfianGen
	min       int64
	itemcount int64
}

// NewScrambledZipfian returns a scrambled zipfian over min..max with
// YCSB's constant 0.99.
func NewScrambledZipfian(min, max int64) *ScrambledZipfian {
	return &ScrambledZipfian{gen: newZipfianZeta(0, scrambledItems, ZipfianConstant, scrambledZetan), min: min, itemcount: max - min + 1}
}

// Next draws an item from u in [0,1).
func (s *ScrambledZipfian) Next(u float64) int64 {
	h := FNVHash64(s.gen.Next(u)) % s.itemcount
	if h < 0 { // FNVHash64 of one value in 2^64 is negative, as in Java
		h += s.itemcount
	}
	return s.min + h
}

// SkewedLatest is YCSB's SkewedLatestGenerator: the latest item is the
// most popular, then the one before it, zipfian backwards.
type SkewedLatest struct{ zipf *ZipfianGen }

// NewSkewedLatest returns a generator for a counter whose last value is
// last (YCSB makes its zipfian over that many items).
func NewSkewedLatest(last int64) *SkewedLatest {
	return &SkewedLatest{zipf: NewZipfianGen(0, last-1, ZipfianConstant)}
}

// Next draws an item in 0..last, from u in [0,1), given the counter's
// last value now.
func (s *SkewedLatest) Next(u float64, last int64) int64 {
	return last - s.zipf.NextN(u, last)
}

// AckCounter is YCSB's AcknowledgedCounterGenerator: Next hands out
// record numbers for inserts; Last is the highest number below which
// every insert has been acknowledged, the last record a read may choose.
// Safe for concurrent use; Next and Last take no lock (every request
// calls Last).
type AckCounter struct {
	next  atomic.Int64 // the next number to hand out
	limit atomic.Int64 // every number <= limit is acknowledged; written under mu
	mu    sync.Mutex
	// pending holds acknowledged numbers above limit+1; guarded by mu.
	pending map[int64]bool
}

// NewAckCounter starts at start: numbers below it count as acknowledged.
func NewAckCounter(start int64) *AckCounter {
	c := &AckCounter{pending: map[int64]bool{}}
	c.next.Store(start)
	c.limit.Store(start - 1)
	return c
}

// Next returns the next record number to insert.
func (c *AckCounter) Next() int64 { return c.next.Add(1) - 1 }

// Acknowledge marks n as inserted.
func (c *AckCounter) Acknowledge(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := c.limit.Load()
	if n <= limit {
		return
	}
	c.pending[n] = true
	for c.pending[limit+1] {
		delete(c.pending, limit+1)
		limit++
	}
	c.limit.Store(limit)
}

// Last is the highest record number at or below which every insert is
// acknowledged.
func (c *AckCounter) Last() int64 { return c.limit.Load() }
