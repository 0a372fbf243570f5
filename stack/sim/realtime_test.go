package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"strata/stack"
)

// The links here have no loss, jitter or reordering, so the seed decides
// nothing: the tests check timing and ordering, not random draws.
const rtSeed = 1

// rtPair starts a driver with a fixed-delay link and two endpoints; b's
// arrivals go to the returned channel.
func rtPair(t *testing.T, delay time.Duration) (*RealTime, stack.Transport, stack.Transport, chan []byte) {
	t.Helper()
	rt := NewRealTime(rtSeed)
	t.Cleanup(rt.Close)
	rt.Do(func(n *Net) { n.SetDefault(Link{Delay: delay}) })
	a, err := rt.Endpoint("sim:a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.Endpoint("sim:b")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1024)
	b.SetReceiver(func(from stack.Addr, data []byte) {
		if from == "sim:a" {
			got <- data
		}
	})
	return rt, a, b, got
}

// within waits up to 5 s for a value on ch: long enough for a loaded
// machine, short enough that a lost datagram or timer fails fast.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: nothing in 5 s", what)
	}
	var zero T
	return zero
}

// A datagram takes its link's delay in wall-clock time — also the first
// one after an idle spell, when the driver slept with its virtual clock
// stopped — and arrives intact.
func TestRealTimeDelivers(t *testing.T) {
	const delay = 20 * time.Millisecond
	_, a, _, got := rtPair(t, delay)
	for i := range 3 {
		time.Sleep(30 * time.Millisecond) // idle: nothing in flight
		msg := []byte{'m', byte(i)}
		sent := time.Now()
		if err := a.Send("sim:b", [][]byte{msg[:1], msg[1:]}); err != nil {
			t.Fatal(err)
		}
		msg[1] = 'x' // Send copied the datagram
		d := within(t, got, fmt.Sprintf("datagram %d", i))
		if el := time.Since(sent); el < delay {
			t.Errorf("datagram %d arrived %v after it was sent, before the link's delay %v", i, el, delay)
		}
		if string(d) != string([]byte{'m', byte(i)}) {
			t.Errorf("datagram %d arrived as %q", i, d)
		}
	}
}

// The virtual clock follows the wall clock, and a timer set on it fires
// after its delay in wall-clock time.
func TestRealTimeTimers(t *testing.T) {
	rt := NewRealTime(rtSeed)
	defer rt.Close()
	started := time.Now() // not before the driver's start
	time.Sleep(50 * time.Millisecond)
	before := time.Since(started)
	var now time.Duration
	rt.Do(func(n *Net) { now = n.Now() })
	if now < before {
		t.Errorf("after %v idle, virtual time is %v: the clock did not catch up with the wall clock", before, now)
	}

	const d = 30 * time.Millisecond
	fired := make(chan time.Duration, 1)
	set := time.Now()
	rt.Do(func(n *Net) {
		n.AfterFunc(d, func() { fired <- time.Since(set) })
	})
	if el := within(t, fired, fmt.Sprintf("a %v timer", d)); el < d {
		t.Errorf("a %v timer fired after %v", d, el)
	}
}

// Sends from many goroutines at once are all delivered, each sender's in
// the order it sent them (the link is FIFO), and the faults set through
// Do apply to them.
func TestRealTimeConcurrentSenders(t *testing.T) {
	rt := NewRealTime(rtSeed)
	defer rt.Close()
	rt.Do(func(n *Net) { n.SetDefault(Link{Delay: time.Millisecond}) })
	const senders, each = 4, 50
	dst, err := rt.Endpoint("sim:dst")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards next, bad
	next := map[uint32]uint32{}
	bad := 0
	all := make(chan struct{})
	total := 0
	dst.SetReceiver(func(_ stack.Addr, data []byte) {
		s, i := binary.BigEndian.Uint32(data), binary.BigEndian.Uint32(data[4:])
		mu.Lock()
		defer mu.Unlock()
		if i != next[s] {
			bad++
		}
		next[s] = i + 1
		if total++; total == senders*each {
			close(all)
		}
	})
	var wg sync.WaitGroup
	for s := range uint32(senders) {
		ep, err := rt.Endpoint(stack.Addr(fmt.Sprintf("sim:src%d", s)))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range uint32(each) {
				var b [8]byte
				binary.BigEndian.PutUint32(b[:], s)
				binary.BigEndian.PutUint32(b[4:], i)
				if err := ep.Send("sim:dst", [][]byte{b[:]}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-all:
	case <-time.After(5 * time.Second):
		mu.Lock()
		n := total
		mu.Unlock()
		t.Fatalf("%d of %d datagrams delivered in 5 s", n, senders*each)
	}
	mu.Lock()
	if bad != 0 {
		t.Errorf("%d datagrams arrived out of their sender's order on FIFO links", bad)
	}
	mu.Unlock()

	// A partition set through Do cuts the link.
	rt.Do(func(n *Net) { n.Partition([]stack.Addr{"sim:dst"}) })
	src, err := rt.Endpoint("sim:late")
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Send("sim:dst", [][]byte{make([]byte, 8)}); err != nil {
		t.Fatal(err)
	}
	var st Stats
	rt.Do(func(n *Net) { st = n.Stats() })
	if st.DroppedPartition != 1 {
		t.Errorf("a send across a partition: DroppedPartition %d, want 1", st.DroppedPartition)
	}
}

// A datagram over the MTU is refused at once, with ErrTooBig.
func TestRealTimeMTU(t *testing.T) {
	_, a, _, _ := rtPair(t, time.Millisecond)
	err := a.Send("sim:b", [][]byte{make([]byte, a.MTU()+1)})
	if !errors.Is(err, ErrTooBig) {
		t.Errorf("send of MTU+1 bytes: %v, want ErrTooBig", err)
	}
}

// Close stops the driver's goroutine promptly, also with timers pending
// and while it sleeps; afterwards nothing runs, the endpoints are inert,
// and closing again is harmless.
func TestRealTimeClose(t *testing.T) {
	for _, pending := range []bool{false, true} {
		rt, a, _, got := rtPair(t, time.Hour)
		if pending {
			if err := a.Send("sim:b", [][]byte{[]byte("late")}); err != nil {
				t.Fatal(err)
			}
			rt.Do(func(n *Net) { n.AfterFunc(time.Hour, func() {}) })
		}
		closed := make(chan struct{})
		go func() { rt.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatalf("pending %v: Close did not return in 5 s", pending)
		}
		select {
		case <-rt.done:
		default:
			t.Fatalf("pending %v: Close returned before the driver's goroutine", pending)
		}
		ran := false
		rt.Do(func(*Net) { ran = true })
		if ran {
			t.Errorf("pending %v: Do ran after Close", pending)
		}
		if _, err := rt.Endpoint("sim:c"); !errors.Is(err, ErrClosed) {
			t.Errorf("pending %v: Endpoint after Close: %v, want ErrClosed", pending, err)
		}
		if err := a.Send("sim:b", [][]byte{[]byte("x")}); err != nil {
			t.Errorf("pending %v: Send after Close: %v", pending, err)
		}
		a.SetReceiver(nil) // must not hang
		if err := a.Close(); err != nil {
			t.Errorf("pending %v: endpoint Close after Close: %v", pending, err)
		}
		rt.Close()
		if len(got) != 0 {
			t.Errorf("pending %v: %d datagrams delivered on an hour-long link", pending, len(got))
		}
	}
}
