package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/nfs/xdr"
)

var networks = []string{"tcp", "udp"}

func TestCallSuccess(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			s, _ := newTestServer(t)
			c := dial(t, network, serve(t, s, network))
			ctx := testCtx(t)
			for _, n := range []int{0, 1, 3, 4, 5, 1000, 5000, 60000} {
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(i * 7)
				}
				res, err := c.Call(ctx, testProg, 1, procEcho, opaqueArgs(data))
				if err != nil {
					t.Fatalf("echo %d bytes: %v", n, err)
				}
				r := xdr.NewReader(res)
				if got := r.Opaque(-1); !bytes.Equal(got, data) || r.Done() != nil {
					t.Fatalf("echo %d bytes: got %d bytes, err %v", n, len(got), r.Done())
				}
			}
			res, err := c.Call(ctx, testProg, 3, procNull, nil)
			if err != nil || len(res) != 0 {
				t.Fatalf("null: %v %v", res, err)
			}
			waitFor(t, "replies counted", func() bool { return s.Stats().Replies == 9 })
			st := s.Stats()
			if st.Calls != 9 || st.Replies != 9 || st.Accepted[Success] != 9 || st.Garbage != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestLargeRecord(t *testing.T) {
	s, _ := newTestServer(t)
	c := dial(t, "tcp", serveTCP(t, s))
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i ^ i>>8)
	}
	res, err := c.Call(testCtx(t), testProg, 1, procEcho, opaqueArgs(data))
	if err != nil {
		t.Fatal(err)
	}
	r := xdr.NewReader(res)
	if got := r.Opaque(-1); !bytes.Equal(got, data) {
		t.Fatalf("echo of 4 MiB came back as %d bytes", len(got))
	}
}

func TestAcceptErrors(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			s, _ := newTestServer(t)
			c := dial(t, network, serve(t, s, network))
			ctx := testCtx(t)

			_, err := c.Call(ctx, testProg+1, 1, procNull, nil)
			wantReplyError(t, err, &ReplyError{Accept: ProgUnavail})

			_, err = c.Call(ctx, testProg, 2, procNull, nil)
			re := wantReplyError(t, err, &ReplyError{Accept: ProgMismatch})
			if re.Low != 1 || re.High != 3 {
				t.Fatalf("PROG_MISMATCH versions %d..%d, want 1..3", re.Low, re.High)
			}

			_, err = c.Call(ctx, testProg, 1, 99, nil)
			wantReplyError(t, err, &ReplyError{Accept: ProcUnavail})

			_, err = c.Call(ctx, testProg, 1, procEcho, []byte{0, 0, 0, 9, 1})
			wantReplyError(t, err, &ReplyError{Accept: GarbageArgs})
			_, err = c.Call(ctx, testProg, 1, procNull, []byte{0, 0, 0, 0})
			wantReplyError(t, err, &ReplyError{Accept: GarbageArgs})

			_, err = c.Call(ctx, testProg, 1, procPanic, nil)
			wantReplyError(t, err, &ReplyError{Accept: SystemErr})
			_, err = c.Call(ctx, testProg, 1, procBadRet, nil)
			wantReplyError(t, err, &ReplyError{Accept: SystemErr})

			// The server is still fine.
			if _, err := c.Call(ctx, testProg, 1, procNull, nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "replies counted", func() bool { return s.Stats().Replies == 8 })
			st := s.Stats()
			want := [SystemErr + 1]uint64{Success: 1, ProgUnavail: 1, ProgMismatch: 1, ProcUnavail: 1, GarbageArgs: 2, SystemErr: 2}
			if st.Accepted != want || st.Panics != 1 || st.Calls != 8 || st.Replies != 8 {
				t.Fatalf("stats %+v", st)
			}
			if errors.Is(err, &ReplyError{Accept: ProcUnavail}) || errors.Is(err, &ReplyError{Denied: true}) {
				t.Fatalf("%v matched another status", err)
			}
		})
	}
}

