package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/stack"
)

func openTCP(t *testing.T, addr string, opt TCPOptions) (*TCP, *inbox) {
	t.Helper()
	tr, err := ListenTCPOpts(addr, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	in := &inbox{}
	tr.SetReceiver(in.recv)
	return tr, in
}

func TestTCPLocal(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		tr, _ := openTCP(t, host+":0", TCPOptions{})
		network, hp, err := Parse(tr.Local())
		if err != nil || network != "tcp" || !strings.HasPrefix(hp, host+":") || strings.HasSuffix(hp, ":0") {
			t.Fatalf("Local() = %q: Parse gives %q, %q, %v", tr.Local(), network, hp, err)
		}
		if tr.MTU() != DefaultTCPMTU {
			t.Fatalf("MTU() = %d, want %d", tr.MTU(), DefaultTCPMTU)
		}
	})
}

// orderedSink checks, as frames arrive, that they come from one sender in
// the order sent and intact. It keeps every 50th frame to check again
// later that the transport did not reuse the buffer.
type orderedSink struct {
	g    gen
	dir  byte
	from stack.Addr

	mu    sync.Mutex
	next  int
	bytes uint64
	err   error
	kept  [][]byte
}

func (s *orderedSink) recv(from stack.Addr, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if from != s.from {
		s.err = fmt.Errorf("frame #%d from %q, want %q", s.next, from, s.from)
		return
	}
	if _, err := s.g.check(s.dir, data, s.next); err != nil {
		s.err = err
		return
	}
	s.next++
	s.bytes += uint64(len(data))
	if s.next%50 == 0 {
		s.kept = append(s.kept, data)
	}
}

func (s *orderedSink) state() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next, s.err
}

// TestTCPExchange sends 1000 frames of random sizes up to 100 KB each way
// at once, sometimes vectored; all must arrive, in order and intact.
func TestTCPExchange(t *testing.T) {
	forPollsAndFamilies(t, func(t *testing.T, poll time.Duration, host string) {
		const count = 1000
		seed := testseed.One(t) // STRATA_SEED replays; a failure logs the command
		g := gen{seed: seed, max: 100 << 10}
		a, _ := openTCP(t, host+":0", TCPOptions{BusyPoll: poll})
		b, _ := openTCP(t, host+":0", TCPOptions{BusyPoll: poll})
		sa := &orderedSink{g: g, dir: 2, from: b.Local()}
		sb := &orderedSink{g: g, dir: 1, from: a.Local()}
		a.SetReceiver(sa.recv)
		b.SetReceiver(sb.recv)

		var wg sync.WaitGroup
		errs := make(chan error, 2)
		var sent [3]uint64
		sender := func(dir byte, from, to *TCP) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(dir)))
			for seq := range count {
				d := g.build(dir, seq)
				sent[dir] += uint64(len(d))
				if err := from.Send(to.Local(), split(r, d)); err != nil {
					errs <- fmt.Errorf("send #%d: %w", seq, err)
					return
				}
			}
		}
		wg.Add(2)
		go sender(1, a, b)
		go sender(2, b, a)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, s := range []*orderedSink{sa, sb} {
			waitFor(t, "all frames", func() bool {
				n, err := s.state()
				return n == count || err != nil
			})
			if _, err := s.state(); err != nil {
				t.Fatal(err)
			}
			for _, d := range s.kept {
				if _, err := g.check(s.dir, d, -1); err != nil {
					t.Fatalf("a delivered frame changed afterwards: %v", err)
				}
			}
		}
		as, bs := a.Stats(), b.Stats()
		for _, c := range []struct {
			name     string
			snd, rcv Stats
			bytes    uint64
		}{{"a->b", as, bs, sent[1]}, {"b->a", bs, as, sent[2]}} {
			if c.snd.Sent != count || c.snd.BytesSent != c.bytes || c.snd.SendErrors != 0 {
				t.Errorf("%s: sender stats %+v, want Sent=%d BytesSent=%d", c.name, c.snd, count, c.bytes)
			}
			if c.rcv.Received != count || c.rcv.BytesReceived != c.bytes || c.rcv.BadFrames != 0 || c.rcv.RecvErrors != 0 {
				t.Errorf("%s: receiver stats %+v, want Received=%d BytesReceived=%d", c.name, c.rcv, count, c.bytes)
			}
		}
		// One connection per direction, or one shared by both when a side
		// starts sending after the other's connection is accepted: which
		// happens is a race, but every dial is accepted once.
		if dials := as.Dials + bs.Dials; dials < 1 || dials > 2 || dials != as.Accepts+bs.Accepts {
			t.Errorf("dials %d+%d, accepts %d+%d: want 1 or 2 connections, each dialed and accepted once", as.Dials, bs.Dials, as.Accepts, bs.Accepts)
		}
	})
}

