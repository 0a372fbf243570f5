// Package fs is Strata's NFSv3 file system (the GoNFS design of the
// GoJournal paper): every block it owns lives in the data region of a
// journal, and every change is made by journal operations that lock the
// inodes they touch (lockmap, ascending inode order), read and modify
// objects, and commit atomically.
//
// # On-disk layout (data-region blocks of the journal)
//
//	0                      superblock: magic, version, sizes, the offsets below, name-hash salt, root inode
//	1 ..                   inode bitmap (1 bit per inode; inode 0 is reserved, 1 is the root)
//	next block             orphan table: 512 × u64 slots naming unlinked inodes whose blocks are still being freed
//	next ..                inode table: 128-byte inodes, 32 per block, each one journal object
//	next ..                block bitmap: bit i is block dataStart+i
//	dataStart ..           data blocks: file data, indirect blocks, directory tree nodes, symlink targets
//
// An inode (see inode in layout.go) holds type, mode, nlink, uid, gid,
// generation, rdev, size, used blocks, atime/mtime/ctime, the 8-byte
// EXCLUSIVE-create verifier (its own field, so a SETATTR after the create
// keeps it), and 12 32-bit block pointers: 9 direct, single, double and
// triple indirect (files up to MaxFileSize = 1 TiB; holes are 0 pointers,
// read as zeros and use no blocks). A directory uses ptr[0] for the root of
// its B+tree and ptr[1] for its parent ("..").
//
// Directories are B+trees of whole-block nodes keyed by a 56-bit salted hash
// of the name plus an 8-bit collision discriminator (dir.go), so a lookup,
// insert or removal reads and writes O(log n) blocks (3 levels hold about a
// million entries) and every change fits one small journal operation. At
// most 256 names of one directory can share a 56-bit hash (ErrNoSpace
// beyond: never in practice). The key of an entry is fixed for the entry's
// lifetime and is its READDIR cookie; "." and ".." are synthesized with
// cookies 1 and 2. Guarantee: a listing that resumes from
// the cookie of the last entry it received returns every entry that exists
// for the whole listing exactly once, in key order, whatever is inserted or
// removed meanwhile; entries created or removed during the listing may or
// may not appear. Cookies never become invalid, so the cookie verifier is a
// constant of the file system (derived from its salt); ReadDir rejects a
// non-zero cookie only with a verifier that is neither 0 nor that constant.
//
// # What is guaranteed
//
// Each call is one atomic journal operation, except Write of more data
// than fits one operation, truncation (SetAttr with a smaller size) and
// freeing the blocks of a removed file, which are sequences of atomic steps,
// each leaving a consistent file system:
//   - a big Write is applied in chunks, in file order; a crash may keep a
//     prefix of the chunks (never a torn block);
//   - truncation frees blocks from the end, a bounded number per step, and
//     each step lowers the size to just above the blocks still mapped; the
//     last step sets the final size, zeroes the tail of the last block and
//     applies the other attributes. A crash leaves the file at some size
//     between the new and the old one with its data below that size intact;
//   - removing the last link of a big file (Remove, Rename over it) commits
//     the directory change and records the inode in the orphan table in one
//     operation; later steps free its blocks and finally the inode. Open
//     finishes the freeing of every inode left in the orphan table.
//
// Durability: metadata operations (SetAttr, Create, Mkdir, Symlink, Mknod,
// Remove, Rmdir, Rename, Link) commit with wait (durable on return) unless
// Options.UnstableMetadata is set; Write is durable on return when stable,
// otherwise at the next Flush (NFS COMMIT), as are the intermediate steps of
// split operations. After a crash the journal recovers a prefix of the
// committed operations that includes every durable one.
//
// A call that succeeds without changing anything (Create of an existing
// file in Unchecked or Exclusive mode, Rename onto another link of the same
// file, a zero-length Write) commits nothing and so makes nothing durable.
// atime changes at creation, through SetAttr and, relatime-style, through
// ReadTouch (which the NFS server's READ uses); Read and ReadDir leave it.
//
// Names: "" and names containing '/' or NUL are ErrInval, names over
// MaxName bytes ErrNameTooLong. Creating "." or ".." (Create, Mkdir,
// Symlink, Mknod, Link) is ErrExist; Remove of either, Rmdir of "." and
// Rename from or to either are ErrInval; Rmdir of ".." is ErrExist (it
// names a directory that is not empty). Read and Write of a directory are
// ErrIsDir, of another non-regular file ErrInval.
//
// Concurrency: one lock per inode (lockmap); operations on several inodes
// take them in ascending order with AcquireAll, after looking names up
// under the directory locks and re-checking them once all locks are held.
// New inodes come from the allocator and are invisible until their
// operation commits, so they are not locked. Cross-directory renames also
// hold a global rename mutex while they check that a directory is not moved
// into its own subtree (as Linux does). Check excludes all other
// operations.
//
// Allocators: in-memory bitmaps of free inodes and blocks, rebuilt at Open
// by reading the on-disk bitmaps through the journal. An operation takes
// indexes from them under a mutex and journals the bit flips; aborted
// operations give them back, and freed indexes return only after the
// freeing operation has committed. Inode numbers and blocks are handed out
// lowest first.
//
// # Damage
//
// Nothing read from the image is trusted to be well formed. An operation
// that finds damage (a block pointer outside the data area, a block or
// inode to free that the bitmap says is free or that is being freed
// already, an entry naming an inode outside the table or a dead one, a
// directory node that does not parse or a tree deeper than 16 levels or
// with more nodes than its inode counts, an inode of bad type or size)
// fails with a *CorruptError (ErrCorrupt, which wraps ErrIO) naming the
// inode and block, and changes nothing: its journal operation is aborted
// and the allocators get back what it took. Damage no operation reads is
// not noticed; Check finds it. Open refuses a bad superblock or root inode.
// What no check can see is a block that two files share while the bitmap
// marks it used: writes to one show in the other until Check reports it.
//
// # Assumptions
//
// The journal is used by this file system alone, its data region holds the
// file system from block 0, and the caller passes sensible times. Block
// numbers are 32-bit, so at most 2^32-1 blocks (16 TiB) are used.
package fs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"strata/journal"
	"strata/journal/lockmap"
)

