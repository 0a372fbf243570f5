package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
)

// ErrClosed is the error (matched with errors.Is) of Send after Close and
// of every Close after the first. It is net.ErrClosed, so a write racing
// with Close fails with the same error.
var ErrClosed = net.ErrClosed

// Parse splits a transport address "udp:host:port" or "tcp:host:port"
// into its network ("udp" or "tcp") and "host:port". The host must be
// an IP address (IPv6 in brackets, optionally with a zone) or a host name
// (letters, digits, '-', '_', '.'), and the port a number in 1..65535.
// Host names are not resolved here but when first used.
func Parse(a stack.Addr) (network, hostport string, err error) {
	s := string(a)
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return "", "", fmt.Errorf("transport: address %q: want udp:host:port or tcp:host:port", s)
	}
	network, hostport = s[:i], s[i+1:]
	if network != "udp" && network != "tcp" {
		return "", "", fmt.Errorf("transport: address %q: unknown network %q (want udp or tcp)", s, network)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", "", fmt.Errorf("transport: address %q: %w", s, err)
	}
	if !validHost(host, hostport[0] == '[') {
		return "", "", fmt.Errorf("transport: address %q: bad host %q", s, host)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return "", "", fmt.Errorf("transport: address %q: bad port %q", s, port)
	}
	return network, hostport, nil
}

// validHost accepts an IP address (IPv6 ones, with an optional zone, only
// in brackets) or a host name of letters, digits, '-', '_' and '.'.
func validHost(host string, bracketed bool) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Is6() == bracketed
	}
	if bracketed || host == "" || len(host) > 253 {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Stats are a transport's counters since it was created.
type Stats struct {
	Sent          uint64 // datagrams (UDP) or frames (TCP) written
	Received      uint64 // datagrams or frames read intact (delivered or dropped)
	BytesSent     uint64 // payload bytes written (TCP: without frame headers)
	BytesReceived uint64 // payload bytes read
	SendErrors    uint64 // failed Sends (bad address, oversize, dial or write errors, closed)
	RecvErrors    uint64 // read errors other than a clean close (TCP: connections cut mid-frame)
	BadFrames     uint64 // UDP: datagrams over the MTU; TCP: connections closed for a bad hello, an oversize frame or unexpected bytes
	Dropped       uint64 // datagrams read while no receiver was set or while closing
	Dials         uint64 // TCP: outbound connections established
	Accepts       uint64 // TCP: inbound connections accepted
	TLSRefused    uint64 // TCP with TLS: inbound connections refused (failed handshake, plain peer, address not covered by the certificate)
}

type counters struct {
	sent, received, bytesSent, bytesReceived atomic.Uint64
	sendErrors, recvErrors, badFrames        atomic.Uint64
	dropped, dials, accepts, tlsRefused      atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Sent:          c.sent.Load(),
		Received:      c.received.Load(),
		BytesSent:     c.bytesSent.Load(),
		BytesReceived: c.bytesReceived.Load(),
		SendErrors:    c.sendErrors.Load(),
		RecvErrors:    c.recvErrors.Load(),
		BadFrames:     c.badFrames.Load(),
		Dropped:       c.dropped.Load(),
		Dials:         c.dials.Load(),
		Accepts:       c.accepts.Load(),
		TLSRefused:    c.tlsRefused.Load(),
	}
}

// checkSend refuses a send on a closed transport or of more than mtu
// bytes (counting it as a send error) and returns the message's size.
func (c *counters) checkSend(local, to stack.Addr, vec [][]byte, mtu int, closed bool, what string) (int, error) {
	if closed {
		c.sendErrors.Add(1)
		return 0, errorf(local, "send to %s: %w", to, ErrClosed)
	}
	n := 0
	for _, b := range vec {
		n += len(b)
	}
	if n > mtu {
		c.sendErrors.Add(1)
		return 0, errorf(local, "send to %s: %s of %d bytes exceeds the MTU (%d)", to, what, n, mtu)
	}
	return n, nil
}

// receiverFunc is what SetReceiver stores.
type receiverFunc = func(from stack.Addr, data []byte)

// receiver is the slot both transports keep their receiver in.
type receiver struct{ recv atomic.Pointer[receiverFunc] }

// SetReceiver implements stack.Transport. A datagram being delivered while
// the receiver is replaced may still go to the old one.
func (r *receiver) SetReceiver(f func(from stack.Addr, data []byte)) {
	if f == nil {
		r.recv.Store(nil)
		return
	}
	r.recv.Store(&f)
}

