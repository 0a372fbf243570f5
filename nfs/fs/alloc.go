package fs

import (
	"math/bits"
	"sync"
)

// bitAlloc is the in-memory image of an on-disk allocation bitmap. It hands
// out free indexes under a mutex, so no two operations ever own the same
// bit: an operation that allocates index i journals the flip of bit i, and
// gives i back (release) if it aborts; an operation that frees i journals
// the flip and releases i only after it has committed, so the index cannot
// be reused by an operation that might commit before the free.
//
// An index is freed in two steps: claim, when the operation journals the
// flip (refused if the index is free or another operation is freeing it:
// the on-disk structures name it twice, or the bitmap is wrong), then
// release after the commit (or unclaim if the operation aborts). Nothing
// read from disk can make the allocator free an index twice.
//
// It is rebuilt at Open from the bitmap read through the journal.
type bitAlloc struct {
	mu      sync.Mutex
	w       []uint64 // bit set = in use
	n       uint64   // number of valid indexes
	free    uint64
	hint    int                 // every word below hint is full
	freeing map[uint64]struct{} // claimed by operations not yet committed
	bad     map[uint64]struct{} // free in the bitmap but found in use: never handed out again
}

func newBitAlloc(n uint64) *bitAlloc {
	a := &bitAlloc{w: make([]uint64, divUp(n, 64)), n: n, free: n, freeing: map[uint64]struct{}{}, bad: map[uint64]struct{}{}}
	if r := n % 64; r != 0 { // indexes past n are permanently in use
		a.w[len(a.w)-1] = ^uint64(0) << r
	}
	return a
}

// markUsed records that i is in use (used while rebuilding).
func (a *bitAlloc) markUsed(i uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.w[i/64]&(1<<(i%64)) == 0 {
		a.w[i/64] |= 1 << (i % 64)
		a.free--
	}
}

// alloc returns the lowest free index.
func (a *bitAlloc) alloc() (uint64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.free == 0 {
		return 0, false
	}
	for k := a.hint; k < len(a.w); k++ {
		if a.w[k] != ^uint64(0) {
			b := uint64(bits.TrailingZeros64(^a.w[k]))
			a.w[k] |= 1 << b
			a.free--
			a.hint = k
			return uint64(k)*64 + b, true
		}
	}
	return 0, false // unreachable while free counts are right
}

// claim reserves index i, in use, for freeing by one operation. It
// returns false if i is out of range, free (or quarantined: free in the
// bitmap), or claimed by another operation (or earlier by the same one).
func (a *bitAlloc) claim(i uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i >= a.n || a.w[i/64]&(1<<(i%64)) == 0 {
		return false
	}
	if _, ok := a.freeing[i]; ok {
		return false
	}
	if _, ok := a.bad[i]; ok { // free in the bitmap
		return false
	}
	a.freeing[i] = struct{}{}
	return true
}

// quarantine keeps i, which alloc just returned, in use for good: the
// on-disk bitmap says it is free but it is not (damage), and handing it
// out again would only meet the damage again.
func (a *bitAlloc) quarantine(i uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bad[i] = struct{}{}
}

// isBad reports whether i is quarantined.
func (a *bitAlloc) isBad(i uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.bad[i]
	return ok
}

// numBad is the number of quarantined indexes.
func (a *bitAlloc) numBad() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return uint64(len(a.bad))
}

// unclaim gives up a claim (the freeing operation aborted).
func (a *bitAlloc) unclaim(i uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.freeing, i)
}

// release makes i free again: an index the operation allocated and gives
// back, or one it claimed and whose freeing committed. It reports false,
// changing nothing, if i is out of range or already free (which claims
// and allocations rule out).
func (a *bitAlloc) release(i uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.freeing, i)
	if i >= a.n || a.w[i/64]&(1<<(i%64)) == 0 {
		return false
	}
	a.w[i/64] &^= 1 << (i % 64)
	a.free++
	a.hint = min(a.hint, int(i/64))
	return true
}

func (a *bitAlloc) isUsed(i uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return i >= a.n || a.w[i/64]&(1<<(i%64)) != 0
}

func (a *bitAlloc) numFree() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.free
}
