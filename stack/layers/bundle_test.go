package layers

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/transport"
)

func counter(n *stack.Node, layer, name string) uint64 {
	v, _ := layerCounter(n, layer, name)
	return v
}

// await waits up to d for done; past it, the test fails with what status
// says, read under mu (which guards what the deliveries fill).
func await(t *testing.T, done <-chan struct{}, d time.Duration, mu *sync.Mutex, status func() string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(d):
		mu.Lock()
		defer mu.Unlock()
		t.Fatal(status())
	}
}

// listenTwo starts two nodes on loopback over kind with props, closed
// when the test ends.
func listenTwo(t *testing.T, kind, props string) (a, b *stack.Node) {
	t.Helper()
	for _, n := range []**stack.Node{&a, &b} {
		node, err := Listen(kind+":127.0.0.1:0", props)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { node.Close() })
		*n = node
	}
	return a, b
}

// Messages sent inside one Batch travel bundled and arrive exactly once,
// in order; replies to bundled requests come back bundled too.
func TestBundles(t *testing.T) {
	for _, kind := range []string{"udp", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			a, b := listenTwo(t, kind, "Reliable,Fragment,RPC")
			var mu sync.Mutex
			var got []string
			done := make(chan struct{})
			const n = 40
			b.OnDeliver(func(_ stack.Addr, body []byte) {
				mu.Lock()
				got = append(got, string(body))
				if len(got) == n {
					close(done)
				}
				mu.Unlock()
			})
			b.Handle(func(_ stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
			a.Batch(func() {
				for i := range n {
					if err := a.Send(b.Local(), []byte(fmt.Sprintf("m%03d", i))); err != nil {
						t.Error(err)
					}
				}
			})
			await(t, done, 10*time.Second, &mu, func() string { return fmt.Sprintf("delivered %d of %d", len(got), n) })
			for i, m := range got {
				if want := fmt.Sprintf("m%03d", i); m != want {
					t.Fatalf("delivery %d is %q, want %q (all: %v)", i, m, want, got)
				}
			}
			if counter(a, "node", "bundles_sent") == 0 {
				t.Fatal("a batch of 40 sends to one peer sent no bundle")
			}
			// Requests in one batch: b answers each; the replies leave b in
			// one flush (one bundle) since b handles the bundle at once.
			var wg sync.WaitGroup
			var replies [8][]byte
			a.Batch(func() {
				for i := range replies {
					wg.Add(1)
					_, err := a.CallAsync(b.Local(), []byte{byte('0' + i)}, 5*time.Second, func(r []byte, err error) {
						if err != nil {
							t.Error(err)
						}
						replies[i] = r
						wg.Done()
					})
					if err != nil {
						t.Fatal(err)
					}
				}
			})
			wg.Wait()
			for i, r := range replies {
				if want := []byte{'r', 'e', ':', byte('0' + i)}; !bytes.Equal(r, want) {
					t.Fatalf("reply %d = %q, want %q", i, r, want)
				}
			}
			if counter(b, "node", "bundles_sent") == 0 {
				t.Fatal("replies to a bundle of requests were not bundled")
			}
		})
	}
}

