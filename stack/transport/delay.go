package transport

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
)

// Delayed wraps a transport so that each datagram sent to a destination
// leaves delay(to) later, plus a uniformly random extra in [0, jitter),
// in real time: an emulated wide-area network for processes on one machine
// (see docs/wan.md). Receiving is the inner transport's, untouched.
//
// Guarantees:
//
//   - Send does not wait for the delay: it checks the datagram (size,
//     closed), copies it and returns. Errors the inner Send returns when
//     the datagram finally leaves are counted (DelayStats.SendErrors) and
//     logged at debug level; for the sender the datagram is in flight and
//     its loss is like a network's.
//   - Per destination, datagrams leave in the order Send was called: a
//     datagram is never scheduled before the previous one to the same
//     destination, so jitter never reorders them (one that drew a small
//     jitter waits behind one that drew a large one, as on one TCP
//     connection). Datagrams to different destinations are independent:
//     each destination has its own queue and sender goroutine, so a long
//     delay to one, or an inner Send that blocks (a TCP dial to a dead
//     peer), does not hold datagrams to another.
//   - A destination whose delay is zero, with no jitter, is sent to
//     directly from Send (no copy, no goroutine); delay should then be
//     the same for a destination at every call, as it is for a fixed WAN,
//     else a zero-delay datagram may overtake one still held. With a nil
//     delay and no jitter, Delayed returns inner itself.
//   - Close drops the datagrams still held (as a network drops those in
//     flight when a host stops; flushing them would make Close wait for the
//     longest delay), closes inner, and returns once every goroutine the
//     wrapper started has ended.
//
// A destination's sender goroutine exists only while datagrams to it are
// held, so idle destinations cost nothing.
//
// Not emulated: bandwidth limits, loss, duplication, reordering.
func Delayed(inner stack.Transport, delay func(to stack.Addr) time.Duration, jitter time.Duration, seed uint64) stack.Transport {
	if delay == nil && jitter <= 0 {
		return inner
	}
	if delay == nil {
		delay = func(stack.Addr) time.Duration { return 0 }
	}
	return &DelayTransport{
		inner:  inner,
		delay:  delay,
		jitter: max(jitter, 0),
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		dests:  map[stack.Addr]*delayQueue{},
		done:   make(chan struct{}),
	}
}

// DelayTransport is the transport Delayed returns.
type DelayTransport struct {
	inner  stack.Transport
	delay  func(to stack.Addr) time.Duration
	jitter time.Duration

	mu     sync.Mutex
	rng    *rand.Rand                 // guarded by mu
	dests  map[stack.Addr]*delayQueue // guarded by mu: destinations with datagrams held
	closed bool                       // guarded by mu
	wg     sync.WaitGroup             // the senders; Add only under mu while !closed
	done   chan struct{}              // closed by Close: senders stop
	stats  struct{ held, sent, dropped, sendErrors atomic.Uint64 }
}

// delayQueue is one destination's held datagrams, in the order they leave
// (their due times never decrease).
type delayQueue struct {
	q []heldMsg // guarded by DelayTransport.mu
}

type heldMsg struct {
	due  time.Time
	data []byte
}

// DelayStats are a DelayTransport's counters since it was created.
type DelayStats struct {
	Held       uint64 // datagrams queued for a later send
	Sent       uint64 // held datagrams handed to the inner transport without error
	Dropped    uint64 // held datagrams dropped by Close
	SendErrors uint64 // held datagrams the inner transport refused when they were due
}

// Stats returns the wrapper's counters.
func (t *DelayTransport) Stats() DelayStats {
	return DelayStats{Held: t.stats.held.Load(), Sent: t.stats.sent.Load(),
		Dropped: t.stats.dropped.Load(), SendErrors: t.stats.sendErrors.Load()}
}

// Inner returns the wrapped transport.
func (t *DelayTransport) Inner() stack.Transport { return t.inner }

// Local implements stack.Transport.
func (t *DelayTransport) Local() stack.Addr { return t.inner.Local() }

// MTU implements stack.Transport.
func (t *DelayTransport) MTU() int { return t.inner.MTU() }

