package stack

import (
	"time"
)

// Clock tells time and runs callbacks later. The real clock uses the wall
// clock and timers; the simulated network's clock is virtual and runs every
// callback from its own deterministic loop.
type Clock interface {
	// Now is the time since the clock's start.
	Now() time.Duration
	// AfterFunc runs f once, d from now. stop cancels it and reports
	// whether it had not yet run.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Transport carries datagrams between endpoints. Send must not block for
// long and must not keep references to vec after it returns (it copies or
// writes the bytes out). Received datagrams are handed to the receiver set
// with SetReceiver, which owns data from then on; the receiver is called
// from one goroutine at a time per transport (the transport's reader, or
// the simulation loop).
type Transport interface {
	Local() Addr
	// MTU is the largest datagram Send accepts.
	MTU() int
	Send(to Addr, vec [][]byte) error
	SetReceiver(func(from Addr, data []byte))
	Close() error
}

// RealClock is the wall clock.
type RealClock struct{ start time.Time }

// NewRealClock returns a clock whose zero is now.
func NewRealClock() *RealClock { return &RealClock{start: time.Now()} }

// Now implements Clock.
func (c *RealClock) Now() time.Duration { return time.Since(c.start) }

// AfterFunc implements Clock.
func (c *RealClock) AfterFunc(d time.Duration, f func()) func() bool {
	t := time.AfterFunc(d, f)
	return t.Stop
}
