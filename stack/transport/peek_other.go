//go:build !unix

package transport

import "net"

// peerClosed cannot peek portably here; the reader goroutine alone
// notices closed connections.
func peerClosed(*net.TCPConn) bool { return false }
