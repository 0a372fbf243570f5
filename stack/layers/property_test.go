package layers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"
	"math/rand/v2"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/stack"
	"strata/stack/sim"
)

// seeds yields the seeds a property test runs (testseed: STRATA_SEED
// replays one, STRATA_SEEDS runs that many): by default n fresh ones, a
// fifth of them (at least 2) with -short. A failing seed logs its replay
// command.
func seeds(t *testing.T, n int) iter.Seq[uint64] {
	if testing.Short() {
		n = max(n/5, 2)
	}
	return testseed.Each(t, testseed.Fresh(n)...)
}

type cluster struct {
	net   *sim.Net
	nodes map[stack.Addr]*stack.Node
	addrs []stack.Addr
	cfg   stack.Config
	specs []stack.Spec
	opts  stack.NodeOptions
	got   map[[2]stack.Addr][][]byte // (from, to) -> bodies in delivery order
	byGen map[[2]stack.Addr][][][]byte
	gens  map[stack.Addr]int // incarnations started per address
}

func newCluster(t *testing.T, seed uint64, n int, props string, cfg stack.Config, opts stack.NodeOptions) *cluster {
	t.Helper()
	c := &cluster{net: sim.New(seed), nodes: map[stack.Addr]*stack.Node{}, cfg: cfg, specs: specsFor(t, props, ""), opts: opts,
		got: map[[2]stack.Addr][][]byte{}, byGen: map[[2]stack.Addr][][][]byte{}, gens: map[stack.Addr]int{}}
	for i := 0; i < n; i++ {
		a := stack.Addr(fmt.Sprintf("sim:%c", 'a'+i))
		c.addrs = append(c.addrs, a)
		c.start(t, a)
	}
	return c
}

