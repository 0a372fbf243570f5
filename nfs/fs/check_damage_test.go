package fs

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"strata/journal"
)

// Damage helpers: they change the image through the journal, below the
// file system, the way a bad disk or a bug would.

// rawBlock returns a copy of block bn as the journal has it.
func rawBlock(t testing.TB, f *FS, bn uint64) []byte {
	t.Helper()
	buf, err := f.j.Begin().ReadBuf(journal.Addr{Blkno: bn}, journal.BlockBits)
	if err != nil {
		t.Fatalf("read block %d: %v", bn, err)
	}
	return slices.Clone(buf.Data)
}

// putBlock sets block bn to data and makes it durable.
func putBlock(t testing.TB, f *FS, bn uint64, data []byte) {
	t.Helper()
	op := f.j.Begin()
	if err := op.OverWrite(journal.Addr{Blkno: bn}, journal.BlockBits, data); err != nil {
		t.Fatalf("write block %d: %v", bn, err)
	}
	if _, err := op.Commit(true); err != nil {
		t.Fatalf("commit block %d: %v", bn, err)
	}
}

// rawInode returns inode inum as it is on disk.
func rawInode(t testing.TB, f *FS, inum Inum) *inode {
	t.Helper()
	buf, err := f.j.Begin().ReadBuf(f.sb.inodeAddr(inum), inodeBits)
	if err != nil {
		t.Fatalf("read inode %d: %v", inum, err)
	}
	return decodeInode(inum, buf.Data)
}

