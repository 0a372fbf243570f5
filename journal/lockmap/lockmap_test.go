package lockmap

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// Holders of one key never overlap; holders of different keys (even on one
// stripe) do not wait for each other.
func TestMutualExclusion(t *testing.T) {
	m := New()
	const keys = 16
	var inside [keys]atomic.Int32
	var violations atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := 0; i < 2000; i++ {
				ks := []uint64{uint64(rng.IntN(keys)), uint64(rng.IntN(keys)), uint64(rng.IntN(keys))}
				held := m.AcquireAll(ks)
				for _, k := range held {
					if inside[k].Add(1) != 1 {
						violations.Add(1)
					}
				}
				for _, k := range held {
					inside[k].Add(-1)
				}
				m.ReleaseAll(held)
			}
		}()
	}
	wg.Wait()
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d times two goroutines held the same key", v)
	}
}

func TestKeysOnOneStripeAreIndependent(t *testing.T) {
	m := New()
	// Find two keys on the same stripe.
	a := uint64(1)
	var b uint64
	for k := uint64(2); ; k++ {
		if m.stripe(k) == m.stripe(a) {
			b = k
			break
		}
	}
	m.Acquire(a)
	done := make(chan struct{})
	go func() { m.Acquire(b); m.Release(b); close(done) }()
	<-done // would deadlock if b waited for a
	m.Release(a)
}
