package fs

import (
	"errors"
	"fmt"

	"strata/journal"
	"strata/journal/wal"
)

// tx is one journal operation of the file system. It caches the decoded
// inodes it touches (so an inode read twice is one object), counts the
// distinct blocks it dirties (to keep operations within the log), and
// tracks allocator state: indexes it allocated go back to the allocators if
// it aborts, indexes it freed go back only once it has committed.
type tx struct {
	f      *FS
	op     *journal.Op
	inodes map[Inum]*inode
	dirty  map[uint64]struct{}

	allocB, allocI []uint64
	freeB, freeI   []uint64
	takenSlots     []int // orphan slots claimed (returned on abort)
	freedSlots     []int // orphan slots cleared (returned after commit)
	blocks         map[uint64]*journal.Buf
	done           bool
	committing     bool
}

func (f *FS) begin() *tx {
	// The maps are made on first use: most operations read one inode.
	return &tx{f: f, op: f.j.Begin()}
}

func ioErr(what string, err error) error {
	if errors.Is(err, ErrIO) {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrIO, what, err)
}

// full reports whether the operation has used up its share of the log,
// keeping reserve blocks for what the caller still has to write.
func (t *tx) full(reserve int) bool { return len(t.dirty)+reserve >= t.f.opBudget() }

func (t *tx) markDirty(bn uint64) {
	if t.dirty == nil {
		t.dirty = make(map[uint64]struct{}, 32)
	}
	t.dirty[bn] = struct{}{}
}

// inode returns inum's inode, read once per operation.
func (t *tx) inode(inum Inum) (*inode, error) {
	if ip, ok := t.inodes[inum]; ok {
		return ip, nil
	}
	if inum == 0 || uint64(inum) >= t.f.sb.ninodes {
		return nil, fmt.Errorf("%w: inode %d out of range", ErrStale, inum)
	}
	buf, err := t.op.ReadBuf(t.f.sb.inodeAddr(inum), inodeBits)
	if err != nil {
		return nil, ioErr(fmt.Sprintf("read inode %d", inum), err)
	}
	ip := decodeInode(inum, buf.Data)
	if err := t.f.sb.checkInode(ip); err != nil {
		return nil, err
	}
	t.keepInode(ip)
	return ip, nil
}

func (t *tx) keepInode(ip *inode) {
	if t.inodes == nil {
		t.inodes = make(map[Inum]*inode, 4)
	}
	t.inodes[ip.inum] = ip
}

// named returns the inode that an on-disk reference names: a directory
// entry or parent field of inode from, or an orphan slot. A number outside
// the inode table is damage there (ErrCorrupt), not a stale handle.
func (t *tx) named(inum Inum, from Inum, what string) (*inode, error) {
	if inum == 0 || uint64(inum) >= t.f.sb.ninodes {
		return nil, corrupt(from, 0, "%s names inode %d, outside the inode table of %d", what, inum, t.f.sb.ninodes)
	}
	return t.inode(inum)
}

// live returns the inode h names, or ErrStale if it was freed, unlinked or
// reused.
func (t *tx) live(h Handle) (*inode, error) {
	ip, err := t.inode(h.Ino)
	if err != nil {
		return nil, err
	}
	if !ip.live() || ip.gen != h.Gen {
		return nil, fmt.Errorf("%w: inode %d generation %d", ErrStale, h.Ino, h.Gen)
	}
	return ip, nil
}

// liveDir is live for a directory (ErrNotDir otherwise).
func (t *tx) liveDir(h Handle) (*inode, error) {
	ip, err := t.live(h)
	if err != nil {
		return nil, err
	}
	if ip.typ != TypeDir {
		return nil, fmt.Errorf("%w: inode %d", ErrNotDir, h.Ino)
	}
	return ip, nil
}

func (t *tx) writeInode(ip *inode) {
	if ip.typ == TypeDir {
		ip.size = ip.used * blockSize
	}
	ip.dirty = true
	t.markDirty(t.f.sb.inodeAddr(ip.inum).Blkno)
}

