package layers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/transport"
)

// lossy drops and duplicates datagrams on a real transport, so the real
// socket tests exercise retransmission too.
type lossy struct {
	stack.Transport
	mu        sync.Mutex
	rng       *rand.Rand
	loss, dup float64
}

func (l *lossy) Send(to stack.Addr, vec [][]byte) error {
	l.mu.Lock()
	drop, dup := l.rng.Float64() < l.loss, l.rng.Float64() < l.dup
	l.mu.Unlock()
	if drop {
		return nil
	}
	if dup {
		l.Transport.Send(to, vec)
	}
	return l.Transport.Send(to, vec)
}

func listen(t *testing.T, kind, host string) stack.Transport {
	t.Helper()
	var tr stack.Transport
	var err error
	if kind == "udp" {
		tr, err = transport.ListenUDP(host + ":0")
	} else {
		tr, err = transport.ListenTCP(host + ":0")
	}
	if err != nil {
		t.Skipf("cannot listen on %s %s: %v", kind, host, err)
	}
	return tr
}

// TestRealSockets runs the reliable-FIFO and RPC properties over UDP and
// TCP on loopback (IPv4 and IPv6), with a lossy, duplicating wrapper.
func TestRealSockets(t *testing.T) {
	for _, kind := range []string{"udp", "tcp"} {
		for _, host := range []string{"127.0.0.1", "[::1]"} {
			for seed := range seeds(t, 2) {
				t.Run(fmt.Sprintf("%s/%s/%d", kind, host, seed), func(t *testing.T) { realRun(t, kind, host, seed) })
			}
		}
	}
}

