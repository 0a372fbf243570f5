package wor

import (
	"fmt"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
)

// TestThriftyQuorum: a Paxos client asks only a majority of a 3-server set
// while it answers (the third server sees nothing of a segment whose
// majority is healthy); when one of that majority crashes, requests still
// complete (the first after the hedge delay, later ones at once, because
// the crashed server is then asked last); and every value stays readable.
func TestThriftyQuorum(t *testing.T) {
	net := sim.New(7)
	net.SetDefault(sim.Link{Delay: time.Millisecond})
	ch, err := layers.Configure([]stack.Prop{stack.RPC})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(a stack.Addr, epoch uint64) *stack.Node {
		tr, err := net.Endpoint(a)
		if err != nil {
			t.Fatal(err)
		}
		return stack.NewNode(tr, net.Clock(), layers.Build(ch.Specs, stack.Config{Local: a, Epoch: epoch, RTO: 5 * time.Millisecond, MaxRTO: 40 * time.Millisecond}), stack.NodeOptions{})
	}
	var replicas []stack.Addr
	var servers []*Server
	for i := range 3 {
		a := stack.Addr(fmt.Sprintf("sim:s%d", i))
		s := NewServer(nil)
		mk(a, uint64(i+1)).Handle(s.Handle)
		replicas, servers = append(replicas, a), append(servers, s)
	}
	c, err := NewPaxos(mk("sim:c", 9), replicas, 1, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	const seg = 3 // rotation 3 % 3 = 0: s0 and s1 are asked first
	// write captures and writes register off of seg, recording how long it
	// took in virtual time.
	write := func(off uint64, took *time.Duration, fail *error) {
		start := net.Now()
		addr := Addr(seg, off)
		c.Capture(addr, func(cid CaptureID, err error) {
			if err != nil {
				*fail = err
				return
			}
			c.Write(addr, []byte(fmt.Sprint(off)), cid, func(err error) {
				*fail, *took = err, net.Now()-start
			})
		})
	}
	var errs [40]error
	var took [40]time.Duration
	// Sequentially: 20 writes with everyone up, then s1 crashes, 20 more.
	var before Stats // s2's, at the crash
	var qBefore QuorumStats
	var step func(i int)
	step = func(i int) {
		if i == 40 {
			return
		}
		if i == 20 {
			before, qBefore = servers[2].Stats(), c.QuorumStats()
			net.Crash(replicas[1])
		}
		write(uint64(i), &took[i], &errs[i])
		net.AfterFunc(50*time.Millisecond, func() { step(i + 1) })
	}
	step(0)
	net.Run(time.Minute)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if qBefore != (QuorumStats{Requests: 40}) {
		t.Errorf("quorum counts while everyone was up: %+v, want 40 requests and nothing hedged or widened", qBefore)
	}
	if q := c.QuorumStats(); q.Requests != 80 || q.Hedged != 1 {
		t.Errorf("quorum counts after the crash: %+v, want 80 requests, 1 hedged (the first after the crash)", q)
	}
	if before.Prepares != 0 || before.Accepts != 0 {
		t.Errorf("s2 outside the preferred majority got %d prepares and %d accepts while s0 and s1 were up", before.Prepares, before.Accepts)
	}
	if st := servers[2].Stats(); st.Accepts != 20 {
		t.Errorf("s2 got %d accepts after s1 crashed, want 20", st.Accepts)
	}
	if got := servers[0].Stats(); got.Prepares != 40 || got.Accepts != 40 {
		t.Errorf("s0 got %d prepares and %d accepts, want 40 each", got.Prepares, got.Accepts)
	}
	// The first write after the crash waits for the hedge; the next ones
	// avoid s1 and take two round trips, as before the crash.
	if took[0] != 4*time.Millisecond {
		t.Errorf("write 0 took %v, want two round trips (4ms)", took[0])
	}
	if took[20] < took[0]+minHedge {
		t.Errorf("write 20 (first after the crash) took %v, less than the hedge delay: was s1 asked at all?", took[20])
	}
	for i := 22; i < 40; i++ {
		if took[i] != took[0] {
			t.Errorf("write %d took %v: the crashed server is still asked first", i, took[i])
		}
	}
	// Everything written is readable through the remaining majority.
	var reads [40]string
	for i := range 40 {
		c.Read(Addr(seg, uint64(i)), func(v []byte, err error) {
			if err != nil {
				reads[i] = "error: " + err.Error()
				return
			}
			reads[i] = string(v)
		})
	}
	net.Run(time.Minute)
	for i, v := range reads {
		if v != fmt.Sprint(i) {
			t.Errorf("read %d: %q", i, v)
		}
	}
}
