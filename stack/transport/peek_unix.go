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
// unlike RawConn.Read, does not wait for the reader's pending Read. Bytes
// waiting to be read mean the connection is open; the reader will take
// them (and mark the connection dead if the peer closed it after them).
func peerClosed(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		switch {
		case err == nil:
			closed = n == 0 // end of stream; otherwise frames are waiting
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
			closed = false // open, nothing to read
		default:
			closed = true // reset or another error
		}
	})
	return err != nil || closed
}
