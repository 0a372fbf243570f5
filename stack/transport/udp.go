package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
)

// Limits of UDP datagram sizes.
const (
	// DefaultUDPMTU is the UDP MTU when UDPOptions.MTU is zero: room for
	// large datagrams on loopback and fragmenting paths.
	DefaultUDPMTU = 65000
	// MaxUDPMTU is the largest UDP payload over IPv4 (65535 - 8 - 20).
	MaxUDPMTU = 65507
	// DefaultUDPBuffer is the socket buffer size asked for by default. The
	// system default (~208 KiB on Linux) overflows when a node has a few
	// hundred KiB of replies in flight towards it (measured: 64 concurrent
	// 1 KiB reads from 3 servers lost datagrams to the receive buffer and
	// waited for retransmission timeouts).
	DefaultUDPBuffer = 4 << 20
)

// UDPOptions configure ListenUDPOpts. Zero fields take defaults.
type UDPOptions struct {
	MTU         int // largest datagram sent or accepted, 1..MaxUDPMTU; default DefaultUDPMTU
	ReadBuffer  int // socket receive buffer (SO_RCVBUF) in bytes; default DefaultUDPBuffer (the kernel caps it at net.core.rmem_max)
	WriteBuffer int // socket send buffer (SO_SNDBUF) in bytes; default DefaultUDPBuffer (capped at net.core.wmem_max)
	// BusyPoll: when no datagram is waiting, the reader keeps polling the
	// socket for this long before sleeping (0: never; Linux only). It
	// trades CPU time for latency (see spin_unix.go).
	BusyPoll time.Duration
}

// UDP is a stack.Transport over one UDP socket.
type UDP struct {
	conn  *net.UDPConn
	local stack.Addr
	mtu   int
	fam4  bool     // the socket is IPv4-only
	spin  *udpSpin // busy polling, or nil
	batcher

	receiver
	closed atomic.Bool
	g      group
	stats  counters

	// Receiving is done by whoever holds the turn: the reader goroutine,
	// or a caller that Assists (busy polling only).
	turn turn
	// the holder's: the datagrams the last receive took, the source
	// address strings (each built once), and the batch that delivers them
	k            int
	from         map[netip.AddrPort]stack.Addr
	deliverTaken func()

	amu   sync.RWMutex
	addrs map[stack.Addr]netip.AddrPort // parsed destinations
}

var _ stack.Transport = (*UDP)(nil)

// addrCacheMax bounds the destination and source address caches; a full
// cache is emptied and refilled.
const addrCacheMax = 4096

// sendBufs holds scratch buffers for concatenating vectored sends.
var sendBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, MaxUDPMTU)
	return &b
}}

// ListenUDP opens a UDP transport on addr ("127.0.0.1:0", "[::1]:7000",
// ":0", ...) with default options.
func ListenUDP(addr string) (*UDP, error) { return ListenUDPOpts(addr, UDPOptions{}) }

// ListenUDPOpts opens a UDP transport on addr with options.
func ListenUDPOpts(addr string, opt UDPOptions) (*UDP, error) {
	switch {
	case opt.MTU == 0:
		opt.MTU = DefaultUDPMTU
	case opt.MTU < 0 || opt.MTU > MaxUDPMTU:
		return nil, fmt.Errorf("transport: listen udp %s: MTU %d out of range 1..%d", addr, opt.MTU, MaxUDPMTU)
	}
	if opt.ReadBuffer < 0 || opt.WriteBuffer < 0 {
		return nil, fmt.Errorf("transport: listen udp %s: negative socket buffer size", addr)
	}
	if opt.BusyPoll < 0 {
		return nil, fmt.Errorf("transport: listen udp %s: negative busy-poll time %v", addr, opt.BusyPoll)
	}
	if opt.ReadBuffer == 0 {
		opt.ReadBuffer = DefaultUDPBuffer
	}
	if opt.WriteBuffer == 0 {
		opt.WriteBuffer = DefaultUDPBuffer
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen udp %s: %w", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("transport: listen udp %s: %w", addr, err)
	}
	if opt.ReadBuffer > 0 {
		if err := conn.SetReadBuffer(opt.ReadBuffer); err != nil {
			conn.Close()
			return nil, fmt.Errorf("transport: listen udp %s: set read buffer: %w", addr, err)
		}
	}
	if opt.WriteBuffer > 0 {
		if err := conn.SetWriteBuffer(opt.WriteBuffer); err != nil {
			conn.Close()
			return nil, fmt.Errorf("transport: listen udp %s: set write buffer: %w", addr, err)
		}
	}
	la := conn.LocalAddr().(*net.UDPAddr)
	u := &UDP{
		conn:  conn,
		local: stack.Addr("udp:" + la.String()),
		mtu:   opt.MTU,
		fam4:  la.IP.To4() != nil,
		spin:  newUDPSpin(conn, opt.BusyPoll, opt.MTU),
		addrs: map[stack.Addr]netip.AddrPort{},
		from:  map[netip.AddrPort]stack.Addr{},
	}
	// Made once, so that a batch does not allocate.
	u.deliverTaken = func() {
		for i := range u.k {
			d, ap := u.spin.datagram(i)
			u.handle(d, ap)
		}
	}
	if u.spin != nil {
		u.spin.setStepAside(&u.turn.want)
		u.turn.init(u.closed.Load, u.spin.pause, u.assistLocked)
	}
	u.g.start(u.readLoop)
	return u, nil
}

