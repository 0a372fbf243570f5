package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
)

// TCP defaults and limits.
const (
	DefaultTCPMTU          = 1 << 20 // largest frame when TCPOptions.MTU is zero
	MaxTCPMTU              = 1 << 30
	DefaultTCPDialTimeout  = 5 * time.Second
	DefaultTCPWriteTimeout = 5 * time.Second
	DefaultTCPHelloTimeout = 10 * time.Second
)

// helloMagic starts the first frame on every connection a TCP transport
// dials; the dialer's listen address ("tcp:host:port") follows it. Version 2
// connections carry frames both ways.
const helloMagic = "STRATA-TCP/2 "

// maxHello bounds the hello frame: the magic and an address.
const maxHello = len(helloMagic) + 512

// readBufSize is the buffered reader size of each connection:
// small frames are read many per system call, large ones directly into
// their buffer.
const readBufSize = 32 << 10

// TCPOptions configure ListenTCPOpts. Zero fields take defaults.
type TCPOptions struct {
	MTU          int           // largest frame sent or accepted, 1..MaxTCPMTU; default DefaultTCPMTU
	DialTimeout  time.Duration // connecting to a peer; default DefaultTCPDialTimeout
	WriteTimeout time.Duration // writing one frame; default DefaultTCPWriteTimeout
	HelloTimeout time.Duration // an inbound connection must send its hello within this; default DefaultTCPHelloTimeout
	// BusyPoll: when a connection has nothing to read, its reader keeps
	// polling it for this long before sleeping (0: never). It trades CPU
	// time for latency (see spin_unix.go). Not with TLS: its reader
	// reads the TLS connection, which cannot step aside mid-record.
	BusyPoll time.Duration
	// TLS, if set, runs every connection over TLS 1.3 with mutual
	// authentication (tls.go): this config's certificate is presented
	// both ways, the peer's must chain to RootCAs (dialing) or ClientCAs
	// (listening) and cover the address it speaks for (CheckPeer).
	TLS *tls.Config
	// OnRefused, with TLS, is told of every inbound connection refused
	// (a failed handshake, a plain peer, an address the certificate does
	// not cover), on the connection's goroutine: it must not block.
	OnRefused func(remote string, err error)
	// OnTLSRequired, without TLS, is told when a peer refuses our
	// connection because it requires TLS (TLSNotice), on the connection's
	// reader goroutine: it must not block.
	OnTLSRequired func(peer stack.Addr)
}

// TCP is a stack.Transport over TCP connections carrying length-prefixed
// frames.
type TCP struct {
	ln     *net.TCPListener
	local  stack.Addr
	opt    TCPOptions
	ctx    context.Context // canceled by Close: aborts dials
	cancel context.CancelFunc
	done   chan struct{} // closed by Close
	rturn  serial        // one receiver call at a time, abandoned on done
	start  time.Time     // the origin of now
	hello  []byte        // our hello frame payload
	// helloFrame: the hello with its header (written whole under TLS)
	helloFrame []byte
	// with TLS: the listener's and the dialer's configurations (nil
	// without), set before the transport starts
	tlsServer, tlsClient *tls.Config
	receiver
	batcher
	closing atomic.Bool

	mu     sync.Mutex
	closed bool
	peers  map[stack.Addr]*peer      // outbound state per destination
	conns  map[*net.TCPConn]struct{} // every open connection, both directions
	g      group
	stats  counters
}

var _ stack.Transport = (*TCP)(nil)

// peer is the sending side towards one destination.
type peer struct {
	hostport string
	mu       sync.Mutex // serializes dialing and frame writes
	oc       *conn      // nil until dialed or adopted, and after a failure
	hdr      [4]byte
	bufs     net.Buffers // scratch for the vectored write
	flat     []byte      // scratch for a small frame written whole
	// rx: the connection frames from this peer are expected on (the one
	// we dialed, or the one it dialed and we adopted), for Assist
	rx atomic.Pointer[conn]
}

// flatMax is the largest frame Send copies into one buffer and writes with
// write(2): a small frame costs less that way than as a vector of pieces
// (measured on loopback, 100-byte RPCs: the server's writev took about
// 3.0 µs per frame, write of the copied frame 2.5 µs).
const flatMax = 2048

