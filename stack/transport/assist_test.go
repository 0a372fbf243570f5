//go:build linux

package transport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/stack"
)

// assistSink checks frames as orderedSink does (ordered: TCP) or as a set
// (UDP), and that receiver calls never overlap, whoever makes them: the
// reader goroutine or an assisting caller.
type assistSink struct {
	g       gen
	dir     byte
	ordered bool
	in      atomic.Int32
	got     atomic.Int64
	mu      sync.Mutex
	seen    map[int]bool
	next    int
	err     error
}

func (s *assistSink) recv(_ stack.Addr, data []byte) {
	if s.in.Add(1) != 1 {
		s.fail(fmt.Errorf("overlapping receiver calls"))
	}
	defer s.in.Add(-1)
	want := -1
	if s.ordered {
		want = s.next
	}
	seq, err := s.g.check(s.dir, data, want)
	switch {
	case err != nil:
		s.fail(err)
	case s.ordered:
		s.next++
	case seq < 0: // a tiny datagram: no number to check
	case s.seen[seq]:
		s.fail(fmt.Errorf("datagram #%d delivered twice", seq))
	default:
		s.seen[seq] = true
	}
	s.got.Add(1)
}

func (s *assistSink) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *assistSink) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// TestAssist: while frames stream from a to b, callers on b keep taking
// over b's receiving (Assist) for random spells, waiting for the next
// frame or for nothing in particular, beside b's reader. Every frame must
// be delivered once (TCP: in order and whole, though frames up to 100 KB
// arrive in pieces and callers give up between them), receiver calls must
// not overlap, and the reader must go on alone once the callers stop.
// Closing b while callers assist must not hang them.
func TestAssist(t *testing.T) {
	for _, kind := range []string{"udp", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			leakCheck(t)
			seed := testseed.One(t) // STRATA_SEED replays; a failure logs the command
			const count = 3000
			var b stack.Transport
			var from stack.Addr
			var send func(r *rand.Rand, frame []byte) error
			sink := &assistSink{dir: 1, ordered: kind == "tcp", seen: map[int]bool{}}
			var err error
			if kind == "tcp" {
				// A raw connection that writes each frame in pieces, some
				// after a pause: frames often arrive in parts, so readers
				// and callers meet frames half read.
				sink.g = gen{seed: seed, max: 16 << 10}
				b, err = ListenTCPOpts("127.0.0.1:0", TCPOptions{BusyPoll: 30 * time.Microsecond})
				if err != nil {
					t.Fatal(err)
				}
				_, hp, _ := Parse(b.Local())
				c, err := net.Dial("tcp", hp)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				from = "tcp:127.0.0.1:4242"
				if _, err := c.Write(withFrame([]byte(helloMagic + string(from)))); err != nil {
					t.Fatal(err)
				}
				send = func(r *rand.Rand, frame []byte) error {
					for _, piece := range split(r, withFrame(frame)) {
						if _, err := c.Write(piece); err != nil {
							return err
						}
						if r.IntN(2) == 0 {
							time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
						}
					}
					return nil
				}
			} else {
				sink.g = gen{seed: seed, max: 8 << 10}
				a, _ := openUDP(t, "127.0.0.1", UDPOptions{BusyPoll: 30 * time.Microsecond})
				b, err = ListenUDPOpts("127.0.0.1:0", UDPOptions{BusyPoll: 30 * time.Microsecond})
				if err != nil {
					t.Fatal(err)
				}
				from = a.Local()
				send = func(r *rand.Rand, frame []byte) error { return a.Send(b.Local(), split(r, frame)) }
			}
			t.Cleanup(func() { b.Close() })
			b.SetReceiver(sink.recv)
			as := b.(stack.Assister)
			// A first frame, so that b knows the sender (TCP: adopts its
			// connection).
			r := rand.New(rand.NewPCG(seed, 99))
			if err := send(r, sink.g.build(1, 0)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the first frame", func() bool { return sink.got.Load() == 1 })

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var assisted, succeeded atomic.Int64
			for c := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(seed, uint64(c)))
					for {
						select {
						case <-stop:
							return
						default:
						}
						before := sink.got.Load()
						done := func() bool { return sink.got.Load() > before }
						if r.IntN(4) == 0 {
							done = func() bool { return false }
						}
						d := time.Duration(r.IntN(200)) * time.Microsecond
						assisted.Add(1)
						if as.Assist(from, done, d) {
							succeeded.Add(1)
							if !done() {
								sink.fail(fmt.Errorf("Assist reported done, but done is false"))
							}
						}
						if r.IntN(3) == 0 {
							time.Sleep(time.Duration(r.IntN(100)) * time.Microsecond)
						}
					}
				}()
			}
			// A window of 64 frames in flight: UDP must not overflow b's
			// socket buffer (a loss would be the test's, not the
			// transport's).
			for seq := 1; seq < count; seq++ {
				waitFor(t, "the window", func() bool { return int64(seq)-sink.got.Load() < 64 || sink.failure() != nil })
				if err := send(r, sink.g.build(1, seq)); err != nil {
					t.Fatal(err)
				}
				if seq == count/2 {
					close(stop)
					wg.Wait()
				}
			}
			waitFor(t, "every frame", func() bool { return sink.got.Load() == count || sink.failure() != nil })
			if err := sink.failure(); err != nil {
				t.Fatal(err)
			}
			if succeeded.Load() == 0 {
				t.Fatalf("none of %d assists saw a frame arrive", assisted.Load())
			}
			t.Logf("%d assists, %d saw a frame", assisted.Load(), succeeded.Load())

			// Close while callers assist (waiting for what never comes).
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for as.Assist(from, func() bool { return false }, time.Hour) {
					}
				}()
			}
			time.Sleep(time.Millisecond)
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if as.Assist(from, func() bool { return false }, time.Second) {
				t.Fatal("Assist on a closed transport reported done")
			}
		})
	}
}

// TestAssistNotApplicable: without busy polling (the reader sleeps in the
// socket) and, over TCP, for a peer with no connection, Assist declines at
// once, whatever d.
func TestAssistNotApplicable(t *testing.T) {
	u, _ := openUDP(t, "127.0.0.1", UDPOptions{})
	tc, _ := openTCP(t, "127.0.0.1:0", TCPOptions{})
	tp, _ := openTCP(t, "127.0.0.1:0", TCPOptions{BusyPoll: 30 * time.Microsecond})
	for _, c := range []struct {
		name string
		tr   stack.Assister
	}{{"udp", u}, {"tcp", tc}, {"tcp, unknown peer", tp}} {
		if c.tr.Assist("tcp:127.0.0.1:1", func() bool { return false }, time.Hour) {
			t.Fatalf("%s: Assist reported done", c.name)
		}
	}
}
