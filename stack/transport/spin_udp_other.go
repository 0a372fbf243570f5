//go:build !linux

package transport

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// BusyPollFrom: no busy polling for UDP on this system; nil.
func BusyPollFrom(*net.UDPConn, time.Duration) func([]byte) (int, netip.AddrPort, error) {
	return nil
}

// udpSpin: no busy polling for UDP on this system.
type udpSpin struct{}

func newUDPSpin(*net.UDPConn, time.Duration, int) *udpSpin { return nil }

func (*udpSpin) recv() (int, error) { return 0, errors.ErrUnsupported }

func (*udpSpin) recvNow() (int, error) { return 0, errors.ErrUnsupported }

func (*udpSpin) pause() {}

func (*udpSpin) setStepAside(*atomic.Int32) {}

func (*udpSpin) datagram(int) ([]byte, netip.AddrPort) { return nil, netip.AddrPort{} }
