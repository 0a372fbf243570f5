package distsys_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/mpcal/testdata/gogen/fdwatch"
	"strata/stack"
	"strata/stack/transport"
)

// suspectingPair opens two nodes on loopback UDP whose stacks run the
// heartbeat failure detector over the view {a, b}.
func suspectingPair(t *testing.T, o distsys.SuspectOptions) (a, b *stack.Node) {
	t.Helper()
	ta, err := transport.Listen("udp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := transport.Listen("udp:127.0.0.1:0")
	if err != nil {
		ta.Close()
		t.Fatal(err)
	}
	members := []stack.Addr{ta.Local(), tb.Local()}
	if a, err = distsys.NewSuspectingNode(ta, "Reliable,FIFO,RPC", members, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = distsys.NewSuspectingNode(tb, "Reliable,FIFO,RPC", members, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

// TestFailureDetectorSeesClosedPeer runs the watcher compiled from
// mpcal/testdata/gogen/fdwatch/FDWatch.tla on node a, watching node b
// through fd[_] (distsys.FailureDetector over a's suspect layer). While b
// runs, fd[b] reads FALSE: the first report is FALSE and `await fd[Peer]`
// keeps aborting for several suspicion windows. Once b's node is closed,
// the watcher reports TRUE within the suspicion window plus a heartbeat
// (and not before the window minus a heartbeat: the detector waited for
// the silence).
func TestFailureDetectorSeesClosedPeer(t *testing.T) {
	o := distsys.SuspectOptions{Heartbeat: 50 * time.Millisecond, SuspectAfter: 500 * time.Millisecond}
	a, b := suspectingPair(t, o)
	peer := tla.String("peer")
	fd, err := distsys.NewFailureDetector(a, []distsys.Peer{{ID: peer, Addr: b.Local()}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := fdwatch.New(fdwatch.Constants{Peer: peer})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan tla.Value, 2)
	counted := &countIndexAborts{ix: fd, wrapped: map[distsys.Resource]*countAborts{}}
	w, err := distsys.NewContext(m.AWatcher(), tla.String("watcher"), distsys.BindIndexed("fd", counted),
		distsys.BindRef("out", distsys.NewOutput(out)), distsys.WithBackoff(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	if v := <-out; !tla.Equal(v, tla.False) {
		t.Fatalf("fd[peer] while the peer runs = %v, want FALSE", v)
	}
	alive := time.NewTimer(3 * o.SuspectAfter)
	select {
	case v := <-out:
		t.Fatalf("the watcher got past await fd[peer] while the peer runs (reported %v)", v)
	case err := <-done:
		t.Fatalf("watcher stopped while the peer runs: %v", err)
	case <-alive.C:
	}
	if _, ok := fd.SuspectedAt(b.Local()); ok {
		t.Fatal("live peer suspected")
	}
	if counted.aborts() == 0 {
		t.Fatal("await fd[peer] never aborted while the peer runs")
	}

	closed := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var v tla.Value
	select {
	case v = <-out:
	case err := <-done:
		t.Fatalf("watcher stopped before reporting: %v", err)
	case <-time.After(10 * o.SuspectAfter):
		t.Fatalf("peer closed %v ago and not suspected", time.Since(closed))
	}
	took := time.Since(closed)
	if !tla.Equal(v, tla.True) {
		t.Fatalf("fd[peer] after the peer closed = %v, want TRUE", v)
	}
	if err := <-done; err != nil {
		t.Fatalf("watcher: %v", err)
	}
	// The bound has slack for a loaded 2-CPU machine (timers fire late):
	// the stack's own guarantee is SuspectAfter + Heartbeat.
	if hi := o.SuspectAfter + o.Heartbeat + 250*time.Millisecond; took > hi {
		t.Errorf("suspected %v after the close, want at most %v", took, hi)
	}
	if lo := o.SuspectAfter - o.Heartbeat; took < lo {
		t.Errorf("suspected %v after the close, before the suspicion window (%v) could pass", took, lo)
	}
	t.Logf("suspected %v after the close (window %v, heartbeat %v)", took.Round(time.Millisecond), o.SuspectAfter, o.Heartbeat)
}

// countIndexAborts counts the aborts of the resources an indexed
// resource hands out (safely read while the archetype runs, unlike
// Context.Aborts). Equal indices get the same wrapper, as Index must.
type countIndexAborts struct {
	ix      distsys.IndexedResource
	mu      sync.Mutex
	wrapped map[distsys.Resource]*countAborts
}

func (c *countIndexAborts) Index(idx tla.Value) (distsys.Resource, error) {
	r, err := c.ix.Index(idx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.wrapped[r]
	if !ok {
		w = &countAborts{Resource: r}
		c.wrapped[r] = w
	}
	return w, nil
}

func (c *countIndexAborts) aborts() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, w := range c.wrapped {
		n += w.n.Load()
	}
	return n
}

// TestFailureDetectorRejects: fd is read-only, unknown instances and bad
// timings are errors, not panics; Suspect feeds the detector by hand.
func TestFailureDetectorRejects(t *testing.T) {
	_, err := distsys.NewFailureDetector(nil, nil)
	if err == nil {
		t.Fatal("nil node accepted")
	}
	ta, err := transport.Listen("udp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ta.Close()
	if _, err := distsys.NewSuspectingNode(ta, "Reliable", []stack.Addr{ta.Local()},
		distsys.SuspectOptions{Heartbeat: time.Second, SuspectAfter: time.Second}); err == nil || !strings.Contains(err.Error(), "two heartbeats") {
		t.Fatalf("window of one heartbeat: err = %v", err)
	}
	if _, err := distsys.NewSuspectingNode(ta, "Reliable", []stack.Addr{"udp:127.0.0.1:1"}, distsys.SuspectOptions{}); err == nil || !strings.Contains(err.Error(), "do not include this node") {
		t.Fatalf("members without self: err = %v", err)
	}
	if _, err := distsys.NewSuspectingNode(ta, "Bogus", []stack.Addr{ta.Local()}, distsys.SuspectOptions{}); err == nil {
		t.Fatal("unknown property accepted")
	}
	n, err := distsys.NewSuspectingNode(ta, "Reliable", []stack.Addr{ta.Local()}, distsys.SuspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	p := distsys.Peer{ID: tla.Int(7), Addr: "udp:127.0.0.1:9"}
	if _, err := distsys.NewFailureDetector(n, []distsys.Peer{p, p}); err == nil {
		t.Fatal("peer listed twice accepted")
	}
	fd, err := distsys.NewFailureDetector(n, []distsys.Peer{p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fd.Index(tla.Int(8)); err == nil {
		t.Fatal("unknown instance accepted")
	}
	r, err := fd.Index(tla.Int(7))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(context.Background(), tla.True); !errors.Is(err, distsys.ErrReadOnly) {
		t.Fatalf("write: %v, want ErrReadOnly", err)
	}
	if v, _ := r.Read(context.Background()); !tla.Equal(v, tla.False) {
		t.Fatalf("fd[7] = %v before any suspicion", v)
	}
	fd.Suspect(p.Addr)
	if v, _ := r.Read(context.Background()); !tla.Equal(v, tla.True) {
		t.Fatalf("fd[7] = %v after Suspect", v)
	}
}
