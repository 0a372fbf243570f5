package disk

import (
	"sync"
)

// MemDisk is a Disk held in memory. Barrier is a no-op: nothing survives the
// process, so there is nothing to order.
type MemDisk struct {
	mu     sync.RWMutex
	blocks [][]byte // nil means all zeros
	closed bool
}

// NewMemDisk returns a zeroed in-memory disk of the given number of blocks.
func NewMemDisk(blocks uint64) *MemDisk {
	return &MemDisk{blocks: make([][]byte, blocks)}
}

func (d *MemDisk) Read(a uint64, buf []byte) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	if err := checkRange(a, len(buf), uint64(len(d.blocks))); err != nil {
		return err
	}
	for i := 0; i*BlockSize < len(buf); i++ {
		dst := buf[i*BlockSize : (i+1)*BlockSize]
		if b := d.blocks[a+uint64(i)]; b != nil {
			copy(dst, b)
		} else {
			clear(dst)
		}
	}
	return nil
}

func (d *MemDisk) Write(a uint64, data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if err := checkRange(a, len(data), uint64(len(d.blocks))); err != nil {
		return err
	}
	for i := 0; i*BlockSize < len(data); i++ {
		b := make([]byte, BlockSize)
		copy(b, data[i*BlockSize:])
		d.blocks[a+uint64(i)] = b
	}
	return nil
}

func (d *MemDisk) Barrier() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	return nil
}

func (d *MemDisk) Size() uint64 { return uint64(len(d.blocks)) }

func (d *MemDisk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	return nil
}