// start (re)creates the node at a, as after a process restart: fresh
// layer state and a larger incarnation number.
func (c *cluster) start(t *testing.T, a stack.Addr) {
	tr, err := c.net.Endpoint(a)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.cfg
	cfg.Local = a
	cfg.Epoch = uint64(c.net.Now()) + 1
	nd := stack.NewNode(tr, c.net.Clock(), Build(c.specs, cfg), c.opts)
	gen := c.gens[a]
	c.gens[a]++
	nd.OnDeliver(func(from stack.Addr, body []byte) {
		k := [2]stack.Addr{from, a}
		c.got[k] = append(c.got[k], bytes.Clone(body))
		for len(c.byGen[k]) <= gen {
			c.byGen[k] = append(c.byGen[k], nil)
		}
		c.byGen[k][gen] = append(c.byGen[k][gen], bytes.Clone(body))
	})
	nd.Handle(func(from stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
	c.nodes[a] = nd
}

// body makes a self-checking message: sender, number, length, checksum.
func body(rng *rand.Rand, from int, i int, maxLen int) []byte {
	n := 16 + rng.IntN(maxLen)
	b := make([]byte, n)
	for k := 16; k < n; k++ {
		b[k] = byte(rng.Uint32())
	}
	binary.BigEndian.PutUint32(b[0:], uint32(from))
	binary.BigEndian.PutUint32(b[4:], uint32(i))
	binary.BigEndian.PutUint32(b[8:], uint32(n))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func randomFaults(rng *rand.Rand) sim.Link {
	return sim.Link{
		Delay:   time.Duration(1+rng.IntN(20)) * time.Millisecond,
		Jitter:  time.Duration(rng.IntN(5)) * time.Millisecond,
		Loss:    rng.Float64() * 0.3,
		Dup:     rng.Float64() * 0.1,
		Reorder: rng.Float64() * 0.3,
	}
}

// TestReliableFIFOUnderFaults: with loss, duplication, reordering, jitter
// and a partition that heals, every message between live peers is
// delivered exactly once, in order, intact (fragmented ones reassembled).
func TestReliableFIFOUnderFaults(t *testing.T) {
	for seed := range seeds(t, 30) {
		if err := reliableRun(t, seed, stack.NodeOptions{}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func reliableRun(t *testing.T, seed uint64, opts stack.NodeOptions) error {
	rng := rand.New(rand.NewPCG(seed, 99))
	c := newCluster(t, seed, 3, "Reliable,FIFO,Fragment,Flow", stack.Config{MTU: 300, Window: 1 + rng.IntN(16), Credit: 4000, RTO: 10 * time.Millisecond, MaxRTO: 200 * time.Millisecond}, opts)
	c.net.SetMTU(300)
	c.net.SetDefault(randomFaults(rng))
	sent := map[[2]stack.Addr][][]byte{}
	total := 0
	for i := 0; i < 60; i++ {
		from := rng.IntN(3)
		to := (from + 1 + rng.IntN(2)) % 3
		b := body(rng, from, i, 1500)
		k := [2]stack.Addr{c.addrs[from], c.addrs[to]}
		sent[k] = append(sent[k], b)
		total++
		if err := c.nodes[c.addrs[from]].Send(c.addrs[to], b); err != nil {
			return err
		}
		c.net.Run(time.Duration(rng.IntN(5)) * time.Millisecond)
		if i == 20 {
			c.net.Partition([]stack.Addr{c.addrs[0]}, []stack.Addr{c.addrs[1], c.addrs[2]})
		}
		if i == 40 {
			c.net.Heal()
		}
	}
	delivered := func() int {
		n := 0
		for _, v := range c.got {
			n += len(v)
		}
		return n
	}
	c.net.RunUntil(func() bool { return delivered() >= total }, 10*time.Minute)
	c.net.Run(2 * time.Second) // let duplicates and retransmissions arrive: none may deliver
	for k, want := range sent {
		got := c.got[k]
		if len(got) != len(want) {
			return fmt.Errorf("%s -> %s: delivered %d of %d messages", k[0], k[1], len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				return fmt.Errorf("%s -> %s: message %d differs (out of order, corrupt or duplicated)", k[0], k[1], i)
			}
		}
	}
	if n := delivered(); n != total {
		return fmt.Errorf("delivered %d messages, sent %d", n, total)
	}
	return nil
}

// TestCompositionsAgree: the imperative scheduler and the functional
// composition emit the same events at every node's top and bottom for the
// same seed.
func TestCompositionsAgree(t *testing.T) {
	for seed := range seeds(t, 10) {
		var traces [2][]string
		for i, functional := range []bool{false, true} {
			var tr []string
			layersN := len(mustConfigure(t, "Reliable,FIFO,Fragment,Flow").Specs)
			opts := stack.NodeOptions{Imperative: !functional, Trace: func(layer int, dir stack.Dir, ev stack.Event) {
				if layer < 0 || layer >= layersN {
					tr = append(tr, fmt.Sprintf("%d %s %s", layer, dir, ev))
				}
			}}
			if err := reliableRun(t, seed, opts); err != nil {
				t.Fatalf("seed %d functional=%v: %v", seed, functional, err)
			}
			traces[i] = tr
		}
		if len(traces[0]) != len(traces[1]) {
			t.Fatalf("seed %d: imperative emitted %d boundary events, functional %d", seed, len(traces[0]), len(traces[1]))
		}
		for i := range traces[0] {
			if traces[0][i] != traces[1][i] {
				t.Fatalf("seed %d: boundary event %d differs:\n imperative %s\n functional %s", seed, i, traces[0][i], traces[1][i])
			}
		}
		if len(traces[0]) == 0 {
			t.Fatal("no boundary events traced")
		}
	}
}

func mustConfigure(t testing.TB, props string) Choice {
	ps, err := ParseProps(props)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := Configure(ps)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestRPCCompletesOrFailsAtDeadline: every call's callback runs exactly
// once, with the right response before its deadline or ErrTimeout exactly
// at it, under loss and a partition; cancelled calls report ErrCanceled.
func TestRPCCompletesOrFailsAtDeadline(t *testing.T) {
	for seed := range seeds(t, 20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		c := newCluster(t, seed, 2, "RPC,Fragment", stack.Config{MTU: 400, RTO: 10 * time.Millisecond}, stack.NodeOptions{})
		c.net.SetMTU(400)
		c.net.SetDefault(randomFaults(rng))
		a, b := c.nodes[c.addrs[0]], c.nodes[c.addrs[1]]
		type call struct {
			req       []byte
			deadline  time.Duration
			done      int
			resp      []byte
			err       error
			at        time.Duration
			cancelled bool
		}
		var calls []*call
		for i := 0; i < 40; i++ {
			cl := &call{req: body(rng, 0, i, 800)}
			timeout := time.Duration(5+rng.IntN(200)) * time.Millisecond
			cl.deadline = c.net.Now() + timeout
			calls = append(calls, cl)
			id, err := a.CallAsync(b.Local(), cl.req, timeout, func(resp []byte, err error) {
				cl.done++
				cl.resp, cl.err, cl.at = resp, err, c.net.Now()
			})
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(10) == 0 {
				a.Cancel(id) // before any time passes: the call cannot have completed
				cl.cancelled = true
			}
			if i == 15 {
				c.net.Partition([]stack.Addr{c.addrs[0]}, []stack.Addr{c.addrs[1]})
			}
			if i == 25 {
				c.net.Heal()
			}
			c.net.Run(time.Duration(rng.IntN(20)) * time.Millisecond)
		}
		c.net.Run(time.Minute)
		ok, timeouts := 0, 0
		for i, cl := range calls {
			if cl.done != 1 {
				t.Fatalf("seed %d: call %d completed %d times", seed, i, cl.done)
			}
			if cl.cancelled != errors.Is(cl.err, stack.ErrCanceled) {
				t.Fatalf("seed %d: call %d: cancelled=%v but error %v", seed, i, cl.cancelled, cl.err)
			}
			switch {
			case cl.err == nil:
				if !bytes.Equal(cl.resp, append([]byte("re:"), cl.req...)) {
					t.Fatalf("seed %d: call %d got a wrong response", seed, i)
				}
				if cl.at > cl.deadline {
					t.Fatalf("seed %d: call %d succeeded at %v, after its deadline %v", seed, i, cl.at, cl.deadline)
				}
				ok++
			case errors.Is(cl.err, stack.ErrTimeout):
				if cl.at != cl.deadline {
					t.Fatalf("seed %d: call %d timed out at %v, deadline %v", seed, i, cl.at, cl.deadline)
				}
				timeouts++
			case errors.Is(cl.err, stack.ErrCanceled):
			default:
				t.Fatalf("seed %d: call %d: unexpected error %v", seed, i, cl.err)
			}
		}
		// Liveness: once the network has healed, a call with a generous
		// deadline succeeds.
		var final []byte
		var finalErr error = errors.New("final call never completed")
		if _, err := a.CallAsync(b.Local(), []byte("final"), time.Minute, func(r []byte, err error) { final, finalErr = r, err }); err != nil {
			t.Fatal(err)
		}
		c.net.Run(2 * time.Minute)
		if finalErr != nil || string(final) != "re:final" {
			t.Fatalf("seed %d: call after healing: %q, %v (earlier: %d ok, %d timeouts); net %+v\na: %s\nb: %s", seed, final, finalErr, ok, timeouts, c.net.Stats(), counters(a), counters(b))
		}
		for _, l := range a.Layers() {
			if r, isRPC := l.(*Rpc); isRPC && r.Pending() != 0 {
				t.Fatalf("seed %d: %d calls still pending in the rpc layer", seed, r.Pending())
			}
		}
	}
}

// TestFlowBoundsBuffering: a fast sender to a slow link keeps at most the
// credit (plus one message) outstanding, and everything still arrives.
func TestFlowBoundsBuffering(t *testing.T) {
	for seed := range seeds(t, 10) {
		rng := rand.New(rand.NewPCG(seed, 3))
		const credit = 8000
		c := newCluster(t, seed, 2, "Flow,Fragment", stack.Config{MTU: 1000, Credit: credit, RTO: 20 * time.Millisecond}, stack.NodeOptions{})
		c.net.SetMTU(1000)
		l := randomFaults(rng)
		l.Bandwidth = 100_000 // 100 kB/s: the sender outruns the link
		c.net.SetDefault(l)
		a := c.nodes[c.addrs[0]]
		var w *Pt2ptw
		for _, ly := range a.Layers() {
			if x, ok := ly.(*Pt2ptw); ok {
				w = x
			}
		}
		maxMsg, total := 0, 0
		for i := 0; i < 100; i++ {
			b := body(rng, 0, i, 2000)
			maxMsg = max(maxMsg, len(b)+rpcHdr)
			total++
			a.Send(c.addrs[1], b)
		}
		worst := 0
		done := c.net.RunUntil(func() bool {
			out, _ := w.Buffered(c.addrs[1])
			worst = max(worst, out)
			return len(c.got[[2]stack.Addr{c.addrs[0], c.addrs[1]}]) == total
		}, 10*time.Minute)
		if !done {
			t.Fatalf("seed %d: flow control stalled: %d of %d delivered; net %+v\na: %s\nb: %s", seed, len(c.got[[2]stack.Addr{c.addrs[0], c.addrs[1]}]), total, c.net.Stats(), counters(a), counters(c.nodes[c.addrs[1]]))
		}
		if worst > credit+maxMsg {
			t.Fatalf("seed %d: %d bytes outstanding, credit is %d", seed, worst, credit)
		}
		if worst == 0 {
			t.Fatalf("seed %d: nothing was ever outstanding: the check is vacuous", seed)
		}
	}
}

// TestReceiverRestart: a receiver that crashes and restarts (fresh state)
// sees, in each incarnation, messages in order without duplicates, and its
// new incarnation receives every message sent after it came back. (Across
// incarnations a message may arrive twice: the first process may have died
// before its acknowledgement left; only durable state could prevent that.)
func TestReceiverRestart(t *testing.T) {
	for seed := range seeds(t, 10) {
		rng := rand.New(rand.NewPCG(seed, 5))
		c := newCluster(t, seed, 2, "Reliable,FIFO", stack.Config{RTO: 10 * time.Millisecond, MaxRTO: 50 * time.Millisecond}, stack.NodeOptions{})
		c.net.SetDefault(randomFaults(rng))
		a, bAddr := c.nodes[c.addrs[0]], c.addrs[1]
		var msgs [][]byte
		for i := 0; i < 30; i++ {
			msgs = append(msgs, body(rng, 0, i, 100))
			a.Send(bAddr, msgs[i])
			c.net.Run(time.Duration(rng.IntN(10)) * time.Millisecond)
			if i == 10 {
				c.nodes[bAddr].Close()
				c.net.Crash(bAddr)
			}
			if i == 15 {
				c.net.Restart(bAddr)
				c.start(t, bAddr)
			}
		}
		k := [2]stack.Addr{c.addrs[0], bAddr}
		c.net.Run(time.Minute)
		gens := c.byGen[k]
		for g, list := range gens {
			last := -1
			for _, m := range list {
				idx := -1
				for x := range msgs {
					if bytes.Equal(msgs[x], m) {
						idx = x
					}
				}
				if idx <= last {
					t.Fatalf("seed %d: incarnation %d: delivery out of order, duplicated or unknown", seed, g)
				}
				last = idx
			}
		}
		var got [][]byte
		if len(gens) == 2 {
			got = gens[1]
		}
		for i := 16; i < 30; i++ {
			found := false
			for _, g := range got {
				if bytes.Equal(g, msgs[i]) {
					found = true
				}
			}
			if !found {
				t.Fatalf("seed %d: message %d, sent after the restart, was never delivered (got %d messages; net %+v; a %v; b %v)", seed, i, len(got), c.net.Stats(), counters(a), counters(c.nodes[bAddr]))
			}
		}
	}
}

func counters(n *stack.Node) string {
	s := ""
	for _, l := range n.Layers() {
		if x, ok := l.(stack.Counted); ok {
			s += fmt.Sprintf("%T%v ", l, x.Counters())
		}
	}
	return s
}