// conn is one connection, dialed or accepted; frames flow both ways on it.
// Its reader marks it dead when the peer closes it.
type conn struct {
	c *net.TCPConn
	// tc, with TLS: the TLS connection over c, which frames are written
	// to and read from (c stays the socket: closing, peeking, deadlines);
	// set before the connection is shared
	tc   *tls.Conn
	dead atomic.Bool
	// on the transport's monotonic clock (TCP.now), guarded by the peer's
	// mu: the last write, and the write deadline set on c
	lastWrite, deadline time.Duration
	// wv: writeFrame's vector, in the connection so that writev's
	// consuming it moves no slice header to the heap per frame
	wv net.Buffers

	// Receiving, as in UDP: whoever holds the turn reads the connection,
	// its reader goroutine or a caller that Assists (busy polling only:
	// sr is nil without); the reader steps aside at a frame boundary.
	br   *bufio.Reader
	sr   *spinReader
	from stack.Addr
	turn turn
	// the holder's: the frame just read, whether delivering may go on,
	// and the batch that delivers it and the whole frames buffered behind
	// it (made once, so that a batch does not allocate)
	data            []byte
	ok              bool
	deliverBuffered func()
}

// frameStatus is what reading a frame came to.
type frameStatus uint8

const (
	frameOK   frameStatus = iota
	frameNone             // nothing to read: the reader stepped aside
	frameEnd              // the connection ended or broke the protocol
)

// startReading readies ic's receiving side: frames are read through br
// (over ic.c, busy polling if r is a spinReader) and come from from.
func (t *TCP) startReading(ic *conn, r io.Reader, br *bufio.Reader, from stack.Addr) {
	ic.br, ic.from = br, from
	if sr, ok := r.(*spinReader); ok {
		ic.sr = sr
		sr.setStepAside(&ic.turn.want)
		ic.turn.init(func() bool { return t.closing.Load() || ic.dead.Load() }, sr.pause,
			func(done func() bool, b budget) bool { return t.assistLocked(ic, done, b) })
	}
	ic.deliverBuffered = func() {
		for ; ic.data != nil && ic.ok; ic.data = t.bufferedFrame(ic.br) {
			ic.ok = t.deliver(ic.from, ic.data)
		}
	}
}

// now reads the transport's monotonic clock: only the monotonic reading
// (time.Now reads the wall clock as well, a second clock read per frame).
func (t *TCP) now() time.Duration { return time.Since(t.start) }

// idleCheck is how long a connection must have been idle before Send
// checks that the peer has not closed it (one non-blocking peek).
const idleCheck = time.Millisecond

// ListenTCP opens a TCP transport listening on addr ("127.0.0.1:0",
// "[::1]:7000", ...) with default options.
func ListenTCP(addr string) (*TCP, error) { return ListenTCPOpts(addr, TCPOptions{}) }

// ListenTCPOpts opens a TCP transport listening on addr with options.
func ListenTCPOpts(addr string, opt TCPOptions) (*TCP, error) {
	switch {
	case opt.MTU == 0:
		opt.MTU = DefaultTCPMTU
	case opt.MTU < 0 || opt.MTU > MaxTCPMTU:
		return nil, fmt.Errorf("transport: listen tcp %s: MTU %d out of range 1..%d", addr, opt.MTU, MaxTCPMTU)
	}
	if opt.DialTimeout < 0 || opt.WriteTimeout < 0 || opt.HelloTimeout < 0 || opt.BusyPoll < 0 {
		return nil, fmt.Errorf("transport: listen tcp %s: negative timeout or busy-poll time", addr)
	}
	var tlsServer, tlsClient *tls.Config
	if opt.TLS != nil {
		var err error
		if tlsServer, tlsClient, err = tlsConfigs(opt.TLS); err != nil {
			return nil, fmt.Errorf("transport: listen tcp %s: %w", addr, err)
		}
	}
	if opt.DialTimeout == 0 {
		opt.DialTimeout = DefaultTCPDialTimeout
	}
	if opt.WriteTimeout == 0 {
		opt.WriteTimeout = DefaultTCPWriteTimeout
	}
	if opt.HelloTimeout == 0 {
		opt.HelloTimeout = DefaultTCPHelloTimeout
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen tcp %s: %w", addr, err)
	}
	ln, err := net.ListenTCP("tcp", ta)
	if err != nil {
		return nil, fmt.Errorf("transport: listen tcp %s: %w", addr, err)
	}
	t := &TCP{
		ln:    ln,
		local: stack.Addr("tcp:" + ln.Addr().String()),
		opt:   opt,
		done:  make(chan struct{}),
		peers: map[stack.Addr]*peer{},
		conns: map[*net.TCPConn]struct{}{},

		tlsServer: tlsServer,
		tlsClient: tlsClient,
	}
	t.rturn.init()
	t.start = time.Now()
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.hello = []byte(helloMagic + string(t.local))
	t.helloFrame = binary.BigEndian.AppendUint32(nil, uint32(len(t.hello)))
	t.helloFrame = append(t.helloFrame, t.hello...)
	t.g.start(t.acceptLoop)
	return t, nil
}

