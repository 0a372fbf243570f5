package fs

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"strata/journal"
)

// Report is the result of Check: Problems is empty for a clean file system.
type Report struct {
	Problems []string
	Inodes   uint64 // allocated inodes (root included)
	Dirs     uint64
	Blocks   uint64 // allocated data blocks
	Entries  uint64 // directory entries
	Orphans  uint64 // unlinked inodes still being freed
}

// Clean reports whether Check found nothing wrong.
func (r Report) Clean() bool { return len(r.Problems) == 0 }

func (r Report) String() string {
	if r.Clean() {
		return fmt.Sprintf("clean: %d inodes (%d dirs), %d blocks, %d entries, %d orphans", r.Inodes, r.Dirs, r.Blocks, r.Entries, r.Orphans)
	}
	return fmt.Sprintf("%d problems:\n  %s", len(r.Problems), strings.Join(r.Problems, "\n  "))
}

const maxProblems = 200

func (r *Report) add(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	} else if len(r.Problems) == maxProblems {
		r.Problems = append(r.Problems, "... (more problems not listed)")
	}
}

type checker struct {
	f       *FS
	r       *Report
	owner   map[uint64]Inum // data block -> inode owning it
	inodes  map[Inum]*inode // allocated inodes
	refs    map[Inum]uint32 // directory entries naming each inode
	subdirs map[Inum]uint32 // subdirectories of each directory
	parent  map[Inum]Inum   // directory containing each directory's entry
	edges   map[Inum][]Inum // directory -> children, for reachability
	order   []Inum          // allocated inodes in ascending order
}

func (c *checker) read(bn uint64) ([]byte, error) {
	buf, err := c.f.j.Begin().ReadBuf(journal.Addr{Blkno: bn}, journal.BlockBits)
	if err != nil {
		return nil, ioErr(fmt.Sprintf("check: read block %d", bn), err)
	}
	return buf.Data, nil
}

// own records that block bn belongs to inode i.
func (c *checker) own(bn uint64, i Inum, what string) bool {
	if !c.f.sb.isDataBlock(bn) {
		c.r.add("inode %d: %s pointer %d outside the data area", i, what, bn)
		return false
	}
	if o, dup := c.owner[bn]; dup {
		c.r.add("block %d used twice: by inode %d and inode %d (%s)", bn, o, i, what)
		return false
	}
	c.owner[bn] = i
	return true
}

