// Package obj is the journal's object layer (GoJournal §6.3): it turns
// writes of sub-block objects (a bit, a 128-byte inode, a whole block) into
// whole-block multiwrites of the WAL.
//
// Guarantees: Load is lock-free and returns the object's latest committed
// value, provided the caller holds whatever lock protects that object (other
// objects in the same block may change concurrently without harm). Commit
// installs a set of dirty objects atomically; the read-modify-write of each
// shared block and the append to the WAL happen under one commit lock, so a
// concurrent commit to a neighbouring object in the same block is never lost
// (the paper's Figure 10 case).
//
// Assumptions: callers never commit two overlapping objects concurrently
// (they lock objects, e.g. with lockmap); objects are a single bit, or a
// byte-aligned whole number of bytes within one block.
package obj

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"strata/journal/disk"
	"strata/journal/wal"
)

// BlockBits is the number of bits in a block.
const BlockBits = disk.BlockSize * 8

// ErrObject is returned for a malformed object address or size.
var ErrObject = errors.New("obj: bad object")

// Addr names an object: a block of the data region and a bit offset in it.
type Addr struct {
	Blkno uint64
	Off   uint64 // in bits
}

// Buf is an object's value. For a 1-bit object Data is one byte holding 0
// or 1; otherwise it is Sz/8 bytes.
type Buf struct {
	Addr  Addr
	Sz    uint64 // in bits
	Data  []byte
	dirty bool
}

// SetDirty marks the buffer to be written by Commit.
func (b *Buf) SetDirty() { b.dirty = true }

// Dirty reports whether the buffer will be written.
func (b *Buf) Dirty() bool { return b.dirty }

// Check validates an object's address and size against a data region of
// blocks blocks.
func Check(a Addr, sz uint64, blocks uint64) error {
	if a.Blkno >= blocks {
		return fmt.Errorf("%w: block %d outside the data region of %d blocks", ErrObject, a.Blkno, blocks)
	}
	if sz == 0 || a.Off >= BlockBits || sz > BlockBits-a.Off {
		return fmt.Errorf("%w: %d bits at bit %d do not fit in a block", ErrObject, sz, a.Off)
	}
	if sz != 1 && (sz%8 != 0 || a.Off%8 != 0) {
		return fmt.Errorf("%w: a %d-bit object at bit %d is neither one bit nor byte-aligned", ErrObject, sz, a.Off)
	}
	return nil
}

// Extract copies the object at off/sz out of blk.
func Extract(blk []byte, off, sz uint64) []byte {
	if sz == 1 {
		return []byte{(blk[off/8] >> (off % 8)) & 1}
	}
	if sz == BlockBits {
		b := wal.GetBlock()
		copy(b, blk)
		return b
	}
	return slices.Clone(blk[off/8 : (off+sz)/8])
}

// Install writes the object value data at off/sz into blk.
func Install(blk []byte, off, sz uint64, data []byte) {
	if sz == 1 {
		mask := byte(1) << (off % 8)
		if data[0]&1 != 0 {
			blk[off/8] |= mask
		} else {
			blk[off/8] &^= mask
		}
		return
	}
	copy(blk[off/8:(off+sz)/8], data)
}

// Log is the object layer over a WAL.
type Log struct {
	wal      *wal.WAL
	commitMu sync.Mutex
	blkPool  sync.Pool
}

// New wraps a WAL.
func New(w *wal.WAL) *Log {
	return &Log{wal: w, blkPool: sync.Pool{New: func() any { return new([disk.BlockSize]byte) }}}
}

// WAL returns the underlying write-ahead log.
func (l *Log) WAL() *wal.WAL { return l.wal }

// Load reads an object without taking any lock.
func (l *Log) Load(a Addr, sz uint64) (*Buf, error) {
	if err := Check(a, sz, l.wal.DataBlocks()); err != nil {
		return nil, err
	}
	if sz == BlockBits {
		data := wal.GetBlock()
		if err := l.wal.Read(a.Blkno, data); err != nil {
			wal.PutBlock(data)
			return nil, err
		}
		return &Buf{Addr: a, Sz: sz, Data: data}, nil
	}
	// A part of a block: copy just that from memory if the block is there
	// (an inode is 128 bytes of a hot block), else read the home block.
	if sz%8 == 0 {
		data := make([]byte, sz/8)
		if l.wal.ReadMemAt(a.Blkno, int(a.Off/8), data) {
			return &Buf{Addr: a, Sz: sz, Data: data}, nil
		}
	}
	blk := l.blkPool.Get().(*[disk.BlockSize]byte)
	defer l.blkPool.Put(blk)
	if err := l.wal.Read(a.Blkno, blk[:]); err != nil {
		return nil, err
	}
	return &Buf{Addr: a, Sz: sz, Data: Extract(blk[:], a.Off, sz)}, nil
}