// Inum is an inode number (the NFS fileid).
type Inum uint64

// FileType is the type of a file, numbered as NFSv3 ftype3.
type FileType uint32

// File types.
const (
	TypeReg  FileType = 1
	TypeDir  FileType = 2
	TypeBlk  FileType = 3
	TypeChr  FileType = 4
	TypeLnk  FileType = 5
	TypeSock FileType = 6
	TypeFifo FileType = 7
)

// Time is a timestamp (seconds and nanoseconds since the epoch).
type Time struct{ Sec, Nsec uint32 }

// Rdev is a device number.
type Rdev struct{ Major, Minor uint32 }

// Attr are the attributes of a file.
type Attr struct {
	Type       FileType
	Mode       uint32 // permission bits only, 07777
	Nlink      uint32
	UID, GID   uint32
	Size, Used uint64 // bytes
	Rdev       Rdev
	Fileid     uint64 // = inode number
	Atime      Time
	Mtime      Time
	Ctime      Time
	Gen        uint32
}

// Handle names a file: what NFS file handles carry.
type Handle struct {
	Ino Inum
	Gen uint32
}

// WCC is pre-operation attributes for NFS weak cache consistency.
type WCC struct {
	Size         uint64
	Mtime, Ctime Time
}

// SetTime says how SetAttr changes a time.
type SetTime int

// SetTime values.
const (
	DontChange SetTime = iota
	ServerTime         // the now argument
	ClientTime         // the value given
)

// SetAttr lists attribute changes; nil pointers and DontChange leave the
// attribute alone.
type SetAttr struct {
	Mode, UID, GID     *uint32
	Size               *uint64
	Atime, Mtime       SetTime
	AtimeVal, MtimeVal Time
}

// DirEntry is one entry returned by ReadDir. Attr is filled by ReadDir with
// plus (READDIRPLUS).
type DirEntry struct {
	Name   string
	Ino    Inum
	Cookie uint64
	Handle Handle
	Attr   Attr
}

// CreateMode is the NFSv3 create mode.
type CreateMode int

// Create modes.
const (
	Unchecked CreateMode = iota
	Guarded
	Exclusive
)

// Stat is file system usage (FSSTAT).
type Stat struct {
	TotalBytes, FreeBytes, AvailBytes uint64
	TotalFiles, FreeFiles             uint64
}