// putInode writes ip to disk as it is.
func putInode(t testing.TB, f *FS, ip *inode) {
	t.Helper()
	op := f.j.Begin()
	if err := op.OverWrite(f.sb.inodeAddr(ip.inum), inodeBits, ip.encode()); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// editInode applies edit to inode inum on disk.
func editInode(t testing.TB, f *FS, inum Inum, edit func(ip *inode)) {
	t.Helper()
	ip := rawInode(t, f, inum)
	edit(ip)
	putInode(t, f, ip)
}

// putBit sets the on-disk bitmap bit at a to v.
func putBit(t testing.TB, f *FS, a journal.Addr, v byte) {
	t.Helper()
	op := f.j.Begin()
	if err := op.OverWrite(a, 1, []byte{v}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// putU64At sets the 64-bit little-endian word at byte off of block bn.
func putU64At(t testing.TB, f *FS, bn uint64, off int, v uint64) {
	t.Helper()
	b := rawBlock(t, f, bn)
	binary.LittleEndian.PutUint64(b[off:], v)
	putBlock(t, f, bn, b)
}

// editLeaf decodes the leaf at bn, lets edit change its entries, sorts
// them by key unless keepOrder, and writes the leaf back.
func editLeaf(t testing.TB, f *FS, bn uint64, keepOrder bool, edit func([]dent) []dent) {
	t.Helper()
	b := rawBlock(t, f, bn)
	if nodeKind(b) != kindLeaf {
		t.Fatalf("block %d is not a leaf", bn)
	}
	es, err := decodeLeaf(b)
	if err != nil {
		t.Fatal(err)
	}
	es = edit(es)
	if !keepOrder {
		sort.Slice(es, func(i, j int) bool { return es[i].key < es[j].key })
	}
	putBlock(t, f, bn, encodeLeaf(es))
}

// entryIndex is the index of name in es.
func entryIndex(t testing.TB, es []dent, name string) int {
	t.Helper()
	for i, e := range es {
		if e.name == name {
			return i
		}
	}
	t.Fatalf("no entry %q", name)
	return -1
}

// reopen opens the file system again on its journal, rebuilding the
// allocators from the (damaged) bitmaps.
func reopen(t testing.TB, f *FS) *FS {
	t.Helper()
	g, err := OpenOptions(f.j, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return g
}

// freeDataBlocks returns n data blocks from the end of the data area,
// which a small fixture leaves free.
func freeDataBlocks(t testing.TB, f *FS, n int) []uint64 {
	t.Helper()
	var bns []uint64
	for bn := f.sb.nblocks - 1; bn >= f.sb.dataStart && len(bns) < n; bn-- {
		if !f.balloc.isUsed(bn - f.sb.dataStart) {
			bns = append(bns, bn)
		}
	}
	if len(bns) < n {
		t.Fatalf("only %d free blocks", len(bns))
	}
	return bns
}

// fixture is a small populated file system:
//
//	/a      regular, 3 data blocks
//	/b      regular, 1 data block
//	/big    regular, 12 data blocks (uses the single indirect block)
//	/d/     directory
//	/d/c    regular, 1 data block
//	/d/e/   directory
//	/l      symlink
//	/p      FIFO
//	/wide/  directory of 60 long names (a two-level tree)
type fixture struct {
	f                              *FS
	a, b, big, d, c, e, l, p, wide Inum
	root                           uint64 // root directory's tree block
}

func newFixture(t testing.TB) *fixture { return newFixtureSalt(t, 0x5a17) }

// newFixtureSalt makes the fixture with a given name-hash salt, so that
// its directory trees have the same shape on every run.
func newFixtureSalt(t testing.TB, salt uint64) *fixture {
	t.Helper()
	f := newMemFS(t, 2048, 256, 256, Options{})
	putU64At(t, f, 0, 16+8*10, salt) // the superblock's salt field, while no name is hashed
	f = reopen(t, f)
	root := f.Root()
	x := &fixture{f: f}
	mk := func(dir Handle, name string, size int) (Handle, Inum) {
		h, _, _, _, err := f.Create(dir, name, Guarded, SetAttr{}, 0, 0, 0, ts(1))
		if err != nil {
			t.Fatal(err)
		}
		if size > 0 {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i*7 + int(h.Ino))
			}
			if _, _, err := f.Write(h, 0, data, true, ts(2)); err != nil {
				t.Fatal(err)
			}
		}
		return h, h.Ino
	}
	mkdir := func(dir Handle, name string) (Handle, Inum) {
		h, _, _, _, err := f.Mkdir(dir, name, SetAttr{}, 0, 0, ts(1))
		if err != nil {
			t.Fatal(err)
		}
		return h, h.Ino
	}
	_, x.a = mk(root, "a", 3*blockSize)
	_, x.b = mk(root, "b", 100)
	_, x.big = mk(root, "big", 12*blockSize)
	var dh Handle
	dh, x.d = mkdir(root, "d")
	_, x.c = mk(dh, "c", 10)
	_, x.e = mkdir(dh, "e")
	h, _, _, _, err := f.Symlink(root, "l", "/target", SetAttr{}, 0, 0, ts(1))
	if err != nil {
		t.Fatal(err)
	}
	x.l = h.Ino
	if h, _, _, _, err = f.Mknod(root, "p", TypeFifo, 0, 0, SetAttr{}, 0, 0, ts(1)); err != nil {
		t.Fatal(err)
	}
	x.p = h.Ino
	var wh Handle
	wh, x.wide = mkdir(root, "wide")
	for i := 0; i < 60; i++ {
		if _, _, _, _, err := f.Mknod(wh, fmt.Sprintf("%03d-%s", i, strings.Repeat("w", 200)), TypeFifo, 0, 0, SetAttr{}, 0, 0, ts(1)); err != nil {
			t.Fatal(err)
		}
	}
	x.root = uint64(rawInode(t, f, rootInum).ptr[0])
	if b := rawBlock(t, f, uint64(rawInode(t, f, x.wide).ptr[0])); nodeKind(b) != kindInternal || nodeCount(b) < 2 {
		t.Fatalf("wide's tree root is not an internal node with 3 children or more")
	}
	mustCheck(t, f)
	return x
}

// ino returns inode inum as on disk.
func (x *fixture) ino(t testing.TB, inum Inum) *inode { return rawInode(t, x.f, inum) }

// ptr returns pointer k of inode inum.
func (x *fixture) ptr(t testing.TB, inum Inum, k int) uint64 { return uint64(x.ino(t, inum).ptr[k]) }

// wideChildren returns the children of wide's internal root.
func (x *fixture) wideChildren(t testing.TB) (rootBn uint64, in inner) {
	t.Helper()
	rootBn = x.ptr(t, x.wide, 0)
	in, err := decodeInner(rawBlock(t, x.f, rootBn))
	if err != nil {
		t.Fatal(err)
	}
	return rootBn, in
}

// want is a problem Check must report: a line equal to one of the
// alternatives (or, for a prefix want, starting with one).
type want struct {
	alts     []string
	prefix   bool
	contains string // with prefix: also required in the line
}

func exact(format string, args ...any) want {
	return want{alts: []string{fmt.Sprintf(format, args...)}}
}
func prefix(format string, args ...any) want {
	return want{alts: []string{fmt.Sprintf(format, args...)}, prefix: true}
}
func either(a, b string) want { return want{alts: []string{a, b}} }

func (w want) match(p string) bool {
	for _, a := range w.alts {
		if p == a || (w.prefix && strings.HasPrefix(p, a) && strings.Contains(p, w.contains)) {
			return true
		}
	}
	return false
}

// TestCheckDetectsDamage damages a populated image in each way Check's
// documentation says it detects, one damage per fresh image, and asserts
// that Check reports the image as not clean with a problem line that names
// that damage (the block, the inodes, the entry...). Each want is checked
// exactly, so each of Check's tests is needed by some case.
func TestCheckDetectsDamage(t *testing.T) {
	type dmg struct {
		name string
		// damage changes the image and returns the problems Check must
		// report; with reopen the file system is opened again before the
		// check (so the in-memory allocators follow the damaged bitmaps).
		damage func(t *testing.T, x *fixture) []want
		reopen bool
	}
	cases := []dmg{
		// Superblock.
		{name: "superblock bad magic", damage: func(t *testing.T, x *fixture) []want {
			putU64At(t, x.f, 0, 0, 0xdeadbeef)
			return []want{prefix("superblock: ").withContains("no file system (bad superblock magic 0xdeadbeef)")}
		}},
		{name: "superblock bad version", damage: func(t *testing.T, x *fixture) []want {
			b := rawBlock(t, x.f, 0)
			binary.LittleEndian.PutUint32(b[8:], 7)
			putBlock(t, x.f, 0, b)
			return []want{prefix("superblock: ").withContains("unsupported file system version 7")}
		}},
		{name: "superblock more blocks than the journal", damage: func(t *testing.T, x *fixture) []want {
			putU64At(t, x.f, 0, 16, x.f.j.Size()+1) // nblocks
			return []want{prefix("superblock: ").withContains(fmt.Sprintf("inconsistent superblock (%d blocks, %d inodes, journal region %d blocks)", x.f.j.Size()+1, x.f.sb.ninodes, x.f.j.Size()))}
		}},
		{name: "superblock inode count not a multiple of 32", damage: func(t *testing.T, x *fixture) []want {
			putU64At(t, x.f, 0, 24, x.f.sb.ninodes+1) // ninodes
			return []want{prefix("superblock: ").withContains("inconsistent superblock")}
		}},
		{name: "superblock layout inconsistent with sizes", damage: func(t *testing.T, x *fixture) []want {
			putU64At(t, x.f, 0, 16+8*9, x.f.sb.dataStart+1) // dataStart
			return []want{prefix("superblock: ").withContains("inconsistent superblock layout")}
		}},
		{name: "superblock changed since open", damage: func(t *testing.T, x *fixture) []want {
			putU64At(t, x.f, 0, 16+8*10, x.f.sb.salt+1) // salt
			return []want{exact("superblock changed since Open")}
		}},
		// Bitmaps against the allocators and against what is used.
		{name: "block bitmap says free, an inode uses the block", reopen: true, damage: func(t *testing.T, x *fixture) []want {
			bn := x.ptr(t, x.a, 1)
			putBit(t, x.f, x.f.sb.blockBitAddr(bn), 0)
			return []want{exact("block %d used by inode %d but free in the bitmap", bn, x.a)}
		}},
		{name: "block bitmap says used, no inode uses the block", reopen: true, damage: func(t *testing.T, x *fixture) []want {
			bn := freeDataBlocks(t, x.f, 1)[0]
			putBit(t, x.f, x.f.sb.blockBitAddr(bn), 1)
			return []want{exact("block %d leaked: marked used, owned by no inode", bn)}
		}},
		{name: "block bitmap differs from the allocator", damage: func(t *testing.T, x *fixture) []want {
			bn := freeDataBlocks(t, x.f, 1)[0]
			putBit(t, x.f, x.f.sb.blockBitAddr(bn), 1)
			ifree, bfree := x.f.ialloc.numFree(), x.f.balloc.numFree()
			return []want{
				exact("block %d: bitmap says used=true, allocator says false", bn),
				exact("free counts: bitmaps %d inodes %d blocks, allocators %d and %d", ifree, bfree-1, ifree, bfree),
			}
		}},
		{name: "inode bitmap differs from the allocator", damage: func(t *testing.T, x *fixture) []want {
			putBit(t, x.f, x.f.sb.inodeBitAddr(200), 1)
			ifree, bfree := x.f.ialloc.numFree(), x.f.balloc.numFree()
			return []want{
				exact("inode 200: bitmap says used=true, allocator says false"),
				exact("free counts: bitmaps %d inodes %d blocks, allocators %d and %d", ifree-1, bfree, ifree, bfree),
			}
		}},
		{name: "reserved inode 0 free in the bitmap", damage: func(t *testing.T, x *fixture) []want {
			putBit(t, x.f, x.f.sb.inodeBitAddr(0), 0)
			return []want{exact("inode 0 (reserved) is not marked used")}
		}},
		{name: "inode bitmap says free, the inode is in use", reopen: true, damage: func(t *testing.T, x *fixture) []want {
			putBit(t, x.f, x.f.sb.inodeBitAddr(x.b), 0)
			return []want{
				exact("inode %d: free in the bitmap but type 1 nlink 1 used 1", x.b),
				exact("directory 1: entry %q names free inode %d", "b", x.b),
			}
		}},
		{name: "inode bitmap says used, the inode is free", reopen: true, damage: func(t *testing.T, x *fixture) []want {
			putBit(t, x.f, x.f.sb.inodeBitAddr(200), 1)
			return []want{exact("inode 200: allocated with bad type 0")}
		}},
		{name: "inode with a bad type", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.p, func(ip *inode) { ip.typ = 9 })
			return []want{exact("inode %d: allocated with bad type 9", x.p)}
		}},
		// The root.
		{name: "root not a directory", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, rootInum, func(ip *inode) { ip.typ = TypeReg })
			return []want{exact("root inode missing or not a directory")}
		}},
		{name: "root generation changed", damage: func(t *testing.T, x *fixture) []want {
			g := x.ino(t, rootInum).gen
			editInode(t, x.f, rootInum, func(ip *inode) { ip.gen = g + 3 })
			return []want{exact("root generation %d, handed out %d", g+3, g)}
		}},
		{name: "root's parent not itself", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, rootInum, func(ip *inode) { ip.ptr[1] = uint32(x.d) })
			return []want{exact("root's parent is %d", x.d)}
		}},
		// Block maps of files.
		{name: "block used by two inodes", damage: func(t *testing.T, x *fixture) []want {
			shared, old := x.ptr(t, x.a, 2), x.ptr(t, x.b, 0)
			editInode(t, x.f, x.b, func(ip *inode) { ip.ptr[0] = uint32(shared) })
			return []want{
				either(fmt.Sprintf("block %d used twice: by inode %d and inode %d (data)", shared, x.a, x.b),
					fmt.Sprintf("block %d used twice: by inode %d and inode %d (data)", shared, x.b, x.a)),
				exact("block %d leaked: marked used, owned by no inode", old),
			}
		}},
		{name: "data pointer outside the data area", damage: func(t *testing.T, x *fixture) []want {
			bad := x.f.sb.itStart
			editInode(t, x.f, x.a, func(ip *inode) { ip.ptr[1] = uint32(bad) })
			return []want{exact("inode %d: data pointer %d outside the data area", x.a, bad)}
		}},
		{name: "data pointer past the end of the disk", damage: func(t *testing.T, x *fixture) []want {
			bad := x.f.sb.nblocks + 10
			editInode(t, x.f, x.b, func(ip *inode) { ip.ptr[0] = uint32(bad) })
			return []want{exact("inode %d: data pointer %d outside the data area", x.b, bad)}
		}},
		{name: "indirect pointer outside the data area", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.big, func(ip *inode) { ip.ptr[nDirect] = 3 })
			return []want{exact("inode %d: indirect pointer 3 outside the data area", x.big)}
		}},
		{name: "pointer in an indirect block outside the data area", damage: func(t *testing.T, x *fixture) []want {
			ind := x.ptr(t, x.big, nDirect)
			b := rawBlock(t, x.f, ind)
			setPtr(b, 1, x.f.sb.orphanStart)
			putBlock(t, x.f, ind, b)
			return []want{exact("inode %d: data pointer %d outside the data area", x.big, x.f.sb.orphanStart)}
		}},
		{name: "block mapped beyond the file size", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.a, func(ip *inode) { ip.size = 100 })
			return []want{exact("inode %d: block at logical 1 beyond size 100", x.a), exact("inode %d: block at logical 2 beyond size 100", x.a)}
		}},
		{name: "used count differs from the map", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.big, func(ip *inode) { ip.used = 5 })
			return []want{exact("inode %d: used 5 blocks, maps 13", x.big)}
		}},
		{name: "size beyond the maximum", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.b, func(ip *inode) { ip.size = 2 * MaxFileSize })
			return []want{exact("inode %d: size %d beyond the maximum", x.b, uint64(2*MaxFileSize))}
		}},
		{name: "symlink without a target", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.l, func(ip *inode) { ip.size = 0 })
			return []want{exact("inode %d: symlink with size 0 and 1 blocks", x.l)}
		}},
		{name: "special file with a size", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.p, func(ip *inode) { ip.size = 5 })
			return []want{exact("inode %d: special file with blocks or size", x.p)}
		}},
		// Directory inodes.
		{name: "directory without a root block", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.e, func(ip *inode) { ip.ptr[0] = 0 })
			return []want{exact("directory %d: no root block", x.e)}
		}},
		{name: "directory with a stray pointer", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.d, func(ip *inode) { ip.ptr[5] = 77 })
			return []want{exact("directory %d: stray pointer 5", x.d)}
		}},
		{name: "directory used count wrong", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.d, func(ip *inode) { ip.used = 2 })
			return []want{exact("directory %d: used 2 size %d, tree has 1 blocks", x.d, blockSize)}
		}},
		{name: "directory tree root outside the data area", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.e, func(ip *inode) { ip.ptr[0] = 2 })
			return []want{exact("inode %d: directory node pointer 2 outside the data area", x.e)}
		}},
		// Directory trees.
		{name: "directory node of a bad kind", damage: func(t *testing.T, x *fixture) []want {
			bn := x.ptr(t, x.d, 0)
			b := rawBlock(t, x.f, bn)
			b[0] = 9
			putBlock(t, x.f, bn, b)
			return []want{exact("directory %d: block %d has bad node kind 9", x.d, bn)}
		}},
		{name: "directory leaf with garbage entries", damage: func(t *testing.T, x *fixture) []want {
			bn := x.ptr(t, x.d, 0)
			b := rawBlock(t, x.f, bn)
			binary.LittleEndian.PutUint16(b[2:], 60000)
			putBlock(t, x.f, bn, b)
			return []want{prefix("directory %d: leaf %d: ", x.d, bn).withContains("corrupt directory leaf")}
		}},
		{name: "directory leaf keys out of order", damage: func(t *testing.T, x *fixture) []want {
			var second uint64
			editLeaf(t, x.f, x.root, true, func(es []dent) []dent {
				es[0], es[1] = es[1], es[0]
				second = es[1].key
				return es
			})
			return []want{exact("directory 1: key %#x out of order in leaf %d", second, x.root)}
		}},
		{name: "directory entry key not its name's hash", damage: func(t *testing.T, x *fixture) []want {
			var key uint64
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				i := entryIndex(t, es, "b")
				es[i].key ^= 1 << 20
				key = es[i].key
				return es
			})
			return []want{exact("directory 1: entry %q has key %#x not matching its hash", "b", key)}
		}},
		{name: "directory entry with a bad name", damage: func(t *testing.T, x *fixture) []want {
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				i := entryIndex(t, es, "b")
				es[i].name = "x/y"
				es[i].key = x.f.hash("x/y") << 8
				return es
			})
			return []want{exact("directory 1: bad name %q", "x/y")}
		}},
		{name: "directory entry named dot", damage: func(t *testing.T, x *fixture) []want {
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				i := entryIndex(t, es, "b")
				es[i].name = ".."
				es[i].key = x.f.hash("..") << 8
				return es
			})
			return []want{exact("directory 1: bad name %q", "..")}
		}},
		{name: "directory with a duplicate name", damage: func(t *testing.T, x *fixture) []want {
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				e := es[entryIndex(t, es, "b")]
				e.key |= 1
				return append(es, e)
			})
			return []want{exact("directory 1: duplicate name %q", "b")}
		}},
		{name: "empty non-root leaf", damage: func(t *testing.T, x *fixture) []want {
			_, in := x.wideChildren(t)
			leaf := in.children[1]
			editLeaf(t, x.f, leaf, false, func([]dent) []dent { return nil })
			return []want{exact("directory %d: empty non-root leaf %d", x.wide, leaf)}
		}},
		{name: "leaves at different depths", damage: func(t *testing.T, x *fixture) []want {
			rootBn, in := x.wideChildren(t)
			extra := freeDataBlocks(t, x.f, 1)[0]
			putBlock(t, x.f, extra, encodeInner(inner{children: []uint64{in.children[1]}}))
			in.children[1] = extra
			putBlock(t, x.f, rootBn, encodeInner(in))
			return []want{either(fmt.Sprintf("directory %d: leaves at depths 1 and 2", x.wide), fmt.Sprintf("directory %d: leaves at depths 2 and 1", x.wide))}
		}},
		{name: "directory tree too deep", damage: func(t *testing.T, x *fixture) []want {
			// d's root becomes a chain of 17 internal nodes above its leaf.
			rootBn := x.ptr(t, x.d, 0)
			chain := freeDataBlocks(t, x.f, 18)
			putBlock(t, x.f, chain[17], rawBlock(t, x.f, rootBn))
			for i := 16; i >= 0; i-- {
				putBlock(t, x.f, chain[i], encodeInner(inner{children: []uint64{chain[i+1]}}))
			}
			putBlock(t, x.f, rootBn, encodeInner(inner{children: []uint64{chain[0]}}))
			return []want{exact("directory %d: tree too deep", x.d)}
		}},
		{name: "internal node with too many keys", damage: func(t *testing.T, x *fixture) []want {
			rootBn, _ := x.wideChildren(t)
			b := rawBlock(t, x.f, rootBn)
			binary.LittleEndian.PutUint16(b[2:], maxInternalN+1)
			putBlock(t, x.f, rootBn, b)
			return []want{prefix("directory %d: node %d: ", x.wide, rootBn).withContains("corrupt directory node")}
		}},
		{name: "internal node keys out of order", damage: func(t *testing.T, x *fixture) []want {
			rootBn, in := x.wideChildren(t)
			in.keys[0], in.keys[1] = in.keys[1], in.keys[0]
			putBlock(t, x.f, rootBn, encodeInner(in))
			return []want{exact("directory %d: node %d keys out of order", x.wide, rootBn)}
		}},
		// Entries and the inodes they name.
		{name: "entry names a free inode", damage: func(t *testing.T, x *fixture) []want {
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				es[entryIndex(t, es, "b")].inum = 200
				return es
			})
			return []want{exact("directory 1: entry %q names free inode 200", "b")}
		}},
		{name: "entry names an inode past the inode table", damage: func(t *testing.T, x *fixture) []want {
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				es[entryIndex(t, es, "b")].inum = 1 << 40
				return es
			})
			return []want{exact("directory 1: entry %q names free inode %d", "b", uint64(1<<40))}
		}},
		{name: "entry with a wrong generation", damage: func(t *testing.T, x *fixture) []want {
			g := x.ino(t, x.b).gen
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				es[entryIndex(t, es, "b")].gen = g + 5
				return es
			})
			return []want{exact("directory 1: entry %q names inode %d generation %d, inode has %d", "b", x.b, g+5, g)}
		}},
		{name: "entry names the root", damage: func(t *testing.T, x *fixture) []want {
			g := x.ino(t, rootInum).gen
			editLeaf(t, x.f, x.ptr(t, x.d, 0), false, func(es []dent) []dent {
				return append(es, dent{key: x.f.hash("up") << 8, inum: rootInum, gen: g, name: "up"})
			})
			return []want{exact("directory %d: entry %q names the root", x.d, "up")}
		}},
		{name: "directory in two directories", damage: func(t *testing.T, x *fixture) []want {
			g := x.ino(t, x.e).gen
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				return append(es, dent{key: x.f.hash("e2") << 8, inum: x.e, gen: g, name: "e2"})
			})
			return []want{
				either(fmt.Sprintf("directory %d linked from directories %d and %d", x.e, x.d, rootInum),
					fmt.Sprintf("directory %d linked from directories %d and %d", x.e, rootInum, x.d)),
				exact("directory %d: 2 entries name it", x.e),
			}
		}},
		// Link counts and the tree's shape.
		{name: "file link count too high", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.a, func(ip *inode) { ip.nlink = 2 })
			return []want{exact("inode %d: nlink 2, 1 entries name it", x.a)}
		}},
		{name: "file link count too low", damage: func(t *testing.T, x *fixture) []want {
			g := x.ino(t, x.a).gen
			editLeaf(t, x.f, x.ptr(t, x.d, 0), false, func(es []dent) []dent {
				return append(es, dent{key: x.f.hash("a2") << 8, inum: x.a, gen: g, name: "a2"})
			})
			return []want{exact("inode %d: nlink 1, 2 entries name it", x.a)}
		}},
		{name: "directory link count wrong", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.d, func(ip *inode) { ip.nlink = 5 })
			return []want{exact("directory %d: nlink 5, want 3", x.d)}
		}},
		{name: "directory with a wrong parent", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.e, func(ip *inode) { ip.ptr[1] = uint32(rootInum) })
			return []want{exact("directory %d: parent field 1 but it is in directory %d", x.e, x.d)}
		}},
		{name: "directory cycle unreachable from the root", damage: func(t *testing.T, x *fixture) []want {
			// d leaves the root and enters its own subdirectory e: d and e
			// (and d's file c) are named once each but unreachable.
			var de dent
			editLeaf(t, x.f, x.root, false, func(es []dent) []dent {
				i := entryIndex(t, es, "d")
				de = es[i]
				return slices.Delete(es, i, i+1)
			})
			editLeaf(t, x.f, x.ptr(t, x.e, 0), false, func(es []dent) []dent { return append(es, de) })
			return []want{
				exact("inode %d (type 2, nlink 3) unreachable from the root", x.d),
				exact("inode %d (type 2, nlink 2) unreachable from the root", x.e),
				exact("inode %d (type 1, nlink 1) unreachable from the root", x.c),
			}
		}},
		{name: "directory named by no entry", damage: func(t *testing.T, x *fixture) []want {
			editLeaf(t, x.f, x.ptr(t, x.d, 0), false, func(es []dent) []dent {
				i := entryIndex(t, es, "e")
				return slices.Delete(es, i, i+1)
			})
			return []want{exact("directory %d: 0 entries name it", x.e)}
		}},
		// The orphan table.
		{name: "orphan slot names a linked file", damage: func(t *testing.T, x *fixture) []want {
			putU64At(t, x.f, x.f.sb.orphanStart, 8*3, uint64(x.a))
			return []want{exact("orphan table slot 3 names inode %d which is not an unlinked file", x.a)}
		}},
		{name: "orphan slot names a free inode", damage: func(t *testing.T, x *fixture) []want {
			putU64At(t, x.f, x.f.sb.orphanStart, 8*7, 200)
			return []want{exact("orphan table slot 7 names inode 200 which is not an unlinked file")}
		}},
		{name: "orphan listed twice", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.b, func(ip *inode) { ip.nlink = 0 })
			putU64At(t, x.f, x.f.sb.orphanStart, 0, uint64(x.b))
			putU64At(t, x.f, x.f.sb.orphanStart, 8, uint64(x.b))
			return []want{exact("orphan table lists inode %d twice", x.b)}
		}},
		{name: "unlinked inode not in the orphan table", damage: func(t *testing.T, x *fixture) []want {
			editInode(t, x.f, x.b, func(ip *inode) { ip.nlink = 0 })
			return []want{exact("inode %d: nlink 0 but not in the orphan table (leaked)", x.b)}
		}},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			x := newFixture(t)
			wants := c.damage(t, x)
			f := x.f
			if c.reopen {
				f = reopen(t, f)
			}
			r, err := f.Check()
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			if r.Clean() {
				t.Fatalf("check reports a clean image after the damage")
			}
			for _, w := range wants {
				if !slices.ContainsFunc(r.Problems, w.match) {
					t.Errorf("no problem %q among:\n  %s", w.alts, strings.Join(r.Problems, "\n  "))
				}
			}
			if testing.Verbose() {
				t.Logf("%s", r)
			}
		})
	}
}

// withContains makes a prefix want also require sub in the line.
func (w want) withContains(sub string) want {
	w.contains = sub
	return w
}