// Local implements stack.Transport: "tcp:" and the listener's host:port.
func (t *TCP) Local() stack.Addr { return t.local }

// MTU implements stack.Transport: the largest frame.
func (t *TCP) MTU() int { return t.opt.MTU }

// Stats returns the transport's counters.
func (t *TCP) Stats() Stats { return t.stats.snapshot() }

// Send implements stack.Transport: vec goes out as one frame on the
// connection to `to` (one we dialed, or one `to` dialed to us), dialed
// first if there is none. The frame header and
// vec are written with one writev (net.Buffers), without copying. If the
// write fails the connection is closed and forgotten, so the next Send
// dials again.
func (t *TCP) Send(to stack.Addr, vec [][]byte) error {
	n, err := t.stats.checkSend(t.local, to, vec, t.opt.MTU, t.closing.Load(), "frame")
	if err != nil {
		return err
	}
	p, err := t.peer(to)
	if err != nil {
		t.stats.sendErrors.Add(1)
		return errorf(t.local, "send: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := t.now()
	if oc := p.oc; oc != nil {
		// The reader marks a connection dead when the peer closes it, but
		// it may not have run yet; an idle connection is checked directly
		// (a peer that restarted while we were idle costs no frame).
		if oc.dead.Load() || (now-oc.lastWrite > idleCheck && peerClosed(oc.c)) {
			t.dropConn(oc.c)
			p.oc = nil
		}
	}
	if p.oc == nil {
		oc, err := t.dial(to, p.hostport)
		if err != nil {
			t.stats.sendErrors.Add(1)
			return errorf(t.local, "send to %s: %w", to, err)
		}
		p.oc = oc
		p.rx.Store(oc)
		now = t.now()
	}
	binary.BigEndian.PutUint32(p.hdr[:], uint32(n))
	// Under TLS a frame is written whole, one record (a write per piece
	// would seal each in a record of its own).
	if n+len(p.hdr) <= flatMax || t.tlsClient != nil {
		p.flat = append(p.flat[:0], p.hdr[:]...)
		for _, b := range vec {
			p.flat = append(p.flat, b...)
		}
		p.bufs = append(p.bufs[:0], p.flat)
	} else {
		p.bufs = append(append(p.bufs[:0], p.hdr[:]), vec...)
	}
	err = t.writeFrame(p.oc, p.bufs, now)
	p.oc.lastWrite = now
	clear(p.bufs) // keep no references to the caller's buffers
	if err != nil {
		t.dropConn(p.oc.c)
		p.oc = nil
		t.stats.sendErrors.Add(1)
		return errorf(t.local, "send to %s: %w", to, err)
	}
	t.stats.sent.Add(1)
	t.stats.bytesSent.Add(uint64(n))
	return nil
}

// writeFrame writes bufs (header first) under the write timeout: every
// write has at least half of it left (moving the deadline for every frame
// would cost a timer update each). One buffer goes with write(2), several
// with writev(2) (WriteTo consumes oc.wv, a copy of the slice header,
// leaving bufs' length alone).
func (t *TCP) writeFrame(oc *conn, bufs net.Buffers, now time.Duration) error {
	if now+t.opt.WriteTimeout/2 > oc.deadline {
		oc.deadline = now + t.opt.WriteTimeout
		if err := oc.c.SetWriteDeadline(t.start.Add(oc.deadline)); err != nil {
			return err
		}
	}
	if oc.tc != nil {
		for _, b := range bufs { // one buffer: Send flattens under TLS
			if _, err := oc.tc.Write(b); err != nil {
				return err
			}
		}
		return nil
	}
	if len(bufs) == 1 {
		_, err := oc.c.Write(bufs[0])
		return err
	}
	oc.wv = bufs
	_, err := oc.wv.WriteTo(oc.c)
	oc.wv = nil
	return err
}

// peer returns the outbound state for to, creating it for a valid address.
func (t *TCP) peer(to stack.Addr) (*peer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if p := t.peers[to]; p != nil {
		return p, nil
	}
	network, hostport, err := Parse(to)
	if err != nil {
		return nil, err
	}
	if network != "tcp" {
		return nil, fmt.Errorf("address %s is not a tcp address", to)
	}
	p := &peer{hostport: hostport}
	t.peers[to] = p
	return p, nil
}

// dial connects to to's hostport, registers the connection, sends the
// hello frame and starts the connection's reader, which reports frames
// as coming from to.
func (t *TCP) dial(to stack.Addr, hostport string) (*conn, error) {
	d := net.Dialer{Timeout: t.opt.DialTimeout}
	c, err := d.DialContext(t.ctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok { // cannot happen for network "tcp"
		c.Close()
		return nil, fmt.Errorf("dial %s: not a TCP connection", hostport)
	}
	if err := tc.SetNoDelay(true); err != nil {
		tc.Close()
		return nil, fmt.Errorf("dial %s: set TCP_NODELAY: %w", hostport, err)
	}
	oc := &conn{c: tc}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		tc.Close()
		return nil, ErrClosed
	}
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	var tlsReader *bufio.Reader
	if t.tlsClient != nil {
		br, err := t.dialTLS(oc, to, hostport)
		if err != nil {
			t.dropConn(tc)
			return nil, err
		}
		tlsReader = br
	} else {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(t.hello)))
		now := t.now()
		if err := t.writeFrame(oc, net.Buffers{hdr[:], t.hello}, now); err != nil {
			t.dropConn(tc)
			return nil, fmt.Errorf("dial %s: hello: %w", hostport, err)
		}
		oc.lastWrite = now
	}
	t.stats.dials.Add(1)
	// Start reading only after the hello is out, so that the reader's
	// failure cannot race with the hello's.
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		tc.Close()
		return nil, ErrClosed
	}
	if tlsReader != nil {
		t.startReading(oc, tlsReader, tlsReader, to)
	} else {
		r := newSpinReader(tc, t.opt.BusyPoll)
		t.startReading(oc, r, bufio.NewReaderSize(r, readBufSize), to)
	}
	t.g.start(func() {
		defer t.dropConn(tc)
		t.readFrames(oc)
	})
	t.mu.Unlock()
	return oc, nil
}

