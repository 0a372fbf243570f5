package wormlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/stack/sim"
	"strata/wor"
)

// appended is what a test's appenders got acknowledged: position ->
// payload.
type appended struct {
	mu   sync.Mutex
	at   map[uint64]string
	fail int
}

func (a *appended) add(t *testing.T, pos uint64, data string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.at[pos]; ok {
		t.Errorf("position %d acknowledged twice: %q and %q", pos, old, data)
	}
	a.at[pos] = data
}

// appendAll runs clients appenders, each appending n entries "cK-I"
// (calling between after each append, if not nil).
func appendAll(t *testing.T, ctx context.Context, clients []*Client, n int, between func(k, i int)) *appended {
	a := &appended{at: map[uint64]string{}}
	var wg sync.WaitGroup
	for k, cl := range clients {
		wg.Go(func() {
			for i := range n {
				data := fmt.Sprintf("c%d-%d", k, i)
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				pos, err := cl.Append(actx, []byte(data))
				cancel()
				if err != nil {
					a.mu.Lock()
					a.fail++
					a.mu.Unlock()
					t.Logf("append %s: %v", data, err)
				} else {
					a.add(t, pos, data)
				}
				if between != nil {
					between(k, i)
				}
			}
		})
	}
	wg.Wait()
	return a
}

// checkLog reads every acknowledged position and subscribes from 0 until
// every acknowledged entry came: each once, in position order, at the
// position its append returned, and no entry twice.
func checkLog(t *testing.T, ctx context.Context, cl *Client, a *appended) (entries int) {
	t.Helper()
	for pos, data := range a.at {
		e, err := cl.Read(ctx, pos)
		if err != nil || e.Junk || string(e.Data) != data {
			t.Fatalf("read %d: %+v, %v; appended %q there", pos, e, err, data)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	sub := cl.Subscribe(sctx, 0)
	defer sub.Close()
	seen := map[string]uint64{}
	last, first := uint64(0), true
	for len(a.at) > 0 && countIn(a.at, seen) < len(a.at) {
		e, ok := <-sub.C
		if !ok {
			t.Fatalf("subscription ended after %d entries (%d acknowledged): %v", len(seen), len(a.at), sub.Err())
		}
		if !first && e.Pos <= last {
			t.Fatalf("subscription delivered position %d after %d", e.Pos, last)
		}
		first, last = false, e.Pos
		if p, dup := seen[string(e.Data)]; dup {
			t.Fatalf("entry %q at positions %d and %d", e.Data, p, e.Pos)
		}
		seen[string(e.Data)] = e.Pos
		if want, ok := a.at[e.Pos]; ok && want != string(e.Data) {
			t.Fatalf("position %d holds %q, its append said %q", e.Pos, e.Data, want)
		}
	}
	return len(seen)
}

func countIn(at map[uint64]string, seen map[string]uint64) int {
	n := 0
	for pos, data := range at {
		if p, ok := seen[data]; ok && p == pos {
			n++
		}
	}
	return n
}

// Appenders on two log servers over a lossy network: every acknowledged
// append is in the log once, at its position, and a subscriber from 0
// gets them in order.
func TestAppendSubscribe(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Fresh(1)...) {
				c := newCluster(t, seed, engine, sim.Link{Delay: time.Millisecond, Loss: 0.02, Dup: 0.02, Reorder: 0.1})
				c.startServer(1)
				c.startServer(2)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if _, err := c.sequencer(ctx); err != nil {
					t.Fatal(err)
				}
				var clients []*Client
				for k := range 4 {
					clients = append(clients, c.client(k, time.Second))
				}
				a := appendAll(t, ctx, clients, 3*testSegment/2, nil)
				if a.fail > 0 {
					t.Fatalf("%d appends failed with no fault injected", a.fail)
				}
				n := checkLog(t, ctx, c.client(9, time.Second), a)
				t.Logf("seed %d: %d appends acknowledged, %d entries subscribed", seed, len(a.at), n)
			}
		})
	}
}

// The sequencer is killed mid-run: the standby takes over (a fresh
// segment, the old one junk-filled), appends go on, and every
// acknowledged one is in the log once.
func TestSequencerFailover(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Fresh(1)...) {
				c := newCluster(t, seed, engine, sim.Link{Delay: time.Millisecond, Loss: 0.01, Reorder: 0.1})
				c.startServer(1)
				c.startServer(2)
				c.startServer(3)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if _, err := c.sequencer(ctx); err != nil {
					t.Fatal(err)
				}
				var clients []*Client
				for k := range 4 {
					clients = append(clients, c.client(k, 500*time.Millisecond))
				}
				var once sync.Once
				var killedAt time.Time
				var first uint64
				a := appendAll(t, ctx, clients, 40, func(k, i int) {
					if i == 15 {
						once.Do(func() {
							var err error
							if first, err = c.sequencer(ctx); err != nil {
								t.Error(err)
								return
							}
							killedAt = time.Now()
							c.kill(first)
						})
					}
				})
				next, err := c.sequencer(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if next == first {
					t.Fatalf("sequencer %d still leads after it was killed", first)
				}
				n := checkLog(t, ctx, c.client(9, 500*time.Millisecond), a)
				t.Logf("seed %d: sequencer %d killed, %d took over; %d appends acknowledged (%d failed), %d subscribed; %v since the kill",
					seed, first, next, len(a.at), a.fail, n, time.Since(killedAt).Round(time.Millisecond))
				if len(a.at) < 150 {
					t.Fatalf("only %d of 160 appends acknowledged", len(a.at))
				}
			}
		})
	}
}

