// Package journal is the journal benchmark (`strata bench journal`):
// Strata's journal against the published GoJournal package (driven by its
// own module, bench/journal/gojournal) on the same workload, each run in
// its own process on its own prepared file, alternating, several rounds.
//
// Workload (GoJournal's NFS-write shape): G goroutines, each repeatedly
// running one operation that overwrites its own 128-byte inode object (32
// inodes share a block) and its own 4 KiB data block, then commits with
// wait=true; or with wait=false and a Flush every FlushEvery operations.
//
// Both journals sit on a file on the same medium and make writes durable
// with the same barrier, fdatasync: Strata's journal/disk.FileDisk, and for
// GoJournal goose's FileDisk with its fsync replaced by fdatasync (the
// peer's -barrier flag; fsync, goose's own, is available as a labelled
// second peer).
package journal

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"strata/bench/kit"
	"strata/journal"
	"strata/journal/disk"
)

const (
	inodeBits = 128 * 8
	perBlock  = journal.BlockBits / inodeBits
	dataBase  = 64 // data blocks follow 64 inode blocks, as in the peer worker
	warmup    = 200 * time.Millisecond
	// Both systems get a 64 MiB file written with zeros and synced before
	// the run, so neither pays for block allocation or extent conversion.
	DiskBlocks = 16384
	ZeroBlocks = DiskBlocks
	// GoJournal's log is fixed (wal.LOGSZ); noted in its settings.
	peerLogBlocks = 511
)

// Result is one run of one system, as printed by a worker.
type Result struct {
	System     string  `json:"system"`
	Round      int     `json:"round"` // set by the harness, from 1
	Goroutines int     `json:"goroutines"`
	Wait       bool    `json:"wait"`
	Ops        int     `json:"ops"`
	Seconds    float64 `json:"seconds"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	// The peer only: the barrier its disk used.
	Barrier string `json:"barrier,omitempty"`
	// Strata only: what the log did during the measured window.
	Records    uint64  `json:"records,omitempty"`
	RingBlocks uint64  `json:"ring_blocks,omitempty"`
	Barriers   uint64  `json:"barriers,omitempty"`
	Absorbed   uint64  `json:"absorbed,omitempty"`
	LogBusy    float64 `json:"logger_busy_fraction,omitempty"`
}

// WorkerConfig describes one run.
type WorkerConfig struct {
	File       string
	Goroutines int
	Duration   time.Duration
	Wait       bool
	FlushEvery int
	LogBlocks  uint64
}

// RunStrata runs the workload on Strata's journal in a fresh file.
func RunStrata(ctx context.Context, c WorkerConfig) (Result, error) {
	res := Result{System: "strata", Goroutines: c.Goroutines, Wait: c.Wait}
	d, err := disk.CreateFile(c.File, DiskBlocks, ZeroBlocks)
	if err != nil {
		return res, err
	}
	if err := journal.Format(d, c.LogBlocks); err != nil {
		d.Close()
		return res, err
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		d.Close()
		return res, err
	}
	var phase atomic.Int32 // 0 warmup, 1 measure, 2 done
	lats := make([][]time.Duration, c.Goroutines)
	errs := make(chan error, c.Goroutines)
	var wg sync.WaitGroup
	for g := 0; g < c.Goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ino := make([]byte, inodeBits/8)
			blk := make([]byte, disk.BlockSize)
			ia := journal.Addr{Blkno: uint64(g / perBlock), Off: uint64(g%perBlock) * inodeBits}
			da := journal.Addr{Blkno: dataBase + uint64(g)}
			for i := uint64(1); ; i++ {
				p := phase.Load()
				if p == 2 || ctx.Err() != nil {
					errs <- nil
					return
				}
				binary.LittleEndian.PutUint64(ino, i)
				binary.LittleEndian.PutUint64(blk, i)
				t0 := time.Now()
				op := j.Begin()
				if err := op.OverWrite(ia, inodeBits, ino); err != nil {
					errs <- err
					return
				}
				if err := op.OverWrite(da, journal.BlockBits, blk); err != nil {
					errs <- err
					return
				}
				if _, err := op.Commit(c.Wait); err != nil {
					errs <- err
					return
				}
				lat := time.Since(t0)
				if p == 1 && phase.Load() == 1 {
					lats[g] = append(lats[g], lat)
				}
				if !c.Wait && c.FlushEvery > 0 && i%uint64(c.FlushEvery) == 0 {
					if err := j.Flush(); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	time.Sleep(warmup)
	before := j.Stats()
	start := time.Now()
	phase.Store(1)
	time.Sleep(c.Duration)
	phase.Store(2)
	elapsed := time.Since(start)
	after := j.Stats()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			j.Close()
			return res, err
		}
	}
	if err := j.Close(); err != nil {
		return res, err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	res.Ops = len(all)
	res.Seconds = elapsed.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.P50us, res.P99us = percentiles(all)
	res.Records = after.Records - before.Records
	res.RingBlocks = after.RingBlks - before.RingBlks
	res.Barriers = after.Barriers - before.Barriers
	res.Absorbed = after.Absorbed - before.Absorbed
	res.LogBusy = (after.LogBusy - before.LogBusy).Seconds() / elapsed.Seconds()
	return res, nil
}

// percentiles are nearest-rank, in microseconds: the same definition as
// the peer worker's (bench/journal/gojournal, percentileUs).
func percentiles(lats []time.Duration) (p50, p99 float64) {
	if len(lats) == 0 {
		return 0, 0
	}
	slices.Sort(lats)
	at := func(q float64) float64 {
		i := max(0, min(len(lats)-1, int(math.Ceil(q*float64(len(lats))))-1))
		return float64(lats[i].Nanoseconds()) / 1e3
	}
	return at(0.50), at(0.99)
}

// BarrierLatency measures, in a scratch file in dir, the median time to
// write bytes sequentially and fdatasync, over n repetitions.
func BarrierLatency(dir string, bytes int, n int) (time.Duration, error) {
	blocks := uint64((bytes + disk.BlockSize - 1) / disk.BlockSize)
	path := fmt.Sprintf("%s/barrier-probe.img", dir)
	d, err := disk.CreateFile(path, blocks*8+1, blocks*8+1)
	if err != nil {
		return 0, err
	}
	defer removeDisk(d, path)
	buf := make([]byte, blocks*disk.BlockSize)
	var ts []float64
	for i := 0; i < n; i++ {
		buf[0] = byte(i)
		t0 := time.Now()
		if err := d.Write(uint64(i%8)*blocks, buf); err != nil {
			return 0, err
		}
		if err := d.Barrier(); err != nil {
			return 0, err
		}
		ts = append(ts, float64(time.Since(t0)))
	}
	return time.Duration(kit.Median(ts)), nil
}

func removeDisk(d *disk.FileDisk, path string) {
	d.Close()
	os.Remove(path)
}