// dropConn closes c and forgets it.
func (t *TCP) dropConn(c *net.TCPConn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
	c.Close()
}

// acceptLoop accepts inbound connections until the listener is closed.
func (t *TCP) acceptLoop() {
	backoff := time.Duration(0)
	for {
		c, err := t.ln.AcceptTCP()
		if err != nil {
			if t.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// E.g. too many open files: wait and retry.
			t.stats.recvErrors.Add(1)
			backoff = min(max(backoff*2, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
			case <-t.done:
				return
			}
			continue
		}
		backoff = 0
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.conns[c] = struct{}{}
		t.stats.accepts.Add(1)
		t.g.start(func() { t.serve(c) })
		t.mu.Unlock()
	}
}

// serve reads an inbound connection: the hello, then frames, until it ends
// or breaks the protocol. After the hello the connection also becomes the
// way to send to the announced address, unless one exists already.
func (t *TCP) serve(c *net.TCPConn) {
	defer t.dropConn(c)
	// The hello deadline covers the TLS handshake, which writes too.
	if err := c.SetDeadline(time.Now().Add(t.opt.HelloTimeout)); err != nil {
		return
	}
	var r io.Reader
	var tlc *tls.Conn
	if t.tlsServer != nil {
		var err error
		if tlc, r, err = t.acceptTLS(c); err != nil {
			t.refuse(c, err)
			return
		}
	} else {
		r = newSpinReader(c, t.opt.BusyPoll)
	}
	br := bufio.NewReaderSize(r, readBufSize)
	from, err := t.readHello(br, c)
	if err != nil {
		if !t.closing.Load() {
			t.stats.badFrames.Add(1)
		}
		return
	}
	if tlc != nil {
		if err := t.checkHello(tlc, from); err != nil {
			t.refuse(c, err)
			return
		}
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return
	}
	ic := &conn{c: c, tc: tlc, lastWrite: t.now()}
	t.startReading(ic, r, br, from)
	// Adopt the connection for sending unless a sender holds the peer:
	// that sender may be blocked writing to the peer, whose reader may be
	// waiting here in the same way, and neither would read again (seen
	// with GOMAXPROCS 1: both sides' writes timed out). Adopting is only a
	// saving; without it, Send dials its own connection.
	if p, err := t.peer(from); err == nil && p.mu.TryLock() {
		if p.oc == nil || p.oc.dead.Load() {
			p.oc = ic
			p.rx.Store(ic)
		}
		p.mu.Unlock()
	}
	t.readFrames(ic)
}

// readFrames reads frames from ic and delivers them, until the connection
// ends or breaks the protocol; then it marks ic dead so that the next Send
// to its peer dials again. It steps aside while callers Assist.
func (t *TCP) readFrames(ic *conn) {
	defer ic.dead.Store(true)
	for {
		if ic.sr != nil && ic.turn.waitForCallers() {
			if t.closing.Load() || ic.dead.Load() {
				return
			}
			continue
		}
		ic.turn.mu.Lock()
		st := t.receiveFrames(ic, false)
		ic.turn.mu.Unlock()
		if st == frameEnd {
			return
		}
	}
}

// receiveFrames reads the next frame of ic, waiting for it unless nowait
// (then frameNone if none has begun to arrive; also when the reader steps
// aside), and delivers it and every whole frame buffered behind it, in one
// batch if there are several, so that what they cause (replies, the next
// requests) leaves together. Only buffered bytes are read after the first
// frame: a batch must not block. The caller holds ic.turn.
func (t *TCP) receiveFrames(ic *conn, nowait bool) frameStatus {
	if ic.sr != nil && ic.br.Buffered() == 0 {
		ic.sr.allowStep(nowait)
	}
	data, st := t.readFrame(ic.br)
	if st != frameOK {
		return st
	}
	ic.data, ic.ok = data, true
	t.batcher.deliver(ic.br.Buffered() > 0, ic.deliverBuffered)
	if !ic.ok {
		return frameEnd
	}
	return frameOK
}

// Assist implements stack.Assister (with busy polling): the caller reads
// the connection from `from` in its reader's place until done or d has
// passed, as UDP's Assist does; frames that arrive on another connection
// are delivered by its own reader meanwhile.
func (t *TCP) Assist(from stack.Addr, done func() bool, d time.Duration) bool {
	if d <= 0 || t.opt.BusyPoll <= 0 || t.closing.Load() {
		return false
	}
	t.mu.Lock()
	p := t.peers[from]
	t.mu.Unlock()
	if p == nil {
		return false
	}
	ic := p.rx.Load()
	if ic == nil || ic.sr == nil || ic.dead.Load() {
		return false
	}
	return ic.turn.assist(done, d)
}

// assistLocked reads and delivers ic's frames, holding ic.turn, until done
// or b is spent.
func (t *TCP) assistLocked(ic *conn, done func() bool, b budget) bool {
	for {
		switch t.receiveFrames(ic, true) {
		case frameEnd:
			// The reader finds the connection closed when it reads next,
			// and drops it.
			ic.dead.Store(true)
			ic.c.Close()
			return done()
		case frameNone:
			if done() {
				return true
			}
			if b.spent() {
				return false
			}
			ic.sr.pause()
		default:
			if done() {
				return true
			}
		}
	}
}

// readFrame reads the next frame, waiting for it (frameNone if the reader
// stepped aside before it began); frameEnd when the connection ends or
// breaks the protocol (counted).
func (t *TCP) readFrame(br *bufio.Reader) ([]byte, frameStatus) {
	// Peek, not a read into a local array, which would escape through
	// the reader interface: an allocation per frame.
	hdr, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, errStepped) && len(hdr) == 0 {
			return nil, frameNone
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !t.closing.Load() {
			t.stats.recvErrors.Add(1) // cut inside a header, or reset
		}
		return nil, frameEnd
	}
	n := binary.BigEndian.Uint32(hdr)
	br.Discard(4)
	if uint64(n) > uint64(t.opt.MTU) {
		t.stats.badFrames.Add(1)
		return nil, frameEnd
	}
	data := make([]byte, n, int(n)+stack.RxSpare) // room to expand a compressed header in place
	if _, err := io.ReadFull(br, data); err != nil {
		if !errors.Is(err, net.ErrClosed) && !t.closing.Load() {
			t.stats.recvErrors.Add(1) // cut inside a frame
		}
		return nil, frameEnd
	}
	t.stats.received.Add(1)
	t.stats.bytesReceived.Add(uint64(n))
	return data, frameOK
}

