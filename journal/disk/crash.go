package disk

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
)

// ErrCrashed is returned by a CrashDisk after it has crashed.
var ErrCrashed = errors.New("disk: crashed (simulated)")

// CrashDisk is an in-memory Disk for crash tests. It keeps the durable
// contents (as of the last Barrier) apart from the block writes made since,
// and Crash builds the disk a machine would see after power loss: each block
// written since the last barrier holds either its durable value or any one of
// the values written to it since (4 KiB blocks are atomic; nothing else is
// ordered). Reads see the latest write, as a page cache would.
type CrashDisk struct {
	mu      sync.Mutex
	durable [][]byte            // nil: zeros
	latest  [][]byte            // what reads return
	pending map[uint64][][]byte // writes not yet made durable by a barrier, in order
	order   []uint64            // blocks with pending writes, first-write order
	settled map[uint64]int      // per block: writes made durable (and dropped from pending) so far
	crashed bool
	limit   int64 // writes left before crashing by itself; <0: no limit

	Writes   int64 // block writes so far
	Barriers int64
}

// NewCrashDisk returns a zeroed crash-simulating disk.
func NewCrashDisk(blocks uint64) *CrashDisk {
	return &CrashDisk{
		durable: make([][]byte, blocks),
		latest:  make([][]byte, blocks),
		pending: map[uint64][][]byte{},
		settled: map[uint64]int{},
		limit:   -1,
	}
}

// CrashAfterWrites makes the disk crash by itself (every later call fails
// with ErrCrashed) once n more block writes have been made.
func (d *CrashDisk) CrashAfterWrites(n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.limit = n
}

// Stop marks the disk crashed without building a successor; every later
// call fails with ErrCrashed.
func (d *CrashDisk) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
}

func (d *CrashDisk) Read(a uint64, buf []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return ErrCrashed
	}
	if err := checkRange(a, len(buf), uint64(len(d.latest))); err != nil {
		return err
	}
	for i := 0; i*BlockSize < len(buf); i++ {
		dst := buf[i*BlockSize : (i+1)*BlockSize]
		if b := d.latest[a+uint64(i)]; b != nil {
			copy(dst, b)
		} else {
			clear(dst)
		}
	}
	return nil
}

func (d *CrashDisk) Write(a uint64, data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return ErrCrashed
	}
	if err := checkRange(a, len(data), uint64(len(d.latest))); err != nil {
		return err
	}
	for i := 0; i*BlockSize < len(data); i++ {
		if d.limit == 0 {
			d.crashed = true
			return ErrCrashed
		}
		if d.limit > 0 {
			d.limit--
		}
		b := make([]byte, BlockSize)
		copy(b, data[i*BlockSize:])
		blk := a + uint64(i)
		d.latest[blk] = b
		if len(d.pending[blk]) == 0 {
			d.order = append(d.order, blk)
		}
		d.pending[blk] = append(d.pending[blk], b)
		d.Writes++
	}
	return nil
}

// Barrier makes durable the writes that completed before it was called,
// and only those: like a real disk's flush, it takes time, and writes made
// while it runs (by other goroutines) stay pending. Concurrent barriers
// may return in any order.
func (d *CrashDisk) Barrier() error {
	d.mu.Lock()
	if d.crashed {
		d.mu.Unlock()
		return ErrCrashed
	}
	type mark struct {
		blk uint64
		n   int // writes to blk before the call, counted from the first
	}
	marks := make([]mark, 0, len(d.order))
	for _, blk := range d.order {
		marks = append(marks, mark{blk, d.settled[blk] + len(d.pending[blk])})
	}
	d.mu.Unlock()
	runtime.Gosched() // let other writes and barriers in meanwhile
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return ErrCrashed
	}
	for _, m := range marks {
		k := m.n - d.settled[m.blk] // of the pending writes, those made before the call
		if k <= 0 {
			continue // a concurrent barrier settled them
		}
		w := d.pending[m.blk]
		d.durable[m.blk] = w[k-1]
		d.pending[m.blk] = w[k:]
		d.settled[m.blk] += k
	}
	order := d.order[:0]
	for _, blk := range d.order {
		if len(d.pending[blk]) > 0 {
			order = append(order, blk)
		} else {
			delete(d.pending, blk)
		}
	}
	d.order = order
	d.Barriers++
	return nil
}

func (d *CrashDisk) Size() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return uint64(len(d.latest))
}

// Close does not crash the disk: a closed CrashDisk can still be crashed to
// inspect what survived.
func (d *CrashDisk) Close() error { return nil }

// PendingBlocks lists, in first-write order, the blocks written since the
// last barrier and how many writes each received. A crash state picks, for
// each, an index in [0, n]: 0 keeps the durable value, i keeps write i.
func (d *CrashDisk) PendingBlocks() (blocks []uint64, writes []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.order {
		blocks = append(blocks, b)
		writes = append(writes, len(d.pending[b]))
	}
	return blocks, writes
}

// Crash stops this disk (every later call fails with ErrCrashed) and returns
// a fresh CrashDisk holding the post-crash contents. pick(i, block, n) chooses
// for the i-th pending block which value survives (0: the durable one).
func (d *CrashDisk) Crash(pick func(i int, block uint64, n int) int) *CrashDisk {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	return d.snapshot(pick)
}

// Snapshot is Crash without stopping this disk: it shows what a crash now
// could leave while the system keeps running.
func (d *CrashDisk) Snapshot(pick func(i int, block uint64, n int) int) *CrashDisk {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.snapshot(pick)
}

func (d *CrashDisk) snapshot(pick func(i int, block uint64, n int) int) *CrashDisk {
	nd := NewCrashDisk(uint64(len(d.durable)))
	copy(nd.durable, d.durable)
	for i, blk := range d.order {
		w := d.pending[blk]
		if k := pick(i, blk, len(w)); k > 0 && k <= len(w) {
			nd.durable[blk] = w[k-1]
		}
	}
	copy(nd.latest, nd.durable)
	return nd
}

// CrashRandom crashes keeping a random subset of the pending writes.
func (d *CrashDisk) CrashRandom(rng *rand.Rand) *CrashDisk {
	return d.Crash(func(_ int, _ uint64, n int) int { return rng.IntN(n + 1) })
}

// CrashAll crashes keeping every pending write, as if a barrier had run.
func (d *CrashDisk) CrashAll() *CrashDisk {
	return d.Crash(func(_ int, _ uint64, n int) int { return n })
}

// CrashNone crashes keeping only what was durable.
func (d *CrashDisk) CrashNone() *CrashDisk {
	return d.Crash(func(int, uint64, int) int { return 0 })
}
