package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"strata/smr"
	"strata/stack"
	"strata/wor"
)

// worCluster starts n in-memory wormservers on loopback nodes.
func worCluster(t *testing.T, n int) []stack.Addr {
	t.Helper()
	var addrs []stack.Addr
	for range n {
		nd := loopbackNode(t)
		srv := wor.NewServer(quietLog())
		nd.HandleAsync(srv.HandleAsync)
		srv.SetNotifier(func(to stack.Addr, msg []byte) { nd.Send(to, msg) })
		addrs = append(addrs, nd.Local())
	}
	return addrs
}

// startKV starts kv server id over the wormservers on a node of its own
// (listening on listen: "" for any port).
func startKV(t *testing.T, ctx context.Context, worAddrs []stack.Addr, id uint64) (*Server, *stack.Node) {
	t.Helper()
	nd := loopbackNode(t)
	e, err := wor.NewPaxos(nd, worAddrs, 1+rand.Uint64N(1<<32-1), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartServer(ctx, ServerConfig{
		Node: nd,
		Replica: smr.Config{Client: wor.NewClient(e), ID: id, Log: 1 << 20, SegmentSize: 64, SnapshotEvery: 20,
			Heartbeat: 20 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond, Logger: quietLog()},
		Logger:         quietLog(),
		RequestTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatalf("kv server %d: %v", id, err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, nd
}

// TestEndToEnd: three kv servers over three wormservers on loopback UDP.
// Every operation works through a client of all three and through one
// that knows only one server; then the leader's server stops and the
// client keeps working (the others elect a new leader and the client
// follows); a server started afresh with the stopped one's id catches up
// (snapshot and log) and serves the latest state.
func TestEndToEnd(t *testing.T) {
	const bulk = 60
	worAddrs := worCluster(t, 3)
	// Generous: a few seconds normally, much longer under -race on a
	// loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var servers []*Server
	var nodes []*stack.Node
	var addrs []stack.Addr
	for id := uint64(1); id <= 3; id++ {
		s, nd := startKV(t, ctx, worAddrs, id)
		servers, nodes, addrs = append(servers, s), append(nodes, nd), append(addrs, nd.Local())
	}
	start := time.Now()
	c := newTestClient(t, addrs, 2*time.Second)
	exercise(t, ctx, c, "e2e/")
	// A client that knows one follower only: its writes are forwarded.
	follower := 0
	for i, s := range servers {
		if !s.Stats().Leader {
			follower = i
		}
	}
	exercise(t, ctx, newTestClient(t, addrs[follower:follower+1], 2*time.Second), "via-follower/")
	// A client of every server that starts at a follower: the first
	// write is forwarded, its reply names the leader, and the client
	// goes there from then on (the follower forwards nothing more).
	hinted := newTestClient(t, addrs, 2*time.Second)
	hinted.preferred = follower
	if _, err := hinted.Put(ctx, "hint/0", []byte("x")); err != nil {
		t.Fatal(err)
	}
	before := servers[follower].Stats().Forwarded
	for i := range 10 {
		if _, err := hinted.Put(ctx, fmt.Sprintf("hint/%d", i+1), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := hinted.Get(ctx, "hint/0"); err != nil {
			t.Fatal(err)
		}
	}
	if lead := servers[hinted.preferred].Stats().Leader; !lead || servers[follower].Stats().Forwarded != before {
		t.Fatalf("after a forwarded write the client prefers server %d (leader: %v); the follower forwarded %d more", hinted.preferred, lead, servers[follower].Stats().Forwarded-before)
	}
	// Values far larger than a log register (WormPaxos writes them as
	// parts), up to the service's limit, through the leader and through
	// a follower, read back whole from every server; one byte more is
	// refused with a clear error.
	viaFollower := newTestClient(t, addrs[follower:follower+1], 5*time.Second)
	for i, n := range []int{8000, 100_000, MaxValue} {
		big := make([]byte, n)
		for j := range big {
			big[j] = byte(i + j*7)
		}
		key := fmt.Sprintf("big/%d", n)
		cl := c
		if i%2 == 1 {
			cl = viaFollower
		}
		if _, err := cl.Put(ctx, key, big); err != nil {
			t.Fatalf("put of %d bytes: %v", n, err)
		}
		for k := range addrs {
			got, err := newTestClient(t, addrs[k:k+1], 5*time.Second).Get(ctx, key)
			if err != nil || !bytes.Equal(got.Value, big) {
				t.Fatalf("get of the %d-byte value from server %d: %d bytes, %v", n, k, len(got.Value), err)
			}
		}
	}
	if _, err := c.Put(ctx, "big/over", make([]byte, MaxValue+1)); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("put of MaxValue+1 bytes: %v, want ErrValueTooLarge", err)
	}
	t.Logf("every operation, through all servers and through a follower: %v", time.Since(start))
	start = time.Now()
	// Enough writes to pass a few snapshots.
	for i := range bulk {
		if _, err := c.Put(ctx, fmt.Sprintf("bulk/%03d", i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	t.Logf("%d puts: %v", bulk, time.Since(start))
	leader := -1
	deadline := time.Now().Add(5 * time.Second)
	for leader < 0 && time.Now().Before(deadline) {
		for i, s := range servers {
			if s.Stats().Leader {
				leader = i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if leader < 0 {
		t.Fatal("no server says it leads")
	}
	t.Logf("stopping the leader, server %d", leader+1)
	stopped := time.Now()
	servers[leader].Close()
	nodes[leader].Close()
	r, err := c.Put(ctx, "after-failover", []byte("x"))
	if err != nil {
		t.Fatalf("put after the leader stopped: %v", err)
	}
	t.Logf("first write after the leader stopped took %v", time.Since(stopped))
	exercise(t, ctx, c, "after/")
	kvs, more, err := c.Scan(ctx, "bulk/", "bulk0", 0)
	if err != nil || more || len(kvs) != bulk {
		t.Fatalf("scan of the bulk keys after failover: %d keys, more %v, %v", len(kvs), more, err)
	}
	// A new server with the stopped one's id catches up.
	s, nd := startKV(t, ctx, worAddrs, uint64(leader+1))
	one := newTestClient(t, []stack.Addr{nd.Local()}, time.Second)
	for s.Stats().Revision < r.Rev {
		if ctx.Err() != nil {
			t.Fatalf("the restarted server reached revision %d only, want %d", s.Stats().Revision, r.Rev)
		}
		time.Sleep(10 * time.Millisecond)
	}
	kv, err := one.Get(ctx, "after-failover", SequentialRead())
	if err != nil || string(kv.Value) != "x" {
		t.Fatalf("sequential get at the restarted server: %+v %v", kv, err)
	}
	kvs, _, err = one.Scan(ctx, "bulk/", "bulk0", 0, SequentialRead())
	if err != nil || len(kvs) != bulk {
		t.Fatalf("sequential scan at the restarted server: %d keys, %v", len(kvs), err)
	}
	if servers[follower].Stats().Forwarded == 0 && follower != leader {
		t.Fatalf("the follower forwarded nothing")
	}
}
