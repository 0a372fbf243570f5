package disk

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// FileDisk is a Disk backed by a regular file or a block device, accessed
// with pread/pwrite; Barrier is fdatasync.
type FileDisk struct {
	f      *os.File
	size   uint64
	closed atomic.Bool
}

// CreateFile creates (or truncates) a file of the given number of blocks.
// The first zeroBlocks blocks are written with zeros so that later writes
// there overwrite allocated blocks and fdatasync has no metadata to flush;
// the rest is preallocated with fallocate where the file system allows it.
func CreateFile(path string, blocks uint64, zeroBlocks uint64) (*FileDisk, error) {
	if blocks == 0 {
		return nil, fmt.Errorf("disk: create %s: size must be at least one block", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("disk: create %s: %w", path, err)
	}
	size := int64(blocks) * BlockSize
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("disk: size %s: %w", path, err)
		}
	}
	if zeroBlocks > blocks {
		zeroBlocks = blocks
	}
	zero := make([]byte, 256*BlockSize)
	for b := uint64(0); b < zeroBlocks; {
		n := min(zeroBlocks-b, 256)
		if _, err := f.WriteAt(zero[:n*BlockSize], int64(b)*BlockSize); err != nil {
			f.Close()
			return nil, fmt.Errorf("disk: zero %s: %w", path, err)
		}
		b += n
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("disk: sync %s: %w", path, err)
	}
	return &FileDisk{f: f, size: blocks}, nil
}

// OpenFile opens an existing file or block device. Its size must be a
// non-zero multiple of BlockSize.
func OpenFile(path string) (*FileDisk, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("disk: open %s: %w", path, err)
	}
	end, err := f.Seek(0, 2) // works for block devices too, unlike Stat
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("disk: size of %s: %w", path, err)
	}
	if end < BlockSize || end%BlockSize != 0 {
		f.Close()
		return nil, fmt.Errorf("disk: %s is %d bytes, not a positive multiple of the %d-byte block", path, end, BlockSize)
	}
	return &FileDisk{f: f, size: uint64(end) / BlockSize}, nil
}

func (d *FileDisk) Read(a uint64, buf []byte) error {
	if d.closed.Load() {
		return ErrClosed
	}
	if err := checkRange(a, len(buf), d.size); err != nil {
		return err
	}
	if _, err := d.f.ReadAt(buf, int64(a)*BlockSize); err != nil {
		return fmt.Errorf("disk: read block %d: %w", a, err)
	}
	return nil
}

func (d *FileDisk) Write(a uint64, data []byte) error {
	if d.closed.Load() {
		return ErrClosed
	}
	if err := checkRange(a, len(data), d.size); err != nil {
		return err
	}
	if _, err := d.f.WriteAt(data, int64(a)*BlockSize); err != nil {
		return fmt.Errorf("disk: write block %d: %w", a, err)
	}
	return nil
}

// Barrier calls fdatasync. An error here means durability of earlier writes
// is unknown; callers must treat it as fatal for the data they guard.
func (d *FileDisk) Barrier() error {
	if d.closed.Load() {
		return ErrClosed
	}
	if err := unix.Fdatasync(int(d.f.Fd())); err != nil {
		return fmt.Errorf("disk: fdatasync: %w", err)
	}
	return nil
}

func (d *FileDisk) Size() uint64 { return d.size }

func (d *FileDisk) Close() error {
	if d.closed.Swap(true) {
		return ErrClosed
	}
	return errors.Join(d.f.Close())
}

// iovMax bounds the buffers per pwritev call (Linux's IOV_MAX).
const iovMax = 1024

// WriteVec writes bufs to consecutive blocks from a with pwritev. After a
// short write it may reslice elements of bufs.
func (d *FileDisk) WriteVec(a uint64, bufs [][]byte) error {
	if d.closed.Load() {
		return ErrClosed
	}
	if total, err := checkVec(a, bufs, d.size); total == 0 || err != nil {
		return err
	}
	off := int64(a) * BlockSize
	for len(bufs) > 0 {
		chunk := bufs[:min(len(bufs), iovMax)]
		n, err := unix.Pwritev(int(d.f.Fd()), chunk, off)
		if err != nil {
			return fmt.Errorf("disk: pwritev at block %d: %w", off/BlockSize, err)
		}
		if n == 0 {
			return fmt.Errorf("disk: pwritev at block %d wrote nothing", off/BlockSize)
		}
		off += int64(n)
		// Drop what was written; a short write resumes mid-buffer.
		for n > 0 && len(bufs) > 0 {
			if n >= len(bufs[0]) {
				n -= len(bufs[0])
				bufs = bufs[1:]
			} else {
				bufs[0] = bufs[0][n:]
				n = 0
			}
		}
	}
	return nil
}
