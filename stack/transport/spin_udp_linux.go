package transport

import (
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// osYield gives the CPU to another runnable thread (sched_yield).
func osYield() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// udpBatch is how many datagrams one receive takes at most.
const udpBatch = 16

// udpSpin receives datagrams with busy polling (see poller), with
// recvmmsg(2): one system call takes every datagram waiting (up to
// udpBatch), so that the transport can deliver those that arrived together
// in one batch, as TCP delivers the frames it has buffered; and a lone
// datagram costs one call, as with ReadFromUDPAddrPort. Source addresses
// are decoded here, without allocating.
type udpSpin struct {
	*poller
	bufs  [udpBatch][]byte
	names [udpBatch]unix.RawSockaddrAny
	iovs  [udpBatch]unix.Iovec
	msgs  [udpBatch]mmsghdr
	k     int // datagrams the last receive took
	// single: offer one slot; ones counts the receives in a row that took
	// one datagram
	single bool
	ones   int
	next   int // BusyPollFrom: the next of them to hand out
	err    error
}

// mmsghdr is struct mmsghdr (Go pads it as C does).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// BusyPollFrom returns a function that receives one datagram on c into a
// buffer, with its source, busy polling for up to spin when none is
// waiting (UDPOptions.BusyPoll); nil where busy polling does not apply.
// One goroutine at a time may call it.
func BusyPollFrom(c *net.UDPConn, spin time.Duration) func(buf []byte) (int, netip.AddrPort, error) {
	s := newUDPSpin(c, spin, 1<<16)
	if s == nil {
		return nil
	}
	return func(buf []byte) (int, netip.AddrPort, error) {
		if s.next == s.k {
			if _, err := s.recv(); err != nil {
				return 0, netip.AddrPort{}, err
			}
		}
		// Hand out the datagrams taken, one per call.
		b, ap := s.datagram(s.next)
		s.next++
		return copy(buf, b), ap, nil
	}
}

// newUDPSpin returns nil unless busy polling for spin applies; size is the
// largest datagram a slot takes (a longer one is cut to size+1 bytes and
// reported as such).
func newUDPSpin(c *net.UDPConn, spin time.Duration, size int) *udpSpin {
	if !spins(spin) {
		return nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	s := &udpSpin{}
	for i := range s.bufs {
		s.bufs[i] = make([]byte, size+1)
		s.iovs[i].Base = unsafe.SliceData(s.bufs[i])
		s.iovs[i].SetLen(len(s.bufs[i]))
		h := &s.msgs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		h.Iov = &s.iovs[i]
		h.SetIovlen(1)
	}
	s.k = udpBatch
	s.reset()
	s.poller = newPoller(rc, spin, func(fd int) bool {
		for {
			vlen := uintptr(udpBatch)
			if s.single {
				vlen = 1
			}
			r, _, errno := syscall.Syscall6(unix.SYS_RECVMMSG, uintptr(fd),
				uintptr(unsafe.Pointer(&s.msgs[0])), vlen, 0, 0, 0)
			switch errno {
			case 0:
				s.k, s.err = int(r), nil
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			s.k, s.err = 0, errno
			return true
		}
	})
	return s
}

// setStepAside makes recv give up its wait while *want is above zero.
func (s *udpSpin) setStepAside(want *atomic.Int32) { s.stepAside, s.canStep = want, true }

// reset readies the slots the last receive filled for the next (the
// kernel wrote their address lengths and flags; a failed attempt writes
// nothing).
func (s *udpSpin) reset() {
	for i := range s.k {
		s.msgs[i].hdr.Namelen = uint32(unsafe.Sizeof(s.names[i]))
		s.msgs[i].hdr.Flags = 0
	}
}

// recv waits for datagrams and takes those waiting; it returns how many,
// or 0 if it stepped aside for an assisting caller (poller.stepAside).
func (s *udpSpin) recv() (int, error) { return s.take(false) }

// recvNow takes the datagrams waiting, without waiting; it returns how
// many (perhaps 0).
func (s *udpSpin) recvNow() (int, error) { return s.take(true) }

func (s *udpSpin) take(now bool) (int, error) {
	s.reset()
	// A receive that takes one datagram of several slots costs more than
	// one of one slot (the kernel tries for a second): after a run of
	// single datagrams, offer one slot, and all of them now and then.
	switch {
	case s.k > 1:
		s.ones = 0
	case s.k == 1:
		s.ones++
	}
	s.single = s.ones >= 8 && s.ones%16 != 0
	s.k, s.next = 0, 0
	var err error
	if now {
		var got bool
		if got, err = s.attempt(); err == nil && !got {
			return 0, nil
		}
	} else if err = s.read(); err == nil && s.stepped {
		return 0, nil
	}
	if err == nil {
		err = s.err
	}
	if err != nil {
		s.k = 0
		return 0, &net.OpError{Op: "read", Net: "udp", Err: err}
	}
	return s.k, nil
}

// datagram returns the i-th datagram the last receive took (its bytes stay
// valid until the next receive; longer than the slot size if it was cut)
// and its source (IPv6 zones are not kept).
func (s *udpSpin) datagram(i int) ([]byte, netip.AddrPort) {
	n := min(int(s.msgs[i].n), len(s.bufs[i]))
	if s.msgs[i].hdr.Flags&unix.MSG_TRUNC != 0 {
		n = len(s.bufs[i]) // cut: report one byte over the slot size
	}
	return s.bufs[i][:n], sockaddrPort(&s.names[i])
}

// sockaddrPort decodes an IPv4 or IPv6 socket address.
func sockaddrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&a.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		a := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&a.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}
