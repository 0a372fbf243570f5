package distsys_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/models/crdt/gen/aworset"
	"strata/models/crdt/gen/gcounter"
	"strata/stack"
	"strata/stack/layers"
)

// crdtNodes opens n stack nodes on loopback UDP for gossip.
func crdtNodes(t *testing.T, n int) ([]*stack.Node, []stack.Addr) {
	t.Helper()
	var ns []*stack.Node
	var addrs []stack.Addr
	for range n {
		nd, err := layers.Listen("udp:127.0.0.1:0", "Reliable,FIFO,Fragment")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nd.Close() })
		ns = append(ns, nd)
		addrs = append(addrs, nd.Local())
	}
	return ns, addrs
}

func op(kind string, x tla.Value) tla.Value { return tla.Tuple(tla.String(kind), x) }

// replicaNode is one replica running the ANode archetype compiled from
// models/crdt: operations go in through in, values come out of out.
type replicaNode struct {
	crdt *distsys.CRDT
	in   chan tla.Value
	out  chan tla.Value
	errc chan error
}

func startReplica(t *testing.T, ctx context.Context, kind distsys.CRDTKind, node *stack.Node, id int, peers []stack.Addr, opt distsys.CRDTOptions) *replicaNode {
	t.Helper()
	self := tla.Int(int64(id))
	c, err := distsys.NewCRDT(node, self, kind, peers, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var arch *distsys.Archetype
	if kind == distsys.AWORSetKind {
		m, err := aworset.New(aworset.Constants{NumNodes: tla.Int(3), Budget: tla.Int(0), Elems: tla.Set(), BugMerge: tla.String("none")})
		if err != nil {
			t.Fatal(err)
		}
		arch = m.ANode()
	} else {
		m, err := gcounter.New(gcounter.Constants{NumNodes: tla.Int(3), Budget: tla.Int(0), Amounts: tla.Set(), BugMerge: tla.String("none")})
		if err != nil {
			t.Fatal(err)
		}
		arch = m.ANode()
	}
	r := &replicaNode{crdt: c, in: make(chan tla.Value), out: make(chan tla.Value, 1), errc: make(chan error, 1)}
	actx, err := distsys.NewContext(arch, self, distsys.BindIndexed("crdt", c),
		distsys.BindRef("in", distsys.NewInput(r.in)), distsys.BindRef("out", distsys.NewOutput(r.out)))
	if err != nil {
		t.Fatal(err)
	}
	go func() { r.errc <- actx.Run(ctx) }()
	return r
}

// do sends one operation to the archetype and returns the value it
// replied with.
func (r *replicaNode) do(t *testing.T, ctx context.Context, v tla.Value) tla.Value {
	t.Helper()
	select {
	case r.in <- v:
	case err := <-r.errc:
		t.Fatalf("replica stopped: %v", err)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	select {
	case got := <-r.out:
		return got
	case err := <-r.errc:
		t.Fatalf("replica stopped: %v", err)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	return tla.Value{}
}

func waitValue(t *testing.T, ctx context.Context, c *distsys.CRDT, want tla.Value) {
	t.Helper()
	if err := c.Wait(ctx, func(v tla.Value) bool { return tla.Equal(v, want) }); err != nil {
		t.Fatalf("replica never reached %v (holds %v): %v", want, c.Value(), err)
	}
}

// TestCRDTClusterConverges runs three replicas of each system compiled
// from models/crdt (ANode) on loopback stack nodes gossiping every 20 ms.
// Each replica's reply shows its own operation at once (read-your-writes);
// then every replica converges to the expected value: the sum of all
// increments; for the set, the elements added and not removed after the
// remover saw the add, with a concurrent add of a removed element
// winning.
func TestCRDTClusterConverges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("gcounter", func(t *testing.T) {
		ns, addrs := crdtNodes(t, 3)
		var rs []*replicaNode
		for i, n := range ns {
			rs = append(rs, startReplica(t, ctx, distsys.GCounterKind, n, i+1, addrs, distsys.CRDTOptions{Interval: 20 * time.Millisecond}))
		}
		if got := rs[0].do(t, ctx, op("inc", tla.Int(5))); got.String() != "5" {
			t.Fatalf("reply %v, want 5", got)
		}
		for i, r := range rs {
			r.do(t, ctx, op("inc", tla.Int(int64(i+1))))
		}
		for _, r := range rs {
			waitValue(t, ctx, r.crdt, tla.Int(11))
		}
		if got := rs[2].do(t, ctx, op("read", tla.Int(0))); got.String() != "11" {
			t.Fatalf("read %v, want 11", got)
		}
	})
	t.Run("aworset", func(t *testing.T) {
		ns, addrs := crdtNodes(t, 3)
		var rs []*replicaNode
		for i, n := range ns {
			rs = append(rs, startReplica(t, ctx, distsys.AWORSetKind, n, i+1, addrs, distsys.CRDTOptions{Interval: 20 * time.Millisecond}))
		}
		a, b, c := tla.String("a"), tla.String("b"), tla.String("c")
		if got := rs[0].do(t, ctx, op("add", a)); !tla.Equal(got, tla.Set(a)) {
			t.Fatalf("reply %v, want {a}", got)
		}
		rs[1].do(t, ctx, op("add", b))
		rs[2].do(t, ctx, op("add", c))
		for _, r := range rs {
			waitValue(t, ctx, r.crdt, tla.Set(a, b, c))
		}
		// Replica 1 removes b, having seen the add: it goes for good.
		if got := rs[0].do(t, ctx, op("remove", b)); !tla.Equal(got, tla.Set(a, c)) {
			t.Fatalf("reply %v, want {a, c}", got)
		}
		for _, r := range rs {
			waitValue(t, ctx, r.crdt, tla.Set(a, c))
		}
	})
}

// TestCRDTAddWinsOverConcurrentRemove: replica 2 removes x while replica
// 1 adds it again without having heard of the remove (gossip is paused by
// giving them a long interval and gossiping by hand): after they exchange
// states both hold x.
func TestCRDTAddWinsOverConcurrentRemove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, addrs := crdtNodes(t, 2)
	slow := distsys.CRDTOptions{Interval: time.Hour}
	r1 := startReplica(t, ctx, distsys.AWORSetKind, ns[0], 1, addrs, slow)
	r2 := startReplica(t, ctx, distsys.AWORSetKind, ns[1], 2, addrs, slow)
	x := tla.String("x")
	r1.do(t, ctx, op("add", x))
	r1.crdt.GossipNow()
	waitValue(t, ctx, r2.crdt, tla.Set(x))
	r2.do(t, ctx, op("remove", x)) // saw r1's first add
	r1.do(t, ctx, op("add", x))    // concurrent with the remove
	r1.crdt.GossipNow()
	r2.crdt.GossipNow()
	if err := r2.crdt.Wait(ctx, func(tla.Value) bool { return r2.crdt.Merged() >= 2 }); err != nil {
		t.Fatal(err)
	}
	if err := r1.crdt.Wait(ctx, func(tla.Value) bool { return r1.crdt.Merged() >= 1 }); err != nil {
		t.Fatal(err)
	}
	for i, r := range []*replicaNode{r1, r2} {
		if v := r.crdt.Value(); !tla.Equal(v, tla.Set(x)) {
			t.Fatalf("replica %d holds %v, want {x}: the concurrent add must win", i+1, v)
		}
	}
}

// TestCRDTPersists: with a Path, a replica closed and reopened on the
// same file has the updates it committed; a file that holds something
// else, or another kind of CRDT, is refused.
func TestCRDTPersists(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	ns, addrs := crdtNodes(t, 1)
	c, err := distsys.NewCRDT(ns[0], tla.Int(1), distsys.GCounterKind, addrs, distsys.CRDTOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Index(tla.Int(1))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []int64{3, 4} {
		if err := res.Write(ctx, op("inc", tla.Int(k))); err != nil {
			t.Fatal(err)
		}
		if err := res.PreCommit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := res.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// An aborted write leaves no trace, in memory or on disk.
	if err := res.Write(ctx, op("inc", tla.Int(100))); err != nil {
		t.Fatal(err)
	}
	res.Abort()
	c.Close()
	again, err := distsys.NewCRDT(ns[0], tla.Int(1), distsys.GCounterKind, addrs, distsys.CRDTOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if v := again.Value(); v.String() != "7" {
		t.Fatalf("reopened: %v, want 7", v)
	}
	if _, err := distsys.NewCRDT(ns[0], tla.Int(1), distsys.AWORSetKind, addrs, distsys.CRDTOptions{Path: path}); err == nil || !strings.Contains(err.Error(), "holds a gcounter, not a aworset") {
		t.Fatalf("other kind: %v", err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := distsys.NewCRDT(ns[0], tla.Int(1), distsys.GCounterKind, addrs, distsys.CRDTOptions{Path: path}); !errors.Is(err, distsys.ErrCRDT) {
		t.Fatalf("garbage file: %v", err)
	}
}

// TestCRDTResourceRejects: another replica's index, a malformed
// operation (an error at the write, naming the operation), a message that
// is not a state (dropped and counted, the replica unharmed).
func TestCRDTResourceRejects(t *testing.T) {
	ns, addrs := crdtNodes(t, 2)
	c, err := distsys.NewCRDT(ns[0], tla.Int(1), distsys.AWORSetKind, addrs, distsys.CRDTOptions{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Index(tla.Int(2)); err == nil || !strings.Contains(err.Error(), "only this replica's state") {
		t.Fatalf("crdt[2]: %v", err)
	}
	res, _ := c.Index(tla.Int(1))
	if err := res.Write(context.Background(), op("inc", tla.Int(1))); !errors.Is(err, distsys.ErrCRDT) || !strings.Contains(err.Error(), `<<"inc", 1>>`) {
		t.Fatalf("bad operation: %v", err)
	}
	// A read sees the section's own write, an abort drops it.
	if err := res.Write(context.Background(), op("add", tla.Int(9))); err != nil {
		t.Fatal(err)
	}
	if v, err := res.Read(context.Background()); err != nil || v.String() != "{9}" {
		t.Fatalf("read in section: %v, %v", v, err)
	}
	res.Abort()
	if v := c.Value(); v.String() != "{}" {
		t.Fatalf("after abort: %v", v)
	}
	for _, junk := range [][]byte{{0x47}, {0x47, 9}, {0x47, 1, 0}, {1, 2, 3}} {
		if err := ns[1].Send(ns[0].Local(), junk); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c.Dropped() < 4 {
		select {
		case <-ctx.Done():
			t.Fatalf("dropped %d of 4 junk messages", c.Dropped())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := distsys.NewCRDT(ns[0], tla.Int(1), distsys.CRDTKind(7), addrs, distsys.CRDTOptions{}); err == nil {
		t.Fatal("unknown kind accepted")
	}
}