// turn is the right to receive from a socket: its reader goroutine holds
// it, or a caller that receives in the reader's place while it waits for
// a reply (Assist, stack.Assister; busy polling only). While callers wait
// for it (want above zero) the reader steps aside at its next chance and
// waits for wake, which every caller signals when it leaves; callers
// leave when the socket closes, so a waiting reader is always woken.
type turn struct {
	mu   sync.Mutex
	want atomic.Int32
	wake chan struct{}
	// set once by the transport: whether the socket is gone, what a
	// caller does between attempts, and what it does holding the turn
	// (receive and deliver until done or until)
	gone  func() bool
	pause func()
	hold  func(done func() bool, b budget) bool
}

func (t *turn) init(gone func() bool, pause func(), hold func(func() bool, budget) bool) {
	t.wake, t.gone, t.pause, t.hold = make(chan struct{}, 1), gone, pause, hold
}

// waitForCallers is the reader's: if callers want the socket, it waits
// until one leaves and reports true (then the reader looks again).
func (t *turn) waitForCallers() bool {
	if t.want.Load() == 0 {
		return false
	}
	<-t.wake
	return true
}

// assist takes the turn when the reader steps aside (or another caller
// leaves) and holds it until done or d has passed; it reports done. A
// caller that finds the socket gone, or whose time runs out before its
// turn, returns done as it is.
func (t *turn) assist(done func() bool, d time.Duration) bool {
	t.want.Add(1)
	defer func() {
		t.want.Add(-1)
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}()
	b := budget{d: d}
	for !done() {
		if t.mu.TryLock() {
			// (No defer: one inside a loop is allocated, call by call.)
			ok := t.hold(done, b)
			t.mu.Unlock()
			return ok
		}
		if t.gone() || b.spent() {
			return done()
		}
		t.pause()
	}
	return true
}

// serial lets one receiver call run at a time across a transport's
// reader goroutines, and lets a goroutine waiting for its turn give up
// when the transport closes (the receiver may itself call Close, which
// waits for the readers). Uncontended, taking and leaving a turn is an
// atomic compare-and-swap and two atomic operations: a buffered channel
// used as the semaphore cost each frame a select and a receive, four
// runtime lock operations.
type serial struct {
	mu      sync.Mutex
	waiting atomic.Int32
	free    chan struct{} // capacity 1: a turn was left while someone waited
}

func (s *serial) init() { s.free = make(chan struct{}, 1) }

// enter takes the turn, or reports false if done closes first.
func (s *serial) enter(done <-chan struct{}) bool {
	if s.mu.TryLock() {
		return true
	}
	// Counted before trying again, so that a leave that misses this try
	// sees the count and leaves a token.
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	for !s.mu.TryLock() {
		select {
		case <-s.free:
		case <-done:
			return false
		}
	}
	return true
}

// leave gives the turn up, waking a waiter if there is one.
func (s *serial) leave() {
	s.mu.Unlock()
	if s.waiting.Load() > 0 {
		select {
		case s.free <- struct{}{}:
		default: // a token is there already
		}
	}
}

// budget bounds a polling loop to about d. It reads the clock only every
// budgetCheck-th time it is asked, starting the time at the first read: a
// clock read here costs about as much as an empty poll, and a caller that
// waits for its reply typically polls once or twice. A loop so bounded
// may poll up to 2·budgetCheck times more than d allows.
type budget struct {
	d     time.Duration
	until time.Time
	n     uint32
	over  bool
}

const budgetCheck = 8

// spent counts one poll and reports whether the time is up (once up, it
// stays up).
func (b *budget) spent() bool {
	b.n++
	if b.over || b.n%budgetCheck != 0 {
		return b.over
	}
	now := time.Now()
	if b.until.IsZero() {
		b.until = now.Add(b.d)
	}
	b.over = now.After(b.until) || b.d <= 0
	return b.over
}

// errStepped is what a busy-polling reader returns when it stepped aside
// for a caller that receives in its place (stack.Assister).
var errStepped = errors.New("transport: reader stepped aside")

// batcher is the slot both transports keep their batcher in.
type batcher struct{ batch atomic.Pointer[func(func())] }

// SetBatcher makes the transport deliver what it received together (TCP:
// the frames already buffered from one connection; UDP with busy polling:
// the datagrams one receive took) inside batch (Node.Batch), so that what
// they cause is sent together. Nil: one by one.
func (b *batcher) SetBatcher(batch func(f func())) {
	if batch == nil {
		b.batch.Store(nil)
		return
	}
	b.batch.Store(&batch)
}

