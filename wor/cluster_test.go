package wor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"strata/stack"
)

func TestClusterConfigFile(t *testing.T) {
	good := `{"engine": "paxos", "directory": ["udp:127.0.0.1:1", "udp:127.0.0.1:2", "udp:127.0.0.1:3"],
	  "partitions": [["udp:127.0.0.1:1", "udp:127.0.0.1:2", "udp:127.0.0.1:3"], ["udp:127.0.0.1:4"]]}`
	c, err := ParseClusterConfig([]byte(good))
	if err != nil || len(c.Partitions) != 2 || c.Engine != "paxos" {
		t.Fatalf("good config: %+v, %v", c, err)
	}
	sec := `{"directory": ["a"], "partitions": [["a"]], "security": {"key_file": "cluster.key", "tls_dir": "tls", "tls_cert": "/etc/strata/node.pem"}}`
	if c, err := ParseClusterConfig([]byte(sec)); err != nil || *c.Security != (Security{KeyFile: "cluster.key", TLSDir: "tls", TLSCert: "/etc/strata/node.pem"}) {
		t.Fatalf("a security section: %+v, %v", c, err)
	}
	for _, bad := range []struct{ text, want string }{
		{`{"directory": ["a"], "partitions": [["a"]], "replicas": 3}`, "unknown field"},
		{`{"directory": ["a"], "partitions": [["a"]], "engine": "raft"}`, "unknown engine"},
		{`{"directory": [], "partitions": [["a"]]}`, "no directory"},
		{`{"directory": ["a"], "partitions": []}`, "0 partitions"},
		{`{"directory": ["a"], "partitions": [[]]}`, "partition 0 has no servers"},
		{`{"directory": ["a"], "partitions": [["a", "a"]]}`, "twice"},
		{`{"directory": ["a"], "partitions": [["a"]]} {}`, "trailing"},
		{`{"directory": "a"}`, "cannot unmarshal"},
		{`{"directory": ["a"], "partitions": [["a"]], "plan": {"k": 1, "r": 0, "q1a": 1, "q1b": 1, "q2": 1}}`, "a plan is for engine ec"},
		{`{"engine": "ec", "directory": ["a"], "partitions": [["a", "b", "c", "d", "e"]], "plan": {"k": 3, "r": 2, "q1a": 3, "q1b": 3, "q2": 4}}`, RuleQ1bQ2},
		{`{"engine": "ec", "directory": ["a"], "partitions": [["a", "b", "c", "d", "e"], ["f", "g", "h"]], "plan": {"k": 3, "r": 2, "q1a": 3, "q1b": 4, "q2": 4}}`, "partition 1: wor: bad ec plan k=3 r=2 q1a=3 q1b=4 q2=4 for 3 servers: breaks rule k+r=n"},
		{`{"engine": "ec", "directory": ["a"], "partitions": [["a", "b", "c", "d", "e"], ["f", "g", "h"]], "plans": [null]}`, "1 plans for 2 partitions"},
		{`{"engine": "ec", "directory": ["a"], "partitions": [["a", "b", "c", "d", "e"], ["f", "g", "h"]], "plans": [null, {"k": 2, "r": 1, "q1a": 2, "q1b": 2, "q2": 2}]}`, "partition 1: wor: bad ec plan k=2 r=1 q1a=2 q1b=2 q2=2 for 3 servers: breaks rule q1b+q2>=n+k"},
		{`{"directory": ["a"], "partitions": [["a"]], "plans": [{"k": 1, "r": 0, "q1a": 1, "q1b": 1, "q2": 1}]}`, "a plan is for engine ec"},
		{`{"directory": ["a"], "partitions": [["a"]], "security": {}}`, "security names no file"},
		{`{"directory": ["a"], "partitions": [["a"]], "security": {"key": "c2VjcmV0"}}`, "unknown field \"key\""},
		{`{"directory": ["a"], "partitions": [["a"]], "security": {"tls_ca": "ca.pem", "tls_key": "k.pem"}}`, "tls_ca, tls_cert and tls_key are needed together"},
	} {
		if _, err := ParseClusterConfig([]byte(bad.text)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one mentioning %q", bad.text, err, bad.want)
		}
	}
}

