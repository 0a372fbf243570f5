package transport

import (
	"sync"
	"testing"
)

// One holder at a time (the race detector sees the plain counter), every
// waiter gets its turn, and a waiter gives up once done closes.
func TestSerial(t *testing.T) {
	var s serial
	s.init()
	done := make(chan struct{})
	inside, total := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if !s.enter(done) {
					t.Error("enter failed before done closed")
					return
				}
				inside++
				if inside != 1 {
					t.Errorf("%d holders at once", inside)
				}
				total++
				inside--
				s.leave()
			}
		}()
	}
	wg.Wait()
	if total != 8*2000 {
		t.Fatalf("%d turns, want %d", total, 8*2000)
	}

	if !s.enter(done) {
		t.Fatal("enter failed")
	}
	got := make(chan bool)
	go func() { got <- s.enter(done) }()
	close(done)
	if <-got {
		t.Fatal("a waiter took the turn while it was held")
	}
	s.leave()
}
