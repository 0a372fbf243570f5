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
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
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

// ReadMem copies the latest in-memory value of block a into buf and returns
// true, or returns false with gen, the install generation to pass to
// ReadInstalled.
func (w *WAL) ReadMem(a uint64, buf []byte) (ok bool, gen uint64) {
	abs := a + w.dataStart
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.index[abs]; ok {
		copy(buf, w.memLog[p-w.memStart].Data)
		return true, 0
	}
	return false, w.installGen
}

// ReadMemAt copies the bytes of block a's latest in-memory value from
// byte off into dst and returns true, or returns false if a has no update
// in memory. It copies only len(dst) bytes (an inode, not its block).
func (w *WAL) ReadMemAt(a uint64, off int, dst []byte) bool {
	abs := a + w.dataStart
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.index[abs]; ok {
		copy(dst, w.memLog[p-w.memStart].Data[off:])
		return true
	}
	return false
}

// InMem reports whether block a has an update in memory, without copying
// it; on false it returns the install generation, as ReadMem does.
func (w *WAL) InMem(a uint64) (bool, uint64) {
	abs := a + w.dataStart
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.index[abs]; ok {
		return true, 0
	}
	return false, w.installGen
}

// InstallGen counts completed installations; a home block read after a
// ReadMem miss is current if the generation has not moved since.
func (w *WAL) InstallGen() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.installGen
}

// ReadInstalled reads block a from its home location. It may return an old
// value if a multiwrite to a commits concurrently (GoJournal's weak read).
func (w *WAL) ReadInstalled(a uint64, buf []byte) error {
	if a >= w.dataSize {
		return fmt.Errorf("%w: block %d, data region has %d", ErrAddr, a, w.dataSize)
	}
	if err := w.d.Read(a+w.dataStart, buf[:disk.BlockSize]); err != nil {
		return fmt.Errorf("wal: read block %d: %w", a, err)
	}
	return nil
}

// Read returns the latest value of block a.
func (w *WAL) Read(a uint64, buf []byte) error {
	if a >= w.dataSize {
		return fmt.Errorf("%w: block %d, data region has %d", ErrAddr, a, w.dataSize)
	}
	if ok, _ := w.ReadMem(a, buf); ok {
		return nil
	}
	return w.ReadInstalled(a, buf)
}

// ReadRun fills dst (whole blocks) with the latest values of the
// consecutive blocks from a: from memory where a block has an update
// there, else from home, consecutive home blocks in one read. The caller
// must keep multiwrites to these blocks from being appended meanwhile (a
// block installed concurrently is read either way, since it leaves memory
// only once its home copy is durable).
func (w *WAL) ReadRun(a uint64, dst []byte) error {
	if len(dst) == 0 || len(dst)%disk.BlockSize != 0 {
		return fmt.Errorf("wal: read of %d bytes is not whole blocks", len(dst))
	}
	n := uint64(len(dst) / disk.BlockSize)
	if a >= w.dataSize || n > w.dataSize-a {
		return fmt.Errorf("%w: blocks [%d,%d), data region has %d", ErrAddr, a, a+n, w.dataSize)
	}
	var inMem []bool
	w.mu.Lock()
	for i := uint64(0); i < n; i++ {
		if p, ok := w.index[a+i+w.dataStart]; ok {
			if inMem == nil {
				inMem = make([]bool, n)
			}
			inMem[i] = true
			copy(dst[i*disk.BlockSize:(i+1)*disk.BlockSize], w.memLog[p-w.memStart].Data)
		}
	}
	w.mu.Unlock()
	for i := uint64(0); i < n; {
		if inMem != nil && inMem[i] {
			i++
			continue
		}
		j := i + 1
		for j < n && (inMem == nil || !inMem[j]) {
			j++
		}
		if err := w.d.Read(a+i+w.dataStart, dst[i*disk.BlockSize:j*disk.BlockSize]); err != nil {
			return fmt.Errorf("wal: read blocks [%d,%d): %w", a+i, a+j, err)
		}
		i = j
	}
	return nil
}

// Txn identifies an appended multiwrite.
type Txn struct {
	Pos uint64 // log position after it: pass to Flush
	Seq uint64 // 1 for the first multiwrite since Open, 2 for the next, ...
}

