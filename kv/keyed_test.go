package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"strata/stack"
	"strata/wor"
)

// A bucket applies writes as etcd's model says (versions count puts from
// creation; create and mod are the bucket's versions), keeps its keys in
// order, and round-trips through its encoding.
func TestBucketApply(t *testing.T) {
	b := &bucket{}
	steps := []struct {
		r       Request
		ver     uint64
		changed bool
		want    Response
	}{
		{Request{Op: OpPut, Key: "b", Value: []byte("1")}, 1, true, Response{Rev: 1, Version: 1, Succeeded: true}},
		{Request{Op: OpPut, Key: "a", Value: []byte("x")}, 2, true, Response{Rev: 2, Version: 1, Succeeded: true}},
		{Request{Op: OpPut, Key: "b", Value: []byte("2")}, 3, true, Response{Rev: 3, Version: 2, Succeeded: true, Existed: true}},
		{Request{Op: OpCAS, Key: "b", Version: 1, Value: []byte("3")}, 4, false, Response{Rev: 4, Version: 2, Existed: true}},
		{Request{Op: OpCAS, Key: "b", Version: 2, Value: []byte("3")}, 4, true, Response{Rev: 4, Version: 3, Succeeded: true, Existed: true}},
		{Request{Op: OpCAS, Key: "c", Version: 0, Value: []byte("new")}, 5, true, Response{Rev: 5, Version: 1, Succeeded: true}},
		{Request{Op: OpDelete, Key: "a"}, 6, true, Response{Rev: 6, Succeeded: true, Existed: true}},
		{Request{Op: OpDelete, Key: "a"}, 7, false, Response{Rev: 7}},
	}
	for i, st := range steps {
		got, changed := b.apply(&st.r, st.ver)
		if changed != st.changed || fmt.Sprint(*got) != fmt.Sprint(st.want) {
			t.Fatalf("step %d (%s %s): %+v changed %v; want %+v changed %v", i, st.r.Op, st.r.Key, *got, changed, st.want, st.changed)
		}
		b.remember(uint64(i%3+1), uint64(i+1), EncodeResponse(got))
	}
	var keys []string
	for _, e := range b.entries {
		keys = append(keys, fmt.Sprintf("%s=%s v%d c%d m%d", e.key, e.value, e.vers, e.create, e.mod))
	}
	if fmt.Sprint(keys) != "[b=3 v3 c1 m4 c=new v1 c5 m5]" {
		t.Fatalf("entries %v", keys)
	}
	if len(b.sessions) != 3 {
		t.Fatalf("%d sessions, want one per client (3)", len(b.sessions))
	}
	back, err := decodeBucket(b.encode())
	if err != nil || !bytes.Equal(back.encode(), b.encode()) {
		t.Fatalf("round trip: %v", err)
	}
	for i := range 40 {
		b.remember(uint64(100+i), 1, nil)
	}
	if len(b.sessions) != keyedSessions || b.sessions[len(b.sessions)-1].client != 139 {
		t.Fatalf("sessions not bounded to the most recent %d: %d", keyedSessions, len(b.sessions))
	}
}

// FuzzDecodeBucket: no bucket version makes the decoder panic; what it
// accepts re-encodes to a version that decodes to the same bucket.
func FuzzDecodeBucket(f *testing.F) {
	b := &bucket{entries: []bucketEntry{{key: "a", value: []byte("v"), create: 1, mod: 2, vers: 2}, {key: "b", create: 3, mod: 3, vers: 1}}}
	b.remember(7, 9, []byte("result"))
	f.Add(b.encode())
	f.Add([]byte{bucketMagic, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeBucket(raw)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		// Varints have more than one encoding, so compare what decodes.
		again, err := decodeBucket(got.encode())
		if err != nil || !bytes.Equal(again.encode(), got.encode()) {
			t.Fatalf("re-encoding of %x does not decode to the same bucket: %v", raw, err)
		}
	})
}

