//go:build unix

package transport

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the peer of c has closed or reset it, by
// peeking at the socket without blocking (Go's sockets are non-blocking)
// and without consuming anything. It runs under RawConn.Control, which,
// unlike RawConn.Read, does not wait for the watcher's pending Read.
func peerClosed(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		switch {
		case err == nil:
			closed = true // end of stream, or bytes the peer must not send
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
			closed = false // open, nothing to read
		default:
			closed = true // reset or another error
		}
	})
	return err != nil || closed
}
