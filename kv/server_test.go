package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"strata/smr"
	"strata/stack"
	"strata/stack/layers"
)

// quietLog discards the log, unless STRATA_KV_DEBUG is set: then debug
// lines go to stderr.
func quietLog() *slog.Logger {
	// STRATA_KV_DEBUG=1 logs everything to stderr, =info the smr and kv
	// events (campaigns, leaders, step-downs) only.
	switch os.Getenv("STRATA_KV_DEBUG") {
	case "":
	case "info":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	default:
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func loopbackNode(t *testing.T) *stack.Node {
	t.Helper()
	n, err := layers.Listen("udp:127.0.0.1:0", Props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// fakeCluster starts n servers over one fake log on loopback nodes.
func fakeCluster(t *testing.T, n int, opts MachineOptions) (*fakeLog, []*Server, []stack.Addr) {
	t.Helper()
	var nodes []*stack.Node
	var addrs []stack.Addr
	var saddrs []string
	for range n {
		nd := loopbackNode(t)
		nodes, addrs, saddrs = append(nodes, nd), append(addrs, nd.Local()), append(saddrs, string(nd.Local()))
	}
	l := newFakeLog(saddrs, opts)
	var servers []*Server
	for i, nd := range nodes {
		s := newServer(ServerConfig{Node: nd, Replica: smr.Config{ID: uint64(i + 1)}, Logger: quietLog(), RequestTimeout: 2 * time.Second}, l.reps[i], l.reps[i].m)
		servers = append(servers, s)
		t.Cleanup(func() { s.Close() })
	}
	return l, servers, addrs
}

func newTestClient(t *testing.T, servers []stack.Addr, timeout time.Duration) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{Node: loopbackNode(t), Servers: servers, AttemptTimeout: timeout, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// exercise runs every operation through c and checks the answers.
func exercise(t *testing.T, ctx context.Context, c *Client, prefix string) {
	t.Helper()
	k := func(s string) string { return prefix + s }
	r, err := c.Put(ctx, k("a"), []byte("1"))
	if err != nil || !r.Succeeded || r.Version != 1 || r.Existed || r.Rev == 0 {
		t.Fatalf("put: %+v %v", r, err)
	}
	first := r.Rev
	kv, err := c.Get(ctx, k("a"))
	if err != nil || string(kv.Value) != "1" || kv.Version != 1 || kv.Create != first || kv.Mod != first {
		t.Fatalf("get: %+v %v", kv, err)
	}
	if _, err := c.Get(ctx, k("missing")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}
	if r, err = c.CAS(ctx, k("a"), 2, []byte("x")); err != nil || r.Succeeded || r.Version != 1 {
		t.Fatalf("cas with a wrong version: %+v %v", r, err)
	}
	if r, err = c.CAS(ctx, k("a"), 1, []byte("2")); err != nil || !r.Succeeded || r.Version != 2 {
		t.Fatalf("cas: %+v %v", r, err)
	}
	if r, err = c.CAS(ctx, k("b"), 0, []byte("new")); err != nil || !r.Succeeded || r.Version != 1 {
		t.Fatalf("cas of an absent key: %+v %v", r, err)
	}
	for i := range 5 {
		if _, err := c.Put(ctx, k(fmt.Sprintf("s%d", i)), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	kvs, more, err := c.Scan(ctx, k("s1"), k("s4"), 0)
	if err != nil || more || len(kvs) != 3 || kvs[0].Key != k("s1") || kvs[2].Key != k("s3") {
		t.Fatalf("scan [s1,s4): %v more %v %v", kvs, more, err)
	}
	kvs, more, err = c.Scan(ctx, k(""), "", 2, SequentialRead())
	if err != nil || !more || len(kvs) != 2 || kvs[0].Key != k("a") || kvs[1].Key != k("b") {
		t.Fatalf("scan with limit 2: %v more %v %v", kvs, more, err)
	}
	// A watch from the first put sees every change of the prefix since
	// (the failed CAS changed nothing).
	evs, next, err := c.Poll(ctx, prefix, true, first, time.Second)
	if err != nil || len(evs) != 8 || evs[0].KV.Key != k("a") || evs[0].Type != EventPut || next <= evs[7].KV.Mod {
		t.Fatalf("watch from %d: %d events, next %d, %v", first, len(evs), next, err)
	}
	// A watch waiting for the next event gets the delete.
	got := make(chan []Event, 1)
	go func() {
		evs, _, err := c.Poll(ctx, k("a"), false, next, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- evs
	}()
	time.Sleep(50 * time.Millisecond)
	if r, err = c.Delete(ctx, k("a")); err != nil || !r.Succeeded || !r.Existed || r.Version != 0 {
		t.Fatalf("delete: %+v %v", r, err)
	}
	if evs := <-got; len(evs) != 1 || evs[0].Type != EventDelete || evs[0].KV.Key != k("a") || evs[0].KV.Mod != r.Rev {
		t.Fatalf("watch for the delete: %+v (delete at %d)", evs, r.Rev)
	}
	if r, err = c.Delete(ctx, k("a")); err != nil || r.Succeeded || r.Existed {
		t.Fatalf("second delete: %+v %v", r, err)
	}
	if _, err := c.Get(ctx, k("a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}

// TestServerFake: every operation through a client that knows only a
// follower: the follower forwards writes (and linearizable reads the fake
// refuses nowhere) to the leader.
func TestServerFake(t *testing.T) {
	_, servers, addrs := fakeCluster(t, 3, MachineOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exercise(t, ctx, newTestClient(t, addrs, time.Second), "all/")
	exercise(t, ctx, newTestClient(t, addrs[2:], time.Second), "follower/")
	if servers[2].Stats().Forwarded == 0 {
		t.Fatal("the follower forwarded nothing")
	}
}

// TestRetryAppliedOnce: the leader applies a write but its reply never
// comes (it stalls); the client retries on the next server with the same
// sequence number, which the leader, stalled no more, answers from the
// session: the write was applied once.
func TestRetryAppliedOnce(t *testing.T) {
	l, _, addrs := fakeCluster(t, 3, MachineOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newTestClient(t, addrs, 300*time.Millisecond)
	c.preferred = 0
	l.reps[0].stall.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := c.Put(ctx, "once", []byte("v"))
		done <- err
	}()
	// Let the first try apply and time out and a retry reach the log
	// (forwarded by another server), then unstall: the next retry's
	// answer comes from the session.
	for {
		l.mu.Lock()
		n := len(l.cmds)
		l.mu.Unlock()
		if n >= 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the put was not retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	l.reps[0].stall.Store(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	kv, err := c.Get(ctx, "once")
	if err != nil || kv.Version != 1 {
		t.Fatalf("after a retried put: %+v %v (version 1 means applied once)", kv, err)
	}
}

// TestLeaderChangeFake: the leader's server closes and another replica
// leads; the client keeps working without an error.
func TestLeaderChangeFake(t *testing.T) {
	l, servers, addrs := fakeCluster(t, 3, MachineOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newTestClient(t, addrs, 300*time.Millisecond)
	c.preferred = 0
	for i := range 20 {
		if i == 10 {
			servers[0].Close()
			l.setLeader(-1)
			go func() {
				time.Sleep(200 * time.Millisecond)
				l.setLeader(1)
			}()
		}
		if _, err := c.Put(ctx, fmt.Sprintf("k%d", i), []byte("v")); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	kvs, _, err := c.Scan(ctx, "", "", 0)
	if err != nil || len(kvs) != 20 {
		t.Fatalf("scan: %d keys, %v", len(kvs), err)
	}
}

// TestBadRequests: malformed bytes, unknown operations and oversize
// fields get their errors over the wire, and the server keeps serving.
func TestBadRequests(t *testing.T) {
	_, _, addrs := fakeCluster(t, 1, MachineOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := loopbackNode(t)
	raw := func(b []byte) error {
		out, err := n.Call(ctx, addrs[0], b, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r, err := DecodeResponse(out)
		if err != nil {
			t.Fatal(err)
		}
		return r.Err()
	}
	for _, c := range []struct {
		b    []byte
		want error
	}{
		{nil, ErrMalformed},
		{[]byte("GET / HTTP/1.1"), ErrMalformed},
		{[]byte{reqMagic, 1}, ErrMalformed},
		{EncodeRequest(&Request{Op: 77, Key: "k"}), ErrUnknownOp},
		{EncodeRequest(&Request{Op: OpGet, Key: strings.Repeat("x", MaxKey+1)}), ErrKeyTooLarge},
		{EncodeRequest(&Request{Op: OpPut, Client: 1, Seq: 1, Key: "k", Value: make([]byte, MaxValue+1)}), ErrValueTooLarge},
		{EncodeRequest(&Request{Op: OpPut, Key: "k"}), ErrMalformed},
		{EncodeRequest(&Request{Op: OpDelete, Client: 1, Seq: 1}), ErrEmptyKey},
	} {
		if err := raw(c.b); !errors.Is(err, c.want) {
			t.Errorf("request %q...: %v, want %v", c.b[:min(len(c.b), 16)], err, c.want)
		}
	}
	// The client refuses the same before sending.
	c := newTestClient(t, addrs, time.Second)
	if _, err := c.Put(ctx, "", []byte("v")); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("client put of an empty key: %v", err)
	}
	if _, err := c.Put(ctx, "k", make([]byte, MaxValue+1)); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("client put of a large value: %v", err)
	}
	if _, err := c.Put(ctx, "k", []byte("still serving")); err != nil {
		t.Fatal(err)
	}
}

// TestWatchCompacted: a watch older than the history gets ErrCompacted
// through the client.
func TestWatchCompacted(t *testing.T) {
	_, _, addrs := fakeCluster(t, 1, MachineOptions{HistoryEvents: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := newTestClient(t, addrs, time.Second)
	for i := range 10 {
		if _, err := c.Put(ctx, "w", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Poll(ctx, "w", false, 1, 0); !errors.Is(err, ErrCompacted) {
		t.Fatalf("watch from 1 with 3 events kept: %v", err)
	}
	evs, _, err := c.Poll(ctx, "w", false, 8, 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("watch from 8: %v %v", evs, err)
	}
}
