package transport

import (
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"
)

// udpSpin receives datagrams with busy polling (see poller): recvfrom(2)
// with the source address decoded here, so that a datagram costs one
// system call and no allocation, as ReadFromUDPAddrPort does.
type udpSpin struct {
	*poller
	buf    []byte
	n      int
	err    error
	rsa    syscall.RawSockaddrAny
	rsaLen uint32
}

// BusyPollFrom returns a function that receives one datagram on c into a
// buffer, with its source, busy polling for up to spin when none is
// waiting (UDPOptions.BusyPoll); nil where busy polling does not apply.
func BusyPollFrom(c *net.UDPConn, spin time.Duration) func(buf []byte) (int, netip.AddrPort, error) {
	if s := newUDPSpin(c, spin); s != nil {
		return s.recv
	}
	return nil
}

// newUDPSpin returns nil unless busy polling for spin applies.
func newUDPSpin(c *net.UDPConn, spin time.Duration) *udpSpin {
	if !spins(spin) {
		return nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	s := &udpSpin{}
	s.poller = newPoller(rc, spin, func(fd int) bool {
		for {
			s.rsaLen = uint32(unsafe.Sizeof(s.rsa))
			r, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, uintptr(fd),
				uintptr(unsafe.Pointer(unsafe.SliceData(s.buf))), uintptr(len(s.buf)), 0,
				uintptr(unsafe.Pointer(&s.rsa)), uintptr(unsafe.Pointer(&s.rsaLen)))
			switch errno {
			case 0:
				s.n, s.err = int(r), nil
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			s.n, s.err = 0, errno
			return true
		}
	})
	return s
}

// recv reads one datagram into buf.
func (s *udpSpin) recv(buf []byte) (int, netip.AddrPort, error) {
	s.buf = buf
	err := s.read()
	s.buf = nil
	if err == nil {
		err = s.err
	}
	if err != nil {
		return 0, netip.AddrPort{}, &net.OpError{Op: "read", Net: "udp", Err: err}
	}
	return s.n, s.source(), nil
}

// source decodes the sender's address (IPv6 zones are not kept).
func (s *udpSpin) source() netip.AddrPort {
	switch s.rsa.Addr.Family {
	case syscall.AF_INET:
		a := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&s.rsa))
		p := (*[2]byte)(unsafe.Pointer(&a.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(p[0])<<8|uint16(p[1]))
	case syscall.AF_INET6:
		a := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&s.rsa))
		p := (*[2]byte)(unsafe.Pointer(&a.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}