// Errors. Each is matchable with errors.Is; errors from the journal are
// wrapped in ErrIO.
var (
	ErrNoEnt       = errors.New("fs: no such file or directory")
	ErrExist       = errors.New("fs: file exists")
	ErrNotDir      = errors.New("fs: not a directory")
	ErrIsDir       = errors.New("fs: is a directory")
	ErrNotEmpty    = errors.New("fs: directory not empty")
	ErrNameTooLong = errors.New("fs: name too long")
	ErrStale       = errors.New("fs: stale file handle")
	ErrNoSpace     = errors.New("fs: no space left")
	ErrMLink       = errors.New("fs: too many links")
	// ErrIncompatible comes with ErrNotDir, ErrIsDir or ErrNotEmpty from
	// Rename when the target name exists and cannot be replaced by the
	// source (NFS answers NFS3ERR_EXIST, as RFC 1813 asks).
	ErrIncompatible = errors.New("fs: rename target cannot be replaced")
	ErrInval        = errors.New("fs: invalid argument")
	ErrFBig         = errors.New("fs: file too large")
	ErrBadCookie    = errors.New("fs: bad readdir cookie")
	ErrNotSync      = errors.New("fs: attribute guard mismatch")
	ErrIO           = errors.New("fs: I/O error")
	// ErrCorrupt is damage found in the image (a block pointer outside the
	// data area, a block or inode freed that the bitmap says is free, a
	// directory block that does not parse, an entry naming an inode that
	// does not exist, a bad superblock...). It wraps ErrIO, so NFS answers
	// NFS3ERR_IO. The operation that finds it fails and changes nothing;
	// the error is a *CorruptError naming the inode and block.
	ErrCorrupt = fmt.Errorf("%w: damaged file system", ErrIO)
)

// CorruptError is the error of an operation that found the image damaged.
// It matches ErrCorrupt (and so ErrIO) with errors.Is.
type CorruptError struct {
	Inode  Inum   // the inode whose data is damaged (0: none in particular)
	Block  uint64 // the block found damaged (0: none in particular)
	Detail string
}

func (e *CorruptError) Error() string {
	var where string
	switch {
	case e.Inode != 0 && e.Block != 0:
		where = fmt.Sprintf("inode %d, block %d: ", e.Inode, e.Block)
	case e.Inode != 0:
		where = fmt.Sprintf("inode %d: ", e.Inode)
	case e.Block != 0:
		where = fmt.Sprintf("block %d: ", e.Block)
	}
	return fmt.Sprintf("fs: damaged file system: %s%s", where, e.Detail)
}

// Unwrap makes a CorruptError match ErrCorrupt and ErrIO.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// corrupt returns a *CorruptError about inode inum and block bn (either may
// be 0).
func corrupt(inum Inum, bn uint64, format string, args ...any) error {
	return &CorruptError{Inode: inum, Block: bn, Detail: fmt.Sprintf(format, args...)}
}

// Limits.
const (
	MaxName     = 255     // bytes in a name
	MaxFileSize = 1 << 40 // bytes in a file
	MaxSymlink  = maxSymlink
	MaxLinks    = math.MaxUint32 - 1 // hard links to a file, subdirectories of a directory (ErrMLink beyond)
)

// Options tune Open.
type Options struct {
	// UnstableMetadata commits metadata operations without waiting for
	// durability (they become durable at the next Flush), like an "async"
	// NFS export.
	UnstableMetadata bool
	// OpBlocks bounds the distinct blocks one journal operation of a split
	// operation writes (default 256); it shrinks by itself if the log
	// turns out to be smaller.
	OpBlocks int
	// KeepOrphans makes Open leave the inodes of the orphan table alone
	// instead of finishing their freeing, so that Check sees the image as
	// it is (strata nfs fsck). A file system opened so is for checking.
	KeepOrphans bool
}

const (
	defaultBudget = 256
	minBudget     = 16
)