// deliver runs f, which delivers what was received together, inside the
// batch if one is set and there is more than one thing.
func (b *batcher) deliver(several bool, f func()) {
	if p := b.batch.Load(); p != nil && several {
		(*p)(f)
		return
	}
	f()
}

// group tracks a transport's goroutines so that Close can wait for them.
// Unlike a sync.WaitGroup it can wait for all but the calling goroutine,
// which lets the receiver (running on one of them) call Close.
type group struct {
	mu   sync.Mutex
	cond sync.Cond
	n    int                 // goroutines started and not finished
	ids  map[uint64]struct{} // goroutine ids of the running ones
}

// start runs f on a new goroutine. The caller must make sure that wait is
// not already in progress (transports start goroutines only while open).
func (g *group) start(f func()) {
	g.mu.Lock()
	if g.ids == nil {
		g.ids = map[uint64]struct{}{}
		g.cond.L = &g.mu
	}
	g.n++
	g.mu.Unlock()
	go func() {
		id := goid()
		g.mu.Lock()
		g.ids[id] = struct{}{}
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			delete(g.ids, id)
			g.n--
			g.cond.Broadcast()
			g.mu.Unlock()
		}()
		f()
	}()
}

// wait returns when every goroutine started by start has finished, except
// the caller's own if it is one of them.
func (g *group) wait() {
	me := goid()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ids == nil {
		return
	}
	for {
		self := 0
		if _, ok := g.ids[me]; ok {
			self = 1
		}
		if g.n <= self {
			return
		}
		g.cond.Wait()
	}
}

// goid returns the calling goroutine's id, parsed from the first line of
// its stack trace ("goroutine 42 [running]:"), or 0 if that fails. It is
// called once per transport goroutine and once per Close, never per
// datagram. Goroutine ids are never reused.
func goid() uint64 {
	var buf [64]byte
	b, ok := strings.CutPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	if !ok {
		return 0
	}
	i := strings.IndexByte(b, ' ')
	if i < 0 {
		return 0
	}
	id, err := strconv.ParseUint(b[:i], 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// errorf wraps err with the transport's address and an operation.
func errorf(local stack.Addr, format string, args ...any) error {
	return fmt.Errorf("transport %s: "+format, append([]any{local}, args...)...)
}

// Listen opens the transport an address names: "udp:HOST:PORT" or
// "tcp:HOST:PORT" (IPv6 hosts in brackets; port 0 picks a free one), with
// default options.
func Listen(a string) (stack.Transport, error) { return ListenOpts(a, Options{}) }

// Options are the options both transports take; zero fields take the
// defaults.
type Options struct {
	// BusyPoll: a reader that finds nothing to read keeps polling for
	// this long before it sleeps (TCPOptions.BusyPoll, UDPOptions.BusyPoll).
	BusyPoll time.Duration
	// Wrap, if set, is given the opened transport and returns the one
	// ListenOpts returns, e.g. Delayed (an emulated wide-area network):
	// it runs once the local address is known. If it fails, ListenOpts
	// closes the transport and returns its error.
	Wrap func(stack.Transport) (stack.Transport, error)
	// TLS, OnTLSRefused, OnTLSRequired: TCP only (TCPOptions.TLS,
	// OnRefused, OnTLSRequired). A UDP address with TLS is refused:
	// sealed links protect UDP.
	TLS           *tls.Config
	OnTLSRefused  func(remote string, err error)
	OnTLSRequired func(peer stack.Addr)
}

// ListenOpts is Listen with options.
func ListenOpts(a string, o Options) (stack.Transport, error) {
	var tr stack.Transport
	var err error
	network, hostport, ok := strings.Cut(a, ":")
	switch {
	case ok && network == "udp" && o.TLS != nil:
		return nil, fmt.Errorf("transport: address %q: TLS is for tcp addresses only (sealed links, --key-file, protect UDP)", a)
	case ok && network == "udp":
		tr, err = ListenUDPOpts(hostport, UDPOptions{BusyPoll: o.BusyPoll})
	case ok && network == "tcp":
		tr, err = ListenTCPOpts(hostport, TCPOptions{BusyPoll: o.BusyPoll, TLS: o.TLS, OnRefused: o.OnTLSRefused, OnTLSRequired: o.OnTLSRequired})
	default:
		return nil, fmt.Errorf("transport: address %q: want udp:HOST:PORT or tcp:HOST:PORT", a)
	}
	if err != nil {
		return nil, err // not tr: a nil *UDP or *TCP in a non-nil interface
	}
	if o.Wrap == nil {
		return tr, nil
	}
	w, err := o.Wrap(tr)
	if err != nil {
		tr.Close()
		return nil, err
	}
	return w, nil
}
