package raftkv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"strata/mpcal"
)

// TestGeneratedUpToDate: raftkv.go is what `strata mpcal gogen` makes of
// models/raftkv/RaftKV.tla today (regenerate with
// `strata mpcal gogen models/raftkv/RaftKV.tla --package raftkv -o distsys/systems/raftkv/raftkv.go`).
func TestGeneratedUpToDate(t *testing.T) {
	const model = "../../../models/raftkv/RaftKV.tla"
	src, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mpcal.ParseFile("RaftKV.tla", src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mpcal.GenerateGo(f, mpcal.GoOptions{Package: "raftkv"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("raftkv.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("raftkv.go is stale: regenerate it from %s", model)
	}
}

// freeAddrs returns n loopback ports free at the moment (for UDP or TCP).
func freeAddrs(t *testing.T, n int, network string) []string {
	t.Helper()
	var out []string
	for range n {
		switch network {
		case "udp":
			c, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c.LocalAddr().String())
			c.Close()
		default:
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, l.Addr().String())
			l.Close()
		}
	}
	return out
}

// TestClusterInProcess: three servers in one process elect a leader,
// serve puts and gets through the client, survive the leader's stop, and
// a restarted server recovers its log from its journal and catches up.
func TestClusterInProcess(t *testing.T) {
	peers := freeAddrs(t, 3, "udp")
	for i := range peers {
		peers[i] = "udp:" + peers[i]
	}
	clients := freeAddrs(t, 3, "tcp")
	dir := t.TempDir()
	start := func(id int) *Server {
		s, err := StartServer(ServerConfig{ID: id, Peers: peers, Clients: clients, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	srv := make([]*Server, 3)
	for i := range srv {
		srv[i] = start(i + 1)
	}
	defer func() {
		for _, s := range srv {
			if s != nil {
				s.Close()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := NewClient(clients)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stopped := func() string {
		var b bytes.Buffer
		for i, s := range srv {
			if s == nil {
				continue
			}
			select {
			case <-s.Done():
				fmt.Fprintf(&b, "; server %d stopped: %v", i+1, s.Err())
			default:
			}
		}
		return b.String()
	}
	for i := range 10 {
		if err := c.Put(ctx, fmt.Sprint("k", i%3), fmt.Sprint("v", i)); err != nil {
			t.Fatalf("%v%s", err, stopped())
		}
	}
	if v, ok, err := c.Get(ctx, "k0"); err != nil || !ok || v != "v9" {
		t.Fatalf("get k0 = %q, %v, %v; want v9%s", v, ok, err, stopped())
	}
	if _, ok, err := c.Get(ctx, "nothing"); err != nil || ok {
		t.Fatalf("get of a missing key: found %v, %v%s", ok, err, stopped())
	}
	// Stop the leader: the others elect another and keep serving.
	l := c.Leader()
	if err := srv[l-1].Close(); err != nil {
		t.Fatal(err)
	}
	srv[l-1] = nil
	if err := c.Put(ctx, "k1", "after"); err != nil {
		t.Fatal(err)
	}
	if c.Leader() == l {
		t.Fatalf("server %d, stopped, still leads", l)
	}
	// Restart it: it recovers its term, vote and log from its journal.
	srv[l-1] = start(l)
	if v, ok, err := c.Get(ctx, "k1"); err != nil || !ok || v != "after" {
		t.Fatalf("get k1 = %q, %v, %v; want after", v, ok, err)
	}
	for _, s := range srv {
		select {
		case <-s.Done():
			t.Fatalf("a server stopped: %v", s.Err())
		default:
		}
	}
}
