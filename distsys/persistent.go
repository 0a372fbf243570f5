package distsys

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"strata/distsys/tla"
	"strata/journal"
	"strata/journal/disk"
)

// Persistent is a `ref` resource (or a local variable bound with BindRef)
// whose committed value lives in a region of Strata's crash-safe journal
// (strata/journal), so it survives a crash or restart of the process:
// OpenPersistent on the recovered journal reads the value of the last
// committed section.
//
// Writes are buffered in the section. PreCommit encodes the value and
// prepares one journal operation that overwrites the region's blocks
// (nothing reaches the journal yet, and a value too large for the region
// is refused here, before any resource commits); Commit commits that
// operation and waits until it is durable (journal Commit(true): commit
// and flush); Abort drops it, so an aborted section's write never reaches
// the disk. Because the journal operation is atomic, a crash during
// Commit leaves the old value or the new one, never a mix.
//
// A Commit can still fail when the disk does; the archetype then stops
// (Context.Run reports "commit: ..."), since other resources of the
// section may already have committed. The value of a section whose Commit
// returned is durable; one whose Commit was cut by a crash may or may not
// be (it was never acknowledged).
//
// Region format, from its first block: magic "DSP1", the encoding's
// length (uint32) and CRC-32C (uint32), all little-endian, then the
// value's binary encoding (tla.Value.MarshalBinary) across as many blocks
// as it needs. A region of zeros is fresh and holds the initial value.
//
// A Persistent belongs to one archetype, like a Local; Value may be
// called from any goroutine. Two Persistents must not share blocks.
type Persistent struct {
	j      *journal.Journal
	blkno  uint64
	blocks uint64

	mu    sync.Mutex
	value tla.Value // committed

	pending tla.Value // written in the current section, if dirty
	dirty   bool
	op      *journal.Op // prepared by PreCommit, committed by Commit
	opValue tla.Value   // the value op writes
}

const (
	persistMagic  = "DSP1"
	persistHeader = 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrPersistent matches errors about a persistent region: one that does
// not hold a persistent value, or a value that does not fit.
var ErrPersistent = errors.New("distsys: persistent resource")

// OpenPersistent opens the persistent resource in the journal's data
// blocks [blkno, blkno+blocks): it recovers the value stored there, or,
// if the region is fresh (all zeros at its start), starts from init.
func OpenPersistent(j *journal.Journal, blkno, blocks uint64, init tla.Value) (*Persistent, error) {
	if j == nil {
		return nil, fmt.Errorf("%w: nil journal", ErrPersistent)
	}
	if blocks == 0 || blkno+blocks < blkno || blkno+blocks > j.Size() {
		return nil, fmt.Errorf("%w: region of %d blocks at block %d outside the journal's %d data blocks", ErrPersistent, blocks, blkno, j.Size())
	}
	if !init.IsValid() {
		return nil, fmt.Errorf("%w: invalid initial value", ErrPersistent)
	}
	p := &Persistent{j: j, blkno: blkno, blocks: blocks, value: init}
	first := make([]byte, disk.BlockSize)
	if err := j.ReadBlocks(blkno, first); err != nil {
		return nil, fmt.Errorf("%w at block %d: %v", ErrPersistent, blkno, err)
	}
	if allZero(first[:persistHeader]) {
		return p, nil
	}
	if string(first[:4]) != persistMagic {
		return nil, fmt.Errorf("%w at block %d: no persistent value there (magic %q)", ErrPersistent, blkno, first[:4])
	}
	n := uint64(binary.LittleEndian.Uint32(first[4:]))
	sum := binary.LittleEndian.Uint32(first[8:])
	if persistHeader+n > blocks*disk.BlockSize {
		return nil, fmt.Errorf("%w at block %d: stored length %d exceeds the region of %d blocks", ErrPersistent, blkno, n, blocks)
	}
	nb := (persistHeader + n + disk.BlockSize - 1) / disk.BlockSize
	buf := first
	if nb > 1 {
		buf = make([]byte, nb*disk.BlockSize)
		if err := j.ReadBlocks(blkno, buf); err != nil {
			return nil, fmt.Errorf("%w at block %d: %v", ErrPersistent, blkno, err)
		}
	}
	enc := buf[persistHeader : persistHeader+n]
	if crc32.Checksum(enc, castagnoli) != sum {
		return nil, fmt.Errorf("%w at block %d: checksum mismatch", ErrPersistent, blkno)
	}
	v, err := tla.Decode(enc)
	if err != nil {
		return nil, fmt.Errorf("%w at block %d: %v", ErrPersistent, blkno, err)
	}
	p.value = v
	return p, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// Value returns the committed value.
func (p *Persistent) Value() tla.Value {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.value
}

func (p *Persistent) Read(context.Context) (tla.Value, error) {
	if p.dirty {
		return p.pending, nil
	}
	return p.Value(), nil
}

func (p *Persistent) Write(_ context.Context, v tla.Value) error {
	p.pending, p.dirty = v, true
	return nil
}

// PreCommit prepares the journal operation that writes the new value.
func (p *Persistent) PreCommit(context.Context) error {
	if !p.dirty {
		return nil
	}
	enc, err := p.pending.MarshalBinary()
	if err != nil {
		return fmt.Errorf("%w at block %d: %v", ErrPersistent, p.blkno, err)
	}
	n := uint64(len(enc))
	if persistHeader+n > p.blocks*disk.BlockSize || n > 1<<32-1 {
		return fmt.Errorf("%w at block %d: value of %d bytes encoded does not fit its %d blocks", ErrPersistent, p.blkno, n, p.blocks)
	}
	nb := (persistHeader + n + disk.BlockSize - 1) / disk.BlockSize
	buf := make([]byte, nb*disk.BlockSize)
	copy(buf, persistMagic)
	binary.LittleEndian.PutUint32(buf[4:], uint32(n))
	binary.LittleEndian.PutUint32(buf[8:], crc32.Checksum(enc, castagnoli))
	copy(buf[persistHeader:], enc)
	op := p.j.Begin()
	for i := range nb {
		if err := op.OverWrite(journal.Addr{Blkno: p.blkno + i}, journal.BlockBits, buf[i*disk.BlockSize:(i+1)*disk.BlockSize]); err != nil {
			return fmt.Errorf("%w at block %d: %v", ErrPersistent, p.blkno, err)
		}
	}
	p.op, p.opValue = op, p.pending
	return nil
}

// Commit commits the prepared operation and waits until it is durable.
func (p *Persistent) Commit(ctx context.Context) error {
	op, v := p.op, p.opValue
	p.op, p.opValue, p.pending, p.dirty = nil, tla.Value{}, tla.Value{}, false
	if op == nil {
		return nil
	}
	_, err := op.CommitContext(ctx, true)
	if op.Seq() != 0 {
		// In the journal (later reads see it) even if the wait for
		// durability failed: the committed value is the new one.
		p.mu.Lock()
		p.value = v
		p.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("persistent value at block %d: %w", p.blkno, err)
	}
	return nil
}

// Abort drops the section's write and any prepared operation (an Op that
// is never committed leaves no trace in the journal).
func (p *Persistent) Abort() {
	p.op, p.opValue, p.pending, p.dirty = nil, tla.Value{}, tla.Value{}, false
}
