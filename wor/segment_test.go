package wor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

// realCluster starts n in-memory wormservers and returns their addresses
// and a factory for client nodes, all on loopback UDP.
func realCluster(t *testing.T, n int) ([]stack.Addr, func() *stack.Node) {
	addrs, mk, _ := realClusterServers(t, n)
	return addrs, mk
}

func realClusterServers(t *testing.T, n int) ([]stack.Addr, func() *stack.Node, []*Server) {
	addrs, mk, servers, _ := realClusterNodes(t, n)
	return addrs, mk, servers
}

func realClusterNodes(t *testing.T, n int) ([]stack.Addr, func() *stack.Node, []*Server, []*stack.Node) {
	t.Helper()
	ch, err := layers.Configure([]stack.Prop{stack.Reliable, stack.RPC})
	if err != nil {
		t.Fatal(err)
	}
	mk := func() *stack.Node {
		tr, err := transport.Listen("udp:127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		nd := stack.NewNode(tr, stack.NewRealClock(), layers.Build(ch.Specs, stack.Config{Local: tr.Local(), Epoch: uint64(time.Now().UnixNano())}), stack.NodeOptions{})
		t.Cleanup(func() { nd.Close() })
		return nd
	}
	var addrs []stack.Addr
	var servers []*Server
	var nodes []*stack.Node
	for i := 0; i < n; i++ {
		nd := mk()
		srv := NewServer(nil)
		nd.HandleAsync(srv.HandleAsync)
		srv.SetNotifier(func(to stack.Addr, msg []byte) { nd.Send(to, msg) })
		addrs, servers, nodes = append(addrs, nd.Local()), append(servers, srv), append(nodes, nd)
	}
	return addrs, mk, servers, nodes
}

// Racing Allocs of one segment: exactly one wins, every loser learns the
// winner's metadata; registers of unallocated segments refuse every call.
func TestAllocRaceAndSegments(t *testing.T) {
	servers, mk := realCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const racers = 6
	clients := make([]*Client, racers)
	for i := range clients {
		e, err := NewPaxos(mk(), servers, uint64(i+1), 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = NewClient(e)
	}
	for seg := uint64(1); seg <= 5; seg++ {
		var wg sync.WaitGroup
		results := make([]error, racers)
		for i, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = c.Alloc(ctx, seg, []byte(fmt.Sprintf("owner-%d", i)))
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range results {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("segment %d: clients %d and %d both allocated it", seg, winner, i)
				}
				winner = i
			} else if !errors.Is(err, ErrAllocated) {
				t.Fatalf("segment %d client %d: %v", seg, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("segment %d: nobody won the allocation", seg)
		}
		for i, err := range results {
			var ae *AllocatedError
			if errors.As(err, &ae) && string(ae.Metadata) != fmt.Sprintf("owner-%d", winner) {
				t.Fatalf("segment %d client %d: told the owner is %q, winner was %d", seg, i, ae.Metadata, winner)
			}
		}
		md, err := clients[(winner+1)%racers].Metadata(ctx, seg)
		if err != nil || string(md) != fmt.Sprintf("owner-%d", winner) {
			t.Fatalf("segment %d metadata %q, %v", seg, md, err)
		}
	}
	c := clients[0]
	if _, err := c.Capture(ctx, 99, 0); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("capture in an unallocated segment: %v", err)
	}
	if _, err := c.Read(ctx, 99, 0); !errors.Is(err, ErrNotAllocated) {
		t.Fatalf("read in an unallocated segment: %v", err)
	}
	if err := c.Write(ctx, 1, MaxOffset, []byte("x"), 0); err == nil {
		t.Fatal("write past the last offset accepted")
	}
	// Capture+write then read through another client; a second write
	// reports the first value.
	cid, err := c.Capture(ctx, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, 1, 7, []byte("first"), cid); err != nil {
		t.Fatal(err)
	}
	cid, err = clients[1].Capture(ctx, 1, 7)
	if err != nil {
		t.Fatal(err)
	}
	var we *WrittenError
	if err := clients[1].Write(ctx, 1, 7, []byte("second"), cid); !errors.As(err, &we) || string(we.Value) != "first" {
		t.Fatalf("second write: %v", err)
	}
	if v, err := clients[2].Read(ctx, 1, 7); err != nil || string(v) != "first" {
		t.Fatalf("read %q, %v", v, err)
	}
	if _, err := clients[2].Read(ctx, 1, 8); !errors.Is(err, ErrUnwritten) {
		t.Fatalf("read of an unwritten register: %v", err)
	}
}

// Trim: once a segment is trimmed every call on it fails with ErrTrimmed,
// and a trim that reached only some servers is completed by the first
// client that meets it.
func TestTrim(t *testing.T) {
	addrs, mk, servers := realClusterServers(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(id uint64) *Client {
		e, err := NewPaxos(mk(), addrs, id, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return NewClient(e)
	}
	a, b := client(1), client(2)
	for _, seg := range []uint64{10, 11} {
		if err := a.Alloc(ctx, seg, nil); err != nil {
			t.Fatal(err)
		}
		if err := a.Write(ctx, seg, 0, []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Trim(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(ctx, 10, 0); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("read after trim: %v", err)
	}
	if err := b.Write(ctx, 10, 1, []byte("x"), 0); !errors.Is(err, ErrTrimmed) {
		t.Fatalf("write after trim by another client: %v", err)
	}
	// Trim returns once a majority has it; the last copy may be in flight.
	for i, s := range servers {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			s.mu.Lock()
			kept := s.accs[Addr(10, 0)] != nil
			s.mu.Unlock()
			if !kept {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d kept state of a trimmed register", i)
			}
		}
	}
	// A partial trim: two of three servers got it.
	trim := request{Op: opTrim, Addr: 11}.encode()
	servers[0].Handle("test", trim)
	servers[1].Handle("test", trim)
	v, err := b.Read(ctx, 11, 0)
	if !errors.Is(err, ErrTrimmed) {
		t.Fatalf("read of a partially trimmed segment: %q, %v", v, err)
	}
	// The completion needs only a majority before returning; the third
	// server's copy may still be on its way.
	var r response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		r, err = decodeResponse(servers[2].Handle("test", request{Op: opRead, Addr: Addr(11, 0)}.encode()))
		if err != nil || r.Status == stTrim || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || r.Status != stTrim {
		t.Fatalf("the third server was not told about the trim: status %d, %v", r.Status, err)
	}
	// Segment 12 is untouched by all this.
	if err := a.Alloc(ctx, 12, nil); err != nil {
		t.Fatal(err)
	}
}

// Segment batches and listening, for both engines: SegCapture and
// SegWrite cover many registers in one message, respect what earlier
// writes chose and lose to later captures; a listener hears of every
// register written after it started, with the chosen value.
func TestSegBatchAndListen(t *testing.T) {
	for _, engine := range []string{"paxos", "chain", "ec"} {
		t.Run(engine, func(t *testing.T) {
			n := 3
			if engine == "ec" {
				n = 5
			}
			servers, mk := realCluster(t, n)
			newClient := func(id uint64) *Client {
				var e Engine
				var err error
				switch engine {
				case "ec":
					e, err = NewEC(mk(), servers, id, 300*time.Millisecond, ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4})
				case "chain":
					e, err = NewChain(mk(), servers, id, 300*time.Millisecond)
				default:
					e, err = NewPaxos(mk(), servers, id, 300*time.Millisecond)
				}
				if err != nil {
					t.Fatal(err)
				}
				return NewClient(e)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			a, b, c := newClient(1), newClient(2), newClient(3)
			if err := a.Alloc(ctx, 5, nil); err != nil {
				t.Fatal(err)
			}
			lctx, lcancel := context.WithCancel(ctx)
			defer lcancel()
			heard, err := b.SegListen(lctx, 5)
			if err != nil {
				t.Fatal(err)
			}
			want := map[uint64]string{}
			vals := func(from, n int, tag string) [][]byte {
				var vs [][]byte
				for i := 0; i < n; i++ {
					vs = append(vs, []byte(fmt.Sprintf("%s%d", tag, from+i)))
				}
				return vs
			}
			// segPut captures and writes, again if a listener's read
			// completed the write under way (which preempts it; the values
			// stay the writer's).
			segPut := func(start, end uint64, vs [][]byte) ([][]byte, error) {
				for attempt := 0; ; attempt++ {
					cid, err := a.SegCapture(ctx, 5, start, end)
					if err != nil {
						return nil, err
					}
					held, err := a.SegWrite(ctx, 5, start, vs, cid)
					if errors.Is(err, ErrPreempted) && attempt < 5 {
						continue
					}
					return held, err
				}
			}
			held, err := segPut(0, 100, vals(0, 100, "v"))
			if err != nil || len(held) != 100 {
				t.Fatalf("segment write: %d values, %v", len(held), err)
			}
			for i, v := range held {
				if string(v) != fmt.Sprintf("v%d", i) {
					t.Fatalf("offset %d holds %q", i, v)
				}
				want[uint64(i)] = string(v)
			}
			// A single-register write on the batch sees the chosen value.
			cid3, err := c.Capture(ctx, 5, 10)
			if err != nil {
				t.Fatal(err)
			}
			var we *WrittenError
			if err := c.Write(ctx, 5, 10, []byte("late"), cid3); !errors.As(err, &we) || string(we.Value) != "v10" {
				t.Fatalf("write over the batch: %v", err)
			}
			// An overlapping batch completes the earlier values.
			held, err = segPut(90, 110, vals(90, 20, "w"))
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range held {
				exp := fmt.Sprintf("w%d", 90+i)
				if i < 10 {
					exp = fmt.Sprintf("v%d", 90+i)
				}
				if string(v) != exp {
					t.Fatalf("overlapping batch offset %d holds %q, want %q", 90+i, v, exp)
				}
				want[uint64(90+i)] = exp
			}
			// A later capture of part of a range preempts the earlier one.
			cidA, err := a.SegCapture(ctx, 5, 200, 210)
			if err != nil {
				t.Fatal(err)
			}
			cidC, err := c.SegCapture(ctx, 5, 205, 215)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.SegWrite(ctx, 5, 200, vals(200, 10, "a"), cidA); !errors.Is(err, ErrPreempted) {
				t.Fatalf("write with a superseded capture: %v, want ErrPreempted", err)
			}
			if _, err := c.SegWrite(ctx, 5, 205, vals(205, 10, "c"), cidC); err != nil {
				t.Fatal(err)
			}
			for i := 205; i < 215; i++ {
				want[uint64(i)] = fmt.Sprintf("c%d", i)
			}
			// Registers 200..204 may hold a's values on a minority (the
			// preempted write); they are not chosen and must not be heard
			// of unless a read completes them, which it may: accept either.
			got := map[uint64]string{}
			deadline := time.After(10 * time.Second)
			heardAll := func() bool {
				for off := range want {
					if _, ok := got[off]; !ok {
						return false
					}
				}
				return true
			}
			for !heardAll() {
				select {
				case w := <-heard:
					if w.Seg != 5 {
						t.Fatalf("heard of segment %d", w.Seg)
					}
					if prev, ok := got[w.Off]; ok {
						t.Fatalf("offset %d reported twice (%q, %q)", w.Off, prev, w.Value)
					}
					got[w.Off] = string(w.Value)
				case <-deadline:
					t.Fatalf("heard of %d of %d writes", len(got), len(want))
				}
			}
			for off, v := range want {
				if got[off] != v {
					t.Fatalf("listener: offset %d = %q, want %q", off, got[off], v)
				}
			}
			for off, v := range got {
				if w, ok := want[off]; !ok && (off < 200 || off > 204) || ok && w != v {
					t.Fatalf("listener heard offset %d = %q", off, v)
				}
			}
			lcancel()
			for range heard { // the channel closes once the listener stops
			}
			for _, bad := range [][2]uint64{{5, 5}, {0, MaxSegBatch + 1}, {MaxOffset - 1, MaxOffset + 1}} {
				if _, err := a.SegCapture(ctx, 5, bad[0], bad[1]); err == nil {
					t.Fatalf("segment capture [%d, %d) accepted", bad[0], bad[1])
				}
			}
			if _, err := a.SegWrite(ctx, 5, 0, nil, 0); err == nil {
				t.Fatal("empty segment write accepted")
			}
			if _, err := a.SegCapture(ctx, 77, 0, 4); !errors.Is(err, ErrNotAllocated) {
				t.Fatalf("segment capture in an unallocated segment: %v", err)
			}
		})
	}
}