// Check verifies the file system through the journal, excluding every
// other operation while it runs: superblock, bitmaps against the in-memory
// allocators, no leaked or doubly used blocks or inodes, block maps within
// file sizes and used counts, directory trees well formed with entries
// naming live inodes of the right generation, link counts, parents of
// directories, reachability from the root, and the orphan table. It returns
// an error only if it cannot read; problems go in the Report.
func (f *FS) Check() (Report, error) {
	f.gate.Lock()
	defer f.gate.Unlock()
	var r Report
	c := &checker{f: f, r: &r, owner: map[uint64]Inum{}, inodes: map[Inum]*inode{}, refs: map[Inum]uint32{},
		subdirs: map[Inum]uint32{}, parent: map[Inum]Inum{}, edges: map[Inum][]Inum{}}
	sbData, err := c.read(0)
	if err != nil {
		return r, err
	}
	if sb, err := decodeSuperblock(sbData, f.j.Size()); err != nil {
		r.add("superblock: %s", detail(err))
	} else if sb != f.sb {
		r.add("superblock changed since Open")
	}
	ibm, err := c.bitmap(f.sb.ibmStart, f.sb.ninodes)
	if err != nil {
		return r, err
	}
	bbm, err := c.bitmap(f.sb.bbmStart, f.sb.dataBlocks())
	if err != nil {
		return r, err
	}
	// The allocators' view must match the bitmaps (the check runs alone),
	// but for inodes an operation found in use while free in the bitmap,
	// which the allocator keeps (the inode table check reports them).
	var ifree, bfree uint64
	for i := uint64(0); i < f.sb.ninodes; i++ {
		if !ibm[i] {
			ifree++
		}
		if ibm[i] != f.ialloc.isUsed(i) && (ibm[i] || !f.ialloc.isBad(i)) {
			r.add("inode %d: bitmap says used=%v, allocator says %v", i, ibm[i], !ibm[i])
		}
	}
	for i := uint64(0); i < f.sb.dataBlocks(); i++ {
		if !bbm[i] {
			bfree++
		}
		if bbm[i] != f.balloc.isUsed(i) {
			r.add("block %d: bitmap says used=%v, allocator says %v", f.sb.dataStart+i, bbm[i], !bbm[i])
		}
	}
	if ifree != f.ialloc.numFree()+f.ialloc.numBad() || bfree != f.balloc.numFree() {
		r.add("free counts: bitmaps %d inodes %d blocks, allocators %d and %d", ifree, bfree, f.ialloc.numFree()+f.ialloc.numBad(), f.balloc.numFree())
	}
	if !ibm[0] {
		r.add("inode 0 (reserved) is not marked used")
	}
	// Inode table.
	for b := uint64(0); b < f.sb.itBlocks; b++ {
		data, err := c.read(f.sb.itStart + b)
		if err != nil {
			return r, err
		}
		for k := uint64(0); k < inodesPerBlock; k++ {
			inum := Inum(b*inodesPerBlock + k)
			ip := decodeInode(inum, data[k*inodeSize:(k+1)*inodeSize])
			if inum == 0 {
				continue
			}
			if !ibm[inum] {
				if ip.typ != 0 || ip.nlink != 0 || ip.used != 0 {
					r.add("inode %d: free in the bitmap but type %d nlink %d used %d", inum, ip.typ, ip.nlink, ip.used)
				}
				continue
			}
			if ip.typ < TypeReg || ip.typ > TypeFifo {
				r.add("inode %d: allocated with bad type %d", inum, ip.typ)
				continue
			}
			c.inodes[inum] = ip
		}
	}
	r.Inodes = uint64(len(c.inodes))
	c.order = slices.Sorted(maps.Keys(c.inodes)) // the report is the same on every run
	root := c.inodes[rootInum]
	if root == nil || root.typ != TypeDir {
		r.add("root inode missing or not a directory")
		return r, nil
	}
	if root.gen != f.rootGen {
		r.add("root generation %d, handed out %d", root.gen, f.rootGen)
	}
	for _, inum := range c.order {
		ip := c.inodes[inum]
		if err := c.checkInode(inum, ip); err != nil {
			return r, err
		}
	}
	c.checkLinks(root)
	if err := c.checkOrphans(); err != nil {
		return r, err
	}
	// Blocks: the bitmap must list exactly the blocks owned.
	for i := uint64(0); i < f.sb.dataBlocks(); i++ {
		bn := f.sb.dataStart + i
		_, owned := c.owner[bn]
		switch {
		case bbm[i] && !owned:
			r.add("block %d leaked: marked used, owned by no inode", bn)
		case !bbm[i] && owned:
			r.add("block %d used by inode %d but free in the bitmap", bn, c.owner[bn])
		}
		if bbm[i] {
			r.Blocks++
		}
	}
	return r, nil
}

// detail is the description of a damage without the error's prefix.
func detail(err error) string {
	if ce, ok := errors.AsType[*CorruptError](err); ok {
		return ce.Detail
	}
	return err.Error()
}

func (c *checker) bitmap(start, n uint64) ([]bool, error) {
	bits := make([]bool, n)
	for k := uint64(0); k*bitsPerBlock < n; k++ {
		data, err := c.read(start + k)
		if err != nil {
			return nil, err
		}
		for i := uint64(0); i < bitsPerBlock && k*bitsPerBlock+i < n; i++ {
			bits[k*bitsPerBlock+i] = data[i/8]&(1<<(i%8)) != 0
		}
	}
	return bits, nil
}

