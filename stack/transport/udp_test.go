package transport

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/stack"
)

func openUDP(t *testing.T, host string, opt UDPOptions) (*UDP, *inbox) {
	t.Helper()
	u, err := ListenUDPOpts(host+":0", opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	in := &inbox{}
	u.SetReceiver(in.recv)
	return u, in
}

func TestUDPLocal(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		u, _ := openUDP(t, host, UDPOptions{})
		network, hp, err := Parse(u.Local())
		if err != nil || network != "udp" || !strings.HasPrefix(hp, host+":") || strings.HasSuffix(hp, ":0") {
			t.Fatalf("Local() = %q: Parse gives %q, %q, %v", u.Local(), network, hp, err)
		}
		if u.MTU() != DefaultUDPMTU {
			t.Fatalf("MTU() = %d, want %d", u.MTU(), DefaultUDPMTU)
		}
	})
}

// TestUDPExchange sends 1000 datagrams of random sizes each way at once.
// Loss is tolerated (UDP), corruption, duplication and a wrong sender
// address are not.
func TestUDPExchange(t *testing.T) {
	forPollsAndFamilies(t, func(t *testing.T, poll time.Duration, host string) {
		const count = 1000
		seed := testseed.One(t) // STRATA_SEED replays; a failure logs the command
		g := gen{seed: seed, max: 8000}
		opt := UDPOptions{ReadBuffer: 4 << 20, WriteBuffer: 4 << 20, BusyPoll: poll}
		a, ina := openUDP(t, host, opt)
		b, inb := openUDP(t, host, opt)

		var wg sync.WaitGroup
		errs := make(chan error, 2)
		sender := func(dir byte, from, to *UDP, peerIn *inbox) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(dir)))
			for seq := range count {
				// Pace the sender a little so that the receiver's socket
				// buffer does not overflow; give up waiting after a while
				// (the datagrams in between are then lost, which is allowed).
				for i := 0; seq-peerIn.len() > 64 && i < 200; i++ {
					time.Sleep(time.Millisecond)
				}
				if err := from.Send(to.Local(), split(r, g.build(dir, seq))); err != nil {
					errs <- fmt.Errorf("send #%d: %w", seq, err)
					return
				}
			}
		}
		wg.Add(2)
		go sender(1, a, b, inb)
		go sender(2, b, a, ina)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Wait for everything, or until delivery stalls for a second.
		for _, in := range []*inbox{ina, inb} {
			last, lastChange := -1, time.Now()
			for n := in.len(); n < count; n = in.len() {
				if n != last {
					last, lastChange = n, time.Now()
				} else if time.Since(lastChange) > time.Second {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		check := func(name string, dir byte, in *inbox, sender, receiver *UDP) {
			msgs := in.all()
			seen := map[int]bool{}
			var bytesIn uint64
			for i, m := range msgs {
				if m.from != sender.Local() {
					t.Fatalf("%s: datagram %d from %q, want %q", name, i, m.from, sender.Local())
				}
				seq, err := g.check(dir, m.data, -1)
				if err != nil {
					t.Fatalf("%s: datagram %d: %v", name, i, err)
				}
				if seq >= 0 && seen[seq] {
					t.Fatalf("%s: datagram #%d delivered twice", name, seq)
				}
				seen[seq] = true
				bytesIn += uint64(len(m.data))
			}
			if len(msgs) < count/2 {
				t.Fatalf("%s: only %d of %d datagrams arrived", name, len(msgs), count)
			}
			st, rs := sender.Stats(), receiver.Stats()
			if st.Sent != count || st.SendErrors != 0 {
				t.Fatalf("%s: sender stats %+v, want Sent=%d and no errors", name, st, count)
			}
			if rs.Received != uint64(len(msgs)) || rs.BytesReceived != bytesIn || rs.BadFrames != 0 || rs.Dropped != 0 {
				t.Fatalf("%s: receiver stats %+v, want Received=%d BytesReceived=%d", name, rs, len(msgs), bytesIn)
			}
			t.Logf("%s: %d of %d datagrams received", name, len(msgs), count)
		}
		check("a->b", 1, inb, a, b)
		check("b->a", 2, ina, b, a)
		// The receiver owns what it got: nothing was overwritten later.
		for _, m := range append(ina.all(), inb.all()...) {
			dir := byte(1)
			if m.from == b.Local() {
				dir = 2
			}
			if _, err := g.check(dir, m.data, -1); err != nil {
				t.Fatalf("after the exchange: %v", err)
			}
		}
	})
}

// TestUDPVectored: several buffers arrive as their concatenation; Send
// neither keeps nor changes them.
func TestUDPVectored(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		a, _ := openUDP(t, host, UDPOptions{})
		b, inb := openUDP(t, host, UDPOptions{})
		testVectored(t, a, b.Local(), inb)
	})
}

