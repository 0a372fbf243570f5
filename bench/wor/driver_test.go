package worbench

import (
	"context"
	"testing"
	"time"

	"strata/stack"
	"strata/stack/layers"
	"strata/wor"
)

// Each measured operation runs end to end against three in-memory
// wormservers on loopback and completes operations.
func TestRunAllOps(t *testing.T) {
	var addrs []stack.Addr
	for i := 0; i < 3; i++ {
		n, err := layers.Listen("udp:127.0.0.1:0", "Reliable,Fragment,RPC")
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		n.HandleAsync(wor.NewServer(nil).HandleAsync)
		addrs = append(addrs, n.Local())
	}
	cn, err := layers.Listen("udp:127.0.0.1:0", "Reliable,Fragment,RPC")
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	e, err := wor.NewPaxos(cn, addrs, 7, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := wor.NewClient(e)
	for i, op := range Ops {
		r, err := Run(context.Background(), c, uint64(i+1), op, 2, 8, 200*time.Millisecond)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if r.Ops == 0 || r.OpsPerSec <= 0 || r.P50us <= 0 {
			t.Fatalf("%s: %+v", op, r)
		}
	}
}
