package stackbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"strata/stack"
	"strata/stack/layers"
)

// RTTResult is a request/response measurement.
type RTTResult struct {
	System    string  `json:"system"`
	Transport string  `json:"transport"`
	Callers   int     `json:"callers"`
	Size      int     `json:"size"`
	N         int     `json:"n"`
	AvgUs     float64 `json:"avg_us"` // mean round trip (callers / throughput when each caller has one request outstanding)
	P50Us     float64 `json:"p50_us"`
	P99Us     float64 `json:"p99_us"`
	ReqPerSec float64 `json:"req_per_sec"`
}

// Props is the stack both ends of the Strata round trip run.
const Props = "Reliable,Fragment,RPC"

// Serve runs an echo RPC server node until ctx ends; ready gets its address.
func Serve(ctx context.Context, listen string, ready func(stack.Addr)) error {
	n, err := layers.Listen(listen, Props)
	if err != nil {
		return err
	}
	defer n.Close()
	n.Handle(func(_ stack.Addr, req []byte) []byte { return req })
	ready(n.Local())
	<-ctx.Done()
	return nil
}

// StrataRoundTrip makes n calls of size bytes to server from callers
// concurrent goroutines (one outstanding call each) through one client node.
func StrataRoundTrip(ctx context.Context, server stack.Addr, size, n, callers int) (RTTResult, error) {
	kind, _, _ := strings.Cut(string(server), ":")
	host := "127.0.0.1"
	if strings.Contains(string(server), "[") {
		host = "[::1]"
	}
	node, err := layers.Listen(kind+":"+host+":0", Props)
	if err != nil {
		return RTTResult{}, err
	}
	defer node.Close()
	req := make([]byte, size)
	// Warm up: connections, pools, the peer's state.
	for i := 0; i < 200; i++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := node.Call(cctx, server, req, 0)
		cancel()
		if err != nil {
			return RTTResult{}, fmt.Errorf("warm-up call: %w", err)
		}
	}
	var next atomic.Int64
	lats := make([][]time.Duration, callers)
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				t0 := time.Now()
				_, err := node.Call(cctx, server, req, 0)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return RTTResult{}, err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return RTTResult{
		System: "strata", Transport: kind, Callers: callers, Size: size, N: len(all),
		AvgUs:     us(sum) / float64(len(all)),
		P50Us:     us(all[len(all)/2]),
		P99Us:     us(all[min(len(all)-1, len(all)*99/100)]),
		ReqPerSec: float64(len(all)) / elapsed.Seconds(),
	}, nil
}