// MemAppend appends the multiwrite ups at memEnd. It waits while memory is
// full. The WAL takes ownership of every Data slice.
func (w *WAL) MemAppend(ups []Update) (Txn, error) {
	for _, u := range ups {
		if u.Addr >= w.dataSize {
			return Txn{}, fmt.Errorf("%w: block %d, data region has %d", ErrAddr, u.Addr, w.dataSize)
		}
		if len(u.Data) != disk.BlockSize {
			return Txn{}, fmt.Errorf("wal: update of block %d has %d bytes, want %d", u.Addr, len(u.Data), disk.BlockSize)
		}
	}
	k := uint64(len(ups))
	if circular.RecordBlocks(len(ups)) > w.logBlocks {
		return Txn{}, fmt.Errorf("%w: %d blocks need %d log blocks, the log has %d", ErrTooBig, k, circular.RecordBlocks(len(ups)), w.logBlocks)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.err == nil && !w.closing && w.memEnd()-w.memStart+k > w.memLimit {
		w.stats.AppendWaits++
		w.appWaiting++
		w.logCond.Signal()
		w.instCond.Signal()
		w.spaceCond.Wait()
		w.appWaiting--
	}
	if w.err != nil {
		return Txn{}, w.err
	}
	if w.closing {
		return Txn{}, ErrClosed
	}
	if w.memEnd() == w.diskEnd {
		w.unloggedAt = time.Now() // the oldest unlogged multiwrite, for lazy
	}
	// Keep every unfrozen stretch loggable as one record.
	if circular.RecordBlocks(int(w.memEnd()-w.nextDiskEnd+k)) > w.logBlocks {
		w.freeze()
	}
	for _, u := range ups {
		abs := u.Addr + w.dataStart
		if p, ok := w.index[abs]; ok && p >= w.nextDiskEnd {
			// Nothing else holds the absorbed block: readers copy under mu
			// and the logger and installer only touch positions before
			// nextDiskEnd.
			PutBlock(w.memLog[p-w.memStart].Data)
			w.memLog[p-w.memStart].Data = u.Data
			w.stats.Absorbed++
			continue
		}
		w.index[abs] = w.memEnd()
		w.memLog = append(w.memLog, circular.Update{Addr: abs, Data: u.Data})
	}
	w.stats.Appended += k
	w.seq++
	w.logCond.Signal()
	return Txn{Pos: w.memEnd(), Seq: w.seq}, nil
}

func (w *WAL) memEnd() uint64 { return w.memStart + uint64(len(w.memLog)) }

// freeze makes memEnd a point where a logged record may end and stops
// absorption into anything before it. Caller holds mu.
func (w *WAL) freeze() {
	if e := w.memEnd(); e > w.nextDiskEnd {
		w.nextDiskEnd = e
		w.freezes = append(w.freezes, e)
	}
}

// Flush waits until every multiwrite before pos is durable.
func (w *WAL) Flush(ctx context.Context, pos uint64) error {
	for {
		w.mu.Lock()
		if w.diskEnd >= pos {
			w.mu.Unlock()
			return nil
		}
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		ch := w.durable
		w.flushWaiting++
		w.logCond.Signal()
		w.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = fmt.Errorf("wal: flush: %w", ctx.Err())
		}
		w.mu.Lock()
		w.flushWaiting--
		w.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// ErrLogged is returned by WriteDirect for a block with a logged update
// still in memory: it must be written through the log.
var ErrLogged = errors.New("wal: block has a logged update in memory")

// WriteDirect writes bufs (whole blocks) to consecutive data blocks from a
// at their home locations, bypassing the log (ordered mode: the data is
// written once instead of twice). It writes nothing and returns ErrLogged
// if any of the blocks has an update in memory, whose installation or
// replay would overwrite the direct write.
//
// The write is durable once a multiwrite appended after WriteDirect
// returned is durable: the logger issues a barrier for direct writes
// before it writes the next record. So a caller that writes data into
// blocks nothing references yet and then appends the multiwrite that
// references them never exposes unwritten data after a crash.
//
// The caller must guarantee that no multiwrite writing these blocks is
// appended while WriteDirect runs, and that no state that may still be
// recovered references them (a block freed by a multiwrite that is not yet
// durable could come back to life with the direct write's contents).
func (w *WAL) WriteDirect(a uint64, bufs [][]byte) error {
	n := uint64(0)
	for _, b := range bufs {
		if len(b) == 0 || len(b)%disk.BlockSize != 0 {
			return fmt.Errorf("wal: direct write of %d bytes is not whole blocks", len(b))
		}
		n += uint64(len(b) / disk.BlockSize)
	}
	if n == 0 || a >= w.dataSize || n > w.dataSize-a {
		return fmt.Errorf("%w: direct write of blocks [%d,%d), data region has %d", ErrAddr, a, a+n, w.dataSize)
	}
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if w.closing {
		w.mu.Unlock()
		return ErrClosed
	}
	for i := uint64(0); i < n; i++ {
		if _, ok := w.index[a+i+w.dataStart]; ok {
			w.mu.Unlock()
			return fmt.Errorf("%w: block %d", ErrLogged, a+i)
		}
	}
	w.mu.Unlock()
	if err := disk.WriteVec(w.d, a+w.dataStart, bufs); err != nil {
		return fmt.Errorf("wal: direct write at block %d: %w", a, err)
	}
	w.mu.Lock()
	w.direct++
	w.stats.DirectBlks += n
	w.mu.Unlock()
	return nil
}

// DurablePos is the position up to which appended multiwrites are durable:
// a multiwrite with Txn.Pos <= DurablePos survives a crash.
func (w *WAL) DurablePos() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.diskEnd
}

// Pending reports whether some appended multiwrite is not yet durable.
func (w *WAL) Pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.memEnd() > w.diskEnd
}

