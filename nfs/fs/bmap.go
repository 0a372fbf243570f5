package fs

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// File block map: logical block L of a file lives in
//
//	ptr[L]                       L < 9
//	ptr[9]  single indirect      L < 9+1024
//	ptr[10] double indirect      L < 9+1024+1024²
//	ptr[11] triple indirect      beyond (up to 2^28 blocks = 1 TiB)
//
// Pointers are 32-bit block numbers of the data region; 0 is a hole (block 0
// is the superblock, never a data block). Indirect blocks are whole-block
// journal objects.

const (
	span1 = ptrsPerBl
	span2 = ptrsPerBl * ptrsPerBl
	span3 = ptrsPerBl * ptrsPerBl * ptrsPerBl
)

// root describes one of the inode's pointers: the logical range it maps and
// the depth of indirection below it.
type root struct {
	idx   int    // index in ptr
	base  uint64 // first logical block
	level int    // 0: data block, 1: single, 2: double, 3: triple indirect
}

func (r root) span() uint64 { return spanOf(r.level) }

func spanOf(level int) uint64 {
	switch level {
	case 0:
		return 1
	case 1:
		return span1
	case 2:
		return span2
	default:
		return span3
	}
}

var roots = func() []root {
	var rs []root
	for i := 0; i < nDirect; i++ {
		rs = append(rs, root{idx: i, base: uint64(i)})
	}
	rs = append(rs,
		root{idx: 9, base: nDirect, level: 1},
		root{idx: 10, base: nDirect + span1, level: 2},
		root{idx: 11, base: nDirect + span1 + span2, level: 3})
	return rs
}()

func rootFor(L uint64) root {
	switch {
	case L < nDirect:
		return roots[L]
	case L < nDirect+span1:
		return roots[9]
	case L < nDirect+span1+span2:
		return roots[10]
	default:
		return roots[11]
	}
}

func getPtr(b []byte, i uint64) uint64    { return uint64(binary.LittleEndian.Uint32(b[4*i:])) }
func setPtr(b []byte, i uint64, v uint64) { binary.LittleEndian.PutUint32(b[4*i:], uint32(v)) }

// bmap returns the block holding logical block L of ip (0 for a hole). With
// alloc it allocates missing indirect blocks (zeroed) and the data block;
// fresh reports that the data block is new and the caller must write all of
// it. ip is marked dirty when it changes.
func (t *tx) bmap(ip *inode, L uint64, alloc bool) (bn uint64, fresh bool, err error) {
	if L >= nDirect+span1+span2+span3 {
		return 0, false, fmt.Errorf("%w: logical block %d", ErrFBig, L)
	}
	r := rootFor(L)
	off := L - r.base
	cur := uint64(ip.ptr[r.idx])
	if cur == 0 {
		if !alloc {
			return 0, false, nil
		}
		if cur, err = t.allocMapBlock(r.level); err != nil {
			return 0, false, err
		}
		ip.ptr[r.idx] = uint32(cur)
		ip.used++
		t.writeInode(ip)
		fresh = r.level == 0
	}
	for lvl := r.level; lvl > 0; lvl-- {
		cs := spanOf(lvl - 1)
		i := off / cs
		off %= cs
		buf, err := t.readBlock(ip.inum, cur)
		if err != nil {
			return 0, false, err
		}
		next := getPtr(buf.Data, i)
		if next == 0 {
			if !alloc {
				return 0, false, nil
			}
			if next, err = t.allocMapBlock(lvl - 1); err != nil {
				return 0, false, err
			}
			setPtr(buf.Data, i, next)
			t.dirtyBuf(buf)
			ip.used++
			t.writeInode(ip)
			fresh = lvl-1 == 0
		}
		cur = next
	}
	return cur, fresh, nil
}

// allocMapBlock allocates a block for the map at the given level: indirect
// blocks are zeroed here, data blocks are left to the caller.
func (t *tx) allocMapBlock(level int) (uint64, error) {
	bn, err := t.allocBlock()
	if err != nil {
		return 0, err
	}
	if level > 0 {
		if err := t.writeBlock(bn, make([]byte, blockSize)); err != nil {
			return 0, err
		}
	}
	return bn, nil
}

// freeState tracks one call of freeTail.
type freeState struct {
	from    uint64 // free blocks at logical index >= from
	low     uint64 // every mapped block at logical index >= low is now free
	stopped bool   // the operation is full
	reserve int
}

