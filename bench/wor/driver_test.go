package wor

import (
	"context"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	wormspace "strata/wor"
)

// Each measured operation runs end to end against three in-memory
// wormservers on loopback and completes operations; the counts and
// percentiles are consistent.
func TestMeasureAllOps(t *testing.T) {
	var addrs []stack.Addr
	for range 3 {
		n, err := layers.Listen("udp:127.0.0.1:0", props)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		n.HandleAsync(wormspace.NewServer(nil).HandleAsync)
		addrs = append(addrs, n.Local())
	}
	for e, engine := range Engines {
		c, node, err := Dial(addrs, engine)
		if err != nil {
			t.Fatal(err)
		}
		defer node.Close()
		for i, op := range Ops {
			marks := 0
			r, err := Measure(context.Background(), c, Cell{Seg: uint64(10*e + i + 1), Op: op, Clients: 2, Size: 8, Warmup: 50 * time.Millisecond, Measure: 200 * time.Millisecond,
				Mark: func() { marks++ }})
			if err != nil {
				t.Fatalf("%s %s: %v", engine, op, err)
			}
			if marks != 2 {
				t.Fatalf("%s %s: Mark called %d times, want 2 (warm-up start, last operation's end)", engine, op, marks)
			}
			if r.Ops == 0 || r.OpsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.OpsTotal < r.Ops || r.System != "strata" || r.Op != op {
				t.Fatalf("%s %s: %+v", engine, op, r)
			}
		}
	}
}

// A pre-captured write cell whose provision is far too small still runs:
// its clients capture more registers inside the timer.
func TestMeasureOutrunsPrecapture(t *testing.T) {
	n, err := layers.Listen("udp:127.0.0.1:0", props)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	n.HandleAsync(wormspace.NewServer(nil).HandleAsync)
	c, node, err := Dial([]stack.Addr{n.Local()}, "paxos")
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	r, err := Measure(context.Background(), c, Cell{Seg: 9, Op: "write-precaptured", Clients: 1, Size: 8, Warmup: 10 * time.Millisecond, Measure: time.Second, Precapture: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.OpsTotal <= precaptureBatch {
		t.Skipf("%d writes: the machine is too slow for the test to need a second batch of %d", r.OpsTotal, precaptureBatch)
	}
}

func TestMeasureRejectsBadCells(t *testing.T) {
	for _, cell := range []Cell{
		{Op: "write", Clients: 1, Measure: time.Second},
		{Op: "read", Clients: 0, Measure: time.Second},
		{Op: "read", Clients: 1, Measure: 0},
	} {
		if _, err := Measure(context.Background(), nil, cell); err == nil {
			t.Errorf("%+v: no error", cell)
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, c := range []struct {
		xs   []time.Duration
		p    float64
		want time.Duration
	}{{d, 0.5, 50}, {d, 0.99, 99}, {d[:1], 0.99, 1}, {d[:2], 0.5, 1}, {d[:3], 0.5, 2}, {nil, 0.5, 0}} {
		if got := Percentile(c.xs, c.p); got != c.want {
			t.Errorf("Percentile(%d values, %v) = %v, want %v", len(c.xs), c.p, got, c.want)
		}
	}
}
