package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"strata/nfs/xdr"
)

// Client errors.
var (
	// ErrClientClosed is returned by calls on a closed Client.
	ErrClientClosed = errors.New("rpc: client closed")
	// ErrTimeout is returned by a UDP call that got no reply after all
	// its retransmissions.
	ErrTimeout = errors.New("rpc: no reply (timed out)")
	// ErrTooLarge is returned for a UDP call that does not fit in a
	// datagram.
	ErrTooLarge = errors.New("rpc: call too large for UDP")
)

// Defaults for UDP retransmission.
const (
	DefaultRetryInterval = 500 * time.Millisecond
	DefaultRetryAttempts = 4
)

// Client is an ONC RPC v2 client over one TCP connection or one connected
// UDP socket. It is safe for concurrent use: many calls may be in flight
// at once, matched to their replies by XID by a single reader goroutine.
// A TCP Client whose connection fails stays failed (every call returns the
// error); dial a new one. It does not reconnect.
type Client struct {
	conn net.Conn
	udp  bool
	xid  atomic.Uint32
	cred atomic.Pointer[[]byte] // encoded credential: flavor, length, body

	retryInterval atomic.Int64 // time.Duration
	retryAttempts atomic.Int32

	wmu sync.Mutex // serializes writes

	mu      sync.Mutex
	pending map[uint32]*pendingCall
	err     error // terminal error, under mu
	done    chan struct{}

	hdrPool sync.Pool // *xdr.Writer
}

type result struct {
	msg []byte
	err error
}

type pendingCall struct {
	ch chan result // capacity 1; exactly one send per registration
}

var pendingPool = sync.Pool{New: func() any { return &pendingCall{ch: make(chan result, 1)} }}

// Dial connects to an RPC server. network is "tcp", "tcp4", "tcp6",
// "udp", "udp4" or "udp6"; ctx bounds only the connecting.
func Dial(ctx context.Context, network, addr string) (*Client, error) {
	if !strings.HasPrefix(network, "tcp") && !strings.HasPrefix(network, "udp") {
		return nil, fmt.Errorf("rpc: unsupported network %q", network)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return NewClient(conn), nil
}

// NewClient returns a Client over an established connection: a
// *net.UDPConn (connected) or any other net.Conn (a byte stream with
// record marking). The Client owns conn from then on.
func NewClient(conn net.Conn) *Client {
	c := &Client{conn: conn, pending: map[uint32]*pendingCall{}, done: make(chan struct{})}
	_, c.udp = conn.(*net.UDPConn)
	c.xid.Store(rand.Uint32())
	c.retryInterval.Store(int64(DefaultRetryInterval))
	c.retryAttempts.Store(DefaultRetryAttempts)
	if c.udp {
		go c.readUDP()
	} else {
		go c.readStream()
	}
	return c
}

// SetAuthSys makes later calls carry AUTH_SYS credentials a. The machine
// name is cut to 255 bytes and the groups to 16, the limits of RFC 5531.
func (c *Client) SetAuthSys(a AuthSys) {
	if len(a.Machine) > MaxMachineName {
		a.Machine = a.Machine[:MaxMachineName]
	}
	if len(a.GIDs) > MaxAuthSysGIDs {
		a.GIDs = a.GIDs[:MaxAuthSysGIDs]
	}
	var body xdr.Writer
	a.Marshal(&body)
	var w xdr.Writer
	w.Uint32(AuthSysFlavor)
	w.Opaque(body.Bytes())
	b := w.Bytes()
	c.cred.Store(&b)
}

// SetAuthNone makes later calls carry AUTH_NONE credentials (the default).
func (c *Client) SetAuthNone() { c.cred.Store(nil) }

// SetRetry sets the UDP retransmission policy: a call is sent up to
// attempts times, interval apart, with the same XID, before it fails with
// ErrTimeout. It has no effect on TCP.
func (c *Client) SetRetry(interval time.Duration, attempts int) {
	if interval <= 0 {
		interval = DefaultRetryInterval
	}
	if attempts < 1 {
		attempts = 1
	}
	c.retryInterval.Store(int64(interval))
	c.retryAttempts.Store(int32(attempts))
}

// Close closes the connection. Calls in flight fail with ErrClientClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = ErrClientClosed
	}
	c.mu.Unlock()
	var err error
	if first {
		err = c.conn.Close()
	}
	<-c.done
	return err
}

