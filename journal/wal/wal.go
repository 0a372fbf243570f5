// Package wal is the journal's write-ahead log: atomic multiwrites of whole
// blocks (GoJournal §6.1).
//
// The logical log is a list of block updates indexed by position:
//
//	installed | memStart … diskEnd | … nextDiskEnd | … memEnd
//	          |  logged on disk    | being logged  | in memory only
//
// MemAppend adds a multiwrite at memEnd. The logger goroutine freezes the
// in-memory tail (advancing nextDiskEnd), writes [diskEnd, nextDiskEnd) as one
// checksummed record of the circular log, issues one barrier and advances
// diskEnd (group commit). It logs at once when someone waits in Flush (or
// space runs short); multiwrites nobody waits for stay in memory for up to
// Options.LogDelay (2 ms), so that they share the next record instead of
// each costing a barrier. The installer goroutine copies logged updates to
// their home blocks, makes them durable, advances the on-disk start and then
// memStart. Reads look in [memStart, memEnd) first, then at the home block.
//
// Guarantees: every multiwrite is atomic across crashes; a multiwrite whose
// Flush returned (or that precedes one) survives a crash; after a crash the
// disk holds the effect of a prefix of the appended multiwrites. Absorption
// (a later write to a block replacing an earlier one in memory) only touches
// updates at or after nextDiskEnd, so the logger never logs a mixture of
// states (the §8.6 bug); freeze points are the only places a logged record
// may end, which keeps every record a union of whole multiwrites.
//
// Assumptions: the disk keeps 4 KiB block writes atomic and honours
// barriers; callers do not append concurrent multiwrites that write the
// same block with different intent (the object layer serialises that).
package wal

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"strata/journal/circular"
	"strata/journal/disk"
)

// blockPool recycles block buffers: a hot block is rewritten by every
// operation, and allocating (and zeroing, and collecting) 4 KiB per update
// costs more CPU than the rest of a non-waiting commit.
var blockPool = sync.Pool{New: func() any { return new([disk.BlockSize]byte) }}

// GetBlock returns a block buffer with arbitrary contents, for an Update.
func GetBlock() []byte { return blockPool.Get().(*[disk.BlockSize]byte)[:] }

// PutBlock recycles a buffer from GetBlock (or any BlockSize slice whose
// array is exactly one block) that nothing references any more.
func PutBlock(b []byte) {
	if cap(b) == disk.BlockSize {
		blockPool.Put((*[disk.BlockSize]byte)(b[:disk.BlockSize]))
	}
}

// hdrEvery is how often (in records) the logger refreshes its header. The
// header bounds how much of the log recovery must find intact; writing it
// with every record would cost a second scattered write per barrier.
const hdrEvery = 64

// ErrTooBig means a multiwrite needs more log space than the whole log has;
// it can never commit, and nothing was changed.
var ErrTooBig = errors.New("wal: multiwrite is larger than the log")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("wal: closed")

// ErrAddr is returned for a block address outside the data region.
var ErrAddr = errors.New("wal: block address outside the data region")

// Update is a write of one whole block at a data-region address.
type Update struct {
	Addr uint64 // relative to the start of the data region
	Data []byte // disk.BlockSize bytes; the WAL keeps it, callers must not reuse it
}

// Stats counts what the WAL did since Open.
type Stats struct {
	Appended    uint64        // block updates passed to MemAppend
	Absorbed    uint64        // of those, absorbed into an earlier unlogged update
	Records     uint64        // group-commit records written
	LoggedBlks  uint64        // data blocks written to the log
	RingBlks    uint64        // ring blocks written (data + descriptors)
	Barriers    uint64        // barriers issued by logger and installer
	Installed   uint64        // home-block writes
	Recovered   uint64        // updates replayed by recovery at Open
	LogWaits    uint64        // times the logger waited for ring space
	LogBusy     time.Duration // time the logger spent writing records and in barriers
	AppendWaits uint64        // times MemAppend waited for memory
	DirectBlks  uint64        // blocks written home directly (WriteDirect), bypassing the log
	DataBarrier uint64        // barriers the logger issued before a record, for direct writes
}

type group struct {
	end     uint64 // update position after the group
	ringEnd uint64 // ring position after its record
}

// WAL is a write-ahead log over a disk. All methods are safe for concurrent use.
type WAL struct {
	d         disk.Disk
	log       *circular.Log
	logBlocks uint64
	dataStart uint64
	dataSize  uint64
	memLimit  uint64
	logDelay  time.Duration

	// Everything below is guarded by mu, except wg and the hooks (set
	// before the goroutines start). The logger and installer goroutines
	// (logger.go, installer.go) release mu for their disk writes and
	// barriers; what they read meanwhile is immutable (updates below
	// nextDiskEnd are never absorbed) or their own.
	mu          sync.Mutex
	logCond     *sync.Cond // logger: something to log, or ring space freed
	instCond    *sync.Cond // installer: a group was logged
	spaceCond   *sync.Cond // MemAppend: memory freed
	durable     chan struct{}
	memStart    uint64
	diskEnd     uint64
	nextDiskEnd uint64
	freezes     []uint64 // freeze points in (diskEnd, nextDiskEnd], ascending
	memLog      []circular.Update
	index       map[uint64]uint64 // absolute block -> latest position in memLog
	ringStart   uint64            // durable start of the on-disk log
	ringEnd     uint64            // end of the logged records
	groups      []group           // logged, not yet installed
	installGen  uint64
	seq         uint64 // multiwrites appended
	closing     bool
	logWaiting  bool // the logger waits for ring space
	appWaiting  int  // MemAppend calls waiting for memory
	// Lazy logging (see logger): Flush calls waiting, when the oldest
	// unlogged multiwrite was appended, and whether a wake-up is armed.
	flushWaiting int
	unloggedAt   time.Time
	lazyTimer    *time.Timer
	// Ordered writes (WriteDirect): direct counts completed direct writes;
	// directSynced is its value at the last barrier the logger issued.
	direct, directSynced uint64
	err                  error // sticky: the first disk error; the WAL is dead after it
	stats                Stats
	wg                   sync.WaitGroup

	// hookBeforeAppend runs in the logger with the range it is about to log
	// fixed and no lock held (tests use it to race absorption with logging).
	hookBeforeAppend func()
	// hookBeforeInstall runs in the installer before it installs, unlocked.
	hookBeforeInstall func()
}

