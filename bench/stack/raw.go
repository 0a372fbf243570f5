package stackbench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack/transport"
)

// MaxFrame is the largest TCP frame payload the echo server accepts.
const MaxFrame = 16 << 20

// maxDatagram is the largest UDP payload over IPv4.
const maxDatagram = 65507

func isUDP(network string) bool { return strings.HasPrefix(network, "udp") }
func isTCP(network string) bool { return strings.HasPrefix(network, "tcp") }

// RawEchoServer listens on network ("udp", "udp4", "udp6", "tcp", "tcp4",
// "tcp6") at addr (e.g. "127.0.0.1:0") and answers every UDP datagram to its
// sender, every TCP frame (4-byte big-endian payload length, then the
// payload) on its connection, with reply bytes: the request's first reply
// bytes (zeros past its end), so reply = the request size is an echo. It serves in background goroutines and
// returns the address it bound. stop closes the socket and every connection
// and returns once all its goroutines have ended; calling it again is a no-op.
// With busyPoll > 0 its readers busy poll as Strata's transports do
// (transport.BusyPollReader), so that both sides of a comparison wait alike.
func RawEchoServer(network, addr string, reply int, busyPoll time.Duration) (stop func(), actualAddr string, err error) {
	switch {
	case reply < 0 || isUDP(network) && reply > maxDatagram || reply > MaxFrame:
		return nil, "", fmt.Errorf("stackbench: reply size %d out of range", reply)
	case isUDP(network):
		return udpEcho(network, addr, reply, busyPoll)
	case isTCP(network):
		return tcpEcho(network, addr, reply, busyPoll)
	}
	return nil, "", fmt.Errorf("stackbench: network %q is neither udp nor tcp", network)
}

func udpEcho(network, addr string, reply int, busyPoll time.Duration) (func(), string, error) {
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		return nil, "", err
	}
	uc := pc.(*net.UDPConn)
	recv := transport.BusyPollFrom(uc, busyPoll)
	if recv == nil {
		recv = uc.ReadFromUDPAddrPort
	}
	var wg sync.WaitGroup
	// One reader, as in Strata's UDP transport. Several readers on one
	// socket were measured slower here with 1 and with 8 callers: the Go
	// runtime lets one goroutine at a time wait on a socket, and handing
	// the socket to the next reader costs a goroutine wake-up per datagram.
	for range 1 {
		wg.Go(func() {
			buf := make([]byte, 64<<10)
			for {
				n, from, err := recv(buf)
				if err != nil {
					if errors.Is(err, net.ErrClosed) {
						return
					}
					continue // e.g. ICMP-induced errors: keep serving
				}
				if n < reply {
					clear(buf[n:reply])
				}
				_, _ = uc.WriteToUDPAddrPort(buf[:reply], from)
			}
		})
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			pc.Close()
			wg.Wait()
		})
	}
	return stop, pc.LocalAddr().String(), nil
}