func TestDenied(t *testing.T) {
	s, _ := newTestServer(t)
	rc := dialRaw(t, serveTCP(t, s))

	// rpcvers 3: RPC_MISMATCH 2..2. The rest of the message is whatever.
	rc.write(fragments([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3}))
	xid, _, err := rc.reply()
	re := wantReplyError(t, err, &ReplyError{Denied: true, Reject: RPCMismatch})
	if xid != 1 || re.Low != 2 || re.High != 2 {
		t.Fatalf("xid %d, versions %d..%d", xid, re.Low, re.High)
	}

	// Unsupported flavor (RPCSEC_GSS).
	rc.write(fragments(rawCall(2, 2, testProg, 1, procNull, 6, []byte{1, 2, 3, 4}, nil)))
	xid, _, err = rc.reply()
	wantReplyError(t, err, &ReplyError{Denied: true, Reject: AuthError, Auth: AuthBadCred})
	if xid != 2 {
		t.Fatalf("xid %d", xid)
	}

	// Malformed AUTH_SYS bodies.
	var good xdr.Writer
	(&AuthSys{Stamp: 1, Machine: "m", UID: 5, GID: 6, GIDs: []uint32{7}}).Marshal(&good)
	var tooMany xdr.Writer
	(&AuthSys{GIDs: make([]uint32, 17)}).Marshal(&tooMany)
	bad := [][]byte{
		good.Bytes()[:len(good.Bytes())-4], // truncated
		append(good.Bytes(), 0, 0, 0, 0),   // trailing bytes
		tooMany.Bytes(),                    // 17 gids
		{0, 0, 0, 1, 0, 0, 1, 0},           // machine name of 256 bytes
		{},                                 // empty
	}
	for i, body := range bad {
		rc.write(fragments(rawCall(uint32(10+i), 2, testProg, 1, procNull, AuthSysFlavor, body, nil)))
		xid, _, err = rc.reply()
		wantReplyError(t, err, &ReplyError{Denied: true, Reject: AuthError, Auth: AuthBadCred})
		if xid != uint32(10+i) {
			t.Fatalf("xid %d", xid)
		}
	}
	// And the good one is accepted on the same connection.
	rc.write(fragments(rawCall(20, 2, testProg, 1, procNull, AuthSysFlavor, good.Bytes(), nil)))
	if xid, res, err := rc.reply(); err != nil || xid != 20 || len(res) != 0 {
		t.Fatalf("xid %d res %v err %v", xid, res, err)
	}
	if st := s.Stats(); st.Denied != 7 || st.Calls != 8 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDeniedUDP(t *testing.T) {
	s, _ := newTestServer(t)
	addr := serveUDP(t, s, nil)
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1000)
	for _, tc := range []struct {
		msg  []byte
		want *ReplyError
	}{
		{rawCall(5, 1, testProg, 1, procNull, AuthNone, nil, nil), &ReplyError{Denied: true, Reject: RPCMismatch}},
		{rawCall(6, 2, testProg, 1, procNull, 300, nil, nil), &ReplyError{Denied: true, Reject: AuthError, Auth: AuthBadCred}},
	} {
		if _, err := conn.Write(tc.msg); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = parseReply(buf[:n])
		wantReplyError(t, err, tc.want)
	}
}