// Call calls procedure proc of version vers of program prog with the
// XDR-encoded args and returns the result bytes of an accepted SUCCESS
// reply (a slice the caller owns). Any other reply is a *ReplyError. ctx
// bounds the wait for the reply.
func (c *Client) Call(ctx context.Context, prog, vers, proc uint32, args []byte) ([]byte, error) {
	xid := c.xid.Add(1)
	p := pendingPool.Get().(*pendingCall)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		pendingPool.Put(p)
		return nil, err
	}
	c.pending[xid] = p
	c.mu.Unlock()

	w, _ := c.hdrPool.Get().(*xdr.Writer)
	if w == nil {
		w = new(xdr.Writer)
	}
	defer func() {
		if w.Len() <= 64<<10 {
			w.Reset()
			c.hdrPool.Put(w)
		}
	}()
	var cred []byte
	if cp := c.cred.Load(); cp != nil {
		cred = *cp
	}

	var r result
	if c.udp {
		appendCallHeader(w, xid, prog, vers, proc, cred)
		w.Write(args)
		if w.Len() > MaxUDPMessage {
			c.forget(xid, p)
			return nil, ErrTooLarge
		}
		var err error
		r, err = c.callUDP(ctx, w.Bytes(), p)
		if err != nil {
			c.forget(xid, p)
			return nil, err
		}
	} else {
		w.Uint32(0) // record mark
		appendCallHeader(w, xid, prog, vers, proc, cred)
		n := w.Len() - 4 + len(args)
		if n > maxFragment {
			c.forget(xid, p)
			return nil, fmt.Errorf("rpc: call of %d bytes too large", n)
		}
		var body []byte
		if len(args) <= smallResults {
			w.Write(args)
		} else {
			body = args
		}
		putRecordMark(w.Bytes(), n)
		if err := c.write(ctx, w.Bytes(), body); err != nil {
			c.forget(xid, p)
			return nil, err
		}
		select {
		case r = <-p.ch:
		case <-ctx.Done():
			c.forget(xid, p)
			return nil, ctx.Err()
		}
	}
	pendingPool.Put(p)
	if r.err != nil {
		return nil, r.err
	}
	_, results, err := parseReply(r.msg)
	if err != nil {
		return nil, err
	}
	return results, nil
}

// forget abandons a pending call and recycles p.
func (c *Client) forget(xid uint32, p *pendingCall) {
	c.mu.Lock()
	_, mine := c.pending[xid]
	delete(c.pending, xid)
	c.mu.Unlock()
	if !mine {
		<-p.ch // the reader took it and sends exactly once
	}
	pendingPool.Put(p)
}

// write sends a record (hdr followed by body) on the stream. A write
// blocked by flow control is not interrupted by a context (Close does):
// giving up halfway would corrupt the stream for every other call.
func (c *Client) write(ctx context.Context, hdr, body []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	var err error
	if len(body) == 0 {
		_, err = c.conn.Write(hdr)
	} else {
		bufs := net.Buffers{hdr, body}
		_, err = bufs.WriteTo(c.conn)
	}
	if err != nil {
		// A partial record corrupts the stream: the connection is done.
		err = fmt.Errorf("rpc: send: %w", err)
		c.fail(err)
		return c.terminalErr(err)
	}
	return nil
}

// callUDP sends msg and retransmits it until a reply arrives on p.
func (c *Client) callUDP(ctx context.Context, msg []byte, p *pendingCall) (result, error) {
	interval := time.Duration(c.retryInterval.Load())
	attempts := int(c.retryAttempts.Load())
	t := time.NewTimer(interval)
	defer t.Stop()
	for i := 0; ; i++ {
		if _, err := c.conn.Write(msg); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return result{}, c.terminalErr(err)
			}
			return result{}, fmt.Errorf("rpc: send: %w", err)
		}
		select {
		case r := <-p.ch:
			return r, nil
		case <-ctx.Done():
			return result{}, ctx.Err()
		case <-t.C:
			if i+1 >= attempts {
				return result{}, ErrTimeout
			}
			t.Reset(interval)
		}
	}
}

func (c *Client) terminalErr(fallback error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return fallback
}

// fail records a terminal error, closes the connection and fails every
// pending call.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	err = c.err
	pend := c.pending
	c.pending = map[uint32]*pendingCall{}
	c.mu.Unlock()
	c.conn.Close()
	for _, p := range pend {
		p.ch <- result{err: err}
	}
}

// deliver hands a reply to the call waiting for its XID, if any.
func (c *Client) deliver(msg []byte) {
	if len(msg) < 4 {
		return
	}
	xid := binary.BigEndian.Uint32(msg)
	c.mu.Lock()
	p := c.pending[xid]
	delete(c.pending, xid)
	c.mu.Unlock()
	if p != nil {
		p.ch <- result{msg: msg}
	}
}

func (c *Client) readStream() {
	defer close(c.done)
	rr := recordReader{r: bufio.NewReaderSize(c.conn, 64<<10), max: MaxRecord}
	for {
		msg, err := rr.next(nil)
		if err != nil {
			c.fail(fmt.Errorf("rpc: connection failed: %w", err))
			return
		}
		c.deliver(msg)
	}
}

func (c *Client) readUDP() {
	defer close(c.done)
	buf := make([]byte, udpReadBuf)
	var delay time.Duration
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				c.fail(ErrClientClosed)
				return
			}
			// For example ECONNREFUSED from an ICMP port unreachable: the
			// calls in flight fail, the socket stays usable.
			c.failPending(fmt.Errorf("rpc: receive: %w", err))
			if delay > 0 {
				time.Sleep(delay) // do not spin on a persistent error
			}
			delay = min(max(2*delay, time.Millisecond), 100*time.Millisecond)
			continue
		}
		delay = 0
		c.deliver(append([]byte(nil), buf[:n]...))
	}
}

// failPending fails the calls in flight without closing the Client.
func (c *Client) failPending(err error) {
	c.mu.Lock()
	pend := c.pending
	c.pending = map[uint32]*pendingCall{}
	c.mu.Unlock()
	for _, p := range pend {
		p.ch <- result{err: err}
	}
}