// FlushAll waits until everything appended so far is durable.
func (w *WAL) FlushAll(ctx context.Context) error {
	w.mu.Lock()
	end := w.memEnd()
	w.mu.Unlock()
	return w.Flush(ctx, end)
}

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

func (w *WAL) logger() {
	defer w.wg.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for w.err == nil && w.memEnd() == w.diskEnd && !w.closing {
			w.logCond.Wait()
		}
		if w.err != nil || w.memEnd() == w.diskEnd {
			return // failed, or closing with everything logged
		}
		if w.lazy() {
			continue
		}
		w.freeze()
		// The largest freeze point whose record fits the free ring space.
		free := w.logBlocks - (w.ringEnd - w.ringStart)
		end := uint64(0)
		for _, f := range w.freezes {
			if circular.RecordBlocks(int(f-w.diskEnd)) > free {
				break
			}
			end = f
		}
		if end == 0 {
			w.stats.LogWaits++
			w.logWaiting = true
			w.instCond.Signal()
			w.logCond.Wait() // the installer signals when it frees space
			w.logWaiting = false
			continue
		}
		ups := w.memLog[w.diskEnd-w.memStart : end-w.memStart : end-w.memStart]
		pos, durableEnd := w.ringEnd, w.ringEnd
		hook := w.hookBeforeAppend
		// Multiwrites in this record may point at blocks written directly
		// before they were appended: those writes must be durable before the
		// record can be, or recovery could find metadata without its data.
		direct := w.direct
		dataBarrier := direct != w.directSynced
		w.mu.Unlock()
		if hook != nil {
			hook()
		}
		t0 := time.Now()
		var err error
		if dataBarrier {
			err = w.d.Barrier()
		}
		var newEnd uint64
		if err == nil {
			newEnd, err = w.log.Append(pos, ups)
		}
		if err == nil && w.stats.Records%hdrEvery == 0 {
			err = w.log.SetEnd(durableEnd)
		}
		if err == nil {
			err = w.d.Barrier()
		}
		w.mu.Lock()
		if err != nil {
			w.fail(fmt.Errorf("wal: logger: %w", err))
			return
		}
		w.stats.LogBusy += time.Since(t0)
		w.stats.Records++
		w.stats.LoggedBlks += uint64(len(ups))
		w.stats.RingBlks += newEnd - pos
		w.stats.Barriers++
		if dataBarrier {
			w.stats.Barriers++
			w.stats.DataBarrier++
		}
		w.directSynced = max(w.directSynced, direct)
		w.diskEnd = end
		w.ringEnd = newEnd
		i := 0
		for i < len(w.freezes) && w.freezes[i] <= end {
			i++
		}
		w.freezes = w.freezes[i:]
		w.groups = append(w.groups, group{end: end, ringEnd: newEnd})
		close(w.durable)
		w.durable = make(chan struct{})
		w.instCond.Signal()
	}
}

