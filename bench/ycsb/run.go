package ycsb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DB is a system under test, as YCSB's DB binding sees it with one field
// per record. Implementations are safe for concurrent use, must not keep
// a value slice after the call returns, and read linearizably (the
// comparison is between linearizable stores).
type DB interface {
	// Read returns the record's value, or an error wrapping ErrNotFound.
	Read(ctx context.Context, key string) ([]byte, error)
	// Update replaces an existing record's value.
	Update(ctx context.Context, key string, value []byte) error
	// Insert writes a new record.
	Insert(ctx context.Context, key string, value []byte) error
	// Scan reads up to n records in key order from start (inclusive) up
	// to KeyPrefixEnd, and returns how many it read.
	Scan(ctx context.Context, start string, n int) (int, error)
	// ReadModifyWrite reads the record, then writes value to it, as
	// YCSB's core workload does (a read, then an update: two requests,
	// not a transaction), and returns what it read.
	ReadModifyWrite(ctx context.Context, key string, value []byte) ([]byte, error)
}

// ErrNotFound is what a DB's Read wraps when the record does not exist.
var ErrNotFound = errors.New("record not found")

// DefaultOpTimeout bounds one request unless a config says otherwise.
const DefaultOpTimeout = 10 * time.Second

// RunConfig is one run phase.
type RunConfig struct {
	Workload  Workload
	Records   int64 // records present: 0..Records-1
	Clients   int   // closed-loop clients, one request outstanding each
	ValueSize int
	Warmup    time.Duration
	Measure   time.Duration
	Seed      uint64
	OpTimeout time.Duration // per request (default DefaultOpTimeout)
}

// OpStats are one operation kind's figures in the measured window.
type OpStats struct {
	Ops   int     `json:"ops"`
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
}

// Result is a run's measurement: throughput and nearest-rank latency
// percentiles of the requests that started in the measured window and
// ended before its end.
type Result struct {
	Workload  string  `json:"workload"`
	Clients   int     `json:"clients"`
	Records   int64   `json:"records"` // at the start
	Ops       int     `json:"ops"`     // in the measured window
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	// OpsTotal counts every completed request, warm-up and the window's
	// stragglers included.
	OpsTotal int `json:"ops_total"`
	// After is the record count once the run ended (Records plus the
	// acknowledged inserts): the next run's Records.
	After int64              `json:"records_after"`
	PerOp map[string]OpStats `json:"per_op"`
}