// While a handler holds the receive batch (here: blocked until released),
// a blocking call from another goroutine still goes out: Call does not wait
// for the batch to end.
func TestCallDuringBatch(t *testing.T) {
	nodes := make([]*stack.Node, 3)
	for i := range nodes {
		n, err := Listen("udp:127.0.0.1:0", "Reliable,Fragment,RPC")
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes[i] = n
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	c.Handle(func(_ stack.Addr, req []byte) []byte { return append(req, '!') })
	entered, release := make(chan struct{}), make(chan struct{})
	b.Handle(func(_ stack.Addr, req []byte) []byte {
		close(entered)
		<-release
		return req
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go a.Call(ctx, b.Local(), []byte("hold"), 0)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("b's handler never ran")
	}
	defer close(release)
	// b's receive goroutine is inside the handler, so b cannot receive
	// the reply: use CallAsync and wait only for the request to reach c.
	c2 := make(chan struct{})
	c.Handle(func(_ stack.Addr, req []byte) []byte { close(c2); return req })
	go b.Call(ctx, c.Local(), []byte("out"), 0)
	select {
	case <-c2:
	case <-ctx.Done():
		t.Fatal("a call made while another goroutine held the batch never left the node")
	}
}

// Datagrams that start like a bundle but are not one are counted and
// dropped; the node keeps working.
func TestMalformedBundles(t *testing.T) {
	a, err := Listen("udp:127.0.0.1:0", "Reliable,Fragment,RPC")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Handle(func(_ stack.Addr, req []byte) []byte { return req })
	raw, err := transport.ListenUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, d := range [][]byte{{'B'}, {'B', 1}, {'B', 9, 1, 'x'}, {'B', 1, 5, 'x'}, {'B', 1, 0}, {'B', 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {'B', 1, 1, 'x'}} {
		if err := raw.Send(a.Local(), [][]byte{d}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for counter(a, "node", "bundles_malformed") < 7 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := counter(a, "node", "bundles_malformed"); got != 7 {
		t.Fatalf("bundles_malformed = %d, want 7", got)
	}
	b, err := Listen("udp:127.0.0.1:0", "Reliable,Fragment,RPC")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := b.Call(ctx, a.Local(), []byte("ok"), 0); err != nil || string(r) != "ok" {
		t.Fatalf("after malformed bundles: %q, %v", r, err)
	}
}

// A batch larger than a bundle may be (the stack caps bundles well below
// TCP's 1 MiB frames) leaves as several bundles, and everything arrives
// exactly once, in order.
func TestLargeBatchSplitsBundles(t *testing.T) {
	newNode := func() (*stack.Node, *transport.TCP) {
		tr, err := transport.ListenTCP("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ch, err := Configure([]stack.Prop{stack.Reliable, stack.Fragment})
		if err != nil {
			t.Fatal(err)
		}
		cfg := stack.Config{Local: tr.Local(), Epoch: uint64(time.Now().UnixNano()), MTU: min(tr.MTU(), 64000), Window: 4096}
		return stack.NewNode(tr, stack.NewRealClock(), Build(ch.Specs, cfg), stack.NodeOptions{}), tr
	}
	a, _ := newNode()
	defer a.Close()
	b, btr := newNode()
	defer b.Close()
	const n, size = 600, 2000 // 1.2 MB in one batch
	var mu sync.Mutex
	var got [][]byte
	done := make(chan struct{})
	b.OnDeliver(func(_ stack.Addr, body []byte) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, bytes.Clone(body))
		if len(got) == n {
			close(done)
		}
	})
	msg := func(i int) []byte {
		m := bytes.Repeat([]byte{byte(i)}, size)
		copy(m, fmt.Sprintf("%05d", i))
		return m
	}
	a.Batch(func() {
		for i := range n {
			if err := a.Send(b.Local(), msg(i)); err != nil {
				t.Error(err)
			}
		}
	})
	await(t, done, 20*time.Second, &mu, func() string { return fmt.Sprintf("delivered %d of %d", len(got), n) })
	mu.Lock()
	defer mu.Unlock()
	for i, m := range got {
		if !bytes.Equal(m, msg(i)) {
			t.Fatalf("message %d: got %q..., want %q...", i, m[:8], msg(i)[:8])
		}
	}
	// 1.2 MB cannot travel in fewer than five 256 KiB bundles; the
	// receiver's frames (acks aside, which go the other way) say how many
	// it took.
	st := btr.Stats()
	if st.Received < 5 || st.BytesReceived/st.Received > 256<<10 {
		t.Errorf("b received %d frames of %d bytes: want at least 5, each at most 256 KiB", st.Received, st.BytesReceived)
	}
}

// The bypass says which layer's CCP sent each miss to the full stack: per
// case, the misses attributed to layers add up to the misses, and under
// plain one-way traffic they fall on pt2pt (its immediate ack every
// ackEvery messages).
func TestBypassMissAttribution(t *testing.T) {
	a, b := listenTwo(t, "udp", "Reliable,Fragment,RPC")
	const n = 200
	var mu sync.Mutex
	got := 0
	done := make(chan struct{})
	b.OnDeliver(func(stack.Addr, []byte) {
		mu.Lock()
		defer mu.Unlock()
		if got++; got == n {
			close(done)
		}
	})
	for i := range n {
		if err := a.Send(b.Local(), []byte(fmt.Sprintf("m%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	await(t, done, 10*time.Second, &mu, func() string { return fmt.Sprintf("delivered %d of %d", got, n) })
	for _, node := range []*stack.Node{a, b} {
		cs := map[string]uint64{}
		for _, lc := range node.Counters() {
			if lc.Layer == "bypass" {
				for _, c := range lc.Counters {
					cs[c.Name] = c.Value
				}
			}
		}
		for _, c := range []string{"send-down", "send-up"} {
			sum := uint64(0)
			for k, v := range cs {
				if len(k) > len(c)+11 && k[:len(c)+11] == c+"_misses_at_" {
					sum += v
				}
			}
			if sum != cs[c+"_misses"] {
				t.Errorf("%s: %s misses %d, attributed to layers %d (%v)", node.Local(), c, cs[c+"_misses"], sum, cs)
			}
		}
		if node == b && (cs["send-up_misses"] == 0 || cs["send-up_misses_at_pt2pt"] != cs["send-up_misses"]) {
			t.Errorf("receiver: send-up misses %d, at pt2pt %d; want some, all at pt2pt (%v)", cs["send-up_misses"], cs["send-up_misses_at_pt2pt"], cs)
		}
	}
}
