// Package lockmap is a striped lock map: it behaves like an unbounded array
// of mutexes indexed by uint64 key, in constant memory (the idea of Guava's
// Striped). Callers of the journal use it to lock the objects an operation
// touches, e.g. one lock per inode.
//
// Guarantees: Acquire(k) excludes every other holder of k, and only of k:
// keys sharing a stripe share its bookkeeping, never the lock itself. A
// goroutine holding several keys should take them in a global order
// (AcquireAll does) to avoid deadlock.
package lockmap

import (
	"slices"
	"sync"
)

const stripes = 1024 // power of two

type stripe struct {
	mu   sync.Mutex
	cond sync.Cond
	held map[uint64]bool
	_    [24]byte // keep stripes on separate cache lines
}

// LockMap is a set of locks keyed by uint64. The zero value is not usable;
// call New.
type LockMap struct {
	s [stripes]stripe
}

// New returns a lock map with no key held.
func New() *LockMap {
	m := &LockMap{}
	for i := range m.s {
		m.s[i].cond.L = &m.s[i].mu
		m.s[i].held = map[uint64]bool{}
	}
	return m
}

func (m *LockMap) stripe(k uint64) *stripe {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return &m.s[k&(stripes-1)]
}

// Acquire blocks until k is free, then holds it. Keys are exact: two keys
// that hash to one stripe do not exclude each other.
func (m *LockMap) Acquire(k uint64) {
	s := m.stripe(k)
	s.mu.Lock()
	for s.held[k] {
		s.cond.Wait()
	}
	s.held[k] = true
	s.mu.Unlock()
}

// Release frees k, which the caller holds.
func (m *LockMap) Release(k uint64) {
	s := m.stripe(k)
	s.mu.Lock()
	if !s.held[k] {
		s.mu.Unlock()
		panic("lockmap: release of a key that is not held") // a caller bug, never input-driven
	}
	delete(s.held, k)
	s.mu.Unlock()
	s.cond.Broadcast()
}

// AcquireAll acquires every key in sorted order, so concurrent callers with
// overlapping key sets cannot deadlock. It returns the sorted, deduplicated keys.
func (m *LockMap) AcquireAll(keys []uint64) []uint64 {
	ks := slices.Clone(keys)
	slices.Sort(ks)
	ks = slices.Compact(ks)
	for _, k := range ks {
		m.Acquire(k)
	}
	return ks
}

// ReleaseAll releases keys acquired with AcquireAll.
func (m *LockMap) ReleaseAll(keys []uint64) {
	for _, k := range keys {
		m.Release(k)
	}
}
