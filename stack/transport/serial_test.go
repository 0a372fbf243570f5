package transport

import (
	"sync"
	"testing"
	"time"
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

// A budget looks at the clock every budgetCheck-th poll; once spent it
// stays spent; a long one is not spent by polls alone.
func TestBudget(t *testing.T) {
	b := budget{d: 0}
	for i := 1; i < budgetCheck; i++ {
		if b.spent() {
			t.Fatalf("spent after %d polls, before its first look at the clock", i)
		}
	}
	if !b.spent() {
		t.Fatal("a zero budget not spent at its first look at the clock")
	}
	if !b.spent() {
		t.Fatal("a spent budget came back")
	}
	long := budget{d: time.Hour}
	for i := 0; i < 100*budgetCheck; i++ {
		if long.spent() {
			t.Fatalf("an hour's budget spent after %d polls", i+1)
		}
	}
	// Its time starts no earlier than its first poll: spent only once d
	// has passed since then.
	short := budget{d: 5 * time.Millisecond}
	start := time.Now()
	for !short.spent() { // polls as fast as a loop can (5 ms of them)
	}
	if el := time.Since(start); el < short.d {
		t.Fatalf("spent %v after its first poll, before its %v", el, short.d)
	}
}
