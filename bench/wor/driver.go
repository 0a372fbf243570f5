package wor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	wormspace "strata/wor"
)

// Result is one measured cell, of Strata or of etcd.
type Result struct {
	System    string  `json:"system"`           // strata or etcd
	Engine    string  `json:"engine,omitempty"` // paxos, chain; raft for etcd
	Mode      string  `json:"mode,omitempty"`   // persistent or memory (memory-N in the chain-length sweep)
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Size      int     `json:"size"`
	Ops       int     `json:"ops"` // in the measured window
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	Round     int     `json:"round"` // 1-based; the cells compared with etcd repeat every round
	// OpsTotal counts every operation of the cell, warm-up and the last
	// ones outside the window included: the denominator of SyncsPerOp.
	OpsTotal int `json:"ops_total,omitempty"`
	// Syncs are the disk barriers (fdatasync) the three servers issued
	// during the cell, set-up included (persistent cells): Strata's
	// journal barriers, etcd's WAL fdatasyncs and backend commits. They
	// show, measured, that each side made its writes durable.
	Syncs uint64 `json:"syncs,omitempty"`
	// Strata paxos: requests the engine hedged to the whole replica set
	// during the cell (warm-up and set-up included), of QuorumRequests.
	Hedged         uint64 `json:"hedged,omitempty"`
	QuorumRequests uint64 `json:"quorum_requests,omitempty"`
}

// SyncsPerOp is Syncs over OpsTotal (0 when either is unknown).
func (r Result) SyncsPerOp() float64 {
	if r.OpsTotal == 0 {
		return 0
	}
	return float64(r.Syncs) / float64(r.OpsTotal)
}

// Ops are Strata's measured operations: a linearizable read, the full
// single-register write (Capture, Paxos phase 1, then Write, phase 2), and
// a Write on a register captured beforehand, outside the timer (WormPaxos's
// steady state, where a segment's registers are captured in one batch).
var Ops = []string{"read", "capture+write", "write-precaptured"}

// Cell is one measurement of a Strata operation.
type Cell struct {
	Seg     uint64 // segment of the cell's registers: allocated, then trimmed at the end
	Op      string // one of Ops
	Clients int    // goroutines, one operation outstanding each (closed loop)
	Size    int    // value size in bytes
	Warmup  time.Duration
	Measure time.Duration
	// Precapture is how many pre-captured writes per second the cell
	// provisions registers for before the timer starts (each pre-captured
	// register takes a journal block on every persistent server, so
	// persistent cells provision fewer). It never slows a client down: one
	// that outruns it captures its next batch inside the timer, counted
	// against Strata.
	Precapture int
	// Mark, if set, is called when the warm-up starts (after the set-up)
	// and when the last operation has ended (before the trim), so that
	// the caller can count the servers' disk syncs over the same span as
	// OpsTotal.
	Mark func()
}

// precaptureBatch is how many registers one SegCapture captures.
const precaptureBatch = 256