// TestKeyedEndToEnd: two keyed servers over five wormservers (the ec
// engine, K=3) on loopback UDP. Every write through one server is read
// through the other; a retried write (same client and sequence) is
// answered with its first result and applied once; scans are refused
// with ErrUnsupported; old versions are collected.
func TestKeyedEndToEnd(t *testing.T) {
	wors := worCluster(t, 5)
	var addrs []stack.Addr
	var servers []*KeyedServer
	for i := range 2 {
		nd := loopbackNode(t)
		e, err := wor.NewEngine("ec", nd, wors, uint64(i+1), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s, err := StartKeyedServer(KeyedServerConfig{Node: nd, Client: wor.NewClient(e), Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		addrs, servers = append(addrs, nd.Local()), append(servers, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(i int) *Client {
		c, err := NewClient(ClientConfig{Node: loopbackNode(t), Servers: addrs[i : i+1], Logger: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c0, c1 := client(0), client(1)
	for i := range 10 {
		key := fmt.Sprintf("key%d", i%3)
		w, err := c0.Put(ctx, key, fmt.Appendf(nil, "v%d", i))
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		kv, err := c1.Get(ctx, key)
		if err != nil || string(kv.Value) != fmt.Sprintf("v%d", i) || kv.Version != w.Version || kv.Mod != w.Rev {
			t.Fatalf("get %s after put %d (%+v): %+v, %v", key, i, w, kv, err)
		}
	}
	if w, err := c1.CAS(ctx, "key0", 1, []byte("stale")); err != nil || w.Succeeded || w.Version != 4 {
		t.Fatalf("stale CAS: %+v, %v", w, err)
	}
	if w, err := c1.CAS(ctx, "key0", 4, []byte("fresh")); err != nil || !w.Succeeded || w.Version != 5 {
		t.Fatalf("CAS: %+v, %v", w, err)
	}
	if w, err := c0.Delete(ctx, "key1"); err != nil || !w.Succeeded {
		t.Fatalf("delete: %+v, %v", w, err)
	}
	if _, err := c1.Get(ctx, "key1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, _, err := c0.Scan(ctx, "", "", 10); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("scan: %v, want ErrUnsupported", err)
	}
	// A retried write: the same request twice, through either server.
	req := EncodeRequest(&Request{Op: OpPut, Key: "dup", Value: []byte("once"), Client: 42, Seq: 1})
	first, err := DecodeResponse(servers[0].Serve(req))
	if err != nil || first.Status != StatusOK {
		t.Fatalf("first attempt: %+v, %v", first, err)
	}
	again, err := DecodeResponse(servers[1].Serve(req))
	if err != nil || fmt.Sprint(*again) != fmt.Sprint(*first) {
		t.Fatalf("retry answered %+v, %v; the first attempt %+v", again, err, first)
	}
	if kv, err := c0.Get(ctx, "dup"); err != nil || kv.Version != 1 {
		t.Fatalf("a retried put applied twice: %+v, %v", kv, err)
	}
	stale := EncodeRequest(&Request{Op: OpPut, Key: "dup", Value: []byte("x"), Client: 42, Seq: 2})
	servers[0].Serve(stale)
	// A late duplicate of sequence 1 after 2: refused as stale, or (by a
	// server whose latest known version still shows sequence 1)
	// answered with sequence 1's result; never applied again.
	if r, _ := DecodeResponse(servers[1].Serve(req)); r.Status != StatusStaleSequence && fmt.Sprint(*r) != fmt.Sprint(*first) {
		t.Fatalf("a late duplicate of sequence 1 after 2: %+v", *r)
	}
	if r, _ := DecodeResponse(servers[0].Serve(req)); r.Status != StatusStaleSequence {
		t.Fatalf("a late duplicate of sequence 1 at the server that applied 2: status %v, want stale", r.Status)
	}
	if kv, err := c1.Get(ctx, "dup"); err != nil || string(kv.Value) != "x" || kv.Version != 2 {
		t.Fatalf("after the late duplicate: %+v, %v; want x at version 2", kv, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for servers[0].Stats().Collected == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if servers[0].Stats().Collected == 0 {
		t.Fatal("no old version was collected")
	}
}