func TestAuthSysReachesHandler(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			s, _ := newTestServer(t)
			c := dial(t, network, serve(t, s, network))
			ctx := testCtx(t)
			check := func(wantFlavor uint32, want *AuthSys) {
				t.Helper()
				res, err := c.Call(ctx, testProg, 1, procCred, nil)
				if err != nil {
					t.Fatal(err)
				}
				r := xdr.NewReader(res)
				if f := r.Uint32(); f != wantFlavor {
					t.Fatalf("flavor %d, want %d", f, wantFlavor)
				}
				if has := r.Bool(); has != (want != nil) {
					t.Fatalf("Sys present %v", has)
				}
				if want != nil {
					var got AuthSys
					got.Stamp, got.Machine, got.UID, got.GID = r.Uint32(), r.String(255), r.Uint32(), r.Uint32()
					for range r.Uint32() {
						got.GIDs = append(got.GIDs, r.Uint32())
					}
					if got.Stamp != want.Stamp || got.Machine != want.Machine || got.UID != want.UID ||
						got.GID != want.GID || !slices.Equal(got.GIDs, want.GIDs) {
						t.Fatalf("got %+v, want %+v", got, *want)
					}
				}
				if n := r.String(10); n != network || r.Done() != nil {
					t.Fatalf("net %q err %v", n, r.Done())
				}
			}
			check(AuthNone, nil)
			a := AuthSys{Stamp: 42, Machine: "client.example", UID: 1000, GID: 100, GIDs: []uint32{4, 24, 27}}
			c.SetAuthSys(a)
			check(AuthSysFlavor, &a)
			// Limits are applied by the client.
			long := AuthSys{Machine: string(bytes.Repeat([]byte{'m'}, 300)), GIDs: make([]uint32, 20)}
			c.SetAuthSys(long)
			clipped := AuthSys{Machine: long.Machine[:255], GIDs: make([]uint32, 16)}
			check(AuthSysFlavor, &clipped)
			c.SetAuthNone()
			check(AuthNone, nil)
		})
	}
}

func TestMultiFragmentRecord(t *testing.T) {
	s, _ := newTestServer(t)
	rc := dialRaw(t, serveTCP(t, s))
	data := []byte("a call split over several fragments")
	msg := rawCall(77, 2, testProg, 1, procEcho, AuthNone, nil, opaqueArgs(data))
	// Cuts inside the header, a zero-length fragment, and inside the args.
	rc.write(fragments(msg, 3, 10, 10, 41, len(msg)-2))
	xid, res, err := rc.reply()
	if err != nil || xid != 77 {
		t.Fatalf("xid %d err %v", xid, err)
	}
	if got := xdr.NewReader(res).Opaque(-1); !bytes.Equal(got, data) {
		t.Fatalf("got %q", got)
	}
	// One byte per fragment, written in small pieces.
	cuts := make([]int, 0, len(msg))
	for i := 1; i < len(msg); i++ {
		cuts = append(cuts, i)
	}
	msg = rawCall(78, 2, testProg, 1, procEcho, AuthNone, nil, opaqueArgs(data))
	rec := fragments(msg, cuts...)
	for len(rec) > 0 {
		n := min(len(rec), 7)
		rc.write(rec[:n])
		rec = rec[n:]
	}
	if xid, _, err := rc.reply(); err != nil || xid != 78 {
		t.Fatalf("xid %d err %v", xid, err)
	}
}

func TestOversizedRecordClosesConnection(t *testing.T) {
	s, _ := newTestServer(t)
	addr := serveTCP(t, s)

	// One fragment over the limit.
	rc := dialRaw(t, addr)
	rc.write(binary.BigEndian.AppendUint32(nil, lastFragment|(MaxRecord+1)))
	rc.expectClosed()

	// Fragments that are each fine but add up to too much.
	rc = dialRaw(t, addr)
	frag := make([]byte, 4+(MaxRecord/2))
	binary.BigEndian.PutUint32(frag, uint32(len(frag)-4))
	go func() {
		for range 3 {
			if _, err := rc.conn.Write(frag); err != nil {
				return
			}
		}
	}()
	rc.expectClosed()
	waitFor(t, "bad records counted", func() bool { return s.Stats().BadRecords == 2 })

	// The server still works.
	c := dial(t, "tcp", addr)
	if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); err != nil {
		t.Fatal(err)
	}
}

func TestOutOfOrderReplies(t *testing.T) {
	s, tp := newTestServer(t)
	c := dial(t, "tcp", serveTCP(t, s))
	ctx := testCtx(t)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w xdr.Writer
			w.Uint32(uint32(i))
			w.Uint32(uint32(5 * (n - i))) // the first calls sleep longest
			res, err := c.Call(ctx, testProg, 1, procSleep, w.Bytes())
			if err != nil {
				errs <- err
				return
			}
			r := xdr.NewReader(res)
			if got := r.Uint32(); got != uint32(i) || r.Done() != nil {
				errs <- errors.New("a caller got another call's result")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Run one after another the calls would take 5*n*(n+1)/2 ms = 4.1 s.
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("calls took %v: not concurrent", d)
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.order) != n || slices.IsSorted(tp.order) {
		t.Fatalf("completion order %v: want out of order", tp.order)
	}
}