// readBlock returns data block bn, which a pointer of inode owner names, as
// a whole-block object of this operation.
func (t *tx) readBlock(owner Inum, bn uint64) (*journal.Buf, error) {
	if !t.f.sb.isDataBlock(bn) {
		return nil, corrupt(owner, bn, "block pointer %d outside the data area", bn)
	}
	if buf, ok := t.blocks[bn]; ok {
		return buf, nil
	}
	buf, err := t.op.ReadBuf(journal.Addr{Blkno: bn}, journal.BlockBits)
	if err != nil {
		return nil, ioErr(fmt.Sprintf("read block %d", bn), err)
	}
	if t.blocks == nil {
		t.blocks = map[uint64]*journal.Buf{}
	}
	t.blocks[bn] = buf
	return buf, nil
}

// dirtyBuf marks a buffer returned by readBlock as written.
func (t *tx) dirtyBuf(buf *journal.Buf) {
	buf.SetDirty()
	t.markDirty(buf.Addr.Blkno)
}

// writeBlock overwrites block bn with data (blockSize bytes).
func (t *tx) writeBlock(bn uint64, data []byte) error {
	if err := t.op.OverWrite(journal.Addr{Blkno: bn}, journal.BlockBits, data); err != nil {
		return ioErr(fmt.Sprintf("write block %d", bn), err)
	}
	t.markDirty(bn)
	return nil
}

// writeFresh sets block bn, which this operation allocated, to data
// (blockSize bytes, unchanged until commit): written once at its home
// location before the operation is logged, unless bn was freed by an
// operation that may not be durable yet, in which case it is logged.
func (t *tx) writeFresh(bn uint64, data []byte) error {
	if !t.f.directOK(bn) {
		return t.writeBlock(bn, data)
	}
	if err := t.op.WriteDirect(bn, data); err != nil {
		return ioErr(fmt.Sprintf("write block %d", bn), err)
	}
	t.markDirty(bn) // it may yet be logged (see journal.Op.WriteDirect)
	return nil
}

func (t *tx) setBit(a journal.Addr, v byte) error {
	if err := t.op.OverWrite(a, 1, []byte{v}); err != nil {
		return ioErr("write bitmap", err)
	}
	t.markDirty(a.Blkno)
	return nil
}

// allocBlock allocates a data block; the caller must write all of it.
func (t *tx) allocBlock() (uint64, error) {
	i, ok := t.f.balloc.alloc()
	if !ok {
		return 0, fmt.Errorf("%w: no free blocks", ErrNoSpace)
	}
	bn := t.f.sb.dataStart + i
	t.allocB = append(t.allocB, i)
	return bn, t.setBit(t.f.sb.blockBitAddr(bn), 1)
}

// freeBlock frees data block bn, which a pointer of inode owner names, at
// commit. A block outside the data area, free in the bitmap, or being freed
// already (by this operation or another) is damage: ErrCorrupt.
func (t *tx) freeBlock(owner Inum, bn uint64) error {
	if !t.f.sb.isDataBlock(bn) {
		return corrupt(owner, bn, "freeing block pointer %d outside the data area", bn)
	}
	i := bn - t.f.sb.dataStart
	if !t.f.balloc.claim(i) {
		return corrupt(owner, bn, "freeing block %d, which the block bitmap says is free or another pointer also names", bn)
	}
	t.freeB = append(t.freeB, i)
	return t.setBit(t.f.sb.blockBitAddr(bn), 0)
}

