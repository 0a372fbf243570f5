package fs

import (
	"encoding/binary"
	"fmt"

	"strata/journal"
	"strata/journal/disk"
)

// On-disk constants.
const (
	magic   = 0x5346_4154_4152_5453 // "STRATAFS" little-endian
	version = 1

	blockSize      = disk.BlockSize
	bitsPerBlock   = blockSize * 8
	inodeSize      = 128 // bytes
	inodesPerBlock = blockSize / inodeSize
	inodeBits      = inodeSize * 8

	nDirect   = 9    // direct pointers in an inode
	nPtrs     = 12   // 9 direct + single + double + triple indirect
	ptrsPerBl = 1024 // 32-bit pointers per indirect block

	orphanSlots = blockSize / 8 // 64-bit slots in the orphan block

	maxSymlink = blockSize // longest symlink target, in bytes

	rootInum Inum = 1

	// maxBlocks caps the blocks the file system uses: block pointers are
	// 32-bit.
	maxBlocks = 1<<32 - 1
)

// superblock is block 0 of the data region.
type superblock struct {
	nblocks     uint64 // blocks of the data region the file system uses
	ninodes     uint64 // inode numbers 0..ninodes-1 (0 is never used)
	ibmStart    uint64 // inode bitmap
	ibmBlocks   uint64
	bbmStart    uint64 // block bitmap: bit i is block dataStart+i
	bbmBlocks   uint64
	itStart     uint64 // inode table
	itBlocks    uint64
	orphanStart uint64 // one block of 64-bit orphan slots
	dataStart   uint64 // first data block
	salt        uint64 // directory name-hash salt
	root        uint64
}

func (sb *superblock) encode() []byte {
	b := make([]byte, blockSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], magic)
	le.PutUint32(b[8:], version)
	for i, v := range []uint64{sb.nblocks, sb.ninodes, sb.ibmStart, sb.ibmBlocks, sb.bbmStart, sb.bbmBlocks,
		sb.itStart, sb.itBlocks, sb.orphanStart, sb.dataStart, sb.salt, sb.root} {
		le.PutUint64(b[16+8*i:], v)
	}
	return b
}

func decodeSuperblock(b []byte, regionBlocks uint64) (superblock, error) {
	le := binary.LittleEndian
	var sb superblock
	if m := le.Uint64(b[0:]); m != magic {
		return sb, corrupt(0, 0, "no file system (bad superblock magic %#x)", m)
	}
	if v := le.Uint32(b[8:]); v != version {
		return sb, corrupt(0, 0, "unsupported file system version %d in the superblock", v)
	}
	f := []*uint64{&sb.nblocks, &sb.ninodes, &sb.ibmStart, &sb.ibmBlocks, &sb.bbmStart, &sb.bbmBlocks,
		&sb.itStart, &sb.itBlocks, &sb.orphanStart, &sb.dataStart, &sb.salt, &sb.root}
	for i, p := range f {
		*p = le.Uint64(b[16+8*i:])
	}
	want, err := computeLayout(sb.nblocks, sb.ninodes)
	if err != nil || sb.nblocks > regionBlocks || sb.nblocks > maxBlocks {
		return sb, corrupt(0, 0, "inconsistent superblock (%d blocks, %d inodes, journal region %d blocks)", sb.nblocks, sb.ninodes, regionBlocks)
	}
	want.salt, want.root = sb.salt, sb.root
	if want != sb || sb.root != uint64(rootInum) {
		return sb, corrupt(0, 0, "inconsistent superblock layout (offsets do not follow from %d blocks and %d inodes, or root %d)", sb.nblocks, sb.ninodes, sb.root)
	}
	return sb, nil
}

// computeLayout places the metadata for nblocks blocks and ninodes inodes
// (a multiple of inodesPerBlock).
func computeLayout(nblocks, ninodes uint64) (superblock, error) {
	sb := superblock{nblocks: nblocks, ninodes: ninodes}
	if ninodes < inodesPerBlock || ninodes%inodesPerBlock != 0 || ninodes > 1<<32 {
		return sb, fmt.Errorf("%w: bad inode count %d", ErrInval, ninodes)
	}
	sb.ibmStart = 1
	sb.ibmBlocks = divUp(ninodes, bitsPerBlock)
	sb.orphanStart = sb.ibmStart + sb.ibmBlocks
	sb.itStart = sb.orphanStart + 1
	sb.itBlocks = ninodes / inodesPerBlock
	sb.bbmStart = sb.itStart + sb.itBlocks
	if sb.bbmStart >= nblocks {
		return sb, fmt.Errorf("%w: %d blocks cannot hold %d inodes", ErrNoSpace, nblocks, ninodes)
	}
	sb.bbmBlocks = divUp(nblocks-sb.bbmStart, bitsPerBlock)
	sb.dataStart = sb.bbmStart + sb.bbmBlocks
	if sb.dataStart+minDataBlocks > nblocks {
		return sb, fmt.Errorf("%w: %d blocks leave too few data blocks for %d inodes", ErrNoSpace, nblocks, ninodes)
	}
	return sb, nil
}

const minDataBlocks = 16

func divUp(a, b uint64) uint64 { return (a + b - 1) / b }

// dataBlocks is the number of blocks the block bitmap covers.
func (sb *superblock) dataBlocks() uint64 { return sb.nblocks - sb.dataStart }

func (sb *superblock) inodeAddr(i Inum) journal.Addr {
	return journal.Addr{Blkno: sb.itStart + uint64(i)/inodesPerBlock, Off: uint64(i) % inodesPerBlock * inodeBits}
}