// SetReceiver implements stack.Transport.
func (t *DelayTransport) SetReceiver(f func(from stack.Addr, data []byte)) { t.inner.SetReceiver(f) }

// SetBatcher passes the node's batcher on to the inner transport, which
// delivers what it receives.
func (t *DelayTransport) SetBatcher(batch func(f func())) {
	if b, ok := t.inner.(interface{ SetBatcher(func(func())) }); ok {
		b.SetBatcher(batch)
	}
}

// Assist implements stack.Assister for an inner transport that does
// (receiving is not delayed); otherwise it returns false at once.
func (t *DelayTransport) Assist(from stack.Addr, done func() bool, d time.Duration) bool {
	if a, ok := t.inner.(stack.Assister); ok {
		return a.Assist(from, done, d)
	}
	return false
}

// Send implements stack.Transport: it holds a copy of the datagram until
// it is due (see Delayed).
func (t *DelayTransport) Send(to stack.Addr, vec [][]byte) error {
	d := t.delay(to)
	if d <= 0 && t.jitter == 0 {
		return t.inner.Send(to, vec)
	}
	n := 0
	for _, b := range vec {
		n += len(b)
	}
	if mtu := t.inner.MTU(); n > mtu {
		return errorf(t.inner.Local(), "send to %s: datagram of %d bytes exceeds the MTU (%d)", to, n, mtu)
	}
	// The caller may reuse its buffers once Send returns.
	data := make([]byte, 0, n)
	for _, b := range vec {
		data = append(data, b...)
	}
	now := time.Now()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return errorf(t.inner.Local(), "send to %s: %w", to, ErrClosed)
	}
	due := now.Add(max(d, 0))
	if t.jitter > 0 {
		due = due.Add(time.Duration(t.rng.Int64N(int64(t.jitter))))
	}
	dq := t.dests[to]
	if dq == nil {
		dq = &delayQueue{}
		t.dests[to] = dq
		t.wg.Add(1)
		go t.sender(to, dq)
	} else if last := dq.q[len(dq.q)-1].due; due.Before(last) {
		// Never before the previous datagram to the same destination:
		// per-destination FIFO.
		due = last
	}
	dq.q = append(dq.q, heldMsg{due: due, data: data})
	t.mu.Unlock()
	t.stats.held.Add(1)
	return nil
}

// sender is the goroutine of one destination while datagrams to it are
// held (Send starts it with the first one): it sends each when due, and
// ends when the queue is empty (removing it from dests, under mu, so that
// the next Send starts a new one) or when the transport closes. A queue in dests always has a sender and at least
// one datagram, and a datagram appended to it is due no earlier than the
// ones before it, so the sender only ever waits for its queue's head.
func (t *DelayTransport) sender(to stack.Addr, dq *delayQueue) {
	defer t.wg.Done()
	var timer *time.Timer
	for {
		t.mu.Lock()
		m := dq.q[0]
		t.mu.Unlock()
		if wait := time.Until(m.due); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-t.done:
				timer.Stop()
				return
			}
		}
		select {
		case <-t.done:
			return
		default:
		}
		if err := t.inner.Send(to, [][]byte{m.data}); err != nil {
			t.stats.sendErrors.Add(1)
			slog.Debug("transport: delayed send failed", "to", to, "err", err)
		} else {
			t.stats.sent.Add(1)
		}
		t.mu.Lock()
		dq.q[0] = heldMsg{}
		dq.q = dq.q[1:]
		if len(dq.q) == 0 {
			// In the same critical section as the pop, so that Send never
			// finds an empty queue in dests.
			delete(t.dests, to)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// Close implements stack.Transport: it drops the datagrams still held,
// closes the inner transport and waits for the senders.
func (t *DelayTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return errorf(t.inner.Local(), "close: %w", ErrClosed)
	}
	t.closed = true
	close(t.done)
	t.mu.Unlock()
	// Closing inner first makes a sender blocked in its Send (a TCP dial)
	// return at once.
	err := t.inner.Close()
	t.wg.Wait()
	t.mu.Lock()
	for to, dq := range t.dests {
		t.stats.dropped.Add(uint64(len(dq.q)))
		delete(t.dests, to)
	}
	t.mu.Unlock()
	return err
}