func realRun(t *testing.T, kind, host string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	specs := mustConfigure(t, "Reliable,FIFO,Fragment,Flow,RPC").Specs
	clock := stack.NewRealClock()
	type rx struct {
		mu  sync.Mutex
		got map[stack.Addr][][]byte
	}
	var nodes []*stack.Node
	var rxs []*rx
	for i := 0; i < 3; i++ {
		tr := &lossy{Transport: listen(t, kind, host), rng: rand.New(rand.NewPCG(seed, uint64(i))), loss: 0.1, dup: 0.05}
		cfg := stack.Config{Local: tr.Local(), Epoch: uint64(time.Now().UnixNano()), MTU: 1200, RTO: 5 * time.Millisecond, MaxRTO: 100 * time.Millisecond, Credit: 64 << 10}
		// Node 1's callers poll for their replies before parking.
		n := stack.NewNode(tr, clock, Build(specs, cfg), stack.NodeOptions{Imperative: i != 2, SpinWait: time.Duration(i%2) * 50 * time.Microsecond})
		r := &rx{got: map[stack.Addr][][]byte{}}
		n.OnDeliver(func(from stack.Addr, b []byte) {
			r.mu.Lock()
			r.got[from] = append(r.got[from], bytes.Clone(b))
			r.mu.Unlock()
		})
		n.Handle(func(_ stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
		nodes, rxs = append(nodes, n), append(rxs, r)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	sent := map[[2]int][][]byte{}
	for i := 0; i < 150; i++ {
		from := rng.IntN(3)
		to := (from + 1 + rng.IntN(2)) % 3
		b := body(rng, from, i, 5000)
		sent[[2]int{from, to}] = append(sent[[2]int{from, to}], b)
		if err := nodes[from].Send(nodes[to].Local(), b); err != nil {
			t.Fatal(err)
		}
	}
	// RPCs from every node while the messages flow.
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := i%3, (i+1)%3
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			req := []byte(fmt.Sprintf("call %d", i))
			resp, err := nodes[from].Call(ctx, nodes[to].Local(), req, 0)
			if err != nil {
				errs <- err
			} else if string(resp) != "re:"+string(req) {
				errs <- fmt.Errorf("call %d: response %q", i, resp)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		done := true
		for k, want := range sent {
			r := rxs[k[1]]
			r.mu.Lock()
			n := len(r.got[nodes[k[0]].Local()])
			r.mu.Unlock()
			if n < len(want) {
				done = false
			}
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for k, want := range sent {
		r := rxs[k[1]]
		r.mu.Lock()
		got := r.got[nodes[k[0]].Local()]
		r.mu.Unlock()
		if len(got) != len(want) {
			t.Fatalf("%d -> %d: delivered %d of %d", k[0], k[1], len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%d -> %d: message %d differs", k[0], k[1], i)
			}
		}
	}
}

// A call to a peer that never answers fails with the caller's deadline,
// and a cancelled context cancels the call.
func TestRealCallDeadline(t *testing.T) {
	for _, spin := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("spinwait=%v", spin), func(t *testing.T) { realCallDeadline(t, spin) })
	}
}

func realCallDeadline(t *testing.T, spin time.Duration) {
	specs := mustConfigure(t, "RPC").Specs
	tr := listen(t, "udp", "127.0.0.1")
	n := stack.NewNode(tr, stack.NewRealClock(), Build(specs, stack.Config{Local: tr.Local(), Epoch: 1}), stack.NodeOptions{SpinWait: spin})
	defer n.Close()
	silent := listen(t, "udp", "127.0.0.1") // no stack: never answers
	defer silent.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := n.Call(ctx, silent.Local(), []byte("hello?"), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call to a silent peer: %v, want the context's deadline", err)
	}
	canceled := func() uint64 {
		for _, lc := range n.Counters() {
			for _, c := range lc.Counters {
				if lc.Layer == "rpc" && c.Name == "canceled" {
					return c.Value
				}
			}
		}
		return 0
	}
	before := canceled()
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel2() }()
	if _, err := n.Call(ctx2, silent.Local(), []byte("hello?"), time.Hour); err == nil {
		t.Fatal("cancelled call returned no error")
	}
	if got := canceled() - before; got != 1 {
		t.Errorf("cancelling the context cancelled %d calls in the rpc layer, want 1", got)
	}
}

// TestRealCallAssist: with busy polling, a lone blocking caller on a node
// without callbacks receives its reply itself (stack.Assister) and
// several callers take turns; a stream of one-way messages from a third
// node arrives meanwhile and must all be received, whoever reads the
// socket (the reader or a caller), and every call must get its own reply.
// On a node with a callback, no callback may run on a goroutine that is
// inside Call.
func TestRealCallAssist(t *testing.T) {
	for _, kind := range []string{"udp", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			opt := transport.Options{BusyPoll: 30 * time.Microsecond}
			open := func() *stack.Node {
				n, err := ListenOpts(kind+":127.0.0.1:0", "Reliable,Fragment,RPC", opt)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { n.Close() })
				return n
			}
			server, client, other := open(), open(), open()
			server.Handle(func(_ stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// callers runs one caller, then four at once; the goroutine
			// ids of the callers go to inCall.
			var inCall sync.Map
			callers := func(tag string) {
				call := func(c, i int) error {
					req := fmt.Appendf(nil, "%s%d-%d", tag, c, i)
					rep, err := client.Call(ctx, server.Local(), req, 0)
					if err != nil {
						return fmt.Errorf("call %s: %w", req, err)
					}
					if want := "re:" + string(req); string(rep) != want {
						return fmt.Errorf("call %s: reply %q, want %q", req, rep, want)
					}
					return nil
				}
				inCall.Store(goid(), true)
				for i := range 500 {
					if err := call(0, i); err != nil {
						t.Fatal(err)
					}
				}
				var wg sync.WaitGroup
				errs := make(chan error, 4)
				for c := 1; c <= 4; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						inCall.Store(goid(), true)
						for i := range 300 {
							if err := call(c, i); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
			}
			// stream sends n one-way messages from other to client.
			stream := func(n int) chan error {
				sent := make(chan error, 1)
				go func() {
					for i := range n {
						if err := other.Send(client.Local(), fmt.Appendf(nil, "m%d", i)); err != nil {
							sent <- err
							return
						}
						if i%50 == 0 {
							time.Sleep(time.Millisecond)
						}
					}
					sent <- nil
				}()
				return sent
			}
			waitCount := func(what string, want uint64, f func() uint64) {
				deadline := time.Now().Add(10 * time.Second)
				for f() < want && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if got := f(); got != want {
					t.Fatalf("%s: %d, want %d", what, got, want)
				}
			}

			// No callbacks: callers receive in the reader's place.
			const oneWay = 2000
			sent := stream(oneWay)
			callers("a")
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			// The top layer hands up the 1700 replies and the messages.
			waitCount("replies and one-way messages handed up", 1700+oneWay, func() uint64 { return counter(client, "top", "to_app") })
			self := counter(client, "node", "calls_self_received")
			if self == 0 {
				t.Fatal("no call received its own reply")
			}

			// A callback: it runs on the reader, never on a caller.
			var mu sync.Mutex
			var got []string
			bad := 0
			client.OnDeliver(func(from stack.Addr, body []byte) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, string(body))
				if _, ok := inCall.Load(goid()); ok {
					bad++
				}
			})
			sent = stream(oneWay)
			callers("b")
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			waitCount("one-way messages delivered", oneWay, func() uint64 {
				mu.Lock()
				defer mu.Unlock()
				return uint64(len(got))
			})
			mu.Lock()
			defer mu.Unlock()
			if bad > 0 {
				t.Fatalf("%d deliveries ran on a goroutine inside Call", bad)
			}
			for i, m := range got {
				if want := fmt.Sprintf("m%d", i); m != want {
					t.Fatalf("one-way message %d is %q, want %q", i, m, want)
				}
			}
			if n := counter(client, "node", "calls_self_received"); n != self {
				t.Fatalf("%d calls received their own reply on a node with a callback", n-self)
			}
		})
	}
}

// goid is the calling goroutine's id, from its stack trace's first line.
func goid() string {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	return string(b)
}
