package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"strata/distsys/tla"
	"strata/stack"
)

// crdtConverge bounds how long replicas may take to agree after the last
// update: generous for a loaded CI machine (gossip runs every 50 ms).
const crdtConverge = 30 * time.Second

// crdtCluster is three `strata crdt serve` processes of one kind.
type crdtCluster struct {
	t      *testing.T
	procs  []*strataProc
	addrs  []string
	client *stack.Node
}

func newCRDTCluster(t *testing.T, kind string) *crdtCluster {
	t.Helper()
	dir := t.TempDir()
	cl := &crdtCluster{t: t}
	for _, port := range freeUDPPorts(t, 3) {
		cl.addrs = append(cl.addrs, fmt.Sprintf("udp:127.0.0.1:%d", port))
	}
	t.Cleanup(func() {
		for _, p := range cl.procs {
			p.kill()
		}
		if t.Failed() {
			for _, p := range cl.procs {
				t.Logf("%s, last lines of its log:\n%s", p.name, tail(p.logPath, 20))
			}
		}
	})
	for i, a := range cl.addrs {
		p := &strataProc{
			name: fmt.Sprintf("replica %d", i+1), logPath: filepath.Join(dir, fmt.Sprintf("replica-%d.log", i+1)),
			args: []string{"crdt", "serve", "--crdt", kind, "--id", strconv.Itoa(i + 1), "--peers", strings.Join(cl.addrs, ","),
				"--dir", filepath.Join(dir, fmt.Sprintf("crdt-%d", i+1))},
		}
		cl.procs = append(cl.procs, p)
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
		if p.addr != a {
			t.Fatalf("%s listens on %s, want %s", p.name, p.addr, a)
		}
	}
	n, err := listenNode("udp:127.0.0.1:0", crdtProps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	cl.client = n
	return cl
}

// do sends an operation to replica i (1-based) and returns its reply.
func (cl *crdtCluster) do(i int, op tla.Value) tla.Value {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := crdtCall(ctx, cl.client, stack.Addr(cl.addrs[i-1]), op)
	if err != nil {
		cl.t.Fatalf("replica %d, %v: %v", i, op, err)
	}
	return v
}

// converge waits until every running replica reads want.
func (cl *crdtCluster) converge(want tla.Value) {
	cl.t.Helper()
	start := time.Now()
	deadline := start.Add(crdtConverge)
	for i := 1; i <= len(cl.addrs); i++ {
		for {
			got := cl.do(i, tla.Tuple(tla.String("read"), tla.Int(0)))
			if tla.Equal(got, want) {
				break
			}
			if time.Now().After(deadline) {
				cl.t.Fatalf("replica %d reads %v after %v, want %v", i, got, crdtConverge, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cl.t.Logf("all replicas read %v after %v", want, time.Since(start).Round(time.Millisecond))
}

func has(set tla.Value, x string) bool {
	in, err := tla.In(tla.String(x), set)
	b, _ := in.AsBool()
	return err == nil && b
}

func strs(xs ...string) tla.Value {
	var vs []tla.Value
	for _, x := range xs {
		vs = append(vs, tla.String(x))
	}
	return tla.Set(vs...)
}

// TestCRDTProcesses runs each CRDT system compiled from models/crdt as
// three real `strata crdt serve` processes on loopback: updates at every
// replica, one replica killed with SIGKILL while the others take more
// updates, restarted on its directory (it still has the update it
// acknowledged before the kill), updated again; every replica converges
// to the expected value.
func TestCRDTProcesses(t *testing.T) {
	t.Run("aworset", func(t *testing.T) {
		cl := newCRDTCluster(t, "aworset")
		add := func(i int, x string) tla.Value { return cl.do(i, tla.Tuple(tla.String("add"), tla.String(x))) }
		remove := func(i int, x string) tla.Value { return cl.do(i, tla.Tuple(tla.String("remove"), tla.String(x))) }
		for i, x := range []string{"a", "b", "c"} {
			if got := add(i+1, x); !has(got, x) {
				t.Fatalf("replica %d's reply to add %s: %v", i+1, x, got)
			}
		}
		cl.converge(strs("a", "b", "c"))
		cl.procs[1].kill()
		add(1, "d")
		if got := remove(3, "a"); !tla.Equal(got, strs("b", "c", "d")) && !tla.Equal(got, strs("b", "c")) {
			t.Fatalf("replica 3's reply to remove a: %v", got)
		}
		if err := cl.procs[1].start(); err != nil {
			t.Fatal(err)
		}
		// Its own add of b was durable before it was acknowledged.
		if got := cl.do(2, tla.Tuple(tla.String("read"), tla.Int(0))); !has(got, "b") {
			t.Fatalf("restarted replica 2 reads %v: its add of b is lost", got)
		}
		add(2, "e")
		cl.converge(strs("b", "c", "d", "e"))
	})
	t.Run("gcounter", func(t *testing.T) {
		cl := newCRDTCluster(t, "gcounter")
		inc := func(i int, k int64) tla.Value { return cl.do(i, tla.Tuple(tla.String("inc"), tla.Int(k))) }
		for i := 1; i <= 3; i++ {
			inc(i, int64(i))
		}
		cl.converge(tla.Int(6))
		cl.procs[2].kill()
		inc(1, 10)
		if err := cl.procs[2].start(); err != nil {
			t.Fatal(err)
		}
		// Its own 3 was durable before it was acknowledged (the others'
		// increments may or may not have been merged yet).
		if got, _ := inc(3, 100).AsInt64(); got < 103 || got > 116 {
			t.Fatalf("restarted replica 3 replies %d to its increment, want 103..116: its count before the kill is lost", got)
		}
		cl.converge(tla.Int(116))
	})
}

// TestCRDTBadFlags: bad arguments are clear errors, before anything runs.
func TestCRDTBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"crdt", "serve", "--peers", "udp:127.0.0.1:1"}, "--id 0: want 1..1"},
		{[]string{"crdt", "serve", "--id", "1"}, "--peers: list every replica"},
		{[]string{"crdt", "serve", "--id", "1", "--peers", "udp:127.0.0.1:1", "--crdt", "orset"}, `unknown CRDT "orset"`},
		{[]string{"crdt", "serve", "--id", "1", "--peers", "udp:127.0.0.1:1", "--interval", "0s"}, "--interval 0s"},
		{[]string{"crdt", "up", "--nodes", "0"}, "--nodes 0"},
		{[]string{"crdt", "inc", "-k"}, "unknown shorthand flag"},
		{[]string{"crdt", "inc", "x"}, `inc "x": want a natural number`},
		{[]string{"crdt", "add"}, "accepts 1 arg"},
		{[]string{"crdt", "get", "--server", "udp:127.0.0.1:1", "--timeout", "300ms"}, "udp:127.0.0.1:1"},
		{[]string{"bench", "crdt", "--nodes", "1"}, "--nodes"},
	} {
		out, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strata %s: err %v, want one containing %q (output %q)", strings.Join(c.args, " "), err, c.want, out)
		}
	}
}