func TestTCPVectored(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		a, _ := openTCP(t, host+":0", TCPOptions{})
		b, inb := openTCP(t, host+":0", TCPOptions{})
		testVectored(t, a, b.Local(), inb)
	})
}

func TestTCPBadAddress(t *testing.T) {
	a, _ := openTCP(t, "127.0.0.1:0", TCPOptions{})
	addrs := append([]stack.Addr(nil), badAddrs...)
	for i, ad := range addrs {
		addrs[i] = stack.Addr(strings.Replace(string(ad), "udp", "tcp", 1))
	}
	addrs = append(addrs, "udp:127.0.0.1:7000")
	for _, ad := range addrs {
		if err := a.Send(ad, [][]byte{[]byte("x")}); err == nil {
			t.Errorf("Send(%q) succeeded, want an error", ad)
		}
	}
	// Nobody listens on a port we just closed: the dial fails.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := stack.Addr("tcp:" + ln.Addr().String())
	ln.Close()
	if err := a.Send(dead, [][]byte{[]byte("x")}); err == nil {
		t.Error("Send to a closed port succeeded")
	}
	if st := a.Stats(); st.Sent != 0 || st.SendErrors != uint64(len(addrs)+1) || st.Dials != 0 {
		t.Fatalf("stats %+v: want SendErrors=%d and nothing sent", st, len(addrs)+1)
	}
}

func TestTCPOversize(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		a, _ := openTCP(t, host+":0", TCPOptions{MTU: 4096})
		b, inb := openTCP(t, host+":0", TCPOptions{MTU: 4096})
		if err := a.Send(b.Local(), [][]byte{make([]byte, 4000), make([]byte, 97)}); err == nil {
			t.Fatal("Send of MTU+1 bytes succeeded")
		}
		if err := a.Send(b.Local(), [][]byte{make([]byte, 4000), make([]byte, 96)}); err != nil {
			t.Fatalf("Send of exactly MTU bytes: %v", err)
		}
		waitFor(t, "the MTU-sized frame", func() bool { return inb.len() == 1 })
		if n := len(inb.all()[0].data); n != 4096 {
			t.Fatalf("received %d bytes, want 4096", n)
		}

		// A receiver with a smaller MTU closes a connection carrying a
		// larger frame; the sender then reconnects.
		small, ins := openTCP(t, host+":0", TCPOptions{MTU: 1000})
		if err := a.Send(small.Local(), [][]byte{make([]byte, 1001)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the bad frame to be counted", func() bool { return small.Stats().BadFrames == 1 })
		sendUntilDelivered(t, a, small.Local(), ins, 1000)
		if st := small.Stats(); st.BadFrames != 1 || st.Accepts != 2 {
			t.Fatalf("receiver stats %+v, want BadFrames=1 Accepts=2", st)
		}
	})
}

// sendUntilDelivered sends a frame of size bytes to `to` until one arrives,
// allowing one failed attempt (an error, or a frame lost in a connection
// that was already broken).
func sendUntilDelivered(t *testing.T, tr *TCP, to stack.Addr, in *inbox, size int) {
	t.Helper()
	failures := 0
	for attempt := 0; attempt < 2; attempt++ {
		before := in.len()
		if err := tr.Send(to, [][]byte{make([]byte, size)}); err != nil {
			t.Logf("attempt %d: %v", attempt, err)
			failures++
			continue
		}
		deadline := time.Now().Add(2 * time.Second)
		for in.len() == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if in.len() > before {
			if failures > 1 {
				t.Fatalf("delivered after %d failed sends, want at most 1", failures)
			}
			return
		}
		t.Logf("attempt %d: not delivered", attempt)
		failures++
	}
	t.Fatalf("no delivery after %d failed sends", failures)
}

