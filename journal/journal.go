// Package journal is Strata's crash-safe concurrent journal, the only way a
// node touches its disk (GoJournal's JRNL layer over OBJ, WAL and CIRCULAR).
//
// An operation (Begin) reads objects (ReadBuf), changes them (SetDirty,
// OverWrite) and commits them atomically (Commit). Commit(true) returns once
// the operation is durable; Commit(false) returns once it is visible to later
// operations, and Flush makes all of those durable.
//
// Guarantees: after a crash, recovery (Open) yields the state after some
// prefix of the committed operations that includes every operation whose
// Commit(true) or a later Flush returned. Corrupt on-disk state is reported
// by Open as an error. Operations that cannot fit in the log are rejected
// with ErrTooBig and change nothing.
//
// Assumptions: concurrency control is the caller's (lock objects with
// lockmap, as GoNFS locks inodes); two operations in flight never write
// overlapping objects.
package journal

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"strata/journal/disk"
	"strata/journal/obj"
	"strata/journal/wal"
)

// Re-exported names so that callers need only this package.
type (
	// Addr names an object: data-region block and bit offset.
	Addr = obj.Addr
	// Buf is an object's value within an operation.
	Buf = obj.Buf
)

// Sizes of common objects, in bits.
const (
	BlockBits = obj.BlockBits
	BitSize   = 1
)

// ErrTooBig: the operation needs more log space than exists.
var ErrTooBig = wal.ErrTooBig

// ErrObject: a malformed object address or size.
var ErrObject = obj.ErrObject

// DefaultLogBlocks is the log size Format uses when given 0 (16 MiB).
const DefaultLogBlocks = 4096

// Journal is an open journal. It is safe for concurrent use.
type Journal struct {
	d   disk.Disk
	wal *wal.WAL
	obj *obj.Log
}

// Options tune Open.
type Options struct {
	WAL wal.Options
}

// Format writes an empty journal with a log of logBlocks (0: the default)
// blocks on d, erasing what was there.
func Format(d disk.Disk, logBlocks uint64) error {
	if logBlocks == 0 {
		logBlocks = min(DefaultLogBlocks, max(d.Size()/4, 4))
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("journal: format: %w", err)
	}
	if err := wal.Format(d, logBlocks, binary.LittleEndian.Uint64(b[:])); err != nil {
		return fmt.Errorf("journal: format: %w", err)
	}
	return nil
}

// Open recovers the journal on d and starts it.
func Open(d disk.Disk, opt Options) (*Journal, error) {
	w, err := wal.Open(d, opt.WAL)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Journal{d: d, wal: w, obj: obj.New(w)}, nil
}