func tcpEcho(network, addr string, reply int, busyPoll time.Duration) (func(), string, error) {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, "", err
	}
	var (
		mu     sync.Mutex
		conns  = map[net.Conn]struct{}{}
		closed bool
		wg     sync.WaitGroup
	)
	serve := func(c net.Conn) {
		defer func() {
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		r := bufio.NewReaderSize(pollReader(c, busyPoll), 64<<10)
		var frame []byte
		for {
			var hdr [4]byte
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n > MaxFrame {
				return
			}
			m := max(int(n), reply)
			frame = slices.Grow(frame[:0], 4+m)[:4+m]
			if _, err := io.ReadFull(r, frame[4:4+n]); err != nil {
				return
			}
			clear(frame[4+n:])
			binary.BigEndian.PutUint32(frame, uint32(reply))
			if _, err := c.Write(frame[:4+reply]); err != nil {
				return
			}
		}
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				time.Sleep(10 * time.Millisecond) // e.g. EMFILE
				continue
			}
			mu.Lock()
			if closed {
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = struct{}{}
			wg.Go(func() { serve(c) })
			mu.Unlock()
		}
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			mu.Lock()
			closed = true
			ln.Close()
			for c := range conns {
				c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	return stop, ln.Addr().String(), nil
}

// RawResult is what [RawRoundTrip] measured. Latencies are in microseconds.
type RawResult struct {
	N, Callers, Size int
	AvgUs            float64
	MinUs, MaxUs     float64
	P50Us, P99Us     float64 // nearest-rank percentiles over all N requests
	ReqPerSec        float64 // N / wall time from the first send to the last reply
}

// RawRoundTrip sends n requests of size bytes to the echo server at addr
// (started with the same reply size: replies of another size are errors)
// (see [RawEchoServer]) from callers goroutines, each with its own socket
// (UDP: its own connected socket; TCP: its own connection with TCP_NODELAY)
// and one request outstanding, taking requests from a shared count like
// JGroups' RoundTrip does, and times every request from before its write to
// after its whole echo has been read. Sockets are opened before timing
// starts. A UDP request whose echo does not come within 2 s is an error
// (nothing is retransmitted). busyPoll as for RawEchoServer.
func RawRoundTrip(ctx context.Context, network, addr string, size, reply, n, callers int, busyPoll time.Duration) (RawResult, error) {
	res := RawResult{N: n, Callers: callers, Size: size}
	switch {
	case n <= 0 || callers <= 0 || size < 0 || reply < 0:
		return res, fmt.Errorf("stackbench: RawRoundTrip needs n > 0, callers > 0, size >= 0, reply >= 0 (got %d, %d, %d, %d)", n, callers, size, reply)
	case isUDP(network) && size > maxDatagram:
		return res, fmt.Errorf("stackbench: UDP size %d exceeds %d", size, maxDatagram)
	case isTCP(network) && size > MaxFrame:
		return res, fmt.Errorf("stackbench: TCP size %d exceeds %d", size, MaxFrame)
	case !isUDP(network) && !isTCP(network):
		return res, fmt.Errorf("stackbench: network %q is neither udp nor tcp", network)
	}
	callers = min(callers, n)

	var d net.Dialer
	conns := make([]net.Conn, 0, callers)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range callers {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return res, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			if err := tc.SetNoDelay(true); err != nil {
				c.Close()
				return res, err
			}
		}
		conns = append(conns, c)
	}
	// Cancellation unblocks every pending read and write.
	stopAfter := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.SetDeadline(time.Now())
		}
	})
	defer stopAfter()

	var (
		next    atomic.Int64
		lats    = make([][]time.Duration, callers)
		errs    = make([]error, callers)
		wg      sync.WaitGroup
		startCh = make(chan struct{})
	)
	for i, c := range conns {
		wg.Go(func() {
			<-startCh
			lats[i], errs[i] = rawCaller(ctx, c, isUDP(network), size, reply, int64(n), &next, busyPoll)
		})
	}
	t0 := time.Now()
	close(startCh)
	wg.Wait()
	elapsed := time.Since(t0)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}

	all := slices.Concat(lats...)
	slices.Sort(all)
	var sum time.Duration
	for _, l := range all {
		sum += l
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	res.AvgUs = us(sum) / float64(len(all))
	res.MinUs, res.MaxUs = us(all[0]), us(all[len(all)-1])
	res.P50Us, res.P99Us = us(nearestRank(all, 0.50)), us(nearestRank(all, 0.99))
	res.ReqPerSec = float64(len(all)) / elapsed.Seconds()
	return res, nil
}

func nearestRank(sorted []time.Duration, q float64) time.Duration {
	k := int(float64(len(sorted))*q+0.999999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// pollReader reads c with busy polling for busyPoll
// (transport.BusyPollReader), or plainly if c offers no raw socket.
func pollReader(c net.Conn, busyPoll time.Duration) io.Reader {
	if sc, ok := c.(transport.Conn); ok {
		return transport.BusyPollReader(sc, busyPoll)
	}
	return c
}

// rawCaller performs requests while the shared count allows, one at a time.
func rawCaller(ctx context.Context, c net.Conn, udp bool, size, reply int, n int64, next *atomic.Int64, busyPoll time.Duration) ([]time.Duration, error) {
	var lats []time.Duration
	rd := pollReader(c, busyPoll)
	var req, rsp []byte
	var r *bufio.Reader
	if udp {
		req = make([]byte, size)
		rsp = make([]byte, max(reply, 1)+1) // room to notice a longer reply
	} else {
		req = make([]byte, 4+size)
		binary.BigEndian.PutUint32(req, uint32(size))
		rsp = make([]byte, 4+reply)
		r = bufio.NewReaderSize(rd, max(4+reply, 4096))
	}
	off := 4
	if udp {
		off = 0
	}
	for i := off; i < len(req); i++ {
		req[i] = byte(i)
	}
	for next.Add(1) <= n {
		if err := ctx.Err(); err != nil {
			return lats, err
		}
		t := time.Now()
		if _, err := c.Write(req); err != nil {
			return lats, ctxOr(ctx, err)
		}
		if udp {
			if err := c.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
				return lats, err
			}
			m, err := rd.Read(rsp)
			if err != nil {
				return lats, ctxOr(ctx, fmt.Errorf("stackbench: UDP echo: %w", err))
			}
			if m != reply {
				return lats, fmt.Errorf("stackbench: UDP reply of %d bytes, want %d", m, reply)
			}
		} else {
			// The length first: a frame of another size must not leave
			// the caller waiting for bytes that never come.
			if _, err := io.ReadFull(r, rsp[:4]); err != nil {
				return lats, ctxOr(ctx, fmt.Errorf("stackbench: TCP reply: %w", err))
			}
			if got := binary.BigEndian.Uint32(rsp); got != uint32(reply) {
				return lats, fmt.Errorf("stackbench: TCP reply frame of %d bytes, want %d", got, reply)
			}
			if _, err := io.ReadFull(r, rsp[4:]); err != nil {
				return lats, ctxOr(ctx, fmt.Errorf("stackbench: TCP reply: %w", err))
			}
		}
		lats = append(lats, time.Since(t))
	}
	return lats, nil
}

func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
