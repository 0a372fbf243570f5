package transport

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"strata/stack"
)

// recorder is an inner transport that records what is sent through it
// and when. Sends to an address in blockOn wait until Close.
type recorder struct {
	blockOn stack.Addr
	gone    chan struct{} // closed by Close

	mu     sync.Mutex // guards sent and closed
	sent   []sentRec
	closed bool
}

type sentRec struct {
	to   stack.Addr
	data []byte
	at   time.Time
}

func newRecorder() *recorder { return &recorder{gone: make(chan struct{})} }

func (r *recorder) Local() stack.Addr                    { return "udp:127.0.0.1:1" }
func (r *recorder) MTU() int                             { return 1000 }
func (r *recorder) SetReceiver(func(stack.Addr, []byte)) {}
func (r *recorder) Send(to stack.Addr, vec [][]byte) error {
	if to == r.blockOn {
		<-r.gone
		return ErrClosed
	}
	var b []byte
	for _, v := range vec {
		b = append(b, v...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.sent = append(r.sent, sentRec{to, b, time.Now()})
	return nil
}

func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.closed = true
	close(r.gone)
	return nil
}

// to returns what was sent to one address, in order.
func (r *recorder) to(a stack.Addr) []sentRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sentRec
	for _, s := range r.sent {
		if s.to == a {
			out = append(out, s)
		}
	}
	return out
}

func fixedDelays(m map[stack.Addr]time.Duration) func(stack.Addr) time.Duration {
	return func(to stack.Addr) time.Duration { return m[to] }
}