// OpenFile opens the journal in the file at path, or, if there is no such
// file, creates one of blocks 4 KiB blocks (zeroing the log's) and formats
// an empty journal with the default log in it; created says which.
func OpenFile(path string, blocks uint64, opt Options) (j *Journal, created bool, err error) {
	d, err := disk.OpenFile(path)
	if errors.Is(err, os.ErrNotExist) {
		created = true
		if d, err = disk.CreateFile(path, blocks, 2+DefaultLogBlocks); err == nil {
			if err = Format(d, 0); err != nil {
				d.Close()
			}
		}
	}
	if err != nil {
		return nil, false, err
	}
	if j, err = Open(d, opt); err != nil {
		d.Close()
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return j, created, nil
}

// Size is the number of blocks in the data region.
func (j *Journal) Size() uint64 { return j.wal.DataBlocks() }

// Stats returns the write-ahead log's counters.
func (j *Journal) Stats() wal.Stats { return j.wal.Stats() }

// ReadBlocks fills dst (whole blocks) with the committed contents of the
// consecutive blocks from blkno, in as few disk reads as it can. It takes
// no lock: the caller must keep operations that write these blocks out
// (e.g. with the lock of the file they belong to).
func (j *Journal) ReadBlocks(blkno uint64, dst []byte) error {
	if err := j.wal.ReadRun(blkno, dst); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// DurablePos is the commit position up to which operations are durable:
// an operation whose Pos is at most DurablePos survives a crash.
func (j *Journal) DurablePos() uint64 { return j.wal.DurablePos() }

// Pending reports whether some committed operation is not yet durable
// (so that a caller with nothing to wait for can skip Flush).
func (j *Journal) Pending() bool { return j.wal.Pending() }

// FlushTo makes the operations committed at positions up to pos (Op.Pos)
// durable, and so every operation committed before them.
func (j *Journal) FlushTo(pos uint64) error { return j.wal.Flush(context.Background(), pos) }

// Flush makes every committed operation durable.
func (j *Journal) Flush() error { return j.FlushContext(context.Background()) }

// FlushContext is Flush with a context that bounds the wait.
func (j *Journal) FlushContext(ctx context.Context) error { return j.wal.FlushAll(ctx) }

// Close flushes and installs everything, stops the journal's goroutines and
// closes the disk.
func (j *Journal) Close() error {
	err := j.wal.Close()
	if cerr := j.d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Op is one atomic operation. An Op is used by one goroutine.
type Op struct {
	seq, pos uint64
	j        *Journal
	bufs     map[Addr]*Buf
	order    []*Buf
	direct   map[uint64][]byte // WriteDirect blocks, not yet written
}

// Begin starts an operation.
func (j *Journal) Begin() *Op { return &Op{j: j} }

// ReadBuf returns the object's latest value in this operation: what the
// operation wrote, or else the latest committed value. Changes to Data take
// effect at Commit if SetDirty is called.
func (op *Op) ReadBuf(a Addr, sz uint64) (*Buf, error) {
	if data, ok := op.direct[a.Blkno]; ok {
		// Reading back a direct block: it becomes an ordinary logged write.
		delete(op.direct, a.Blkno)
		if err := op.OverWrite(Addr{Blkno: a.Blkno}, BlockBits, data); err != nil {
			return nil, err
		}
	}
	if b, ok := op.bufs[a]; ok {
		if b.Sz != sz {
			return nil, fmt.Errorf("%w: object at block %d bit %d read as %d bits, earlier as %d", ErrObject, a.Blkno, a.Off, sz, b.Sz)
		}
		return b, nil
	}
	b, err := op.j.obj.Load(a, sz)
	if err != nil {
		return nil, err
	}
	if op.bufs == nil {
		op.bufs = map[Addr]*Buf{}
	}
	op.bufs[a] = b
	op.order = append(op.order, b)
	return b, nil
}

// OverWrite sets the object's value without reading it. data has sz/8 bytes
// (one byte holding 0 or 1 for a bit object) and is copied.
func (op *Op) OverWrite(a Addr, sz uint64, data []byte) error {
	if err := obj.Check(a, sz, op.j.Size()); err != nil {
		return err
	}
	if want := max(sz/8, 1); uint64(len(data)) != want {
		return fmt.Errorf("%w: %d bytes for a %d-bit object", ErrObject, len(data), sz)
	}
	b, ok := op.bufs[a]
	if !ok {
		b = &Buf{Addr: a, Sz: sz}
		if op.bufs == nil {
			op.bufs = map[Addr]*Buf{}
		}
		op.bufs[a] = b
		op.order = append(op.order, b)
	} else if b.Sz != sz {
		return fmt.Errorf("%w: object at block %d bit %d written as %d bits, earlier as %d", ErrObject, a.Blkno, a.Off, sz, b.Sz)
	}
	if sz == BlockBits && cap(b.Data) < len(data) {
		b.Data = wal.GetBlock() // whole blocks are handed to the WAL at Commit
	}
	b.Data = append(b.Data[:0], data...)
	b.SetDirty()
	return nil
}

// WriteDirect sets block blkno to data (one whole block) in ordered mode:
// at Commit the block is written at its home location before the
// operation's other objects are appended to the log, instead of through
// the log, so its bytes are written once. It is for data blocks that this
// operation makes reachable: blocks it allocated, which no recoverable
// state references (in particular, not blocks freed by an operation that
// is not yet durable). After a crash the block holds the new data if the
// operation survived, and anything if it did not. If the block still has
// a logged update in memory, Commit logs it instead. data is not copied
// and must not change until Commit returns.
func (op *Op) WriteDirect(blkno uint64, data []byte) error {
	if err := obj.Check(Addr{Blkno: blkno}, BlockBits, op.j.Size()); err != nil {
		return err
	}
	if len(data) != disk.BlockSize {
		return fmt.Errorf("%w: direct write of %d bytes, want one %d-byte block", ErrObject, len(data), disk.BlockSize)
	}
	if _, ok := op.bufs[Addr{Blkno: blkno}]; ok {
		return op.OverWrite(Addr{Blkno: blkno}, BlockBits, data)
	}
	if op.direct == nil {
		op.direct = make(map[uint64][]byte, 16)
	}
	op.direct[blkno] = data
	return nil
}

// writeDirect writes the operation's direct blocks home, consecutive
// blocks in one call; a run that meets a logged block is logged instead.
func (op *Op) writeDirect() error {
	if len(op.direct) == 0 {
		return nil
	}
	blks := make([]uint64, 0, len(op.direct))
	for b := range op.direct {
		blks = append(blks, b)
	}
	slices.Sort(blks)
	var bufs [][]byte
	for i := 0; i < len(blks); {
		j := i + 1
		for j < len(blks) && blks[j] == blks[j-1]+1 {
			j++
		}
		bufs = bufs[:0]
		for _, b := range blks[i:j] {
			bufs = append(bufs, op.direct[b])
		}
		err := op.j.wal.WriteDirect(blks[i], bufs)
		if errors.Is(err, wal.ErrLogged) {
			for _, b := range blks[i:j] {
				if err := op.OverWrite(Addr{Blkno: b}, BlockBits, op.direct[b]); err != nil {
					return err
				}
			}
		} else if err != nil {
			return err
		}
		i = j
	}
	op.direct = nil
	return nil
}

// Commit installs the operation's dirty objects atomically; with wait it
// returns once they are durable. It returns false with ErrTooBig when the
// operation can never fit in the log (nothing changes). An Op must not be
// used after Commit, nor any Buf it returned: the journal may keep their
// memory.
func (op *Op) Commit(wait bool) (bool, error) {
	return op.CommitContext(context.Background(), wait)
}

// CommitContext is Commit with a context bounding the wait for durability.
func (op *Op) CommitContext(ctx context.Context, wait bool) (bool, error) {
	if err := op.writeDirect(); err != nil {
		op.bufs, op.order, op.direct = nil, nil, nil
		return false, fmt.Errorf("journal: commit: %w", err)
	}
	txn, ok, err := op.j.obj.Commit(ctx, op.order, wait)
	op.bufs, op.order = nil, nil
	op.seq, op.pos = txn.Seq, txn.Pos
	return ok, err
}

// Pos is, after Commit, the operation's commit position (0 if it wrote
// nothing): it is durable once Journal.DurablePos reaches Pos.
func (op *Op) Pos() uint64 { return op.pos }

// Seq is, after Commit, the operation's place in the journal's commit order
// (1 for the first multiwrite since Open); 0 if it never reached the log or
// wrote nothing. An operation with a Seq may survive a crash even if Commit
// reported an error while waiting for durability.
func (op *Op) Seq() uint64 { return op.seq }