func (w *WAL) installer() {
	defer w.wg.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	latest := map[uint64][]byte{}
	for {
		for w.err == nil && !w.shouldInstall() && !(w.closing && w.diskEnd == w.memEnd()) {
			w.instCond.Wait()
		}
		if w.err != nil || len(w.groups) == 0 {
			return
		}
		last := w.groups[len(w.groups)-1]
		ngroups := len(w.groups)
		ups := w.memLog[:last.end-w.memStart]
		hook := w.hookBeforeInstall
		w.mu.Unlock()
		if hook != nil {
			hook()
		}
		clear(latest)
		for _, u := range ups {
			latest[u.Addr] = u.Data
		}
		err := w.writeHome(latest)
		if err == nil {
			err = w.d.Barrier()
		}
		// The start may move only once the installed blocks are durable, and
		// the ring space may be reused only once the new start is.
		if err == nil {
			err = w.log.SetStart(last.ringEnd)
		}
		if err == nil {
			err = w.d.Barrier()
		}
		w.mu.Lock()
		if err != nil {
			w.fail(fmt.Errorf("wal: installer: %w", err))
			return
		}
		w.stats.Barriers += 2
		w.stats.Installed += uint64(len(latest))
		for i, u := range ups {
			if w.index[u.Addr] == w.memStart+uint64(i) {
				delete(w.index, u.Addr)
			}
			PutBlock(u.Data) // installed and unreachable once dropped below
		}
		clear(latest)
		// Copy the tail so the installed prefix's array can be collected.
		w.memLog = append([]circular.Update(nil), w.memLog[len(ups):]...)
		w.memStart = last.end
		w.ringStart = last.ringEnd
		w.groups = w.groups[ngroups:]
		w.installGen++
		w.spaceCond.Broadcast()
		w.logCond.Signal()
	}
}

// logDelay resolves Options.LogDelay.
func logDelay(opt time.Duration) time.Duration {
	if opt != 0 {
		return opt
	}
	if v := os.Getenv("STRATA_LOGDELAY"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return DefaultLogDelay
}

// lazy reports whether the logger should wait before logging: nobody waits
// for durability, nothing presses for space, and the oldest unlogged
// multiwrite is younger than the log delay. Logging such multiwrites at
// once costs a barrier each time, and a Flush that arrives while that
// barrier runs waits for two; waiting lets them share the record of the
// next Flush (ext4 and other journals hold commits the same way). It arms
// a wake-up for the deadline and waits once. Caller holds mu.
func (w *WAL) lazy() bool {
	if w.logDelay <= 0 || w.flushWaiting > 0 || w.closing || w.logWaiting || w.appWaiting > 0 ||
		w.memEnd()-w.memStart >= w.memLimit/2 {
		return false
	}
	left := w.logDelay - time.Since(w.unloggedAt)
	if left <= 0 {
		return false
	}
	if w.lazyTimer == nil {
		w.lazyTimer = time.AfterFunc(left, func() {
			w.mu.Lock()
			w.lazyTimer = nil
			w.mu.Unlock()
			w.logCond.Broadcast()
		})
	}
	w.logCond.Wait()
	return true
}

// shouldInstall says whether installing now is worth its two barriers:
// installation is deferred until the ring or memory is half used (or someone
// waits for space, or the WAL is closing), so that one installation covers
// many group commits and writes each hot block home once. Caller holds mu.
func (w *WAL) shouldInstall() bool {
	if len(w.groups) == 0 {
		return false
	}
	return w.closing || w.logWaiting || w.appWaiting > 0 ||
		w.ringEnd-w.ringStart >= w.logBlocks/2 ||
		w.memEnd()-w.memStart >= w.memLimit/2
}

// writeHome writes blocks to their home locations, coalescing runs of
// consecutive addresses into one write.
func (w *WAL) writeHome(blocks map[uint64][]byte) error {
	addrs := make([]uint64, 0, len(blocks))
	for a := range blocks {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	var buf []byte
	for i := 0; i < len(addrs); {
		j := i + 1
		for j < len(addrs) && addrs[j] == addrs[j-1]+1 && j-i < 256 {
			j++
		}
		var data []byte
		if j-i == 1 {
			data = blocks[addrs[i]]
		} else {
			buf = buf[:0]
			for _, a := range addrs[i:j] {
				buf = append(buf, blocks[a]...)
			}
			data = buf
		}
		if err := w.d.Write(addrs[i], data); err != nil {
			return err
		}
		i = j
	}
	return nil
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