func testVectored(t *testing.T, tr stack.Transport, to stack.Addr, in *inbox) {
	t.Helper()
	big := bytes.Repeat([]byte("0123456789"), 300)
	vec := [][]byte{[]byte("hello, "), {}, []byte("vectored"), nil, big, []byte("!")}
	want := bytes.Join(vec, nil)
	orig := append([][]byte(nil), vec...)
	if err := tr.Send(to, vec); err != nil {
		t.Fatal(err)
	}
	for i := range vec {
		if len(vec[i]) != len(orig[i]) || (len(vec[i]) > 0 && &vec[i][0] != &orig[i][0]) {
			t.Fatalf("Send changed vec[%d]", i)
		}
	}
	// Overwrite the buffers: the datagram must already be out.
	for _, v := range vec {
		for i := range v {
			v[i] = '#'
		}
	}
	for _, single := range [][][]byte{{[]byte("one")}, {}} {
		if err := tr.Send(to, single); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three datagrams", func() bool { return in.len() >= 3 })
	msgs := in.all()
	if len(msgs) != 3 {
		t.Fatalf("got %d datagrams, want 3", len(msgs))
	}
	if !bytes.Equal(msgs[0].data, want) {
		t.Fatalf("vectored datagram: got %d bytes %.40q..., want %d bytes %.40q...", len(msgs[0].data), msgs[0].data, len(want), want)
	}
	if string(msgs[1].data) != "one" || len(msgs[2].data) != 0 {
		t.Fatalf("got %q and %q, want \"one\" and an empty datagram", msgs[1].data, msgs[2].data)
	}
	for _, m := range msgs {
		if m.from != tr.Local() {
			t.Fatalf("from %q, want %q", m.from, tr.Local())
		}
	}
}

var badAddrs = []stack.Addr{
	"", "udp", "udp:", "udp:127.0.0.1", "udp:127.0.0.1:", "udp::7000", "udp:127.0.0.1:0",
	"udp:127.0.0.1:65536", "udp:127.0.0.1:-1", "udp:127.0.0.1:http", "udp:[::1:7000", "udp:::1:7000",
	"udp:127.0.0.1:7000:1", "sim:a", "UDP:127.0.0.1:7000", "udp:[::1]", "udp:\x00\xff:1",
	"udp:[127.0.0.1]:7000", "udp:[localhost]:7000", "udp:a b:7000", "udp:host/x:7000", "udp:[::1%]:7000",
}

func TestUDPBadAddress(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		u, _ := openUDP(t, host, UDPOptions{})
		addrs := append(badAddrs, "tcp:127.0.0.1:7000")
		for _, a := range addrs {
			if err := u.Send(a, [][]byte{[]byte("x")}); err == nil {
				t.Errorf("Send(%q) succeeded, want an error", a)
			}
		}
		// Random junk never panics.
		r := rand.New(rand.NewPCG(1, 2))
		for range 1000 {
			b := make([]byte, r.IntN(30))
			for i := range b {
				b[i] = ":[]%udptc0123456789.\x00"[r.IntN(21)]
			}
			u.Send(stack.Addr("udp:"+string(b)), nil)
		}
		if st := u.Stats(); st.Sent != 0 || st.SendErrors < uint64(len(addrs)) {
			t.Fatalf("stats %+v: want no datagram sent and every failure counted", st)
		}
	})
}

// TestUDPWrongFamily: an IPv4 socket cannot reach an IPv6 address.
func TestUDPWrongFamily(t *testing.T) {
	if len(families(t)) < 2 {
		t.Skip("no IPv6 loopback")
	}
	u, _ := openUDP(t, "127.0.0.1", UDPOptions{})
	if err := u.Send("udp:[::1]:7000", [][]byte{[]byte("x")}); err == nil {
		t.Fatal("Send from an IPv4 socket to ::1 succeeded")
	}
}

