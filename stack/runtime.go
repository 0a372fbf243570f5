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

// Assister is a transport whose receiving a goroutine that waits for a
// reply can take over for a while, as in a leader/follower server: Assist
// receives datagrams from the socket on the calling goroutine and hands
// them to the receiver there, until done reports true or d has passed,
// and reports whether done became true. Meanwhile the transport's own
// reader waits, so the reply reaches a goroutine that is already running
// instead of being handed from the reader to the waiter. from is the
// peer the reply comes from (a transport with a socket per peer receives
// on that one). Assist returns false at once where it does not apply:
// without busy polling, the reader sleeps in the socket and cannot step
// aside.
type Assister interface {
	Assist(from Addr, done func() bool, d time.Duration) bool
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
