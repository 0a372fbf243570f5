package stackbench

import (
	"context"
	"testing"
	"time"

	"strata/stack"
)

// The round-trip measurement completes real calls over UDP and TCP with
// both client APIs, with replies shorter than, as long as and longer than
// the request, and a client that expects another reply size fails.
func TestStrataRoundTrip(t *testing.T) {
	for _, c := range []struct {
		kind  string
		api   API
		poll  time.Duration
		reply int
	}{{"udp", Blocking, 0, 3}, {"tcp", Blocking, 0, 100}, {"udp", Event, 0, 200}, {"tcp", Event, 0, 3},
		{"udp", Blocking, 50 * time.Microsecond, 100}, {"tcp", Event, 50 * time.Microsecond, 3}} {
		kind := c.kind
		ctx, cancel := context.WithCancel(context.Background())
		addr := make(chan stack.Addr, 1)
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, kind+":127.0.0.1:0", c.reply, c.poll, func(a stack.Addr) { addr <- a }) }()
		a := <-addr
		r, err := StrataRoundTrip(ctx, a, 100, c.reply, 500, 4, c.api, c.poll)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", kind, err)
		}
		if _, err := StrataRoundTrip(ctx, a, 100, c.reply+1, 10, 1, c.api, c.poll); err == nil {
			t.Errorf("%s reply %d: a reply of the wrong size accepted", kind, c.reply)
		}
		cancel()
		if r.N != 500 || r.Reply != c.reply || r.ReqPerSec <= 0 || r.MeanUs <= 0 || r.TimerMeanUs <= 0 || r.P50Us > r.P99Us {
			t.Fatalf("%s %s: %+v", kind, c.api, r)
		}
		// Four callers, one call outstanding each: the rate-derived mean
		// is 4 / rate.
		if want := 4e6 / r.ReqPerSec; r.MeanUs < want*0.999 || r.MeanUs > want*1.001 {
			t.Errorf("%s %s: mean %v µs, want 4/rate = %v", kind, c.api, r.MeanUs, want)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