func TestTCPOptions(t *testing.T) {
	for _, opt := range []TCPOptions{{MTU: -1}, {MTU: MaxTCPMTU + 1}, {DialTimeout: -1}, {WriteTimeout: -1}, {HelloTimeout: -1}} {
		if tr, err := ListenTCPOpts("127.0.0.1:0", opt); err == nil {
			tr.Close()
			t.Errorf("ListenTCPOpts(%+v) succeeded", opt)
		}
	}
	for _, addr := range []string{"127.0.0.1", "tcp:127.0.0.1:0", "256.0.0.1:0", "127.0.0.1:99999"} {
		if tr, err := ListenTCP(addr); err == nil {
			tr.Close()
			t.Errorf("ListenTCP(%q) succeeded", addr)
		}
	}
}

// rawConn dials b directly, bypassing the transport.
func rawConn(t *testing.T, to stack.Addr) net.Conn {
	t.Helper()
	_, hp, err := Parse(to)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", hp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func frame(payload []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
}

func withFrame(payload []byte) []byte {
	return append(frame(payload), payload...)
}

// waitClosed waits for the transport to close c: reads end with EOF or a
// reset, not with the deadline.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(liveness))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: connection not closed by the transport within %v", what, liveness)
	}
}

// TestTCPGarbage: connections that break the protocol are closed and
// counted; good traffic on other connections is not disturbed.
func TestTCPGarbage(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		leakCheck(t)
		a, _ := openTCP(t, host+":0", TCPOptions{})
		b, inb := openTCP(t, host+":0", TCPOptions{MTU: 1 << 16, HelloTimeout: 300 * time.Millisecond})
		good := func(n int) {
			for i := range n {
				if err := a.Send(b.Local(), [][]byte{fmt.Appendf(nil, "good %d", i)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		good(100)
		waitFor(t, "good frames", func() bool { return inb.len() == 100 })

		hello := []byte(helloMagic + "tcp:" + host + ":4242")
		r := rand.New(rand.NewPCG(3, 4))
		random := make([]byte, 4096)
		for i := range random {
			random[i] = byte(r.Uint32())
		}
		random[0] = 0xff // a huge length: never a plausible hello
		cases := []struct {
			name string
			send []byte
		}{
			{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
			{"random bytes", random},
			{"huge hello length", []byte{0xff, 0xff, 0xff, 0xff, 'S'}},
			{"empty hello", withFrame(nil)},
			{"bad magic", withFrame([]byte("STRATA-TCP/1 tcp:127.0.0.1:4242"))},
			{"garbled magic", withFrame([]byte("STRATA-TCP/9 tcp:127.0.0.1:4242"))},
			{"bad announced address", withFrame([]byte(helloMagic + "tcp:nowhere"))},
			{"udp announced address", withFrame([]byte(helloMagic + "udp:127.0.0.1:4242"))},
			{"huge frame after hello", append(withFrame(hello), 0xff, 0xff, 0xff, 0xff)},
			{"MTU+1 frame after hello", append(withFrame(hello), frame(make([]byte, 1<<16+1))...)},
			{"silence (hello timeout)", nil},
			{"hello cut short", frame(hello)[:4]},
		}
		for i, c := range cases {
			conn := rawConn(t, b.Local())
			if len(c.send) > 0 {
				if _, err := conn.Write(c.send); err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
			}
			waitClosed(t, conn, c.name)
			waitFor(t, c.name+" counted", func() bool { return b.Stats().BadFrames == uint64(i+1) })
		}
		// A valid frame on a raw connection is delivered from the
		// announced address, right before the connection goes bad.
		conn := rawConn(t, b.Local())
		conn.Write(append(append(withFrame(hello), withFrame([]byte("raw"))...), 0, 1, 0, 1))
		waitClosed(t, conn, "frame then MTU+1")
		waitFor(t, "the raw frame", func() bool { return inb.len() == 101 })
		if m := inb.all()[100]; string(m.data) != "raw" || m.from != stack.Addr("tcp:"+host+":4242") {
			t.Fatalf("raw frame: %q from %q", m.data, m.from)
		}

		good(100)
		waitFor(t, "good frames after the garbage", func() bool { return inb.len() == 201 })
		for i, m := range inb.all() {
			if i == 100 {
				continue
			}
			j := i
			if i > 100 {
				j = i - 101
			}
			if want := fmt.Sprintf("good %d", j); string(m.data) != want || m.from != a.Local() {
				t.Fatalf("frame %d: %q from %q, want %q from %q", i, m.data, m.from, want, a.Local())
			}
		}
		if st := b.Stats(); st.BadFrames != uint64(len(cases)+1) || st.Received != 201 {
			t.Fatalf("stats %+v, want BadFrames=%d Received=201", st, len(cases)+1)
		}
		if st := a.Stats(); st.Dials != 1 || st.SendErrors != 0 {
			t.Fatalf("good sender stats %+v: want one connection, no errors", st)
		}
	})
}

// TestTCPUnspecifiedListener: a peer listening on the wildcard address is
// reported with the connection's source IP, so replies can reach it.
func TestTCPUnspecifiedListener(t *testing.T) {
	a, ina := openTCP(t, "0.0.0.0:0", TCPOptions{})
	b, inb := openTCP(t, "127.0.0.1:0", TCPOptions{})
	if err := a.Send(b.Local(), [][]byte{[]byte("ping")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ping", func() bool { return inb.len() == 1 })
	from := inb.all()[0].from
	_, hp, _ := Parse(a.Local())
	_, port, _ := net.SplitHostPort(hp)
	if want := stack.Addr("tcp:127.0.0.1:" + port); from != want {
		t.Fatalf("from %q, want %q", from, want)
	}
	if err := b.Send(from, [][]byte{[]byte("pong")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pong", func() bool { return ina.len() == 1 })
}

// TestTCPDuplex: replies travel on the connection the requester dialed,
// so a pair of peers talking both ways uses one connection; when the
// requester goes away the replier dials its restarted successor.
func TestTCPDuplex(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		leakCheck(t)
		a, ina := openTCP(t, host+":0", TCPOptions{})
		b, inb := openTCP(t, host+":0", TCPOptions{})
		for i := range 50 {
			if err := a.Send(b.Local(), [][]byte{{byte(i)}}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "request", func() bool { return inb.len() == i+1 })
			if err := b.Send(a.Local(), [][]byte{{byte(i), 'r'}}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "replies", func() bool { return ina.len() == 50 })
		for i, m := range ina.all() {
			if m.from != b.Local() || len(m.data) != 2 || m.data[0] != byte(i) {
				t.Fatalf("reply %d: %v from %q", i, m.data, m.from)
			}
		}
		if sa, sb := a.Stats(), b.Stats(); sa.Dials != 1 || sa.Accepts != 0 || sb.Dials != 0 || sb.Accepts != 1 {
			t.Fatalf("a %+v, b %+v: want one connection, dialed by a", sa, sb)
		}
		addr := a.Local()
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		_, hp, _ := Parse(addr)
		_, ina2 := openTCP(t, hp, TCPOptions{})
		sendUntilDelivered(t, b, addr, ina2, 3)
		if m := ina2.all()[0]; m.from != b.Local() {
			t.Fatalf("after the restart: from %q, want %q", m.from, b.Local())
		}
		if st := b.Stats(); st.Dials != 1 {
			t.Fatalf("b after a's restart: %+v, want Dials=1", st)
		}
	})
}

// TestTCPPeerRestart: after the peer restarts on the same port, sending
// works again after at most one failed send.
func TestTCPPeerRestart(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		leakCheck(t)
		a, _ := openTCP(t, host+":0", TCPOptions{})
		b, inb := openTCP(t, host+":0", TCPOptions{})
		for i := range 10 {
			if err := a.Send(b.Local(), [][]byte{{byte(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "frames before the restart", func() bool { return inb.len() == 10 })
		addr := b.Local()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		_, hp, _ := Parse(addr)
		b2, inb2 := openTCP(t, hp, TCPOptions{})
		if b2.Local() != addr {
			t.Fatalf("restarted at %q, want %q", b2.Local(), addr)
		}
		sendUntilDelivered(t, a, addr, inb2, 10)
		for i := range 100 {
			if err := a.Send(addr, [][]byte{{byte(i)}}); err != nil {
				t.Fatalf("send %d after the restart: %v", i, err)
			}
		}
		waitFor(t, "frames after the restart", func() bool { return inb2.len() == 101 })
		for i, m := range inb2.all()[1:] {
			if len(m.data) != 1 || m.data[0] != byte(i) || m.from != a.Local() {
				t.Fatalf("frame %d after the restart: %v from %q", i, m.data, m.from)
			}
		}
		if st := a.Stats(); st.Dials != 2 {
			t.Fatalf("sender stats %+v, want Dials=2", st)
		}
	})
}

// TestTCPClose: Close stops delivery while frames stream in from two
// peers, later Sends fail with ErrClosed, a second Close returns
// ErrClosed, the peers' connections are closed, and no goroutine is left.
func TestTCPClose(t *testing.T) {
	forPollsAndFamilies(t, func(t *testing.T, poll time.Duration, host string) {
		a1, _ := openTCP(t, host+":0", TCPOptions{BusyPoll: poll})
		a2, _ := openTCP(t, host+":0", TCPOptions{BusyPoll: poll})
		b, inb := openTCP(t, host+":0", TCPOptions{BusyPoll: poll})
		b.Send(a1.Local(), [][]byte{[]byte("hi")}) // b has an outbound connection too
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, a := range []*TCP{a1, a2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if a.Send(b.Local(), [][]byte{[]byte("ping")}) != nil {
						time.Sleep(time.Millisecond) // b is gone; the dial fails
					}
				}
			}()
		}
		waitFor(t, "some deliveries", func() bool { return inb.len() >= 10 })
		// Slow deliveries down, so that one is most likely running when
		// Close is called.
		inb.delay.Store(int64(time.Millisecond))
		n := inb.len()
		waitFor(t, "slow deliveries", func() bool { return inb.len() >= n+10 })
		closeChecked(t, b, inb)
		time.Sleep(20 * time.Millisecond) // let the peers keep trying
		close(stop)
		wg.Wait()
		checkClosedAfter(t, b, inb, a1.Local())
	})
}

// TestTCPCloseFromReceiver: the receiver may close its own transport while
// other connections' readers wait to deliver.
func TestTCPCloseFromReceiver(t *testing.T) {
	leakCheck(t)
	var senders []*TCP
	for range 3 {
		a, _ := openTCP(t, "127.0.0.1:0", TCPOptions{})
		senders = append(senders, a)
	}
	b, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	var once sync.Once
	b.SetReceiver(func(stack.Addr, []byte) {
		once.Do(func() {
			time.Sleep(10 * time.Millisecond) // let the other readers queue up
			closed <- b.Close()
		})
	})
	for _, a := range senders {
		for range 10 {
			if err := a.Send(b.Local(), [][]byte{[]byte("close")}); err != nil {
				break // b may already be closed
			}
		}
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close from the receiver: %v", err)
		}
	case <-time.After(liveness):
		t.Fatal("Close from the receiver did not return")
	}
}

// TestTCPNoReceiver: frames are dropped and counted without a receiver.
func TestTCPNoReceiver(t *testing.T) {
	a, _ := openTCP(t, "127.0.0.1:0", TCPOptions{})
	b, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Send(b.Local(), [][]byte{[]byte("dropped")})
	waitFor(t, "a dropped frame", func() bool { return b.Stats().Dropped == 1 })
	in := &inbox{}
	b.SetReceiver(in.recv)
	a.Send(b.Local(), [][]byte{[]byte("kept")})
	waitFor(t, "a delivery", func() bool { return in.len() == 1 })
	if string(in.all()[0].data) != "kept" {
		t.Fatalf("got %q, want \"kept\"", in.all()[0].data)
	}
}

// TestTCPBatcher sends many small frames at once to a receiver with a
// batcher: every frame arrives once and in order, and frames read together
// are delivered inside batch calls (more frames than calls).
func TestTCPBatcher(t *testing.T) {
	a, _ := openTCP(t, "127.0.0.1:0", TCPOptions{})
	b, _ := openTCP(t, "127.0.0.1:0", TCPOptions{})
	// 5,000 back-to-back frames cannot all be read one at a time.
	l := &batchLog{}
	b.SetReceiver(l.recv)
	b.SetBatcher(l.batch)
	sendSeq(t, a, b, 5000)
	l.check(t, 5000)
}
