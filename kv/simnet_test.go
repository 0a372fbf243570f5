package kv

import (
	"strata/stack"
	"strata/stack/sim"
)

// rtnet is the simulated network (stack/sim: loss, duplication,
// reordering, partitions, crashes) driven in real time by sim.RealTime,
// so that blocking code — kv clients and servers, smr replicas, wor
// clients — runs over it, under the names this package's tests use. A
// seed replays the same link settings and the same fault schedule, not
// the same interleaving (see sim.RealTime).
type rtnet struct {
	rt *sim.RealTime
	// net is the driven Net, set once by newRTNet; touch it only inside
	// do, which runs on the driver's goroutine (a sim.Net is
	// single-threaded).
	net *sim.Net
}

// newRTNet starts a network; close stops it.
func newRTNet(seed uint64) *rtnet {
	r := &rtnet{rt: sim.NewRealTime(seed)}
	r.rt.Do(func(n *sim.Net) { r.net = n })
	return r
}

// close stops the network's goroutine.
func (r *rtnet) close() { r.rt.Close() }

// do runs f on the network's goroutine and waits for it.
func (r *rtnet) do(f func()) { r.rt.Do(func(*sim.Net) { f() }) }

// endpoint attaches a transport at a on the network, usable from any
// goroutine.
func (r *rtnet) endpoint(a stack.Addr) (stack.Transport, error) { return r.rt.Endpoint(a) }