// A client that takes a position and never writes it (a crashed client)
// leaves a hole: a subscriber waits the hole timeout, fills it with junk
// and goes on; the late write of that token fails; Read says junk.
func TestHoleFill(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			for seed := range testseed.Each(t, testseed.Fresh(1)...) {
				c := newCluster(t, seed, engine, sim.Link{Delay: time.Millisecond})
				c.startServer(1)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := c.sequencer(ctx); err != nil {
					t.Fatal(err)
				}
				const hole = 300 * time.Millisecond
				writer, crashed := c.client(1, hole), c.client(2, hole)
				before, err := writer.Append(ctx, []byte("before"))
				if err != nil {
					t.Fatal(err)
				}
				tok, err := crashed.call(ctx, request{op: opToken, count: 1})
				if err != nil {
					t.Fatal(err)
				}
				after, err := writer.Append(ctx, []byte("after"))
				if err != nil {
					t.Fatal(err)
				}
				if !(before < tok.pos && tok.pos < after) {
					t.Fatalf("positions %d, token %d, %d: not in order", before, tok.pos, after)
				}
				start := time.Now()
				sub := c.client(3, hole).Subscribe(ctx, before)
				defer sub.Close()
				var got []string
				for len(got) < 2 {
					e, ok := <-sub.C
					if !ok {
						t.Fatalf("subscription ended: %v", sub.Err())
					}
					got = append(got, string(e.Data))
				}
				waited := time.Since(start)
				if got[0] != "before" || got[1] != "after" {
					t.Fatalf("subscribed %q", got)
				}
				if waited < hole {
					t.Fatalf("the hole was filled after %v, before the hole timeout %v", waited, hole)
				}
				seg, off := crashed.where(tok.pos)
				err = crashed.w.WriteWithToken(ctx, seg, off, encodeData([]byte("late")), wor.CaptureID(tok.cid))
				if err == nil || !(errors.Is(err, wor.ErrWritten) || errors.Is(err, wor.ErrPreempted)) {
					t.Fatalf("the late write of a filled position: %v", err)
				}
				if e, err := writer.Read(ctx, tok.pos); err != nil || !e.Junk {
					t.Fatalf("read of the filled hole: %+v, %v", e, err)
				}
				if _, err := writer.Read(ctx, after+1); !errors.Is(err, ErrNotAppended) {
					t.Fatalf("read beyond the tail: %v", err)
				}
				t.Logf("seed %d: hole at %d filled after %v", seed, tok.pos, waited.Round(time.Millisecond))
			}
		})
	}
}

// Trim drops whole segments before the prefix.
func TestTrim(t *testing.T) {
	c := newCluster(t, 1, "paxos", sim.Link{Delay: time.Millisecond})
	c.startServer(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.sequencer(ctx); err != nil {
		t.Fatal(err)
	}
	cl := c.client(1, time.Second)
	a := appendAll(t, ctx, []*Client{cl}, 3*testSegment, nil)
	if a.fail > 0 || len(a.at) != 3*testSegment {
		t.Fatalf("%d appends, %d failed", len(a.at), a.fail)
	}
	if err := cl.Trim(ctx, 3*testSegment+1); err == nil {
		t.Fatal("a trim beyond the tail was accepted")
	}
	if err := cl.Trim(ctx, 2*testSegment+5); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Read(ctx, 2*testSegment-1); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("read in a trimmed segment: %v", err)
	}
	if e, err := cl.Read(ctx, 2*testSegment); err != nil || e.Junk {
		t.Fatalf("read after the trimmed segments: %+v, %v", e, err)
	}
	// Trimming again is idempotent; a subscriber from 0 meets the trim.
	if err := cl.Trim(ctx, 2*testSegment); err != nil {
		t.Fatal(err)
	}
	sub := cl.Subscribe(ctx, 0)
	for range sub.C {
	}
	if !errors.Is(sub.Err(), ErrTrimmed) {
		t.Fatalf("subscription from a trimmed position ended with %v", sub.Err())
	}
}
