package pbkv

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
)

// freeUDP returns n loopback UDP stack addresses that were free.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "udp:"+c.LocalAddr().String())
		c.Close()
	}
	return out
}

// startCluster runs 3 replicas in this process; stop[i] stops replica i+1
// (its node closes, so the others suspect it). wrapNet, if not nil, wraps
// every replica's mailboxes (a mutant).
func startCluster(t *testing.T, wrapNet func(distsys.IndexedResource) distsys.IndexedResource) (clientAddrs []string, stop []func()) {
	t.Helper()
	reps := freeAddrs(t, 3)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for i := range reps {
		s, err := NewServer(ServerConfig{ID: i + 1, Replicas: reps, Listen: "127.0.0.1:0",
			Heartbeat: 50 * time.Millisecond, SuspectAfter: 500 * time.Millisecond, wrapNet: wrapNet})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Run(ctx); err != nil {
				t.Errorf("replica %d: %v", i+1, err)
			}
		}()
		clientAddrs = append(clientAddrs, s.Addr())
		stop = append(stop, cancel)
	}
	return clientAddrs, stop
}

// TestPutGetFailover: in one process, three replicas; a put is read back,
// a get of a key never written says so; after the primary (replica 1)
// stops, the client moves on and still reads the acknowledged put, and
// new puts work.
func TestPutGetFailover(t *testing.T) {
	if err := failover(t, nil); err != nil {
		t.Fatal(err)
	}
}

// TestFailoverDetectsForgetfulBackups: the same scenario with a mutant
// whose backups acknowledge a pushed state but keep an empty store (as
// if the primary had answered before they had the put, the model's
// BugAckEarly): after the primary stops, the new primary does not have
// the acknowledged put, and the test's check says so.
func TestFailoverDetectsForgetfulBackups(t *testing.T) {
	err := failover(t, func(r distsys.IndexedResource) distsys.IndexedResource { return forgetful{r} })
	if err == nil || !strings.Contains(err.Error(), "after the primary stopped, get a") {
		t.Fatalf("mutant not detected: %v", err)
	}
}

func failover(t *testing.T, wrapNet func(distsys.IndexedResource) distsys.IndexedResource) error {
	addrs, stop := startCluster(t, wrapNet)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := NewClient(addrs)
	if err != nil {
		return err
	}
	c.Timeout = time.Second
	defer c.Close()
	if err := c.Put(ctx, "a", "1"); err != nil {
		return err
	}
	if v, ok, err := c.Get(ctx, "a"); err != nil || !ok || v != "1" {
		return fmt.Errorf("get a = %q, %v, %v; want 1", v, ok, err)
	}
	if _, ok, err := c.Get(ctx, "nothing"); err != nil || ok {
		return fmt.Errorf("get of a key never written: found %v, err %v", ok, err)
	}
	stop[0]()
	for i := range 3 {
		if v, ok, err := c.Get(ctx, "a"); err != nil || !ok || v != fmt.Sprint(i+1) {
			return fmt.Errorf("after the primary stopped, get a = %q, %v, %v; want %d", v, ok, err, i+1)
		}
		if err := c.Put(ctx, "a", fmt.Sprint(i+2)); err != nil {
			return err
		}
	}
	if c.cur != 1 {
		return fmt.Errorf("client follows replica %d, want 2", c.cur+1)
	}
	return nil
}

// forgetful wraps a replica's mailboxes: every pushed state it receives
// arrives with an empty store.
type forgetful struct{ distsys.IndexedResource }

func (f forgetful) Index(i tla.Value) (distsys.Resource, error) {
	r, err := f.IndexedResource.Index(i)
	if err != nil {
		return nil, err
	}
	return &forgetfulEntry{r}, nil
}

type forgetfulEntry struct{ distsys.Resource }

func (f *forgetfulEntry) Read(ctx context.Context) (tla.Value, error) {
	v, err := f.Resource.Read(ctx)
	if err != nil {
		return v, err
	}
	if typ, _ := tla.Field(v, "type"); tla.Equal(typ, tla.String("state")) {
		return tla.Except(v, []tla.Value{tla.String("store")}, tla.Tuple())
	}
	return v, nil
}

// TestBadRequests: a request that is not a well-formed put or get gets
// an error reply naming what is wrong; the replica keeps serving.
func TestBadRequests(t *testing.T) {
	addrs, _ := startCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := NewClient(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.do(ctx, "delete", "k", "")
	if err == nil || errors.Is(err, ErrNoReplica) || err.Error() != `pbkv: request type "delete": want "put" or "get"` {
		t.Fatalf("bad type: %v", err)
	}
	if err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	// Bytes that are not a value, and a length over MaxFrame: an error
	// reply, then the connection closes.
	for _, raw := range [][]byte{{3, 0xff, 0xff, 0xff}, binary.AppendUvarint(nil, MaxFrame+1)} {
		conn, err := net.Dial("tcp", addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(raw); err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		resp, err := ReadFrame(bufio.NewReader(conn))
		conn.Close()
		if err != nil {
			t.Fatalf("raw %x: %v", raw, err)
		}
		msg, _ := tla.Field(resp, "error")
		if s, _ := msg.AsString(); !strings.HasPrefix(s, "pbkv: bad request frame: ") {
			t.Fatalf("raw %x: reply %v", raw, resp)
		}
	}
	if v, ok, err := c.Get(ctx, "k"); err != nil || !ok || v != "v" {
		t.Fatalf("after bad frames: get k = %q, %v, %v", v, ok, err)
	}
}