// allocInode allocates an inode and returns it initialised with type typ,
// nlink 1 and the next generation number; the caller fills in the rest.
func (t *tx) allocInode(typ FileType, now Time) (*inode, error) {
	i, ok := t.f.ialloc.alloc()
	if !ok {
		return nil, fmt.Errorf("%w: no free inodes", ErrNoSpace)
	}
	t.allocI = append(t.allocI, i)
	if err := t.setBit(t.f.sb.inodeBitAddr(Inum(i)), 1); err != nil {
		return nil, err
	}
	old, err := t.inode(Inum(i))
	if err == nil && old.typ != 0 {
		err = corrupt(old.inum, 0, "inode free in the inode bitmap but in use (type %d, nlink %d); no longer handed out", old.typ, old.nlink)
	}
	if errors.Is(err, ErrCorrupt) {
		// Damage in the inode bitmap or table: fail, and keep the number
		// out of the allocator (not given back at abort) so that the next
		// operation gets another one.
		t.allocI = t.allocI[:len(t.allocI)-1]
		t.f.ialloc.quarantine(i)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	ip := &inode{inum: Inum(i), typ: typ, nlink: 1, gen: old.gen + 1, atime: now, mtime: now, ctime: now}
	if ip.gen == 0 {
		ip.gen = 1
	}
	t.keepInode(ip)
	t.writeInode(ip)
	return ip, nil
}

// freeInode frees an inode whose blocks are already freed. The generation
// is kept so that the next user of the number gets a new one.
func (t *tx) freeInode(ip *inode) error {
	if !t.f.ialloc.claim(uint64(ip.inum)) {
		return corrupt(ip.inum, 0, "freeing an inode the inode bitmap says is free")
	}
	*ip = inode{inum: ip.inum, gen: ip.gen}
	t.writeInode(ip)
	t.freeI = append(t.freeI, uint64(ip.inum))
	return t.setBit(t.f.sb.inodeBitAddr(ip.inum), 0)
}

// takeOrphanSlot records inum in a free orphan slot (waiting for one if all
// are in use).
func (t *tx) takeOrphanSlot(inum Inum) error {
	s := <-t.f.slots
	t.takenSlots = append(t.takenSlots, s)
	var b [8]byte
	putU64(b[:], uint64(inum))
	if err := t.op.OverWrite(t.f.sb.orphanAddr(s), 64, b[:]); err != nil {
		return ioErr("write orphan slot", err)
	}
	t.markDirty(t.f.sb.orphanStart)
	return nil
}

func (t *tx) clearOrphanSlot(s int) error {
	if err := t.op.OverWrite(t.f.sb.orphanAddr(s), 64, make([]byte, 8)); err != nil {
		return ioErr("write orphan slot", err)
	}
	t.markDirty(t.f.sb.orphanStart)
	t.freedSlots = append(t.freedSlots, s)
	return nil
}

// abort gives back what the operation allocated; nothing was committed.
func (t *tx) abort() {
	if t.done {
		return
	}
	t.done = true
	if !t.committing {
		// Nothing reached the journal: recycle the block buffers read.
		for _, b := range t.blocks {
			if len(b.Data) == blockSize {
				wal.PutBlock(b.Data)
			}
		}
	}
	t.blocks = nil
	for _, i := range t.freeB {
		t.f.balloc.unclaim(i)
	}
	for _, i := range t.freeI {
		t.f.ialloc.unclaim(i)
	}
	for _, i := range t.allocB {
		t.f.balloc.release(i)
	}
	for _, i := range t.allocI {
		t.f.ialloc.release(i)
	}
	for _, s := range t.takenSlots {
		t.f.slots <- s
	}
}

// finish updates the allocators after the operation committed, and notes
// the inodes it changed (FlushFile).
func (t *tx) finish() {
	t.done = true
	if pos := t.op.Pos(); pos != 0 {
		for _, ip := range t.inodes {
			if ip.dirty {
				t.f.noteChanged(ip.inum, pos)
			}
		}
	}
	if len(t.freeB) > 0 {
		bns := make([]uint64, len(t.freeB))
		for k, i := range t.freeB {
			bns[k] = t.f.sb.dataStart + i
		}
		t.f.noteFreed(bns, t.op.Pos())
	}
	for _, i := range t.freeB {
		t.f.balloc.release(i)
	}
	for _, i := range t.freeI {
		t.f.ialloc.release(i)
	}
	for _, s := range t.freedSlots {
		t.f.slots <- s
	}
}

// commit writes back dirty inodes and commits the operation; wait makes it
// durable before returning. On ErrTooBig nothing changed (and the error
// wraps journal.ErrTooBig so callers can split the work).
func (t *tx) commit(wait bool) error {
	for _, ip := range t.inodes {
		if ip.dirty {
			if err := t.op.OverWrite(t.f.sb.inodeAddr(ip.inum), inodeBits, ip.encode()); err != nil {
				t.abort()
				return ioErr("write inode", err)
			}
		}
	}
	t.committing = true
	_, err := t.op.Commit(wait)
	if err == nil {
		t.finish()
		return nil
	}
	if t.op.Seq() != 0 {
		// The operation reached the log: later operations see it, so the
		// allocators must too, even though durability is unknown.
		t.finish()
		return ioErr("commit (waiting for durability)", err)
	}
	t.abort()
	if errors.Is(err, journal.ErrTooBig) {
		t.f.shrinkBudget(len(t.dirty))
	}
	return ioErr("commit", err)
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}