// FS is an open file system. It is safe for concurrent use.
type FS struct {
	j        *journal.Journal
	sb       superblock
	locks    *lockmap.LockMap
	ialloc   *bitAlloc // index = inode number
	balloc   *bitAlloc // index = block - dataStart
	slots    chan int  // free orphan slots
	renameMu sync.Mutex
	gate     sync.RWMutex // operations share it, Check holds it exclusively
	budget   atomic.Int64
	syncMeta bool
	rootGen  uint32
	hashMask uint64 // tests narrow the name hash to force collisions
	linkMax  uint32 // MaxLinks; tests lower it
	innerMax int    // keys per internal directory node before it splits (maxInternalN; tests lower it for deep trees)
	// stepHook (tests) runs after each intermediate step of a split
	// operation with its progress: the bytes of a Write applied so far, the
	// size a truncation has reached; 0 for the freeing of a removed file.
	stepHook func(progress uint64)

	// freed maps data blocks freed by operations that may not be durable
	// yet to those operations' commit positions. Such a block may be
	// reallocated at once, but must not be written directly (journal
	// Op.WriteDirect): a crash could revive the file that owned it.
	freedMu    sync.Mutex
	freed      map[uint64]uint64
	freedMax   uint64 // the largest position in freed
	freedPrune int    // prune freed when it grows past this

	// changed[i] is the commit position of the latest operation that
	// changed an inode whose number is i modulo len(changed) (FlushFile).
	changed [changedSlots]atomic.Uint64
}

const changedSlots = 4096

// noteChanged records that inode inum was changed by an operation
// committed at pos.
func (f *FS) noteChanged(inum Inum, pos uint64) {
	c := &f.changed[uint64(inum)%changedSlots]
	for {
		old := c.Load()
		if old >= pos || c.CompareAndSwap(old, pos) {
			return
		}
	}
}

// noteFreed records blocks freed by an operation committed at pos.
func (f *FS) noteFreed(blocks []uint64, pos uint64) {
	if len(blocks) == 0 {
		return
	}
	f.freedMu.Lock()
	defer f.freedMu.Unlock()
	if len(f.freed) > f.freedPrune { // forget what has become durable
		d := f.j.DurablePos()
		for b, p := range f.freed {
			if p <= d {
				delete(f.freed, b)
			}
		}
		// Scan again only once the map has doubled: frees that are not
		// durable yet must not make every later free scan it all.
		f.freedPrune = max(4096, 2*len(f.freed))
	}
	for _, b := range blocks {
		f.freed[b] = pos
	}
	f.freedMax = max(f.freedMax, pos)
}

// directOK reports whether data block bn (just allocated) may be written
// directly: it was not freed by an operation that is not yet durable.
func (f *FS) directOK(bn uint64) bool {
	f.freedMu.Lock()
	defer f.freedMu.Unlock()
	if len(f.freed) == 0 {
		return true
	}
	if f.freedMax <= f.j.DurablePos() {
		// Every free recorded is durable: forget them all at once (a
		// removed big file leaves tens of thousands, and lookups in a
		// map that size cost a cache miss each).
		f.freed = map[uint64]uint64{}
		f.freedPrune = 4096
		return true
	}
	p, ok := f.freed[bn]
	if !ok {
		return true
	}
	if p <= f.j.DurablePos() {
		delete(f.freed, bn)
		return true
	}
	return false
}

// stepDone runs after an intermediate step of a split operation commits.
func (f *FS) stepDone(progress uint64) {
	if f.stepHook != nil {
		f.stepHook(progress)
	}
}

// hash is the 56-bit hash of a directory entry name.
func (f *FS) hash(name string) uint64 {
	if f.hashMask != 0 {
		return nameHash(f.sb.salt, name)&f.hashMask | 1
	}
	return nameHash(f.sb.salt, name)
}

func (f *FS) opBudget() int { return int(f.budget.Load()) }

// shrinkBudget lowers the operation budget after an operation of n blocks
// did not fit in the log.
func (f *FS) shrinkBudget(n int) {
	for {
		cur := f.budget.Load()
		nb := max(int64(minBudget), min(cur, int64(n)/2))
		if nb >= cur || f.budget.CompareAndSwap(cur, nb) {
			return
		}
	}
}

// retry reports whether an operation that failed with err should be split
// further and retried: it did not fit in the log and the budget shrank.
func (f *FS) retry(err error, budgetBefore int) bool {
	return errors.Is(err, journal.ErrTooBig) && f.opBudget() < budgetBefore
}

