package wal

// Reads: the latest value of a block is its last update in [memStart,
// memEnd) if it has one (ReadMem, ReadMemAt, InMem: under mu), else its
// home block (ReadInstalled: without mu). An update leaves memory only
// once the installer has made its home copy durable, so a miss in memory
// followed by a home read returns that copy or a later one, unless a
// multiwrite to the block commits in between: a home read can then be
// older than memory (GoJournal's weak read). Callers that must not see
// that keep such multiwrites out (the object layer's locks), or compare
// the install generation a miss returns with InstallGen after the read.

import (
	"fmt"

	"strata/journal/disk"
)

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
