package stackbench

import (
	"context"
	"testing"
	"time"

	"strata/stack"
)

// The round-trip measurement completes real calls over UDP and TCP with
// both client APIs.
func TestStrataRoundTrip(t *testing.T) {
	for _, c := range []struct {
		kind string
		api  API
		poll time.Duration
	}{{"udp", Blocking, 0}, {"tcp", Blocking, 0}, {"udp", Event, 0}, {"tcp", Event, 0},
		{"udp", Blocking, 50 * time.Microsecond}, {"tcp", Event, 50 * time.Microsecond}} {
		kind := c.kind
		ctx, cancel := context.WithCancel(context.Background())
		addr := make(chan stack.Addr, 1)
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, kind+":127.0.0.1:0", c.poll, func(a stack.Addr) { addr <- a }) }()
		r, err := StrataRoundTrip(ctx, <-addr, 100, 500, 4, c.api, c.poll)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if r.N != 500 || r.ReqPerSec <= 0 || r.AvgUs <= 0 || r.P50Us > r.P99Us {
			t.Fatalf("%s %s: %+v", kind, c.api, r)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