// bufferedFrame returns the next frame if all of it is buffered already,
// else nil without reading (an oversized header is left for readFrame to
// report).
func (t *TCP) bufferedFrame(br *bufio.Reader) []byte {
	if br.Buffered() < 4 {
		return nil
	}
	hdr, _ := br.Peek(4) // buffered: does not read
	n := binary.BigEndian.Uint32(hdr)
	if uint64(n) > uint64(t.opt.MTU) || uint64(br.Buffered()) < 4+uint64(n) {
		return nil
	}
	data, _ := t.readFrame(br) // buffered: cannot wait, fail or step aside
	return data
}

// readHello reads and checks the first frame of an inbound connection and
// returns the sender address it announces. An unspecified announced host
// (the peer listens on 0.0.0.0 or ::) is replaced by the connection's
// remote IP.
func (t *TCP) readHello(br *bufio.Reader, c *net.TCPConn) (stack.Addr, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return "", fmt.Errorf("hello header: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n <= uint32(len(helloMagic)) || n > uint32(maxHello) {
		return "", fmt.Errorf("hello of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", fmt.Errorf("hello: %w", err)
	}
	if string(b[:len(helloMagic)]) != helloMagic {
		return "", errors.New("hello: bad magic")
	}
	from := stack.Addr(b[len(helloMagic):])
	network, hostport, err := Parse(from)
	if err != nil {
		return "", fmt.Errorf("hello: %w", err)
	}
	if network != "tcp" {
		return "", fmt.Errorf("hello: %s is not a tcp address", from)
	}
	if ap, err := netip.ParseAddrPort(hostport); err == nil && ap.Addr().IsUnspecified() {
		if ra, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			rip := ra.AddrPort().Addr().Unmap()
			from = stack.Addr("tcp:" + netip.AddrPortFrom(rip, ap.Port()).String())
		}
	}
	return from, nil
}

// deliver hands a frame to the receiver, one call at a time per transport.
// It reports false once the transport is closing.
func (t *TCP) deliver(from stack.Addr, data []byte) bool {
	if t.tlsRequired(from, data) {
		return false // the peer closes the connection
	}
	if !t.rturn.enter(t.done) {
		t.stats.dropped.Add(1)
		return false
	}
	defer t.rturn.leave()
	if t.closing.Load() {
		t.stats.dropped.Add(1)
		return false
	}
	r := t.recv.Load()
	if r == nil {
		t.stats.dropped.Add(1)
		return true
	}
	(*r)(from, data)
	return true
}

// Close implements stack.Transport: it closes the listener and every
// connection, aborts dials in progress and waits for the transport's
// goroutines (all but the caller's, if called from the receiver). It
// returns ErrClosed if the transport was already closed.
func (t *TCP) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return errorf(t.local, "close: %w", ErrClosed)
	}
	t.closed = true
	t.closing.Store(true)
	close(t.done)
	t.cancel()
	err := t.ln.Close()
	for c := range t.conns {
		c.Close()
	}
	clear(t.peers)
	t.mu.Unlock()
	t.g.wait()
	if err != nil {
		return errorf(t.local, "close: %w", err)
	}
	return nil
}