func TestUDPOversize(t *testing.T) {
	forFamilies(t, func(t *testing.T, host string) {
		a, _ := openUDP(t, host, UDPOptions{})
		b, inb := openUDP(t, host, UDPOptions{})
		max := make([]byte, a.MTU())
		if err := a.Send(b.Local(), [][]byte{max[:10], max[10:]}); err != nil {
			t.Fatalf("Send of exactly MTU bytes: %v", err)
		}
		if err := a.Send(b.Local(), [][]byte{max, {0}}); err == nil {
			t.Fatal("Send of MTU+1 bytes succeeded")
		}
		waitFor(t, "the MTU-sized datagram", func() bool { return inb.len() == 1 })
		if n := len(inb.all()[0].data); n != a.MTU() {
			t.Fatalf("received %d bytes, want %d", n, a.MTU())
		}

		// A receiver with a smaller MTU drops larger datagrams and counts them.
		small, ins := openUDP(t, host, UDPOptions{MTU: 1000})
		if err := a.Send(small.Local(), [][]byte{make([]byte, 1001)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the bad datagram to be counted", func() bool { return small.Stats().BadFrames == 1 })
		if err := a.Send(small.Local(), [][]byte{make([]byte, 1000)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a datagram of exactly the MTU", func() bool { return ins.len() == 1 })
		if n := len(ins.all()[0].data); n != 1000 {
			t.Fatalf("received %d bytes, want 1000", n)
		}
	})
}

func TestUDPOptions(t *testing.T) {
	for _, opt := range []UDPOptions{{MTU: -1}, {MTU: MaxUDPMTU + 1}, {ReadBuffer: -1}, {WriteBuffer: -5}} {
		if u, err := ListenUDPOpts("127.0.0.1:0", opt); err == nil {
			u.Close()
			t.Errorf("ListenUDPOpts(%+v) succeeded", opt)
		}
	}
	for _, addr := range []string{"127.0.0.1", "udp:127.0.0.1:0", "256.0.0.1:0", "127.0.0.1:99999"} {
		if u, err := ListenUDP(addr); err == nil {
			u.Close()
			t.Errorf("ListenUDP(%q) succeeded", addr)
		}
	}
	u, err := ListenUDPOpts("127.0.0.1:0", UDPOptions{MTU: 1200})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if u.MTU() != 1200 {
		t.Fatalf("MTU() = %d, want 1200", u.MTU())
	}
}

// TestUDPClose: Close stops delivery (even while datagrams stream in),
// later Sends fail with ErrClosed, a second Close returns ErrClosed, and
// no goroutine is left.
func TestUDPClose(t *testing.T) {
	forPollsAndFamilies(t, func(t *testing.T, poll time.Duration, host string) {
		a, _ := openUDP(t, host, UDPOptions{BusyPoll: poll})
		b, inb := openUDP(t, host, UDPOptions{BusyPoll: poll})
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				a.Send(b.Local(), [][]byte{[]byte("ping")})
				time.Sleep(50 * time.Microsecond)
			}
		}()
		waitFor(t, "some deliveries", func() bool { return inb.len() >= 10 })
		// Slow deliveries down, so that one is most likely running when
		// Close is called.
		inb.delay.Store(int64(time.Millisecond))
		n := inb.len()
		waitFor(t, "slow deliveries", func() bool { return inb.len() >= n+10 })
		closeChecked(t, b, inb)
		time.Sleep(20 * time.Millisecond) // let a keep sending at the closed port
		close(stop)
		<-done
		checkClosedAfter(t, b, inb, a.Local())
	})
}

// TestUDPCloseFromReceiver: the receiver may close its own transport.
func TestUDPCloseFromReceiver(t *testing.T) {
	leakCheck(t)
	a, _ := openUDP(t, "127.0.0.1", UDPOptions{})
	b, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	var once sync.Once
	b.SetReceiver(func(stack.Addr, []byte) {
		once.Do(func() { closed <- b.Close() })
	})
	if err := a.Send(b.Local(), [][]byte{[]byte("close")}); err != nil {
		t.Fatal(err)
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

// TestUDPNoReceiver: datagrams are dropped and counted until a receiver is
// set; SetReceiver(nil) drops again.
func TestUDPNoReceiver(t *testing.T) {
	a, _ := openUDP(t, "127.0.0.1", UDPOptions{})
	b, err := ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Send(b.Local(), [][]byte{[]byte("dropped")})
	waitFor(t, "a dropped datagram", func() bool { return b.Stats().Dropped == 1 })
	in := &inbox{}
	b.SetReceiver(in.recv)
	a.Send(b.Local(), [][]byte{[]byte("kept")})
	waitFor(t, "a delivery", func() bool { return in.len() == 1 })
	b.SetReceiver(nil)
	a.Send(b.Local(), [][]byte{[]byte("dropped")})
	waitFor(t, "a second dropped datagram", func() bool { return b.Stats().Dropped == 2 })
	if in.len() != 1 || string(in.all()[0].data) != "kept" {
		t.Fatalf("inbox %v, want only \"kept\"", in.all())
	}
}

// With busy polling, the datagrams waiting together are taken by one
// receive and delivered inside one batch.
func TestUDPBatcher(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("UDP busy polling (and so batching) is Linux only")
	}
	a, _ := openUDP(t, "127.0.0.1", UDPOptions{})
	b, _ := openUDP(t, "127.0.0.1", UDPOptions{BusyPoll: 50 * time.Microsecond})
	release := make(chan struct{})
	// The others queue up while the first is delivered: they cannot all
	// be taken one at a time.
	l := &batchLog{first: func() { <-release }}
	b.SetReceiver(l.recv)
	b.SetBatcher(l.batch)
	sendSeq(t, a, b, 500)
	close(release)
	l.check(t, 500)
}