// freeTail frees ip's blocks at logical index >= from, the highest first,
// until done or the operation is full. It returns done and the watermark
// low: no block at or above low is mapped any more (low >= from).
func (t *tx) freeTail(ip *inode, from uint64, reserve int) (done bool, low uint64, err error) {
	st := &freeState{from: from, low: ^uint64(0), reserve: reserve}
	for k := len(roots) - 1; k >= 0 && !st.stopped; k-- {
		r := roots[k]
		if r.base+r.span() <= from {
			break
		}
		p := uint64(ip.ptr[r.idx])
		if p == 0 {
			st.low = max(r.base, from)
			continue
		}
		np, err := t.freeSub(ip, p, r.level, r.base, st)
		if err != nil {
			return false, 0, err
		}
		if np != p {
			ip.ptr[r.idx] = uint32(np)
			t.writeInode(ip)
		}
	}
	if st.low == ^uint64(0) {
		st.low = from
	}
	return !st.stopped, max(st.low, from), nil
}

// freeSub frees, top down, the blocks at logical index >= st.from in the
// subtree rooted at block p (level 0: p is a data block) that maps logical
// blocks from base. It returns the new pointer to the subtree (0 once the
// subtree is empty and freed).
func (t *tx) freeSub(ip *inode, p uint64, level int, base uint64, st *freeState) (uint64, error) {
	if level == 0 {
		if base < st.from {
			return p, nil
		}
		if t.full(st.reserve + 4) {
			st.stopped = true
			return p, nil
		}
		if err := t.freeMapped(ip, p); err != nil {
			return p, err
		}
		st.low = base
		return 0, nil
	}
	buf, err := t.readBlock(ip.inum, p)
	if err != nil {
		return p, err
	}
	cs := spanOf(level - 1)
	for i := int64(ptrsPerBl - 1); i >= 0 && !st.stopped; i-- {
		cb := base + uint64(i)*cs
		if cb+cs <= st.from {
			break
		}
		c := getPtr(buf.Data, uint64(i))
		if c == 0 {
			st.low = max(cb, st.from)
			continue
		}
		nc, err := t.freeSub(ip, c, level-1, cb, st)
		if err != nil {
			return p, err
		}
		if nc != c {
			setPtr(buf.Data, uint64(i), nc)
			t.dirtyBuf(buf)
		}
	}
	for i := uint64(0); i < ptrsPerBl; i++ {
		if getPtr(buf.Data, i) != 0 {
			return p, nil
		}
	}
	// Empty: free the indirect block itself (its pending write, if any, is
	// harmless: the block is free and whoever allocates it next overwrites
	// it whole).
	if err := t.freeMapped(ip, p); err != nil {
		return p, err
	}
	return 0, nil
}

// freeMapped frees block p of ip's map and counts it out of ip's used
// blocks (a count already 0 is damage).
func (t *tx) freeMapped(ip *inode, p uint64) error {
	if ip.used == 0 {
		return corrupt(ip.inum, p, "block %d mapped but the inode counts no used blocks", p)
	}
	if err := t.freeBlock(ip.inum, p); err != nil {
		return err
	}
	ip.used--
	t.writeInode(ip)
	return nil
}

// errSkip, returned by forEachBlock's fn for an indirect block, skips the
// blocks it maps.
var errSkip = errors.New("skip")

// forEachBlock calls fn for every mapped block of ip (data and indirect),
// with the logical index for data blocks and -1 for indirect blocks. Reads
// go through read.
func forEachBlock(ip *inode, read func(bn uint64) ([]byte, error), fn func(bn uint64, L int64) error) error {
	var walk func(p uint64, level int, base uint64) error
	walk = func(p uint64, level int, base uint64) error {
		if level == 0 {
			return fn(p, int64(base))
		}
		if err := fn(p, -1); errors.Is(err, errSkip) {
			return nil
		} else if err != nil {
			return err
		}
		b, err := read(p)
		if err != nil {
			return err
		}
		cs := spanOf(level - 1)
		for i := uint64(0); i < ptrsPerBl; i++ {
			if c := getPtr(b, i); c != 0 {
				if err := walk(c, level-1, base+i*cs); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, r := range roots {
		if p := uint64(ip.ptr[r.idx]); p != 0 {
			if err := walk(p, r.level, r.base); err != nil {
				return err
			}
		}
	}
	return nil
}
