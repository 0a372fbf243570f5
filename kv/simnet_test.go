package kv

import (
	"fmt"
	"sync"
	"time"

	"strata/stack"
	"strata/stack/sim"
)

// rtnet drives a simulated network (stack/sim: loss, duplication,
// reordering, partitions, crashes) in real time, so that blocking code —
// kv clients and servers, smr replicas, wor clients — runs over it. It is
// the driver smr's tests use (smr/harness_test.go), repeated here because
// test files do not export across packages.
//
// One goroutine runs the network's events, its virtual clock following
// the wall clock; everything other goroutines do to the network (a
// node's sends, the faults a test injects) is queued and run by that
// goroutine, since a sim.Net is single-threaded. Nodes use the real clock
// for their timers. The network's choices (loss, duplication, delays)
// come from the seed, but goroutine scheduling does not, so a seed
// replays the same link settings and the same fault schedule, not the
// same interleaving.
type rtnet struct {
	net   *sim.Net // used only by loop's goroutine
	start time.Time
	mu    sync.Mutex // guards q
	q     []func()
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// newRTNet starts a network; close stops it.
func newRTNet(seed uint64) *rtnet {
	r := &rtnet{net: sim.New(seed), start: time.Now(), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// close stops the network's goroutine (once).
func (r *rtnet) close() {
	close(r.stop)
	<-r.done
}

func (r *rtnet) loop() {
	defer close(r.done)
	tick := time.NewTimer(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		r.mu.Lock()
		q := r.q
		r.q = nil
		r.mu.Unlock()
		for _, f := range q {
			f()
		}
		if d := time.Since(r.start) - r.net.Now(); d > 0 {
			r.net.Run(d)
		} else {
			r.net.Run(0)
		}
		r.mu.Lock()
		more := len(r.q) > 0
		r.mu.Unlock()
		if more {
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

// post runs f on the network's goroutine.
func (r *rtnet) post(f func()) {
	r.mu.Lock()
	r.q = append(r.q, f)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// do runs f on the network's goroutine and waits for it.
func (r *rtnet) do(f func()) {
	ch := make(chan struct{})
	r.post(func() { f(); close(ch) })
	select {
	case <-ch:
	case <-r.done:
	}
}

// endpoint attaches a transport at a on the network, usable from any
// goroutine.
func (r *rtnet) endpoint(a stack.Addr) (stack.Transport, error) {
	var tr stack.Transport
	var err error
	var mtu int
	r.do(func() {
		tr, err = r.net.Endpoint(a)
		if err == nil {
			mtu = tr.MTU()
		}
	})
	if err != nil {
		return nil, err
	}
	return &rtTransport{rt: r, tr: tr, mtu: mtu}, nil
}

// rtTransport is a sim endpoint used from any goroutine.
type rtTransport struct {
	rt  *rtnet
	tr  stack.Transport // used only on the network's goroutine
	mtu int
}

func (t *rtTransport) Local() stack.Addr { return t.tr.Local() }
func (t *rtTransport) MTU() int          { return t.mtu }
func (t *rtTransport) Send(to stack.Addr, vec [][]byte) error {
	size := 0
	for _, v := range vec {
		size += len(v)
	}
	if size > t.mtu {
		return fmt.Errorf("datagram of %d bytes over the MTU %d", size, t.mtu)
	}
	data := make([]byte, 0, size)
	for _, v := range vec {
		data = append(data, v...)
	}
	t.rt.post(func() { _ = t.tr.Send(to, [][]byte{data}) })
	return nil
}
func (t *rtTransport) SetReceiver(f func(from stack.Addr, data []byte)) {
	t.rt.do(func() { t.tr.SetReceiver(f) })
}
func (t *rtTransport) Close() error {
	t.rt.post(func() { _ = t.tr.Close() })
	return nil
}