// Mkfs formats the journal's data region as an empty file system with room
// for inodes files (including the root; 0 picks one per 16 blocks). The root
// directory has mode 0755 and uid/gid 0.
func Mkfs(j *journal.Journal, inodes uint64) error {
	nblocks := min(j.Size(), maxBlocks)
	if inodes == 0 {
		inodes = max(nblocks/16, 64)
	}
	ninodes := divUp(inodes+1, inodesPerBlock) * inodesPerBlock
	sb, err := computeLayout(nblocks, ninodes)
	if err != nil {
		return err
	}
	var salt [8]byte
	if _, err := randRead(salt[:]); err != nil {
		return fmt.Errorf("fs: mkfs: %w", err)
	}
	for i, b := range salt {
		sb.salt |= uint64(b) << (8 * i)
	}
	sb.root = uint64(rootInum)
	f := newFS(j, sb, Options{})
	// Invalidate any old superblock first, then zero the metadata: a crash
	// during Mkfs leaves no file system rather than a half-made one.
	zero := make([]byte, blockSize)
	budget := f.opBudget()
	for bn := uint64(0); bn < sb.dataStart; {
		t := f.begin()
		start := bn
		for ; bn < sb.dataStart && !t.full(1); bn++ {
			if err := t.writeBlock(bn, zero); err != nil {
				t.abort()
				return err
			}
		}
		if err := t.commit(false); err != nil {
			if f.retry(err, budget) {
				budget, bn = f.opBudget(), start
				continue
			}
			return fmt.Errorf("fs: mkfs: %w", err)
		}
	}
	f.ialloc.markUsed(0)
	t := f.begin()
	if err := t.setBit(sb.inodeBitAddr(0), 1); err != nil {
		return err
	}
	root, err := t.allocInode(TypeDir, Time{})
	if err != nil {
		return err
	}
	if root.inum != rootInum {
		return fmt.Errorf("%w: mkfs: root is inode %d", ErrIO, root.inum)
	}
	root.mode, root.nlink, root.ptr[1] = 0755, 2, uint32(rootInum)
	if err := t.newDirRoot(root); err != nil {
		return err
	}
	if err := t.writeBlock(0, sb.encode()); err != nil {
		return err
	}
	if err := t.commit(true); err != nil {
		return fmt.Errorf("fs: mkfs: %w", err)
	}
	return nil
}

func newFS(j *journal.Journal, sb superblock, opt Options) *FS {
	f := &FS{j: j, sb: sb, linkMax: MaxLinks, innerMax: maxInternalN, locks: lockmap.New(), ialloc: newBitAlloc(sb.ninodes), balloc: newBitAlloc(sb.dataBlocks()),
		slots: make(chan int, orphanSlots), syncMeta: !opt.UnstableMetadata, freed: map[uint64]uint64{}, freedPrune: 4096}
	b := opt.OpBlocks
	if b <= 0 {
		b = defaultBudget
	}
	f.budget.Store(int64(max(b, minBudget)))
	return f
}

// Open opens the file system on j with default options.
func Open(j *journal.Journal) (*FS, error) { return OpenOptions(j, Options{}) }

// OpenOptions checks the superblock, rebuilds the allocators from the
// bitmaps (read through the journal) and, unless opt.KeepOrphans, finishes
// freeing any inode left in the orphan table. A damaged superblock, root
// inode or orphan is ErrCorrupt.
func OpenOptions(j *journal.Journal, opt Options) (*FS, error) {
	buf, err := j.Begin().ReadBuf(journal.Addr{Blkno: 0}, journal.BlockBits)
	if err != nil {
		return nil, ioErr("read superblock", err)
	}
	sb, err := decodeSuperblock(buf.Data, j.Size())
	if err != nil {
		return nil, err
	}
	f := newFS(j, sb, opt)
	if err := loadBitmap(j, f.ialloc, sb.ibmStart, sb.ninodes); err != nil {
		return nil, err
	}
	if err := loadBitmap(j, f.balloc, sb.bbmStart, sb.dataBlocks()); err != nil {
		return nil, err
	}
	if !f.ialloc.isUsed(0) || !f.ialloc.isUsed(uint64(rootInum)) {
		return nil, corrupt(rootInum, 0, "root inode (or reserved inode 0) free in the inode bitmap")
	}
	ob, err := j.Begin().ReadBuf(journal.Addr{Blkno: sb.orphanStart}, journal.BlockBits)
	if err != nil {
		return nil, ioErr("read orphan table", err)
	}
	type orphan struct {
		slot int
		inum Inum
	}
	var orphans []orphan
	for s := 0; s < orphanSlots; s++ {
		if v := getU64(ob.Data[8*s:]); v != 0 {
			orphans = append(orphans, orphan{s, Inum(v)})
		} else {
			f.slots <- s
		}
	}
	t := f.begin()
	root, err := t.inode(rootInum)
	if err != nil {
		return nil, err
	}
	if root.typ != TypeDir {
		return nil, corrupt(rootInum, 0, "root inode is not a directory (type %d)", root.typ)
	}
	f.rootGen = root.gen
	if opt.KeepOrphans {
		return f, nil
	}
	for _, o := range orphans {
		if err := f.reclaim(o.inum, o.slot); err != nil {
			return nil, fmt.Errorf("fs: open: freeing orphan inode %d: %w", o.inum, err)
		}
	}
	return f, nil
}