func TestManyConcurrentCalls(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			s, _ := newTestServer(t)
			s.MaxInFlight = 4 // the reader blocks often
			c := dial(t, network, serve(t, s, network))
			ctx := testCtx(t)
			var wg sync.WaitGroup
			var failed atomic.Int32
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 1))
					for range 50 {
						data := make([]byte, rng.IntN(3000))
						for i := range data {
							data[i] = byte(rng.Uint32())
						}
						res, err := c.Call(ctx, testProg, 1, procEcho, opaqueArgs(data))
						if err != nil || !bytes.Equal(xdr.NewReader(res).Opaque(-1), data) {
							failed.Add(1)
							t.Errorf("call: %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

func TestGarbageDoesNotHurt(t *testing.T) {
	s, _ := newTestServer(t)
	addr := serveTCP(t, s)
	rng := rand.New(rand.NewPCG(1, 2))

	// Well-framed records with garbage inside are dropped; the connection
	// stays usable.
	rc := dialRaw(t, addr)
	for _, msg := range [][]byte{
		{},
		{1, 2, 3},
		{0, 0, 0, 1, 0, 0, 0, 1},          // a reply, not a call
		{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, // truncated rpcvers
		rawCall(3, 2, testProg, 1, 0, 0, nil, nil)[:30],                                                     // truncated credential
		{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0x91}, // credential over 400 bytes
	} {
		rc.write(fragments(msg))
	}
	rc.write(fragments(rawCall(9, 2, testProg, 1, procNull, AuthNone, nil, nil)))
	if xid, _, err := rc.reply(); err != nil || xid != 9 {
		t.Fatalf("xid %d err %v", xid, err)
	}
	// Messages are handled concurrently: the counts may lag the reply.
	waitFor(t, "6 garbage messages counted", func() bool { return s.Stats().Garbage == 6 })

	// Random bytes on fresh connections.
	for range 20 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		junk := make([]byte, rng.IntN(2000))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		conn.Write(junk)
		conn.Close()
	}
	c := dial(t, "tcp", addr)
	if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); err != nil {
		t.Fatal(err)
	}

	// And on UDP.
	s2, _ := newTestServer(t)
	uaddr := serveUDP(t, s2, nil)
	uc, err := net.Dial("udp", uaddr)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	for range 20 {
		junk := make([]byte, rng.IntN(200))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		uc.Write(junk)
	}
	cu := dial(t, "udp", uaddr)
	if _, err := cu.Call(testCtx(t), testProg, 1, procNull, nil); err != nil {
		t.Fatal(err)
	}
}

// lossyConn drops the first dropReads datagrams it receives and the first
// dropWrites it sends.
type lossyConn struct {
	net.PacketConn
	dropReads, dropWrites atomic.Int32
}

func (l *lossyConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := l.PacketConn.ReadFrom(p)
		if err == nil && l.dropReads.Add(-1) >= 0 {
			continue
		}
		return n, addr, err
	}
}

func (l *lossyConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if l.dropWrites.Add(-1) >= 0 {
		return len(p), nil
	}
	return l.PacketConn.WriteTo(p, addr)
}

func TestUDPRetransmit(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		dropReads, dropWrites int32
		wantRuns              uint32
	}{
		{"lost call", 1, 0, 1},
		{"lost reply", 0, 1, 2},
		{"both lost", 1, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestServer(t)
			addr := serveUDP(t, s, func(pc net.PacketConn) net.PacketConn {
				lc := &lossyConn{PacketConn: pc}
				lc.dropReads.Store(tc.dropReads)
				lc.dropWrites.Store(tc.dropWrites)
				return lc
			})
			c := dial(t, "udp", addr)
			c.SetRetry(30*time.Millisecond, 5)
			res, err := c.Call(testCtx(t), testProg, 1, procCount, nil)
			if err != nil {
				t.Fatal(err)
			}
			// With no duplicate request cache a retransmitted call whose
			// reply was lost runs again.
			if got := xdr.NewReader(res).Uint32(); got != tc.wantRuns {
				t.Fatalf("reply says %d runs, want %d", got, tc.wantRuns)
			}
		})
	}
	t.Run("gives up", func(t *testing.T) {
		s, _ := newTestServer(t)
		addr := serveUDP(t, s, func(pc net.PacketConn) net.PacketConn {
			lc := &lossyConn{PacketConn: pc}
			lc.dropReads.Store(100)
			return lc
		})
		c := dial(t, "udp", addr)
		c.SetRetry(10*time.Millisecond, 3)
		if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); !errors.Is(err, ErrTimeout) {
			t.Fatalf("err %v, want ErrTimeout", err)
		}
	})
}