func (c *RunConfig) check() error {
	if c.Clients < 1 || c.Measure <= 0 || c.Warmup < 0 || c.ValueSize < 1 {
		return fmt.Errorf("ycsb: run needs clients >= 1, a positive window and value size, a warm-up >= 0 (clients %d, window %v, warm-up %v, value size %d)",
			c.Clients, c.Measure, c.Warmup, c.ValueSize)
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	return nil
}

// Run runs the workload's run phase against db: cfg.Clients goroutines,
// each issuing its generator's requests one at a time for the warm-up and
// the measured window. It returns at the first failed request (the other
// clients stop) with an error naming it.
func Run(ctx context.Context, db DB, cfg RunConfig) (Result, error) {
	res := Result{Workload: cfg.Workload.Name, Clients: cfg.Clients, Records: cfg.Records}
	if err := cfg.check(); err != nil {
		return res, err
	}
	ks, err := NewKeyspace(cfg.Workload, cfg.Records)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type lat struct {
		kind OpKind
		d    time.Duration
	}
	lats := make([][]lat, cfg.Clients)
	total := make([]int, cfg.Clients)
	var (
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	start := time.Now()
	from := start.Add(cfg.Warmup)
	to := from.Add(cfg.Measure)
	var wg sync.WaitGroup
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := ks.Client(cfg.Seed, c, cfg.ValueSize)
			for ctx.Err() == nil && time.Now().Before(to) {
				// Drawn before the timer starts (filling a value takes a
				// microsecond), and only for a request that is issued: an
				// insert's record number is never left unused.
				op, err := g.Next()
				if err != nil {
					fail(err)
					return
				}
				t0 := time.Now()
				if err := Do(ctx, db, op, cfg.ValueSize, cfg.OpTimeout); err != nil {
					if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
						fail(err)
					}
					return
				}
				t1 := time.Now()
				g.Done(op)
				total[c]++
				if !t0.Before(from) && t1.Before(to) {
					lats[c] = append(lats[c], lat{op.Kind, t1.Sub(t0)})
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return res, first
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	var all []time.Duration
	per := make([][]time.Duration, numKinds)
	for c, ls := range lats {
		res.OpsTotal += total[c]
		for _, l := range ls {
			all = append(all, l.d)
			per[l.kind] = append(per[l.kind], l.d)
		}
	}
	res.After = ks.Records()
	if len(all) == 0 {
		return res, errors.New("ycsb: no request completed in the measured window")
	}
	slices.Sort(all)
	res.Ops, res.Seconds = len(all), cfg.Measure.Seconds()
	res.OpsPerSec = float64(len(all)) / cfg.Measure.Seconds()
	res.P50us, res.P99us = micros(Percentile(all, 0.50)), micros(Percentile(all, 0.99))
	res.PerOp = map[string]OpStats{}
	for k, ds := range per {
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		res.PerOp[OpKind(k).String()] = OpStats{Ops: len(ds), P50us: micros(Percentile(ds, 0.5)), P99us: micros(Percentile(ds, 0.99))}
	}
	return res, nil
}

// Do issues one request and checks what it returned: a read must find a
// value of valueSize bytes (every record was written with one), a scan
// from an existing record between 1 and ScanLen records.
func Do(ctx context.Context, db DB, op Op, valueSize int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	switch op.Kind {
	case Read:
		var v []byte
		if v, err = db.Read(ctx, op.Key); err == nil && len(v) != valueSize {
			err = fmt.Errorf("read a value of %d bytes, want %d", len(v), valueSize)
		}
	case Update:
		err = db.Update(ctx, op.Key, op.Value)
	case Insert:
		err = db.Insert(ctx, op.Key, op.Value)
	case Scan:
		var n int
		if n, err = db.Scan(ctx, op.Key, op.ScanLen); err == nil && (n < 1 || n > op.ScanLen) {
			err = fmt.Errorf("scan returned %d records, want 1..%d (it starts at an existing record)", n, op.ScanLen)
		}
	case ReadModifyWrite:
		var v []byte
		if v, err = db.ReadModifyWrite(ctx, op.Key, op.Value); err == nil && len(v) != valueSize {
			err = fmt.Errorf("read a value of %d bytes, want %d", len(v), valueSize)
		}
	default:
		err = fmt.Errorf("unknown operation %v", op.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s of record %d (%s): %w", op.Kind, op.Keynum, op.Key, err)
	}
	return nil
}

// LoadConfig is a load phase: records From..To-1 inserted by Clients
// goroutines.
type LoadConfig struct {
	From, To  int64
	Clients   int
	ValueSize int
	Seed      uint64
	OpTimeout time.Duration
	// Progress, if set, is called about every tenth of the load with the
	// records inserted so far.
	Progress func(done, total int64)
}

// LoadResult is a load phase's figures.
type LoadResult struct {
	Records   int64   `json:"records"` // inserted
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
}

// Load inserts records cfg.From..cfg.To-1, each with a fresh random value
// of cfg.ValueSize bytes, and stops at the first failure.
func Load(ctx context.Context, db DB, cfg LoadConfig) (LoadResult, error) {
	var res LoadResult
	if cfg.To < cfg.From || cfg.From < 0 || cfg.Clients < 1 || cfg.ValueSize < 1 {
		return res, fmt.Errorf("ycsb: load needs 0 <= from <= to, clients >= 1, value size >= 1 (from %d, to %d, clients %d, value size %d)",
			cfg.From, cfg.To, cfg.Clients, cfg.ValueSize)
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	total := cfg.To - cfg.From
	step := max(total/10, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next, done atomic.Int64
		once       sync.Once
		first      error
		wg         sync.WaitGroup
	)
	next.Store(cfg.From)
	t0 := time.Now()
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// An empty keyspace: loading uses only the client's values.
			g := (&Keyspace{}).Client(cfg.Seed, c, cfg.ValueSize)
			for ctx.Err() == nil {
				n := next.Add(1) - 1
				if n >= cfg.To {
					return
				}
				g.fill()
				op := Op{Kind: Insert, Keynum: n, Key: KeyName(n), Value: g.value}
				if err := Do(ctx, db, op, cfg.ValueSize, cfg.OpTimeout); err != nil {
					once.Do(func() { first = fmt.Errorf("load: %w", err); cancel() })
					return
				}
				if d := done.Add(1); cfg.Progress != nil && d%step == 0 {
					cfg.Progress(d, total)
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return res, first
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.Records = done.Load()
	res.Seconds = time.Since(t0).Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Records) / res.Seconds
	}
	return res, nil
}

// Percentile is the nearest-rank percentile p of sorted latencies: the
// smallest value with at least p of them at or below it (the definition
// every Strata benchmark uses, both sides alike).
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	idx := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(idx, len(sorted)-1))]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
