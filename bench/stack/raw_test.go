package stackbench

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestRawRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		network string
		poll    time.Duration
	}{{"udp", 0}, {"tcp", 0}, {"udp", 50 * time.Microsecond}, {"tcp", 50 * time.Microsecond}} {
		network := tc.network
		t.Run(fmt.Sprintf("%s/busypoll=%v", network, tc.poll), func(t *testing.T) {
			stop, addr, err := RawEchoServer(network, "127.0.0.1:0", 100, tc.poll)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			for _, callers := range []int{1, 8} {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := RawRoundTrip(ctx, network, addr, 100, 100, 400, callers, tc.poll)
				cancel()
				if err != nil {
					t.Fatalf("%d callers: %v", callers, err)
				}
				t.Logf("%s %d callers: %+v", network, callers, res)
				if res.N != 400 || res.AvgUs <= 0 || res.P50Us <= 0 || res.P99Us < res.P50Us || res.ReqPerSec <= 0 {
					t.Errorf("%d callers: implausible result %+v", callers, res)
				}
			}
		})
	}
}

func TestRawEchoEdgeCases(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		for _, poll := range []time.Duration{0, 20 * time.Microsecond} {
			// Zero-byte and larger requests, replies shorter and longer
			// than the request (zeros past its end), then a second stop
			// is a no-op.
			for _, reply := range []int{0, 3, 9000} {
				stop, addr, err := RawEchoServer(network, "127.0.0.1:0", reply, poll)
				if err != nil {
					t.Fatal(err)
				}
				for _, size := range []int{0, 1, 9000} {
					if _, err := RawRoundTrip(context.Background(), network, addr, size, reply, 20, 2, poll); err != nil {
						t.Errorf("%s busy poll %v size %d reply %d: %v", network, poll, size, reply, err)
					}
				}
				// A client expecting another reply size notices.
				if _, err := RawRoundTrip(context.Background(), network, addr, 10, reply+1, 5, 1, poll); err == nil {
					t.Errorf("%s reply %d: a reply of the wrong size accepted", network, reply)
				}
				stop()
				stop()
			}
		}
	}
	if _, _, err := RawEchoServer("unix", "x", 1, 0); err == nil {
		t.Error("unix network accepted")
	}
	if _, _, err := RawEchoServer("udp", "127.0.0.1:0", 70000, 0); err == nil {
		t.Error("oversized UDP reply accepted")
	}
	if _, err := RawRoundTrip(context.Background(), "udp", "127.0.0.1:1", 70000, 1, 1, 1, 0); err == nil {
		t.Error("oversized UDP request accepted")
	}
}

func TestRawRoundTripCancel(t *testing.T) {
	stop, addr, err := RawEchoServer("tcp", "127.0.0.1:0", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := RawRoundTrip(ctx, "tcp", addr, 100, 100, 1<<40, 4, 30*time.Microsecond); err == nil {
		t.Error("no error after cancellation")
	}
}