// Each datagram leaves no earlier than its delay, with the bytes it had
// when Send was called even though the caller reuses its buffer.
func TestDelayedHoldsForDelay(t *testing.T) {
	leakCheck(t)
	const d = 80 * time.Millisecond
	r := newRecorder()
	tr := Delayed(r, fixedDelays(map[stack.Addr]time.Duration{"a": d}), 0, 1)
	buf := make([]byte, 4)
	var sentAt []time.Time
	for i := range 3 {
		copy(buf, fmt.Sprintf("m%03d", i))
		sentAt = append(sentAt, time.Now())
		if err := tr.Send("a", [][]byte{buf[:2], buf[2:]}); err != nil {
			t.Fatal(err)
		}
		copy(buf, "XXXX") // the caller reuses its buffer
	}
	waitFor(t, "3 delayed datagrams", func() bool { return len(r.to("a")) == 3 })
	for i, s := range r.to("a") {
		if want := fmt.Sprintf("m%03d", i); string(s.data) != want {
			t.Errorf("datagram %d is %q, want %q", i, s.data, want)
		}
		if held := s.at.Sub(sentAt[i]); held < d {
			t.Errorf("datagram %d left after %v, before the delay %v", i, held, d)
		}
	}
	if st := tr.(*DelayTransport).Stats(); st.Held != 3 || st.Sent != 3 {
		t.Errorf("stats %+v, want 3 held and sent", st)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// With jitter, datagrams to one destination still leave in order, each
// after at least the base delay; those to another destination keep their
// own order.
func TestDelayedFIFOUnderJitter(t *testing.T) {
	leakCheck(t)
	const d = 5 * time.Millisecond
	r := newRecorder()
	delays := map[stack.Addr]time.Duration{"a": d, "b": 2 * d}
	tr := Delayed(r, fixedDelays(delays), 20*time.Millisecond, 7)
	const n = 200
	sentAt := map[stack.Addr][]time.Time{}
	for i := range n {
		for _, to := range []stack.Addr{"a", "b"} {
			sentAt[to] = append(sentAt[to], time.Now())
			if err := tr.Send(to, [][]byte{fmt.Appendf(nil, "%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if i%20 == 0 {
			time.Sleep(time.Millisecond) // spread the sends a little
		}
	}
	waitFor(t, "every datagram", func() bool { return len(r.to("a")) == n && len(r.to("b")) == n })
	for _, to := range []stack.Addr{"a", "b"} {
		for i, s := range r.to(to) {
			if want := fmt.Sprint(i); string(s.data) != want {
				t.Fatalf("to %s: datagram %d is %q: reordered", to, i, s.data)
			}
			if held := s.at.Sub(sentAt[to][i]); held < delays[to] {
				t.Fatalf("to %s: datagram %d left after %v, before the delay %v", to, i, held, delays[to])
			}
		}
	}
	tr.Close()
}

// A long delay to one destination, or a Send to it that blocks in the
// inner transport, does not hold datagrams to another.
func TestDelayedDestinationsIndependent(t *testing.T) {
	leakCheck(t)
	r := newRecorder()
	r.blockOn = "stuck"
	tr := Delayed(r, fixedDelays(map[stack.Addr]time.Duration{"far": 2 * time.Second, "stuck": time.Millisecond, "near": time.Millisecond}), 0, 1)
	start := time.Now()
	for _, to := range []stack.Addr{"far", "stuck", "near"} {
		if err := tr.Send(to, [][]byte{[]byte(to)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the datagram to near", func() bool { return len(r.to("near")) == 1 })
	// Not a timing bound on near: far cannot have left before its delay,
	// so if near is here while far is not, near did not wait for it.
	if got := r.to("far"); len(got) != 0 && got[0].at.Sub(start) < 2*time.Second {
		t.Fatalf("far left after %v, before its delay", got[0].at.Sub(start))
	}
	// Close returns although a sender is blocked in the inner Send
	// (closing the inner transport releases it) and drops far's datagram.
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	// far's datagram is dropped; stuck's too if Close came before its
	// sender reached the inner Send (its delay is only 1 ms).
	if st := tr.(*DelayTransport).Stats(); len(r.to("far")) == 0 && (st.Dropped < 1 || st.Dropped > 2) {
		t.Errorf("stats %+v: far's held datagram not counted as dropped", st)
	}
}

// Close drops what is held, closes the inner transport, ends every
// goroutine; Send and Close after it fail with ErrClosed.
func TestDelayedCloseDropsPending(t *testing.T) {
	leakCheck(t)
	r := newRecorder()
	tr := Delayed(r, fixedDelays(map[stack.Addr]time.Duration{"a": time.Hour, "b": time.Hour}), time.Second, 1)
	for i := range 10 {
		if err := tr.Send(stack.Addr([]string{"a", "b"}[i%2]), [][]byte{{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if st := tr.(*DelayTransport).Stats(); st.Dropped != 10 || st.Sent != 0 {
		t.Errorf("stats %+v, want 10 dropped, none sent", st)
	}
	if !r.closed {
		t.Error("the inner transport was not closed")
	}
	if err := tr.Send("a", [][]byte{{1}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
	if err := tr.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
}

// No delay and no jitter: the inner transport itself, or a direct call.
func TestDelayedZeroIsPassThrough(t *testing.T) {
	r := newRecorder()
	if tr := Delayed(r, nil, 0, 1); tr != stack.Transport(r) {
		t.Fatalf("Delayed with no delay returned %T, want the inner transport", tr)
	}
	tr := Delayed(r, fixedDelays(map[stack.Addr]time.Duration{"far": time.Hour}), 0, 1)
	if err := tr.Send("near", [][]byte{[]byte("x")}); err != nil {
		t.Fatal(err)
	}
	// Synchronous: recorded before Send returned.
	if got := r.to("near"); len(got) != 1 || string(got[0].data) != "x" {
		t.Fatalf("zero-delay send not passed through at once: %v", got)
	}
	if err := tr.Send("far", [][]byte{make([]byte, 1001)}); err == nil {
		t.Fatal("a datagram over the MTU was accepted for later")
	}
	tr.Close()
}

// Over real UDP sockets, through ListenOpts's Wrap: the datagram arrives
// no earlier than the delay, and the wrapper passes Assist and SetBatcher
// through.
func TestDelayedUDP(t *testing.T) {
	leakCheck(t)
	const d = 50 * time.Millisecond
	wrap := func(tr stack.Transport) (stack.Transport, error) {
		return Delayed(tr, func(stack.Addr) time.Duration { return d }, 0, 1), nil
	}
	a, err := ListenOpts("udp:127.0.0.1:0", Options{Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ListenOpts("udp:127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := a.(stack.Assister); !ok {
		t.Error("DelayTransport is not a stack.Assister")
	}
	got := make(chan time.Time, 1)
	b.SetReceiver(func(_ stack.Addr, data []byte) {
		if bytes.Equal(data, []byte("hi")) {
			got <- time.Now()
		}
	})
	start := time.Now()
	if err := a.Send(b.Local(), [][]byte{[]byte("hi")}); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-got:
		if at.Sub(start) < d {
			t.Fatalf("arrived after %v, before the delay %v", at.Sub(start), d)
		}
	case <-time.After(liveness):
		t.Fatal("the delayed datagram never arrived")
	}
	failing := func(stack.Transport) (stack.Transport, error) { return nil, errors.New("no site") }
	if _, err := ListenOpts("udp:127.0.0.1:0", Options{Wrap: failing}); err == nil || err.Error() != "no site" {
		t.Fatalf("ListenOpts with a failing Wrap: %v", err)
	}
}

// Over TCP with jitter, frames arrive in the order they were sent, as TCP
// transport users expect.
func TestDelayedTCPKeepsOrder(t *testing.T) {
	leakCheck(t)
	wrap := func(tr stack.Transport) (stack.Transport, error) {
		return Delayed(tr, func(stack.Addr) time.Duration { return 2 * time.Millisecond }, 10*time.Millisecond, 3), nil
	}
	a, err := ListenOpts("tcp:127.0.0.1:0", Options{Wrap: wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := ListenOpts("tcp:127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var in inbox
	b.SetReceiver(in.recv)
	const n = 100
	for i := range n {
		if err := a.Send(b.Local(), [][]byte{fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every frame", func() bool { return in.len() == n })
	for i, m := range in.all() {
		if want := fmt.Sprint(i); string(m.data) != want {
			t.Fatalf("frame %d is %q: reordered", i, m.data)
		}
	}
}