// Measure drives cell.Op through c with cell.Clients goroutines for the
// warm-up and the measured window and returns the throughput and latency
// of the operations that started in the window and ended before its end
// (the etcd peer's bench counts the same way). Each goroutine uses its own
// registers, so that writers do not preempt each other.
func Measure(ctx context.Context, c *wormspace.Client, cell Cell) (Result, error) {
	res := Result{System: "strata", Op: cell.Op, Clients: cell.Clients, Size: cell.Size}
	if !slices.Contains(Ops, cell.Op) {
		return res, fmt.Errorf("unknown operation %q (want one of %v)", cell.Op, Ops)
	}
	if cell.Clients < 1 || cell.Measure <= 0 || cell.Warmup < 0 {
		return res, fmt.Errorf("cell needs clients >= 1 and a positive window: %+v", cell)
	}
	if cell.Precapture <= 0 {
		cell.Precapture = 20000
	}
	if err := c.Alloc(ctx, cell.Seg, nil); err != nil && !errors.Is(err, wormspace.ErrAllocated) {
		return res, fmt.Errorf("alloc segment %d: %w", cell.Seg, err)
	}
	value := make([]byte, cell.Size)
	// Each client has perClient registers of the segment: the first half
	// for pre-captured writes, the second for capture+write.
	const perClient = 1 << 16
	const half = perClient / 2
	// Reads need written registers; pre-captured writes need captures.
	const prefill = 64
	cids := make([][]wormspace.CaptureID, cell.Clients)
	for g := range cell.Clients {
		base := uint64(g) * perClient
		switch cell.Op {
		case "read":
			for i := range uint64(prefill) {
				cid, err := c.Capture(ctx, cell.Seg, base+i)
				if err == nil {
					err = c.Write(ctx, cell.Seg, base+i, value, cid)
				}
				if err != nil && !errors.Is(err, wormspace.ErrWritten) {
					return res, fmt.Errorf("prefill: %w", err)
				}
			}
		case "write-precaptured":
			// Enough captures for the cell at cell.Precapture writes/s,
			// warm-up included, captured ahead, a batch at a time.
			n := min(int(float64(cell.Precapture)*(cell.Warmup+cell.Measure).Seconds())/cell.Clients+precaptureBatch, half)
			for i := 0; i < n; i += precaptureBatch {
				end := min(i+precaptureBatch, n)
				cid, err := c.SegCapture(ctx, cell.Seg, base+uint64(i), base+uint64(end))
				if err != nil {
					return res, fmt.Errorf("pre-capture: %w", err)
				}
				for range end - i {
					cids[g] = append(cids[g], cid)
				}
			}
		}
	}
	if cell.Mark != nil {
		cell.Mark()
	}
	start := time.Now()
	from := start.Add(cell.Warmup)
	to := from.Add(cell.Measure)
	lats := make([][]time.Duration, cell.Clients)
	total := make([]int, cell.Clients)
	errs := make([]error, cell.Clients)
	var wg sync.WaitGroup
	for g := range cell.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := uint64(g) * perClient
			for i := 0; ; i++ {
				t0 := time.Now()
				if !t0.Before(to) {
					return
				}
				var err error
				switch cell.Op {
				case "read":
					_, err = c.Read(ctx, cell.Seg, base+uint64(i%prefill))
				case "capture+write":
					off := base + half + uint64(i%half)
					var cid wormspace.CaptureID
					if cid, err = c.Capture(ctx, cell.Seg, off); err == nil {
						err = c.Write(ctx, cell.Seg, off, value, cid)
					}
				case "write-precaptured":
					if i >= len(cids[g]) {
						// A client faster than the provision: capture another
						// batch now. It is timed (one capture per batch of
						// writes, counted against Strata).
						end := min(i+precaptureBatch, half)
						if i >= end {
							errs[g] = fmt.Errorf("ran out of registers for pre-captured writes after %d writes", i)
							return
						}
						cid, err := c.SegCapture(ctx, cell.Seg, base+uint64(i), base+uint64(end))
						if err != nil {
							errs[g] = fmt.Errorf("pre-capture during the run: %w", err)
							return
						}
						for range end - i {
							cids[g] = append(cids[g], cid)
						}
					}
					err = c.Write(ctx, cell.Seg, base+uint64(i), value, cids[g][i])
				}
				if err != nil && !errors.Is(err, wormspace.ErrWritten) {
					errs[g] = err
					return
				}
				t1 := time.Now()
				total[g]++
				if !t0.Before(from) && t1.Before(to) {
					lats[g] = append(lats[g], t1.Sub(t0))
				}
			}
		}()
	}
	wg.Wait()
	if cell.Mark != nil {
		cell.Mark()
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	var all []time.Duration
	for g, l := range lats {
		all = append(all, l...)
		res.OpsTotal += total[g]
	}
	if len(all) == 0 {
		return res, errors.New("no operation completed in the measured window")
	}
	slices.Sort(all)
	res.Ops, res.Seconds = len(all), cell.Measure.Seconds()
	res.OpsPerSec = float64(len(all)) / cell.Measure.Seconds()
	res.P50us = micros(Percentile(all, 0.50))
	res.P99us = micros(Percentile(all, 0.99))
	// Trim the cell's segment (outside timing) so the servers reclaim its
	// registers' journal slots for the next cells.
	if err := c.Trim(ctx, cell.Seg); err != nil {
		return res, fmt.Errorf("trim after the cell: %w", err)
	}
	return res, nil
}

// Percentile is the nearest-rank percentile p of sorted latencies: the
// smallest value with at least p of them at or below it. The etcd peer's
// bench (bench/etcd) uses the same definition, so p50 and p99 mean the
// same on both sides.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	idx := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(idx, len(sorted)-1))]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