func TestClientContextAndClose(t *testing.T) {
	s, _ := newTestServer(t)
	c := dial(t, "tcp", serveTCP(t, s))
	sleep := func(ms uint32) []byte {
		var w xdr.Writer
		w.Uint32(1)
		w.Uint32(ms)
		return w.Bytes()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, testProg, 1, procSleep, sleep(500)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	// The connection is still good, and the late reply is ignored.
	if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(context.Background(), testProg, 1, procSleep, sleep(2000))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClientClosed) {
		t.Fatalf("pending call: %v", err)
	}
	if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("call after Close: %v", err)
	}
}

func TestServerShutdown(t *testing.T) {
	s, _ := newTestServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeTCP(ctx, ln) }()
	c := dial(t, "tcp", ln.Addr().String())
	if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); err != nil {
		t.Fatal(err)
	}
	// A call in progress sees the context end and gets no reply.
	errc := make(chan error, 1)
	go func() {
		var w xdr.Writer
		w.Uint32(1)
		w.Uint32(10000)
		_, err := c.Call(testCtx(t), testProg, 1, procSleep, w.Bytes())
		errc <- err
	}()
	waitFor(t, "the call to start", func() bool { return s.Stats().Calls == 2 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeTCP did not return")
	}
	if err := <-errc; err == nil {
		t.Fatal("call succeeded after shutdown")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still open")
	}

	// Closing the listener also ends ServeTCP.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- s.ServeTCP(context.Background(), ln2) }()
	ln2.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDialErrors(t *testing.T) {
	if _, err := Dial(context.Background(), "unix", "/nonexistent"); err == nil {
		t.Fatal("dialed unix")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Dial(context.Background(), "tcp", addr); err == nil {
		t.Fatal("dialed a closed port")
	}
}

func TestServerClosesConnectionMidCall(t *testing.T) {
	// A "server" that reads the call and hangs up: the call fails and so
	// do later ones.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 100)
		conn.Read(buf)
		conn.Close()
	}()
	c := dial(t, "tcp", ln.Addr().String())
	if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); err == nil {
		t.Fatal("call succeeded")
	}
	if _, err := c.Call(testCtx(t), testProg, 1, procNull, nil); err == nil {
		t.Fatal("call on a failed client succeeded")
	}
}

func TestReplyTooLargeForUDP(t *testing.T) {
	s := NewServer(nil)
	s.Register(testProg, 1, func(ctx context.Context, c *Call, res *xdr.Writer) AcceptStat {
		res.Opaque(make([]byte, 70000))
		return Success
	})
	c := dial(t, "udp", serveUDP(t, s, nil))
	_, err := c.Call(testCtx(t), testProg, 1, 0, nil)
	wantReplyError(t, err, &ReplyError{Accept: SystemErr})
	if _, err := c.Call(testCtx(t), testProg, 1, 0, make([]byte, 70000)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v", err)
	}
}