// blockWrite collects the dirty objects of one block.
type blockWrite struct {
	blkno  uint64
	whole  *Buf // a dirty whole-block object, if any
	parts  []*Buf
	base   []byte // pre-read block (for partial writes)
	gen    uint64
	preHit bool
}

// Commit appends the dirty buffers to the WAL as one multiwrite; with wait
// it also waits until the multiwrite is durable. It returns false (and
// wal.ErrTooBig) when the multiwrite can never fit in the log; nothing is
// changed then.
//
// The returned Txn is non-zero once the multiwrite is in the log, even if
// waiting for durability then failed: such an operation may survive a crash.
func (l *Log) Commit(ctx context.Context, bufs []*Buf, wait bool) (wal.Txn, bool, error) {
	var txn wal.Txn
	var writes []*blockWrite
	byBlk := map[uint64]*blockWrite{}
	for _, b := range bufs {
		if !b.dirty {
			continue
		}
		if err := Check(b.Addr, b.Sz, l.wal.DataBlocks()); err != nil {
			return txn, false, err
		}
		if want := max(b.Sz/8, 1); uint64(len(b.Data)) != want {
			return txn, false, fmt.Errorf("%w: object at block %d bit %d has %d bytes of data, its size needs %d", ErrObject, b.Addr.Blkno, b.Addr.Off, len(b.Data), want)
		}
		bw := byBlk[b.Addr.Blkno]
		if bw == nil {
			bw = &blockWrite{blkno: b.Addr.Blkno}
			byBlk[b.Addr.Blkno] = bw
			writes = append(writes, bw)
		}
		if b.Sz == BlockBits {
			bw.whole, bw.parts = b, nil
		} else {
			bw.parts = append(bw.parts, b)
		}
	}
	if len(writes) == 0 {
		return txn, true, nil
	}
	if len(writes) > l.wal.MaxUpdates() {
		return txn, false, fmt.Errorf("%w: the operation writes %d blocks, the log holds at most %d", wal.ErrTooBig, len(writes), l.wal.MaxUpdates())
	}
	// Installation reads of shared blocks happen before the commit lock;
	// under it we only re-read if the WAL has installed something since.
	for _, bw := range writes {
		if bw.whole != nil || len(bw.parts) == 0 {
			continue
		}
		bw.base = wal.GetBlock() // filled below: from memory or the home block
		var ok bool
		if ok, bw.gen = l.wal.InMem(bw.blkno); ok {
			bw.preHit = true // copied under the lock below
			continue
		}
		if err := l.wal.ReadInstalled(bw.blkno, bw.base); err != nil {
			return txn, false, err
		}
	}
	ups := make([]wal.Update, 0, len(writes))
	l.commitMu.Lock()
	for _, bw := range writes {
		var data []byte
		if bw.whole != nil {
			// The Op is finished with its buffers once it commits, so the
			// WAL may keep this one without a copy.
			data = bw.whole.Data
		} else {
			data = bw.base
			if ok, gen := l.wal.ReadMem(bw.blkno, data); !ok && (bw.preHit || gen != bw.gen) {
				if err := l.wal.ReadInstalled(bw.blkno, data); err != nil {
					l.commitMu.Unlock()
					return txn, false, err
				}
			}
		}
		for _, p := range bw.parts {
			Install(data, p.Addr.Off, p.Sz, p.Data)
		}
		ups = append(ups, wal.Update{Addr: bw.blkno, Data: data})
	}
	txn, err := l.wal.MemAppend(ups)
	l.commitMu.Unlock()
	if err != nil {
		return txn, false, err
	}
	if wait {
		if err := l.wal.Flush(ctx, txn.Pos); err != nil {
			return txn, false, err
		}
	}
	return txn, true, nil
}
