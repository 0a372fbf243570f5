// Package freeport finds TCP and UDP ports that are free on the loopback
// interface, for servers that must be told each other's ports before
// they start. A port is
// only known to have been free when the call returned; callers start
// their servers right away.
package freeport

import (
	"fmt"
	"net"
)

// TCP returns n distinct ports that were free on 127.0.0.1: all n are held
// open together while they are chosen, so they differ.
func TCP(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// UDP returns n distinct UDP ports that were free on 127.0.0.1 (held
// open together while chosen, so they differ).
func UDP(n int) ([]int, error) {
	var cs []net.PacketConn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free UDP port: %w", err)
		}
		cs = append(cs, c)
		ports = append(ports, c.LocalAddr().(*net.UDPAddr).Port)
	}
	return ports, nil
}