// Local implements stack.Transport: "udp:" and the bound host:port.
func (u *UDP) Local() stack.Addr { return u.local }

// MTU implements stack.Transport.
func (u *UDP) MTU() int { return u.mtu }

// Stats returns the transport's counters.
func (u *UDP) Stats() Stats { return u.stats.snapshot() }

// Send implements stack.Transport: vec is sent as one datagram.
//
// A single buffer is written directly. Several buffers are concatenated
// into a pooled scratch buffer and written with one sendto: UDP offers no
// portable gather write in the standard library (net.Buffers uses writev
// only on stream connections), and a memcpy of at most 64 KB costs far
// less than the system call itself, whereas unix.SendmsgBuffers would
// avoid the copy only by allocating an iovec array and a sockaddr per call
// and going through RawConn, and would not build on every platform.
func (u *UDP) Send(to stack.Addr, vec [][]byte) error {
	n, err := u.stats.checkSend(u.local, to, vec, u.mtu, u.closed.Load(), "datagram")
	if err != nil {
		return err
	}
	ap, err := u.resolve(to)
	if err != nil {
		u.stats.sendErrors.Add(1)
		return errorf(u.local, "send: %w", err)
	}
	switch len(vec) {
	case 0:
		_, err = u.conn.WriteToUDPAddrPort(nil, ap)
	case 1:
		_, err = u.conn.WriteToUDPAddrPort(vec[0], ap)
	default:
		bp := sendBufs.Get().(*[]byte)
		b := (*bp)[:0]
		for _, v := range vec {
			b = append(b, v...)
		}
		_, err = u.conn.WriteToUDPAddrPort(b, ap)
		*bp = b[:0]
		sendBufs.Put(bp)
	}
	if err != nil {
		u.stats.sendErrors.Add(1)
		return errorf(u.local, "send to %s: %w", to, err)
	}
	u.stats.sent.Add(1)
	u.stats.bytesSent.Add(uint64(n))
	return nil
}

// resolve turns a "udp:host:port" address into a socket address, caching
// the result. Host names are resolved (blocking) on first use.
func (u *UDP) resolve(to stack.Addr) (netip.AddrPort, error) {
	u.amu.RLock()
	ap, ok := u.addrs[to]
	u.amu.RUnlock()
	if ok {
		return ap, nil
	}
	network, hostport, err := Parse(to)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if network != "udp" {
		return netip.AddrPort{}, fmt.Errorf("address %s is not a udp address", to)
	}
	ap, err = netip.ParseAddrPort(hostport)
	if err != nil {
		nw := "udp"
		if u.fam4 {
			nw = "udp4"
		}
		ua, rerr := net.ResolveUDPAddr(nw, hostport)
		if rerr != nil {
			return netip.AddrPort{}, fmt.Errorf("resolve %s: %w", to, rerr)
		}
		ap = ua.AddrPort()
	}
	u.amu.Lock()
	if len(u.addrs) >= addrCacheMax {
		clear(u.addrs)
	}
	u.addrs[to] = ap
	u.amu.Unlock()
	return ap, nil
}