func (c *checker) checkInode(inum Inum, ip *inode) error {
	r := c.r
	switch ip.typ {
	case TypeReg, TypeLnk:
		var n uint64
		limit := divUp(ip.size, blockSize)
		err := forEachBlock(ip, func(bn uint64) ([]byte, error) { return c.read(bn) }, func(bn uint64, L int64) error {
			n++
			if L < 0 {
				// An indirect block outside the data area or owned
				// already is not read: it maps nothing of this file (and
				// a shared one must not be walked twice).
				if !c.own(bn, inum, "indirect") {
					return errSkip
				}
				return nil
			}
			if uint64(L) >= limit {
				r.add("inode %d: block at logical %d beyond size %d", inum, L, ip.size)
			}
			c.own(bn, inum, "data")
			return nil
		})
		if err != nil {
			return err
		}
		if n != ip.used {
			r.add("inode %d: used %d blocks, maps %d", inum, ip.used, n)
		}
		if ip.size > MaxFileSize {
			r.add("inode %d: size %d beyond the maximum", inum, ip.size)
		}
		if ip.typ == TypeLnk && (ip.size == 0 || ip.size > maxSymlink || n != 1 || ip.ptr[0] == 0) {
			r.add("inode %d: symlink with size %d and %d blocks", inum, ip.size, n)
		}
	case TypeDir:
		c.r.Dirs++
		if ip.ptr[0] == 0 {
			r.add("directory %d: no root block", inum)
			return nil
		}
		for k := 2; k < nPtrs; k++ {
			if ip.ptr[k] != 0 {
				r.add("directory %d: stray pointer %d", inum, k)
			}
		}
		n, err := c.checkTree(ip)
		if err != nil {
			return err
		}
		if n != ip.used || ip.size != ip.used*blockSize {
			r.add("directory %d: used %d size %d, tree has %d blocks", inum, ip.used, ip.size, n)
		}
	default:
		if ip.used != 0 || ip.size != 0 || ip.ptr != [nPtrs]uint32{} {
			r.add("inode %d: special file with blocks or size", inum)
		}
	}
	return nil
}

// checkTree checks directory d's B+tree and records its entries; it
// returns the number of blocks in the tree.
func (c *checker) checkTree(d *inode) (uint64, error) {
	var blocks uint64
	leafDepth := -1
	var lastHash uint64
	var names []string // names seen with hash lastHash
	var walk func(bn uint64, lo, hi uint64, depth int, isRoot bool) error
	walk = func(bn uint64, lo, hi uint64, depth int, isRoot bool) error {
		if depth > 16 {
			c.r.add("directory %d: tree too deep", d.inum)
			return nil
		}
		if !c.own(bn, d.inum, "directory node") {
			return nil
		}
		blocks++
		b, err := c.read(bn)
		if err != nil {
			return err
		}
		switch nodeKind(b) {
		case kindLeaf:
			if leafDepth < 0 {
				leafDepth = depth
			} else if leafDepth != depth {
				c.r.add("directory %d: leaves at depths %d and %d", d.inum, leafDepth, depth)
			}
			es, err := decodeLeaf(b)
			if err != nil {
				c.r.add("directory %d: leaf %d: %v", d.inum, bn, err)
				return nil
			}
			if len(es) == 0 && !isRoot {
				c.r.add("directory %d: empty non-root leaf %d", d.inum, bn)
			}
			prev := lo
			for i, e := range es {
				if e.key < lo || e.key >= hi || (i > 0 && e.key <= prev) {
					c.r.add("directory %d: key %#x out of order in leaf %d", d.inum, e.key, bn)
				}
				prev = e.key
				c.entry(d, e)
				h := e.key >> 8
				if h != lastHash {
					lastHash, names = h, names[:0]
				}
				for _, n := range names {
					if n == e.name {
						c.r.add("directory %d: duplicate name %q", d.inum, e.name)
					}
				}
				names = append(names, e.name)
			}
		case kindInternal:
			in, err := decodeInner(b)
			if err != nil {
				c.r.add("directory %d: node %d: %v", d.inum, bn, err)
				return nil
			}
			for i := range in.children {
				clo, chi := lo, hi
				if i > 0 {
					clo = in.keys[i-1]
				}
				if i < len(in.keys) {
					chi = in.keys[i]
				}
				if clo > chi || clo < lo || chi > hi {
					c.r.add("directory %d: node %d keys out of order", d.inum, bn)
					return nil
				}
				if err := walk(in.children[i], clo, chi, depth+1, false); err != nil {
					return err
				}
			}
		default:
			c.r.add("directory %d: block %d has bad node kind %d", d.inum, bn, nodeKind(b))
		}
		return nil
	}
	err := walk(uint64(d.ptr[0]), 0, ^uint64(0), 0, true)
	return blocks, err
}