func (sb *superblock) inodeBitAddr(i Inum) journal.Addr {
	return journal.Addr{Blkno: sb.ibmStart + uint64(i)/bitsPerBlock, Off: uint64(i) % bitsPerBlock}
}

func (sb *superblock) blockBitAddr(bn uint64) journal.Addr {
	i := bn - sb.dataStart
	return journal.Addr{Blkno: sb.bbmStart + i/bitsPerBlock, Off: i % bitsPerBlock}
}

func (sb *superblock) orphanAddr(slot int) journal.Addr {
	return journal.Addr{Blkno: sb.orphanStart, Off: uint64(slot) * 64}
}

func (sb *superblock) isDataBlock(bn uint64) bool { return bn >= sb.dataStart && bn < sb.nblocks }

// checkInode checks the fields of an inode read from disk that operations
// rely on: its type, a size within the limits of its type, and a used
// count within the data area (walks of directory trees are bounded by
// it). Damage is ErrCorrupt.
func (sb *superblock) checkInode(ip *inode) error {
	switch {
	case ip.typ > TypeFifo:
		return corrupt(ip.inum, 0, "inode of bad type %d", ip.typ)
	case ip.typ == TypeReg && ip.size > MaxFileSize:
		return corrupt(ip.inum, 0, "file size %d beyond the maximum", ip.size)
	case ip.typ == TypeLnk && ip.size > maxSymlink:
		return corrupt(ip.inum, 0, "symlink size %d beyond the maximum", ip.size)
	case ip.used > sb.dataBlocks():
		return corrupt(ip.inum, 0, "inode uses %d blocks, more than the data area holds", ip.used)
	}
	return nil
}

// inode is the decoded form of a 128-byte on-disk inode:
//
//	0 type u32 | 4 mode | 8 nlink | 12 uid | 16 gid | 20 gen | 24 rdev major | 28 rdev minor
//	32 size u64 | 40 used blocks u64
//	48 atime sec,nsec u32 | 56 mtime | 64 ctime
//	72 create verifier u64
//	80 12 × u32 block pointers: 9 direct, single, double, triple indirect
//
// A directory uses ptr[0] for the root block of its B+tree and ptr[1] for
// its parent's inode number ("..").
type inode struct {
	inum                                   Inum
	typ                                    FileType
	mode, nlink, uid, gid, gen, maj, minor uint32
	size, used                             uint64
	atime, mtime, ctime                    Time
	verf                                   uint64
	ptr                                    [nPtrs]uint32

	dirty bool // written back at commit
}

func (ip *inode) encode() []byte {
	b := make([]byte, inodeSize)
	le := binary.LittleEndian
	for i, v := range []uint32{uint32(ip.typ), ip.mode, ip.nlink, ip.uid, ip.gid, ip.gen, ip.maj, ip.minor} {
		le.PutUint32(b[4*i:], v)
	}
	le.PutUint64(b[32:], ip.size)
	le.PutUint64(b[40:], ip.used)
	for i, t := range []Time{ip.atime, ip.mtime, ip.ctime} {
		le.PutUint32(b[48+8*i:], t.Sec)
		le.PutUint32(b[52+8*i:], t.Nsec)
	}
	le.PutUint64(b[72:], ip.verf)
	for i, p := range ip.ptr {
		le.PutUint32(b[80+4*i:], p)
	}
	return b
}

func decodeInode(inum Inum, b []byte) *inode {
	le := binary.LittleEndian
	ip := &inode{inum: inum}
	ip.typ = FileType(le.Uint32(b[0:]))
	for i, p := range []*uint32{&ip.mode, &ip.nlink, &ip.uid, &ip.gid, &ip.gen, &ip.maj, &ip.minor} {
		*p = le.Uint32(b[4+4*i:])
	}
	ip.size = le.Uint64(b[32:])
	ip.used = le.Uint64(b[40:])
	for i, t := range []*Time{&ip.atime, &ip.mtime, &ip.ctime} {
		t.Sec = le.Uint32(b[48+8*i:])
		t.Nsec = le.Uint32(b[52+8*i:])
	}
	ip.verf = le.Uint64(b[72:])
	for i := range ip.ptr {
		ip.ptr[i] = le.Uint32(b[80+4*i:])
	}
	return ip
}

// live reports whether the inode is in use and reachable: an unlinked inode
// (nlink 0) awaiting its blocks' release is as good as gone to clients.
func (ip *inode) live() bool { return ip.typ != 0 && ip.nlink > 0 }

func (ip *inode) parent() Inum { return Inum(ip.ptr[1]) }

func (ip *inode) attr() Attr {
	a := Attr{
		Type: ip.typ, Mode: ip.mode & 07777, Nlink: ip.nlink, UID: ip.uid, GID: ip.gid,
		Size: ip.size, Used: ip.used * blockSize, Fileid: uint64(ip.inum),
		Atime: ip.atime, Mtime: ip.mtime, Ctime: ip.ctime, Gen: ip.gen,
	}
	if ip.typ == TypeBlk || ip.typ == TypeChr {
		a.Rdev.Major, a.Rdev.Minor = ip.maj, ip.minor
	}
	return a
}

func (ip *inode) wcc() WCC { return WCC{Size: ip.size, Mtime: ip.mtime, Ctime: ip.ctime} }

func (ip *inode) handle() Handle { return Handle{Ino: ip.inum, Gen: ip.gen} }

// nameHash is the 56-bit salted hash of a directory entry name: FNV-1a
// followed by a 64-bit finaliser so that the top bits are well mixed. It is
// never 0, so directory keys (hash<<8 | discriminator) are >= 256.
func nameHash(salt uint64, name string) uint64 {
	h := uint64(14695981039346656037) ^ salt
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	h >>= 8
	if h == 0 {
		h = 1
	}
	return h
}
