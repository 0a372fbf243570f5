//go:build unix

package transport

import (
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// Busy polling. On a virtual machine a vCPU that goes idle takes tens of
// microseconds to wake for the next packet: more than the whole software
// path of a loopback round trip. A reader that finds its socket empty can
// instead keep polling it for a short while (BusyPoll) before it sleeps in
// the netpoller, so that its CPU is awake when the reply arrives. This
// spends CPU time for latency, so it is off by default. Between attempts
// the poller lets the process's other goroutines run, and with one
// processor (GOMAXPROCS 1) it also yields the CPU (sched_yield), since the
// process it waits for may share that CPU.

// poller retries a non-blocking read under RawConn.Read for up to spin.
// Its function is made once, so that a read does not allocate.
type poller struct {
	rc     syscall.RawConn
	spin   time.Duration
	budget budget // the current read's
	// try makes one non-blocking attempt on fd; it reports false when
	// nothing was waiting (EAGAIN).
	try   func(fd int) bool
	f     func(fd uintptr) bool
	yield bool // GOMAXPROCS 1: yield the CPU between attempts
	// Stepping aside (Assist): where the stream allows it (canStep: at a
	// frame boundary), read gives up after a failed attempt when nowait is
	// set or stepAside is above zero (a caller waits to receive in the
	// reader's place); stepped reports it.
	stepAside       *atomic.Int32
	canStep, nowait bool
	stepped         bool
	// once makes one attempt (attempt); got is its result
	once func(fd uintptr) bool
	got  bool
}

func newPoller(rc syscall.RawConn, spin time.Duration, try func(fd int) bool) *poller {
	p := &poller{rc: rc, spin: spin, try: try, yield: runtime.GOMAXPROCS(0) == 1}
	p.f = func(fd uintptr) bool {
		for !p.try(int(fd)) {
			if p.canStep && (p.nowait || p.stepAside != nil && p.stepAside.Load() > 0) {
				p.stepped = true
				return true
			}
			if p.budget.spent() {
				return false // sleep until readable, then f runs again
			}
			// Between attempts this processor's other goroutines (a
			// caller woken by the last reply) run, and with one
			// processor other processes on this CPU (perhaps the peer).
			p.pause()
		}
		return true
	}
	p.once = func(fd uintptr) bool {
		p.got = p.try(int(fd))
		return true
	}
	return p
}

// pause is what the poller does between attempts: other goroutines run
// and, with one processor, other processes.
func (p *poller) pause() {
	runtime.Gosched()
	if p.yield {
		osYield()
	}
}

// attempt makes one non-blocking attempt and reports whether it took
// something; the error is the connection's.
func (p *poller) attempt() (bool, error) {
	p.got = false
	err := p.rc.Read(p.once)
	return p.got, err
}

// read makes attempts until one takes something or fails; the error is
// the connection's (closed, deadline), not the attempt's.
func (p *poller) read() error {
	p.budget = budget{d: p.spin}
	p.stepped = false
	return p.rc.Read(p.f)
}

// spins reports whether busy polling for d applies in this process.
func spins(d time.Duration) bool { return d > 0 }

// spinReader is a connection's reader with busy polling.
type spinReader struct {
	*poller
	p        []byte
	n        int
	err      error
	datagram bool // a read of 0 bytes is an empty datagram, not the end
}

// BusyPollReader returns a reader of c (a TCP connection, or a connected
// UDP socket: one datagram per Read) that busy polls for up to spin when
// nothing is waiting (TCPOptions.BusyPoll); c itself where busy polling
// does not apply. Reads honour c's read deadline.
func BusyPollReader(c Conn, spin time.Duration) io.Reader { return newSpinReader(c, spin) }

// Conn is a socket BusyPollReader can read.
type Conn interface {
	io.Reader
	syscall.Conn
}

// newSpinReader returns c itself unless busy polling for spin applies.
func newSpinReader(c Conn, spin time.Duration) io.Reader {
	if !spins(spin) {
		return c
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return c
	}
	_, dg := c.(*net.UDPConn)
	r := &spinReader{datagram: dg}
	r.poller = newPoller(rc, spin, func(fd int) bool {
		for {
			r.n, r.err = syscall.Read(fd, r.p)
			if r.err != syscall.EINTR {
				return r.err != syscall.EAGAIN
			}
		}
	})
	return r
}

// allowStep lets the next Read step aside (the stream is at a frame
// boundary with nothing buffered): it returns errStepped instead of
// waiting when a caller wants to receive in the reader's place, or, with
// nowait, when nothing is waiting.
func (r *spinReader) allowStep(nowait bool) { r.canStep, r.nowait = true, nowait }

// setStepAside makes Reads that may step aside do so while *want is above
// zero.
func (r *spinReader) setStepAside(want *atomic.Int32) { r.stepAside = want }

func (r *spinReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	err := r.read()
	r.p = nil
	// The permission is for one Read: whatever it took, the stream may
	// now be inside a frame.
	r.canStep, r.nowait = false, false
	switch {
	case err != nil:
		return 0, err
	case r.stepped:
		return 0, errStepped
	case r.err != nil:
		return 0, &net.OpError{Op: "read", Err: r.err}
	case r.n == 0 && !r.datagram:
		return 0, io.EOF
	}
	return r.n, nil
}
