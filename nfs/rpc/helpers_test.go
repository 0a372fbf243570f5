package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/nfs/xdr"
)

const (
	testProg = 0x20000001
	// Procedures of the test program.
	procNull   = 0
	procEcho   = 1 // opaque in, same opaque out
	procPanic  = 2
	procSleep  = 3 // uint32 index, uint32 milliseconds in; the index out
	procCred   = 4 // credentials out
	procCount  = 5 // counts invocations, returns the count
	procBadRet = 6 // returns an undefined accept status
)

type testProgram struct {
	count atomic.Uint32
	mu    sync.Mutex
	order []uint32 // procSleep indices in completion order
}

func (tp *testProgram) handler(ctx context.Context, c *Call, res *xdr.Writer) AcceptStat {
	switch c.Proc {
	case procNull:
		if c.Args.Done() != nil {
			return GarbageArgs
		}
		return Success
	case procEcho:
		b := c.Args.Opaque(-1)
		if c.Args.Done() != nil {
			return GarbageArgs
		}
		res.Opaque(b)
		return Success
	case procPanic:
		res.Uint32(99) // discarded
		panic("boom")
	case procSleep:
		i := c.Args.Uint32()
		ms := c.Args.Uint32()
		if c.Args.Done() != nil {
			return GarbageArgs
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return SystemErr
		}
		tp.mu.Lock()
		tp.order = append(tp.order, i)
		tp.mu.Unlock()
		res.Uint32(i)
		return Success
	case procCred:
		res.Uint32(c.CredFlavor)
		res.Bool(c.Sys != nil)
		if c.Sys != nil {
			c.Sys.Marshal(res)
		}
		res.String(c.Net)
		return Success
	case procCount:
		res.Uint32(tp.count.Add(1))
		return Success
	case procBadRet:
		return 77
	}
	return ProcUnavail
}

func newTestServer(t testing.TB) (*Server, *testProgram) {
	t.Helper()
	s := NewServer(nil)
	tp := &testProgram{}
	s.Register(testProg, 1, tp.handler)
	s.Register(testProg, 3, tp.handler)
	return s, tp
}

// serveTCP runs s on a loopback listener until the test ends.
func serveTCP(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeTCP(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeTCP: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("ServeTCP did not return")
		}
	})
	return ln.Addr().String()
}

// serveUDP runs s on a loopback UDP socket, optionally wrapped, until the
// test ends.
func serveUDP(t testing.TB, s *Server, wrap func(net.PacketConn) net.PacketConn) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	if wrap != nil {
		pc = wrap(pc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeUDP(ctx, pc) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeUDP: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("ServeUDP did not return")
		}
	})
	return addr
}

func serve(t *testing.T, s *Server, network string) string {
	if network == "udp" {
		return serveUDP(t, s, nil)
	}
	return serveTCP(t, s)
}

func dial(t *testing.T, network, addr string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func opaqueArgs(b []byte) []byte {
	var w xdr.Writer
	w.Opaque(b)
	return w.Bytes()
}

// rawCall encodes a call message by hand.
func rawCall(xid, rpcvers, prog, vers, proc, credFlavor uint32, credBody, args []byte) []byte {
	var w xdr.Writer
	w.Uint32(xid)
	w.Uint32(msgCall)
	w.Uint32(rpcvers)
	w.Uint32(prog)
	w.Uint32(vers)
	w.Uint32(proc)
	w.Uint32(credFlavor)
	w.Opaque(credBody)
	w.Uint32(AuthNone)
	w.Opaque(nil)
	w.Write(args)
	return w.Bytes()
}

// fragments frames msg as a record split at the given offsets.
func fragments(msg []byte, cuts ...int) []byte {
	var out []byte
	prev := 0
	for i, end := range append(cuts, len(msg)) {
		h := uint32(end - prev)
		if i == len(cuts) {
			h |= lastFragment
		}
		out = binary.BigEndian.AppendUint32(out, h)
		out = append(out, msg[prev:end]...)
		prev = end
	}
	return out
}

// rawConn is a test TCP connection speaking raw records.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	rr   recordReader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	return &rawConn{t: t, conn: conn, rr: recordReader{r: bufio.NewReader(conn), max: MaxRecord}}
}

func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	if _, err := rc.conn.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// reply reads one reply record and parses it.
func (rc *rawConn) reply() (uint32, []byte, error) {
	rc.t.Helper()
	msg, err := rc.rr.next(nil)
	if err != nil {
		rc.t.Fatalf("reading reply: %v", err)
	}
	return parseReply(msg)
}

// expectClosed checks that the server closes the connection.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	_, err := rc.rr.next(nil)
	if err == nil {
		rc.t.Fatal("got a record, want the connection closed")
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
		rc.t.Fatalf("got %v, want the connection closed", err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func wantReplyError(t *testing.T, err error, want *ReplyError) *ReplyError {
	t.Helper()
	var re *ReplyError
	if !errors.As(err, &re) {
		t.Fatalf("error %v, want %v", err, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
	return re
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