func getU64(b []byte) uint64 {
	var v uint64
	for i := 0; i < 8; i++ {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

// loadBitmap fills a from the n-bit on-disk bitmap starting at block start.
func loadBitmap(j *journal.Journal, a *bitAlloc, start, n uint64) error {
	for k := uint64(0); k*bitsPerBlock < n; k++ {
		buf, err := j.Begin().ReadBuf(journal.Addr{Blkno: start + k}, journal.BlockBits)
		if err != nil {
			return ioErr("read bitmap", err)
		}
		a.mu.Lock()
		for w := uint64(0); w < blockSize/8; w++ {
			idx := k*(bitsPerBlock/64) + w
			if idx >= uint64(len(a.w)) {
				break
			}
			v := getU64(buf.Data[8*w:])
			if idx == uint64(len(a.w))-1 && n%64 != 0 {
				v &= 1<<(n%64) - 1
			}
			old := a.w[idx]
			a.w[idx] |= v
			a.free -= uint64(popcount(a.w[idx]) - popcount(old))
		}
		a.mu.Unlock()
	}
	return nil
}

// Root is the handle of the root directory.
func (f *FS) Root() Handle { return Handle{Ino: rootInum, Gen: f.rootGen} }

// Secret returns 32 bytes derived from the file system's random salt
// (chosen by Mkfs, kept in the superblock), the same at every open: the
// NFS server keys its file handles' checksum with it, so handles stay
// valid across restarts but cannot be forged by clients that do not know
// the salt. It holds only the salt's 64 bits of entropy.
func (f *FS) Secret() [32]byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], f.sb.salt)
	return sha256.Sum256(append([]byte("strata nfs handle key\x00"), b[:]...))
}

// SyncMetadata reports whether metadata operations are durable on return
// (the file system was opened without Options.UnstableMetadata).
func (f *FS) SyncMetadata() bool { return f.syncMeta }

// Flush makes every committed operation durable (NFS COMMIT).
func (f *FS) Flush() error {
	if err := f.j.Flush(); err != nil {
		return ioErr("flush", err)
	}
	return nil
}

// FlushFile makes h's data and attributes durable (NFS COMMIT of h).
// With synchronous metadata it waits only for the operations that changed
// h (and the ones committed before them): every metadata operation is
// durable already, and another file's unstable writes wait for that
// file's COMMIT. With Options.UnstableMetadata it flushes everything, as
// Flush does, so that a COMMIT also makes every operation before it
// durable.
func (f *FS) FlushFile(h Handle) error {
	if !f.syncMeta {
		return f.Flush()
	}
	if err := f.j.FlushTo(f.changed[uint64(h.Ino)%changedSlots].Load()); err != nil {
		return ioErr("flush", err)
	}
	return nil
}

// Stat reports space and inode usage.
func (f *FS) Stat() (Stat, error) {
	free := f.balloc.numFree() * blockSize
	return Stat{
		TotalBytes: f.sb.dataBlocks() * blockSize, FreeBytes: free, AvailBytes: free,
		TotalFiles: f.sb.ninodes - 1, FreeFiles: f.ialloc.numFree(),
	}, nil
}

func randRead(b []byte) (int, error) { return rand.Read(b) }

func popcount(v uint64) int { return bits.OnesCount64(v) }