// readLoop reads datagrams until the socket is closed. It reads into one
// scratch buffer one byte larger than the MTU (so oversize datagrams are
// recognised) and hands the receiver an exact-size copy. With busy
// polling it takes every datagram waiting in one system call, and
// delivers several inside one batch (SetBatcher), so that what they cause
// leaves together; and it steps aside while callers Assist.
func (u *UDP) readLoop() {
	var buf []byte // the plain reader's; the poller has its own slots
	if u.spin == nil {
		buf = make([]byte, u.mtu+1)
	}
	backoff := time.Duration(0)
	for {
		var n int
		var ap netip.AddrPort
		var err error
		if u.spin != nil {
			if u.turn.waitForCallers() {
				if u.closed.Load() {
					return
				}
				continue
			}
			u.turn.mu.Lock()
			u.k, err = u.spin.recv()
			if err == nil && u.k > 0 {
				u.batcher.deliver(u.k > 1, u.deliverTaken)
			}
			u.turn.mu.Unlock()
		} else {
			n, ap, err = u.conn.ReadFromUDPAddrPort(buf)
		}
		if err != nil {
			if u.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient errors (e.g. ICMP reports on some systems): count
			// and go on, backing off if they repeat without a datagram.
			u.stats.recvErrors.Add(1)
			backoff = min(max(backoff*2, time.Millisecond), 100*time.Millisecond)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if u.spin == nil {
			u.handle(buf[:n], ap)
		}
	}
}

// Assist implements stack.Assister (with busy polling): the caller
// receives in the reader's place until done or d has passed. It waits for
// the reader to step aside (at its next empty poll; a reader asleep in the
// socket wakes for the next datagram, and delivers it itself), then polls
// the socket as the reader would. Another caller may hold the socket
// meanwhile; done is checked between polls either way.
func (u *UDP) Assist(_ stack.Addr, done func() bool, d time.Duration) bool {
	if u.spin == nil || d <= 0 || u.closed.Load() {
		return false
	}
	return u.turn.assist(done, d)
}

// assistLocked polls and delivers, holding the turn, until done or b is
// spent.
func (u *UDP) assistLocked(done func() bool, b budget) bool {
	for {
		k, err := u.spin.recvNow()
		if err != nil {
			// Closed (the reader finds it so too), or a transient error,
			// counted as the reader counts it; the reader takes over.
			if !u.closed.Load() && !errors.Is(err, net.ErrClosed) {
				u.stats.recvErrors.Add(1)
			}
			return done()
		}
		if k > 0 {
			u.k = k
			u.batcher.deliver(k > 1, u.deliverTaken)
		}
		if done() {
			return true
		}
		if k == 0 {
			if b.spent() {
				return false
			}
			u.spin.pause()
		}
	}
}

// handle delivers one datagram (read into scratch space) from ap.
func (u *UDP) handle(b []byte, ap netip.AddrPort) {
	n := len(b)
	if n > u.mtu || !ap.IsValid() {
		u.stats.badFrames.Add(1)
		return
	}
	u.stats.received.Add(1)
	u.stats.bytesReceived.Add(uint64(n))
	r := u.recv.Load()
	if r == nil || u.closed.Load() {
		u.stats.dropped.Add(1)
		return
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	a, ok := u.from[ap]
	if !ok {
		if len(u.from) >= addrCacheMax {
			clear(u.from)
		}
		a = stack.Addr("udp:" + ap.String())
		u.from[ap] = a
	}
	data := make([]byte, n, n+stack.RxSpare) // room to expand a compressed header in place
	copy(data, b)
	(*r)(a, data)
}

// Close implements stack.Transport: it closes the socket and waits for the
// reader goroutine (unless called from the receiver). It returns ErrClosed
// if the transport was already closed.
func (u *UDP) Close() error {
	if !u.closed.CompareAndSwap(false, true) {
		return errorf(u.local, "close: %w", ErrClosed)
	}
	err := u.conn.Close()
	u.g.wait()
	if err != nil {
		return errorf(u.local, "close: %w", err)
	}
	return nil
}