// An ec cluster file takes a plan as strata geo plan --json prints it
// (extra fields and all), or none (the default plan per partition).
func TestClusterConfigECPlan(t *testing.T) {
	geoOut := `{"protocol": "pando", "f": 1, "sites": ["a", "b", "c", "d", "e"], "k": 2, "r": 3, "q1a": 2, "q1b": 3, "q2": 4,
	  "front_ends": [{"name": "a", "read_ms": 10, "write_ms": 20}], "read_ms": 10, "write_ms": 20, "storage_overhead": 2.5}`
	cfg := `{"engine": "ec", "directory": ["d1"], "partitions": [["a", "b", "c", "d", "e"]], "plan": ` + geoOut + `}`
	c, err := ParseClusterConfig([]byte(cfg))
	if err != nil || c.Plan == nil || *c.Plan != (ECPlan{K: 2, R: 3, Q1a: 2, Q1b: 3, Q2: 4}) {
		t.Fatalf("ec config with a geo plan: %+v, %v", c, err)
	}
	c, err = ParseClusterConfig([]byte(`{"engine": "ec", "directory": ["d1"], "partitions": [["a", "b", "c", "d", "e"], ["f", "g", "h"]]}`))
	if err != nil || c.Plan != nil {
		t.Fatalf("ec config without a plan: %+v, %v", c, err)
	}
	if p, err := c.ecPlan(0, 5); err != nil || p != (ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}) {
		t.Fatalf("default plan for 5: %+v, %v", p, err)
	}
	// Through a cluster of five real servers (the directory on three of
	// them): writes and reads go through the ec engine.
	servers, mk, srvs := realClusterServers(t, 5)
	var ss []string
	for _, a := range servers {
		ss = append(ss, string(a))
	}
	c = &ClusterConfig{Engine: "ec", Directory: ss[:3], Partitions: [][]string{ss}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	cl, err := NewCluster(mk(), c, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := NewClient(cl)
	if err := client.Alloc(ctx, 2, []byte("meta")); err != nil {
		t.Fatal(err)
	}
	cid, err := client.Capture(ctx, 2, 0)
	if err == nil {
		err = client.Write(ctx, 2, 0, []byte("coded"), cid)
	}
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCluster(mk(), c, 2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := NewClient(other).Read(ctx, 2, 0); err != nil || string(v) != "coded" {
		t.Fatalf("read through another cluster client: %q, %v", v, err)
	}
	// Each server that accepted holds its own split, not the value.
	codec, _ := newSplitCodec(5, 3)
	holders := 0
	for i, srv := range srvs {
		srv.mu.Lock()
		a := srv.accs[Addr(2, 0)]
		var v []byte
		if a != nil && a.has {
			v = bytes.Clone(a.value)
		}
		srv.mu.Unlock()
		if v == nil {
			continue
		}
		if _, err := codec.decodeSplit(v, i); err != nil || bytes.Contains(v, []byte("coded")) {
			t.Fatalf("server %d holds %q (%v), not its split", i, v, err)
		}
		holders++
	}
	if holders < 4 {
		t.Fatalf("%d servers hold a split, want a Phase 2 quorum", holders)
	}
	if _, err := cl.Reconfigure(ctx, 0, ss[:3]); err == nil || !strings.Contains(err.Error(), "ec engine cannot be reconfigured") {
		t.Fatalf("reconfiguring an ec partition: %v", err)
	}
}

// Partitions of one ec cluster can have plans of their own (one per
// access set, as Pando plans them): here partition 0 erasure-codes over
// five servers with a geo plan's k=2, partition 1 replicates over three
// (k=1). Each segment's registers follow its partition's plan: the
// servers of partition 0 hold a third-size split, those of partition 1
// the whole value, and both read back through another client; the
// configuration a client reports keeps the plans.
func TestClusterPlansPerPartition(t *testing.T) {
	servers, mk, srvs := realClusterServers(t, 8)
	var ss []string
	for _, a := range servers {
		ss = append(ss, string(a))
	}
	k2 := &ECPlan{K: 2, R: 3, Q1a: 2, Q1b: 3, Q2: 4}
	k1 := &ECPlan{K: 1, R: 2, Q1a: 2, Q1b: 2, Q2: 2}
	c := &ClusterConfig{Engine: "ec", Directory: ss[:3], Partitions: [][]string{ss[:5], ss[5:]}, Plans: []*ECPlan{k2, k1}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	cl, err := NewCluster(mk(), c, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := NewClient(cl)
	value := bytes.Repeat([]byte("0123456789"), 300) // 3,000 bytes
	for _, seg := range []uint64{2, 3} {             // partition 0, partition 1
		if err := client.Alloc(ctx, seg, nil); err != nil {
			t.Fatal(err)
		}
		if err := client.Propose(ctx, seg, 0, value); err != nil {
			t.Fatalf("segment %d: %v", seg, err)
		}
	}
	other, err := NewCluster(mk(), c, 2, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range []uint64{2, 3} {
		if v, err := NewClient(other).Read(ctx, seg, 0); err != nil || !bytes.Equal(v, value) {
			t.Fatalf("segment %d read through another client: %d bytes, %v", seg, len(v), err)
		}
	}
	held := func(i int, addr uint64) int {
		srvs[i].mu.Lock()
		defer srvs[i].mu.Unlock()
		if a := srvs[i].accs[addr]; a != nil && a.has {
			return len(a.value)
		}
		return -1
	}
	for i := range 8 {
		seg, want := uint64(2), splitHdr+shardSize(len(value), 2)
		if i >= 5 {
			seg, want = 3, splitHdr+len(value)
		}
		if n := held(i, Addr(seg, 0)); n != want && n != -1 {
			t.Errorf("server %d holds %d bytes of segment %d's register, want %d", i, n, seg, want)
		}
	}
	got := cl.ClusterConfig()
	if len(got.Plans) != 2 || *got.Plans[0] != *k2 || *got.Plans[1] != *k1 {
		t.Fatalf("the client's configuration lost the plans: %+v", got.Plans)
	}
}

// TestReconfigureUnderLoad: four clients race writes and reads on
// registers of two partitions while partition 0 is reconfigured twice (a
// failed server replaced, then a live one) and partition 1 once. Every
// per-register history is linearizable (porcupine, write-once model), no
// register shows two values, a client that starts from the original
// cluster file finds the new servers and reads every acknowledged value,
// and requests under the sealed configuration are refused.
func TestReconfigureUnderLoad(t *testing.T) {
	addrs, mk, servers, nodes := realClusterNodes(t, 5)
	servers[3].Join()
	servers[4].Join()
	s := func(i int) string { return string(addrs[i]) }
	cfg := &ClusterConfig{
		Directory:  []string{s(0), s(1), s(2)},
		Partitions: [][]string{{s(0), s(1), s(2)}, {s(0), s(1), s(2)}},
	}
	newClient := func(id uint64) (*Client, *Cluster) {
		e, err := NewCluster(mk(), cfg, id, 150*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return NewClient(e), e
	}
	ctx := context.Background()
	admin, adminCl := newClient(100)
	segs := []uint64{10, 11} // partitions 0 and 1
	for _, seg := range segs {
		if err := admin.Alloc(ctx, seg, nil); err != nil {
			t.Fatal(err)
		}
	}

	type rec struct {
		addr uint64
		op   porcupine.Operation
	}
	var hmu sync.Mutex
	var history []rec
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for k := 0; k < 4; k++ {
		c, _ := newClient(uint64(k + 1))
		rng := rand.New(rand.NewPCG(uint64(k), 7))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				seg, off := segs[rng.IntN(2)], uint64(rng.IntN(6))
				call := time.Now().UnixNano()
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				var in linIn
				var out linOut
				if rng.IntN(2) == 0 {
					in = linIn{write: true, value: fmt.Sprintf("c%d-%d", k, i)}
					cid, err := c.Capture(cctx, seg, off)
					if err == nil {
						err = c.Write(cctx, seg, off, []byte(in.value), cid)
					}
					var we *WrittenError
					switch {
					case err == nil:
						out = linOut{kind: "ok"}
					case errors.As(err, &we):
						out = linOut{kind: "written", value: string(we.Value)}
					default:
						out = linOut{kind: "unknown"}
					}
				} else {
					v, err := c.Read(cctx, seg, off)
					switch {
					case err == nil:
						out = linOut{kind: "value", value: string(v)}
					case errors.Is(err, ErrUnwritten):
						out = linOut{kind: "unwritten"}
					default:
						out = linOut{kind: "unknown"}
					}
				}
				cancel()
				ret := time.Now().UnixNano()
				if out.kind == "unknown" {
					ret = math.MaxInt64
				}
				hmu.Lock()
				history = append(history, rec{Addr(seg, off), porcupine.Operation{ClientId: k, Input: in, Call: call, Output: out, Return: ret}})
				hmu.Unlock()
			}
		}()
	}

	time.Sleep(150 * time.Millisecond)
	// Server 2 fails; partition 0 replaces it by the new server 3.
	nodes[2].Close()
	if ep, err := adminCl.Reconfigure(ctx, 0, []string{s(0), s(1), s(3)}); err != nil || ep != 1 {
		t.Fatalf("reconfigure partition 0 to epoch 1: %d, %v", ep, err)
	}
	time.Sleep(150 * time.Millisecond)
	// Partition 0 replaces the live server 1 by server 4; partition 1
	// replaces the failed server 2 by server 3.
	if ep, err := adminCl.Reconfigure(ctx, 0, []string{s(0), s(3), s(4)}); err != nil || ep != 2 {
		t.Fatalf("reconfigure partition 0 to epoch 2: %d, %v", ep, err)
	}
	if ep, err := adminCl.Reconfigure(ctx, 1, []string{s(0), s(1), s(3)}); err != nil || ep != 1 {
		t.Fatalf("reconfigure partition 1 to epoch 1: %d, %v", ep, err)
	}
	time.Sleep(150 * time.Millisecond)
	close(stop)
	wg.Wait()

	byAddr := map[uint64][]porcupine.Operation{}
	acked := map[uint64]string{}
	done := 0
	for _, r := range history {
		byAddr[r.addr] = append(byAddr[r.addr], r.op)
		out := r.op.Output.(linOut)
		switch {
		case out.kind == "ok":
			acked[r.addr] = r.op.Input.(linIn).value
		case out.kind == "written" || out.kind == "value":
			acked[r.addr] = out.value
		}
		if out.kind != "unknown" {
			done++
		}
	}
	if done < 50 {
		t.Fatalf("only %d of %d operations completed", done, len(history))
	}
	for addr, ops := range byAddr {
		if !porcupine.CheckOperations(writeOnceModel.ToModel(), ops) {
			t.Fatalf("address %x: history of %d operations is not linearizable: %v", addr, len(ops), describe(ops))
		}
		seen := ""
		for _, op := range ops {
			out := op.Output.(linOut)
			v := out.value
			if out.kind == "ok" {
				v = op.Input.(linIn).value
			} else if out.kind != "value" && out.kind != "written" {
				continue
			}
			if seen != "" && v != seen {
				t.Fatalf("address %x: two values observed: %q and %q", addr, seen, v)
			}
			seen = v
		}
	}
	// A client starting from the original file (server 2 is gone, 1 is
	// sealed for partition 0) reads every acknowledged value.
	fresh, freshCl := newClient(200)
	for addr, want := range acked {
		v, err := fresh.Read(ctx, addr>>offsetBits, addr&(1<<offsetBits-1))
		if err != nil || string(v) != want {
			t.Fatalf("address %x after reconfiguration: %q, %v; want %q", addr, v, err, want)
		}
	}
	if ep, srv := freshCl.Config(0); ep != 2 || strings.Join(srv, ",") != strings.Join([]string{s(0), s(3), s(4)}, ",") {
		t.Fatalf("fresh client's partition 0: epoch %d %v", ep, srv)
	}
	// Requests under a sealed epoch are refused.
	old := &Paxos{node: mk(), replicas: []stack.Addr{addrs[0], addrs[1]}, timeout: 200 * time.Millisecond, conf: conf{part: 0, epoch: 1}, ballots: freshCl.ballots}
	if _, err := wait(ctx, func(cb func([]byte, error)) { old.Read(Addr(10, 0), cb) }); !errors.Is(err, ErrSealed) {
		t.Fatalf("read at a sealed epoch: %v, want ErrSealed", err)
	}
	for i, srv := range servers {
		if srv.Conflicts != 0 {
			t.Fatalf("server %d saw two values at one ballot", i)
		}
	}
	t.Logf("%d operations (%d completed), %d registers written", len(history), done, len(acked))
}
