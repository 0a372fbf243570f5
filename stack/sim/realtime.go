package sim

import (
	"fmt"
	"sync"
	"time"

	"strata/stack"
)

// RealTime drives a Net in real time, so that blocking code — code that
// starts goroutines and waits on wall-clock timeouts, such as wor.Client,
// smr replicas or kv servers — can run over the simulated network (loss,
// duplication, reordering, partitions, crashes).
//
// One goroutine, started by NewRealTime and ended by Close, owns the Net:
// it runs the network's events with the virtual clock following the wall
// clock, and runs everything other goroutines do to the network (a
// node's sends, the faults a test injects through Do) in the order they
// were submitted, since a Net is single-threaded. While no event is
// scheduled it sleeps until something is submitted; otherwise it polls
// every 200µs, so deliveries and timers run at most that much late (more
// on a loaded machine). Before running what was submitted it brings the
// virtual clock up to the wall clock, so a datagram sent after an idle
// spell still takes its link's full delay.
//
// This is the one part of the package that starts a goroutine and reads
// the wall clock, so it gives up the Net's determinism: the network's
// choices (loss, duplication, delays) come from the seed, but goroutine
// scheduling does not, so a seed replays the same link settings and the
// same fault schedule, not the same interleaving. Nodes over it use the
// real clock (stack.NewRealClock) for their timers.
type RealTime struct {
	net   *Net      // used only on the driver's goroutine (loop, and the functions it runs)
	start time.Time // wall-clock instant of virtual time 0; immutable

	mu sync.Mutex // guards q
	q  []func()   // submitted work, run in order by loop

	wake chan struct{} // capacity 1: a submission since loop last looked
	stop chan struct{} // closed by Close (once, under stopOnce)
	done chan struct{} // closed when loop has returned

	stopOnce sync.Once
}

// NewRealTime starts the driver of a new Net seeded with seed (see New).
// Close stops it.
func NewRealTime(seed uint64) *RealTime {
	r := &RealTime{
		net:   New(seed),
		start: time.Now(),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	go r.loop()
	return r
}

// Close stops the driver's goroutine and waits for it to return. Work
// submitted afterwards, or not yet run, never runs: datagrams in flight
// and sends still queued are lost. Closing twice is harmless.
func (r *RealTime) Close() {
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
}

// Do runs f on the driver's goroutine, with the Net, and waits for it;
// this is the only way to reach the Net (to set links, partition, crash,
// restart, read Stats). f must not block on the network itself (on a
// node's call, say): the network does not run while f does. If the
// driver is closed, Do returns without running f.
func (r *RealTime) Do(f func(n *Net)) {
	r.do(func() { f(r.net) })
}

// Endpoint attaches a transport at addr (see Net.Endpoint), usable from
// any goroutine. Its Send queues the datagram for the driver and returns
// at once: it fails only for a datagram over the MTU the Net had when the
// endpoint was made; everything else that happens to the datagram
// (including a closed endpoint) is silent.
func (r *RealTime) Endpoint(addr stack.Addr) (stack.Transport, error) {
	var tr stack.Transport
	var err error
	var mtu int
	ran := false
	r.do(func() {
		ran = true
		tr, err = r.net.Endpoint(addr)
		if err == nil {
			mtu = tr.MTU()
		}
	})
	// ran is read after do returned: either f closed its channel, or loop
	// returned (closing done) after running f or without running it.
	if !ran {
		return nil, fmt.Errorf("%w: endpoint %s: the real-time driver is closed", ErrClosed, addr)
	}
	if err != nil {
		return nil, err
	}
	return &rtEndpoint{rt: r, tr: tr, local: addr, mtu: mtu}, nil
}

func (r *RealTime) loop() {
	defer close(r.done)
	tick := time.NewTimer(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		// Catch the clock up first: after an idle sleep it lags the wall
		// clock, and work submitted now happens now.
		r.catchUp()
		r.mu.Lock()
		q := r.q
		r.q = nil
		r.mu.Unlock()
		for _, f := range q {
			f()
		}
		// Run what that work scheduled for the current instant, and
		// whatever fell due while it ran.
		r.catchUp()
		r.mu.Lock()
		more := len(r.q) > 0
		r.mu.Unlock()
		if more {
			continue
		}
		if r.net.Pending() == 0 {
			// Nothing in flight and no timer set: only a submission can
			// give the network work, and submissions wake us.
			select {
			case <-r.wake:
			case <-r.stop:
				return
			}
			continue
		}
		tick.Reset(200 * time.Microsecond)
		select {
		case <-r.wake:
		case <-tick.C:
		case <-r.stop:
			return
		}
	}
}

// catchUp runs the events due up to the wall clock and sets the virtual
// clock to it (or, if the wall clock is somehow behind, runs the events
// due at the current instant).
func (r *RealTime) catchUp() {
	r.net.Run(max(time.Since(r.start)-r.net.Now(), 0))
}

// post queues f to run on the driver's goroutine.
func (r *RealTime) post(f func()) {
	r.mu.Lock()
	r.q = append(r.q, f)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// do runs f on the driver's goroutine and waits for it, or for the driver
// to stop.
func (r *RealTime) do(f func()) {
	ch := make(chan struct{})
	r.post(func() { f(); close(ch) })
	select {
	case <-ch:
	case <-r.done:
	}
}

// rtEndpoint is a Net endpoint used from any goroutine through its
// RealTime.
type rtEndpoint struct {
	rt    *RealTime
	tr    stack.Transport // used only on the driver's goroutine
	local stack.Addr      // immutable
	mtu   int             // immutable: the Net's MTU when the endpoint was made
}

func (t *rtEndpoint) Local() stack.Addr { return t.local }
func (t *rtEndpoint) MTU() int          { return t.mtu }

// Send copies vec (the caller may reuse its buffers once Send returns)
// and queues the datagram for the driver.
func (t *rtEndpoint) Send(to stack.Addr, vec [][]byte) error {
	size := 0
	for _, v := range vec {
		size += len(v)
	}
	if size > t.mtu {
		return fmt.Errorf("%w: %d bytes, MTU %d", ErrTooBig, size, t.mtu)
	}
	data := make([]byte, 0, size)
	for _, v := range vec {
		data = append(data, v...)
	}
	t.rt.post(func() { _ = t.tr.Send(to, [][]byte{data}) })
	return nil
}

// SetReceiver sets the function deliveries are handed to. It runs on the
// driver's goroutine, so it must not block on the network.
func (t *rtEndpoint) SetReceiver(f func(from stack.Addr, data []byte)) {
	t.rt.do(func() { t.tr.SetReceiver(f) })
}

func (t *rtEndpoint) Close() error {
	t.rt.post(func() { _ = t.tr.Close() })
	return nil
}
