// Package worbench measures the write-once register service: throughput
// and latency of Read, Capture+Write and Write on pre-captured registers,
// with concurrent clients, against wormservers reached over loopback.
package worbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"strata/wor"
)

// Result is one measurement.
type Result struct {
	System    string  `json:"system"`
	Engine    string  `json:"engine,omitempty"`
	Mode      string  `json:"mode,omitempty"` // persistent or memory
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Size      int     `json:"size"`
	Ops       int     `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	Round     int     `json:"round"` // 1-based; the comparison cells repeat every round
	// Strata paxos: requests the engine hedged to the whole replica set
	// during the cell (warm-up and set-up included), of QuorumRequests
	Hedged         uint64 `json:"hedged,omitempty"`
	QuorumRequests uint64 `json:"quorum_requests,omitempty"`
}

// warmUp is how long the clients run before the measurement starts.
const warmUp = 500 * time.Millisecond

// Ops are the measured operations.
var Ops = []string{"read", "capture+write", "write-precaptured"}

// Run drives op with clients goroutines through c for d (after a short
// warm-up), each goroutine with one operation outstanding. Registers are
// in segment seg, which Run allocates if needed and trims at the end; each
// goroutine uses its own offsets so that writers do not preempt each
// other.
func Run(ctx context.Context, c *wor.Client, seg uint64, op string, clients, size int, d time.Duration) (Result, error) {
	return RunRate(ctx, c, seg, op, clients, size, d, 20000)
}

// RunRate is Run with a bound on the pre-captured writes per second that
// the pre-capture provides for (each pre-captured register costs a journal
// block on every persistent server, so persistent runs use a lower bound).
func RunRate(ctx context.Context, c *wor.Client, seg uint64, op string, clients, size int, d time.Duration, maxRate int) (Result, error) {
	res := Result{System: "strata", Op: op, Clients: clients, Size: size}
	if err := c.Alloc(ctx, seg, nil); err != nil && !errors.Is(err, wor.ErrAllocated) {
		return res, err
	}
	value := make([]byte, size)
	// Each client has perClient registers of the segment: the first half
	// for pre-captured writes, the second for capture+write.
	const perClient = 1 << 16
	const half = perClient / 2
	// Reads need written registers; pre-captured writes need captures.
	prefill := 64
	const precaptureBatch = 256
	cids := make([][]wor.CaptureID, clients)
	for g := 0; g < clients; g++ {
		base := uint64(g) * perClient
		switch op {
		case "read":
			for i := 0; i < prefill; i++ {
				cid, err := c.Capture(ctx, seg, base+uint64(i))
				if err == nil {
					err = c.Write(ctx, seg, base+uint64(i), value, cid)
				}
				if err != nil && !errors.Is(err, wor.ErrWritten) {
					return res, fmt.Errorf("prefill: %w", err)
				}
			}
		case "write-precaptured":
			// Enough captures for the run (each takes a register on every
			// server), captured ahead, outside timing, a batch at a time.
			// (at most maxRate writes/s, warm-up included), in batches of
			// 256 registers.
			n := min(int(float64(maxRate)*(d+warmUp).Seconds())/clients+precaptureBatch, half)
			for i := 0; i < n; i += precaptureBatch {
				end := min(i+precaptureBatch, n)
				cid, err := c.SegCapture(ctx, seg, base+uint64(i), base+uint64(end))
				if err != nil {
					return res, fmt.Errorf("pre-capture: %w", err)
				}
				for range end - i {
					cids[g] = append(cids[g], cid)
				}
			}
		}
	}
	var phase atomic.Int32 // 0 warm-up, 1 measure, 2 stop
	lats := make([][]time.Duration, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := uint64(g) * perClient
			for i := 0; phase.Load() < 2; i++ {
				t0 := time.Now()
				var err error
				switch op {
				case "read":
					_, err = c.Read(ctx, seg, base+uint64(i%prefill))
				case "capture+write":
					off := base + half + uint64(i%half)
					var cid wor.CaptureID
					if cid, err = c.Capture(ctx, seg, off); err == nil {
						err = c.Write(ctx, seg, off, value, cid)
					}
				case "write-precaptured":
					if i >= len(cids[g]) {
						// A client faster than the estimate: capture another
						// batch now. It is timed (one capture per batch of
						// writes, counted against Strata).
						end := min(i+precaptureBatch, half)
						if i >= end {
							errs <- fmt.Errorf("ran out of registers for pre-captured writes after %d writes", i)
							return
						}
						cid, err := c.SegCapture(ctx, seg, base+uint64(i), base+uint64(end))
						if err != nil {
							errs <- fmt.Errorf("pre-capture during the run: %w", err)
							return
						}
						for range end - i {
							cids[g] = append(cids[g], cid)
						}
					}
					err = c.Write(ctx, seg, base+uint64(i), value, cids[g][i])
				}
				if err != nil && !errors.Is(err, wor.ErrWritten) {
					errs <- err
					return
				}
				if phase.Load() == 1 {
					lats[g] = append(lats[g], time.Since(t0))
				}
			}
			errs <- nil
		}()
	}
	time.Sleep(warmUp)
	start := time.Now()
	phase.Store(1)
	time.Sleep(d)
	phase.Store(2)
	elapsed := time.Since(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return res, err
		}
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return res, errors.New("no operation completed")
	}
	slices.Sort(all)
	res.Ops, res.Seconds = len(all), elapsed.Seconds()
	res.OpsPerSec = float64(len(all)) / elapsed.Seconds()
	res.P50us = float64(all[len(all)/2].Nanoseconds()) / 1e3
	res.P99us = float64(all[min(len(all)-1, len(all)*99/100)].Nanoseconds()) / 1e3
	// Trim the cell's segment (outside timing) so the servers reclaim its
	// registers' journal slots for the next cells.
	if err := c.Trim(ctx, seg); err != nil {
		return res, fmt.Errorf("trim after the cell: %w", err)
	}
	return res, nil
}
