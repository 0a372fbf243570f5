// Package disk is the block-device layer under the journal.
//
// Guarantees: a Disk reads and writes whole 4096-byte blocks; a Write of
// several consecutive blocks is a sequence of independent block writes (each
// block is atomic, the group is not); Barrier returns only after every write
// that returned before Barrier was called is durable.
//
// Assumptions: the underlying device writes a 4 KiB block atomically (the
// GoJournal paper's model). Layers above add checksums so that a device that
// breaks this assumption is detected rather than trusted.
package disk

import (
	"errors"
	"fmt"
)

// BlockSize is the size of a disk block in bytes.
const BlockSize = 4096

// ErrOutOfRange is returned for an access beyond the end of the disk.
var ErrOutOfRange = errors.New("disk: block address out of range")

// ErrClosed is returned for an access to a closed disk.
var ErrClosed = errors.New("disk: closed")

// Disk is a block device. Implementations are safe for concurrent use.
type Disk interface {
	// Read fills buf (a non-empty multiple of BlockSize) from consecutive
	// blocks starting at a.
	Read(a uint64, buf []byte) error
	// Write stores data (a non-empty multiple of BlockSize) to consecutive
	// blocks starting at a.
	Write(a uint64, data []byte) error
	// Barrier makes every write that completed before the call durable.
	Barrier() error
	// Size is the number of blocks.
	Size() uint64
	// Close releases the device; later calls fail with ErrClosed.
	Close() error
}

// checkRange validates an access of len(buf) bytes at block a on a disk of
// size blocks.
func checkRange(a uint64, n int, size uint64) error {
	if n == 0 || n%BlockSize != 0 {
		return fmt.Errorf("disk: buffer length %d is not a positive multiple of %d", n, BlockSize)
	}
	nb := uint64(n / BlockSize)
	if a >= size || nb > size-a {
		return fmt.Errorf("%w: blocks [%d,%d) on a disk of %d blocks", ErrOutOfRange, a, a+nb, size)
	}
	return nil
}

// VecWriter is implemented by disks that write several buffers to
// consecutive blocks in one call (pwritev), avoiding a gathering copy.
type VecWriter interface {
	WriteVec(a uint64, bufs [][]byte) error
}

// WriteVec writes bufs (each a multiple of BlockSize) to consecutive blocks
// starting at a, in one call where d supports it.
func WriteVec(d Disk, a uint64, bufs [][]byte) error {
	if vw, ok := d.(VecWriter); ok {
		return vw.WriteVec(a, bufs)
	}
	// Validate everything first so that a bad call writes nothing.
	if total, err := checkVec(a, bufs, d.Size()); total == 0 || err != nil {
		return err
	}
	for _, b := range bufs {
		if err := d.Write(a, b); err != nil {
			return err
		}
		a += uint64(len(b) / BlockSize)
	}
	return nil
}

// checkVec validates a vector write and returns its length in bytes.
func checkVec(a uint64, bufs [][]byte, size uint64) (int, error) {
	total := 0
	for _, b := range bufs {
		if len(b) == 0 || len(b)%BlockSize != 0 {
			return 0, fmt.Errorf("disk: vector buffer of %d bytes is not a positive multiple of %d", len(b), BlockSize)
		}
		total += len(b)
	}
	if total == 0 {
		return 0, nil
	}
	return total, checkRange(a, total, size)
}