// Options tune a WAL.
type Options struct {
	// MemLimit caps the updates held in memory (logged but not installed,
	// plus unlogged); MemAppend waits above it. Default: twice the log size.
	MemLimit uint64
	// LogDelay is how long multiwrites nobody waits for may stay unlogged
	// (see the logger): they become durable within about this much, or at
	// the next Flush. Zero: DefaultLogDelay, or STRATA_LOGDELAY if set;
	// negative: log at once.
	LogDelay time.Duration
}

// DefaultLogDelay is Options.LogDelay's default.
const DefaultLogDelay = 2 * time.Millisecond

// Format writes an empty journal with a log of logBlocks blocks on d.
func Format(d disk.Disk, logBlocks uint64, id uint64) error {
	_, err := circular.Format(d, logBlocks, id)
	return err
}

// Open recovers the journal on d (replaying logged multiwrites to their home
// blocks) and starts the logger and installer.
func Open(d disk.Disk, opt Options) (*WAL, error) {
	l, start, recs, err := circular.Recover(d)
	if err != nil {
		return nil, fmt.Errorf("wal: open: %w", err)
	}
	h := l.Header()
	w := &WAL{
		d:         d,
		log:       l,
		logBlocks: h.LogBlocks,
		dataStart: h.DataStart(),
		dataSize:  h.DiskBlocks - h.DataStart(),
		memLimit:  opt.MemLimit,
		logDelay:  logDelay(opt.LogDelay),
		durable:   make(chan struct{}),
		index:     map[uint64]uint64{},
	}
	if w.memLimit == 0 {
		w.memLimit = 2 * h.LogBlocks
	}
	w.memLimit = max(w.memLimit, h.LogBlocks)
	end := start
	if len(recs) > 0 {
		// Replay: install the latest value of each block, make it durable,
		// then move the start past the records. A crash anywhere in here
		// leaves the start where it was, so recovery simply runs again.
		latest := map[uint64][]byte{}
		for _, r := range recs {
			for _, u := range r.Updates {
				latest[u.Addr] = u.Data
			}
			end = r.Pos + r.Blocks
			w.stats.Recovered += uint64(len(r.Updates))
		}
		if err := w.writeHome(latest); err != nil {
			return nil, fmt.Errorf("wal: recovery: %w", err)
		}
		if err := d.Barrier(); err != nil {
			return nil, fmt.Errorf("wal: recovery: %w", err)
		}
		if err := l.SetStart(end); err != nil {
			return nil, fmt.Errorf("wal: recovery: %w", err)
		}
		if err := d.Barrier(); err != nil {
			return nil, fmt.Errorf("wal: recovery: %w", err)
		}
	}
	w.ringStart, w.ringEnd = end, end
	w.logCond = sync.NewCond(&w.mu)
	w.instCond = sync.NewCond(&w.mu)
	w.spaceCond = sync.NewCond(&w.mu)
	w.wg.Add(2)
	go w.logger()
	go w.installer()
	return w, nil
}

// DataBlocks is the number of blocks in the data region (valid addresses are
// [0, DataBlocks)).
func (w *WAL) DataBlocks() uint64 { return w.dataSize }

// LogBlocks is the size of the circular log.
func (w *WAL) LogBlocks() uint64 { return w.logBlocks }

// MaxUpdates is the largest multiwrite (in distinct blocks) that can commit.
func (w *WAL) MaxUpdates() int {
	n := int(w.logBlocks)
	for n > 0 && circular.RecordBlocks(n) > w.logBlocks {
		n--
	}
	return n
}

// Stats returns a snapshot of the counters.
func (w *WAL) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// ErrLogged is returned by WriteDirect for a block with a logged update
// still in memory: it must be written through the log.
var ErrLogged = errors.New("wal: block has a logged update in memory")

// fail records the first disk error and wakes everyone. Caller holds mu.
func (w *WAL) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	close(w.durable)
	w.durable = make(chan struct{})
	w.logCond.Broadcast()
	w.instCond.Broadcast()
	w.spaceCond.Broadcast()
}

// Close logs and installs everything appended, stops the goroutines and
// returns the first disk error seen, if any. It does not close the disk.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closing = true
	w.logCond.Broadcast()
	w.instCond.Broadcast()
	w.spaceCond.Broadcast()
	w.mu.Unlock()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
