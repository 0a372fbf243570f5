package stack

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// TestKeepSurvivesReuse checks Keep's promise: what it returns stays
// intact after the Msg is freed and the pool hands its buffers out again,
// in each way a message can be made. A received datagram's own bytes are
// returned without a copy.
func TestKeepSurvivesReuse(t *testing.T) {
	cases := []struct {
		name  string
		make  func() *Msg
		alias bool // Keep may return the datagram itself
	}{
		{"received", func() *Msg { return Received([]byte("hdr-body")) }, true},
		{"sent, header only", func() *Msg {
			m := NewMsg()
			copy(m.Push(3), "abc")
			return m
		}, false},
		{"sent, with payload", func() *Msg {
			m := NewMsg([]byte("payload"))
			copy(m.Push(2), "hh")
			return m
		}, false},
		{"received, then pushed into a new small buffer", func() *Msg {
			m := Received([]byte("xy"))
			copy(m.Push(40), bytes.Repeat([]byte{'p'}, 40)) // grows: no headroom in a datagram
			return m
		}, false},
	}
	for _, c := range cases {
		m := c.make()
		want := m.Bytes()
		got := m.Keep()
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: Keep = %q, want %q", c.name, got, want)
		}
		if aliased := len(m.buf) > 0 && len(got) > 0 && &got[0] == &m.buf[m.head]; aliased != c.alias {
			t.Errorf("%s: Keep aliases the message: %v, want %v", c.name, aliased, c.alias)
		}
		m.Free()
		// Reuse the pool hard: every reused header buffer gets overwritten.
		for range 64 {
			r := NewMsg()
			b := r.Push(headroom)
			for i := range b {
				b[i] = 0xee
			}
			r.Free()
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: kept bytes changed after Free and reuse: %q, want %q", c.name, got, want)
		}
	}
}

// TestShareFree: a message shared with k more holders goes back to the
// pool (Free clears its buffer) at the last of the k+1 Frees and not
// before, also when the holders free it at once.
func TestShareFree(t *testing.T) {
	for _, k := range []int{0, 1, 2, 7} {
		m := NewMsg([]byte("payload"))
		copy(m.Push(3), "hdr")
		m.share(k)
		for i := 0; i < k; i++ {
			m.Free()
			if m.buf == nil || !bytes.Equal(m.Bytes(), []byte("hdrpayload")) {
				t.Fatalf("k=%d: recycled after %d of %d frees", k, i+1, k+1)
			}
		}
		m.Free()
		if m.buf != nil || atomic.LoadInt32(&m.refs) != 0 {
			t.Fatalf("k=%d: not recycled after the last free (refs %d)", k, atomic.LoadInt32(&m.refs))
		}
	}
	for round := 0; round < 200; round++ {
		m := NewMsg([]byte("x"))
		m.share(7)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); m.Free() }()
		}
		wg.Wait()
		if m.buf != nil || atomic.LoadInt32(&m.refs) != 0 {
			t.Fatalf("round %d: 8 concurrent frees of a message shared 8 ways left buf %v refs %d", round, m.buf != nil, atomic.LoadInt32(&m.refs))
		}
	}
}

// TestEventSize: events are copied at every hand-over, so their size is
// part of every path's cost (event.go keeps the rare fields behind
// pointers); on 64-bit machines they stay at 96 bytes.
func TestEventSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) == 8 && unsafe.Sizeof(Event{}) > 96 {
		t.Fatalf("Event is %d bytes, more than 96", unsafe.Sizeof(Event{}))
	}
}