// blockingServer serves a program whose procedure 1 blocks until unblock
// is closed (procedure 2 calls Detach first), procedure 0 answers at once;
// entered receives a value when a blocking call starts.
func blockingServer(t *testing.T, detachAfter time.Duration) (c *Client, entered chan struct{}, unblock chan struct{}) {
	t.Helper()
	s := NewServer(nil)
	s.DetachAfter = detachAfter
	entered = make(chan struct{}, 1)
	unblock = make(chan struct{})
	s.Register(testProg, 1, func(ctx context.Context, c *Call, res *xdr.Writer) AcceptStat {
		switch c.Proc {
		case 0:
			return Success
		case 1, 2:
			if c.Proc == 2 {
				c.Detach()
			}
			entered <- struct{}{}
			select {
			case <-unblock:
			case <-ctx.Done():
			}
			return Success
		}
		return ProcUnavail
	})
	return dial(t, "tcp", serveTCP(t, s)), entered, unblock
}

// callDuring starts a blocking call of proc and returns a channel with the
// error of a NULL call made while it blocks, and one with the blocking
// call's error.
func callDuring(t *testing.T, c *Client, entered chan struct{}, proc uint32) (null, blocked chan error) {
	t.Helper()
	ctx := testCtx(t)
	blocked = make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, testProg, 1, proc, nil)
		blocked <- err
	}()
	<-entered
	null = make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, testProg, 1, 0, nil)
		null <- err
	}()
	return null, blocked
}

// TestBlockedCallDetaches: a call that arrives on an idle connection runs
// on the connection's reader; if it blocks, the server makes another
// goroutine read the connection after DetachAfter, so the connection's
// next call is answered while the first still blocks.
func TestBlockedCallDetaches(t *testing.T) {
	c, entered, unblock := blockingServer(t, 20*time.Millisecond)
	null, blocked := callDuring(t, c, entered, 1)
	select {
	case err := <-null:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call behind a blocked one got no reply")
	}
	close(unblock)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
}

// TestDetach: a handler that calls Detach lets the connection's next call
// through at once; one that does not, with a long DetachAfter, holds the
// connection's reader (the call behind it waits).
func TestDetach(t *testing.T) {
	c, entered, unblock := blockingServer(t, time.Hour)
	null, blocked := callDuring(t, c, entered, 2)
	select {
	case err := <-null:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call behind a detached one got no reply")
	}
	close(unblock)
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}

	c, entered, unblock = blockingServer(t, time.Hour)
	null, blocked = callDuring(t, c, entered, 1)
	select {
	case err := <-null:
		t.Fatalf("a call behind one running on the reader was answered first (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(unblock)
	for _, ch := range []chan error{blocked, null} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}

// TestDenyAuth: a handler that calls Call.DenyAuth gets MSG_DENIED,
// AUTH_ERROR with its status on both transports, whatever it wrote or
// returned; the call counts as denied, and the next call is unaffected.
func TestDenyAuth(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			s, _ := newTestServer(t)
			const prog = testProg + 7
			s.Register(prog, 1, func(_ context.Context, c *Call, res *xdr.Writer) AcceptStat {
				res.Uint32(42) // discarded
				if c.CredFlavor != AuthSysFlavor {
					c.DenyAuth(AuthTooWeak)
				}
				return Success
			})
			c := dial(t, network, serve(t, s, network))
			ctx := testCtx(t)
			_, err := c.Call(ctx, prog, 1, 0, nil)
			wantReplyError(t, err, &ReplyError{Denied: true, Reject: AuthError, Auth: AuthTooWeak})
			c.SetAuthSys(AuthSys{Machine: "m", UID: 1, GID: 1})
			res, err := c.Call(ctx, prog, 1, 0, nil)
			if err != nil || len(res) != 4 {
				t.Fatalf("AUTH_SYS call: %x %v", res, err)
			}
			waitFor(t, "replies counted", func() bool { return s.Stats().Replies == 2 })
			if st := s.Stats(); st.Denied != 1 || st.Accepted[Success] != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