func (c *checker) entry(d *inode, e dent) {
	c.r.Entries++
	if err := checkName(e.name); err != nil || isDot(e.name) {
		c.r.add("directory %d: bad name %q", d.inum, e.name)
	}
	if e.key>>8 != c.f.hash(e.name) {
		c.r.add("directory %d: entry %q has key %#x not matching its hash", d.inum, e.name, e.key)
	}
	ip := c.inodes[e.inum]
	switch {
	case ip == nil:
		c.r.add("directory %d: entry %q names free inode %d", d.inum, e.name, e.inum)
		return
	case ip.gen != e.gen:
		c.r.add("directory %d: entry %q names inode %d generation %d, inode has %d", d.inum, e.name, e.inum, e.gen, ip.gen)
	case e.inum == rootInum:
		c.r.add("directory %d: entry %q names the root", d.inum, e.name)
	}
	c.refs[e.inum]++
	c.edges[d.inum] = append(c.edges[d.inum], e.inum)
	if ip.typ == TypeDir {
		c.subdirs[d.inum]++
		if p, ok := c.parent[e.inum]; ok {
			c.r.add("directory %d linked from directories %d and %d", e.inum, p, d.inum)
		}
		c.parent[e.inum] = d.inum
	}
}

func (c *checker) checkLinks(root *inode) {
	r := c.r
	for _, inum := range c.order {
		ip := c.inodes[inum]
		refs := c.refs[inum]
		if ip.typ == TypeDir {
			if want := 2 + c.subdirs[inum]; ip.nlink != want {
				r.add("directory %d: nlink %d, want %d", inum, ip.nlink, want)
			}
			if inum == rootInum {
				if ip.parent() != rootInum {
					r.add("root's parent is %d", ip.parent())
				}
				continue
			}
			if refs != 1 {
				r.add("directory %d: %d entries name it", inum, refs)
			}
			if p, ok := c.parent[inum]; ok && p != ip.parent() {
				r.add("directory %d: parent field %d but it is in directory %d", inum, ip.parent(), p)
			}
			continue
		}
		if ip.nlink != refs {
			r.add("inode %d: nlink %d, %d entries name it", inum, ip.nlink, refs)
		}
	}
	// Reachability from the root.
	seen := map[Inum]bool{rootInum: true}
	queue := []Inum{rootInum}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, ch := range c.edges[d] {
			if !seen[ch] {
				seen[ch] = true
				queue = append(queue, ch)
			}
		}
	}
	for _, inum := range c.order {
		ip := c.inodes[inum]
		if !seen[inum] && ip.nlink > 0 {
			r.add("inode %d (type %d, nlink %d) unreachable from the root", inum, ip.typ, ip.nlink)
		}
	}
	_ = root
}

func (c *checker) checkOrphans() error {
	data, err := c.read(c.f.sb.orphanStart)
	if err != nil {
		return err
	}
	listed := map[Inum]bool{}
	for s := 0; s < orphanSlots; s++ {
		v := Inum(getU64(data[8*s:]))
		if v == 0 {
			continue
		}
		c.r.Orphans++
		ip := c.inodes[v]
		switch {
		case listed[v]:
			c.r.add("orphan table lists inode %d twice", v)
		case ip == nil || ip.nlink != 0 || ip.typ == TypeDir:
			c.r.add("orphan table slot %d names inode %d which is not an unlinked file", s, v)
		}
		listed[v] = true
	}
	for _, inum := range c.order {
		ip := c.inodes[inum]
		if ip.nlink == 0 && !listed[inum] {
			c.r.add("inode %d: nlink 0 but not in the orphan table (leaked)", inum)
		}
	}
	return nil
}
