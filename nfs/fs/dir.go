package fs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"strata/journal"
)

// Directories are B+trees of whole-block nodes keyed by a 64-bit key per
// entry: key = nameHash(name)<<8 | d, where the 8-bit discriminator d is the
// smallest value not used by another entry whose name has the same 56-bit
// hash. The key of an entry never changes while the entry exists, so it is
// the READDIR cookie: listing in key order and resuming after the last key
// returned yields every entry that exists throughout exactly once, however
// the tree is reshaped by concurrent inserts and removals (nodes split and
// merge, entries move between blocks, keys do not change). Keys are >= 256;
// cookies 1 and 2 are "." and "..".
//
// Node layout (little-endian):
//
//	0 kind u8 (1 leaf, 2 internal) | 2 count u16
//	leaf, from byte 8: count entries sorted by key, each
//	    key u64 | inum u64 | gen u32 | namelen u8 | name
//	internal, from byte 8: child0 u32, then count × (key u64 | child u32);
//	    child i (i >= 1) holds keys >= key i and < key i+1
//
// The root block of a directory never moves (ptr[0] of its inode): when it
// splits its halves move to two new blocks. Every node but the root holds at
// least one entry or child; a node that empties is freed and removed from
// its parent, and a root left with one child absorbs it, so an empty
// directory is exactly one block (an empty leaf root). A leaf under a
// quarter full after a removal, or an internal node under a quarter of its
// keys, is merged with its neighbour when the two fit in one node, so a
// directory that shrank takes blocks in proportion to what it holds.

const (
	kindLeaf     = 1
	kindInternal = 2

	nodeHdr      = 8
	entHdr       = 21 // key, inum, gen, namelen
	maxInternalN = (blockSize - nodeHdr - 4) / 12
)

type dent struct {
	key  uint64
	inum Inum
	gen  uint32
	name string
}

func (e dent) size() int { return entHdr + len(e.name) }

type inner struct {
	keys     []uint64
	children []uint64 // len(keys)+1
}

func nodeKind(b []byte) byte  { return b[0] }
func nodeCount(b []byte) int  { return int(binary.LittleEndian.Uint16(b[2:])) }
func leafBytes(es []dent) int { return nodeHdr + sumSize(es) }

func sumSize(es []dent) int {
	n := 0
	for _, e := range es {
		n += e.size()
	}
	return n
}

// errLeafOverrun is the error of a leaf whose entries run past its block;
// the caller names the directory and block (tx.leafNode, Check).
var errLeafOverrun = errors.New("corrupt directory leaf: entries run past the end of the block")

// errInnerCount is the error of an internal node with more keys than fit.
var errInnerCount = errors.New("corrupt directory node: more keys than fit in a block")

func decodeLeaf(b []byte) ([]dent, error) {
	n := nodeCount(b)
	es := make([]dent, 0, min(n, blockSize/entHdr)+1)
	off := nodeHdr
	for i := 0; i < n; i++ {
		if off+entHdr > blockSize {
			return nil, errLeafOverrun
		}
		l := int(b[off+20])
		if off+entHdr+l > blockSize {
			return nil, errLeafOverrun
		}
		le := binary.LittleEndian
		es = append(es, dent{key: le.Uint64(b[off:]), inum: Inum(le.Uint64(b[off+8:])), gen: le.Uint32(b[off+16:]),
			name: string(b[off+entHdr : off+entHdr+l])})
		off += entHdr + l
	}
	return es, nil
}

// leafFind returns the offset of the first entry of leaf b with a key >=
// key, whether that entry has exactly key, and the end of the entries.
func leafFind(b []byte, key uint64) (off int, found bool, end int, err error) {
	n := nodeCount(b)
	off = -1
	p := nodeHdr
	for i := 0; i < n; i++ {
		if p+entHdr > blockSize || p+entHdr+int(b[p+20]) > blockSize {
			return 0, false, 0, errLeafOverrun
		}
		if off < 0 {
			if k := binary.LittleEndian.Uint64(b[p:]); k >= key {
				off, found = p, k == key
			}
		}
		p += entHdr + int(b[p+20])
	}
	if off < 0 {
		off = p
	}
	return off, found, p, nil
}

func putEntry(b []byte, e dent) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], e.key)
	le.PutUint64(b[8:], uint64(e.inum))
	le.PutUint32(b[16:], e.gen)
	b[20] = byte(len(e.name))
	copy(b[entHdr:], e.name)
}

func encodeLeaf(es []dent) []byte {
	b := make([]byte, blockSize)
	b[0] = kindLeaf
	binary.LittleEndian.PutUint16(b[2:], uint16(len(es)))
	off := nodeHdr
	for _, e := range es {
		putEntry(b[off:], e)
		off += e.size()
	}
	return b
}

func decodeInner(b []byte) (inner, error) {
	n := nodeCount(b)
	if n > maxInternalN {
		return inner{}, errInnerCount
	}
	le := binary.LittleEndian
	in := inner{keys: make([]uint64, n, n+1), children: make([]uint64, n+1, n+2)}
	in.children[0] = uint64(le.Uint32(b[nodeHdr:]))
	for i := 0; i < n; i++ {
		o := nodeHdr + 4 + 12*i
		in.keys[i] = le.Uint64(b[o:])
		in.children[i+1] = uint64(le.Uint32(b[o+8:]))
	}
	return in, nil
}

func encodeInner(in inner) []byte {
	b := make([]byte, blockSize)
	b[0] = kindInternal
	le := binary.LittleEndian
	le.PutUint16(b[2:], uint16(len(in.keys)))
	le.PutUint32(b[nodeHdr:], uint32(in.children[0]))
	for i, k := range in.keys {
		o := nodeHdr + 4 + 12*i
		le.PutUint64(b[o:], k)
		le.PutUint32(b[o+8:], uint32(in.children[i+1]))
	}
	return b
}

// childIndex is the child of an internal node whose range holds key.
func childIndex(b []byte, key uint64) int {
	n := nodeCount(b)
	le := binary.LittleEndian
	// number of keys <= key
	return sort.Search(n, func(i int) bool { return le.Uint64(b[nodeHdr+4+12*i:]) > key })
}

func innerChild(b []byte, i int) uint64 {
	if i == 0 {
		return uint64(binary.LittleEndian.Uint32(b[nodeHdr:]))
	}
	return uint64(binary.LittleEndian.Uint32(b[nodeHdr+4+12*(i-1)+8:]))
}

// pathStep is a node on the way from the root to a leaf.
type pathStep struct {
	bn  uint64
	idx int // child taken (internal nodes)
}

// descend returns the path from the root of dir to the leaf whose range
// holds key (the leaf last).
func (t *tx) descend(dir *inode, key uint64) ([]pathStep, error) {
	bn := uint64(dir.ptr[0])
	var path []pathStep
	for depth := 0; ; depth++ {
		if depth > maxDepth {
			return nil, corrupt(dir.inum, bn, "directory tree deeper than %d levels", maxDepth)
		}
		buf, err := t.readBlock(dir.inum, bn)
		if err != nil {
			return nil, err
		}
		switch nodeKind(buf.Data) {
		case kindLeaf:
			return append(path, pathStep{bn: bn}), nil
		case kindInternal:
			if nodeCount(buf.Data) > maxInternalN {
				return nil, corrupt(dir.inum, bn, "directory node: %v", errInnerCount)
			}
			i := childIndex(buf.Data, key)
			path = append(path, pathStep{bn: bn, idx: i})
			bn = innerChild(buf.Data, i)
		default:
			return nil, corrupt(dir.inum, bn, "directory node of bad kind %d", nodeKind(buf.Data))
		}
	}
}

// maxDepth bounds the depth of a directory tree (3 levels hold a million
// entries): a deeper path is damage (a loop of nodes, say).
const maxDepth = 16

// walkDir calls fn for each entry of dir with key > after, in key order,
// until fn returns false. The entry's fields come straight from the leaf:
// name is only valid during the call. A walk visits at most dir.used
// nodes, the tree's size: more means nodes shared or in a loop (damage),
// which must not make a walk take exponential time.
func (t *tx) walkDir(dir *inode, after uint64, fn func(e rawDent) bool) error {
	w := walker{t: t, dir: dir, after: after, fn: fn, budget: dir.used}
	_, err := w.node(uint64(dir.ptr[0]), 0)
	return err
}

// rawDent is an entry as stored in a leaf.
type rawDent struct {
	key  uint64
	inum Inum
	gen  uint32
	name []byte
}

func (e rawDent) dent() dent { return dent{key: e.key, inum: e.inum, gen: e.gen, name: string(e.name)} }

// readBlockData reads a block of no inode in particular (tests).
func (t *tx) readBlockData(bn uint64) ([]byte, error) {
	buf, err := t.readBlock(0, bn)
	if err != nil {
		return nil, err
	}
	return buf.Data, nil
}

// walker is one walkDir.
type walker struct {
	t      *tx
	dir    *inode
	after  uint64
	fn     func(e rawDent) bool
	budget uint64 // nodes it may still visit
}

func (w *walker) node(bn uint64, depth int) (bool, error) {
	dir := w.dir.inum
	if depth > maxDepth {
		return false, corrupt(dir, bn, "directory tree deeper than %d levels", maxDepth)
	}
	if w.budget == 0 {
		return false, corrupt(dir, bn, "directory tree has more nodes than the %d its inode counts (nodes shared or in a loop)", w.dir.used)
	}
	w.budget--
	buf, err := w.t.readBlock(dir, bn)
	if err != nil {
		return false, err
	}
	b := buf.Data
	switch nodeKind(b) {
	case kindLeaf:
		// The whole leaf is checked first: a lookup that stops early must
		// not miss damage further on (the entry it looks for could be
		// there).
		if _, _, _, err := leafFind(b, ^uint64(0)); err != nil {
			return false, corrupt(dir, bn, "directory leaf: %v", err)
		}
		le := binary.LittleEndian
		n := nodeCount(b)
		off := nodeHdr
		for i := 0; i < n; i++ {
			l := int(b[off+20])
			if k := le.Uint64(b[off:]); k > w.after {
				e := rawDent{key: k, inum: Inum(le.Uint64(b[off+8:])), gen: le.Uint32(b[off+16:]), name: b[off+entHdr : off+entHdr+l]}
				if !w.fn(e) {
					return false, nil
				}
			}
			off += entHdr + l
		}
		return true, nil
	case kindInternal:
		n := nodeCount(b)
		if n > maxInternalN {
			return false, corrupt(dir, bn, "directory node: %v", errInnerCount)
		}
		for i := childIndex(b, w.after); i <= n; i++ {
			more, err := w.node(innerChild(b, i), depth+1)
			if err != nil || !more {
				return more, err
			}
		}
		return true, nil
	default:
		return false, corrupt(dir, bn, "directory node of bad kind %d", nodeKind(b))
	}
}

// leafNode decodes block bn of dir's tree as a leaf.
func (t *tx) leafNode(dir *inode, bn uint64, b []byte) ([]dent, error) {
	es, err := decodeLeaf(b)
	if err != nil {
		return nil, corrupt(dir.inum, bn, "directory leaf: %v", err)
	}
	return es, nil
}

// innerNode decodes block bn of dir's tree as an internal node.
func (t *tx) innerNode(dir *inode, bn uint64, b []byte) (inner, error) {
	in, err := decodeInner(b)
	if err != nil {
		return inner{}, corrupt(dir.inum, bn, "directory node: %v", err)
	}
	return in, nil
}

// leafFind is the package's leafFind for block bn of dir's tree.
func (t *tx) leafFind(dir *inode, bn uint64, b []byte, key uint64) (off int, found bool, end int, err error) {
	off, found, end, err = leafFind(b, key)
	if err != nil {
		return 0, false, 0, corrupt(dir.inum, bn, "directory leaf: %v", err)
	}
	return off, found, end, nil
}

// dirLookup finds name in dir. It also returns the discriminator a new
// entry with this name would get (-1 if all 256 are taken).
func (t *tx) dirLookup(dir *inode, name string) (e dent, found bool, disc int, err error) {
	h := t.f.hash(name)
	lo, hi := h<<8, h<<8|0xff
	var used [256]bool
	err = t.walkDir(dir, lo-1, func(x rawDent) bool {
		if x.key > hi {
			return false
		}
		used[x.key&0xff] = true
		if string(x.name) == name {
			e, found = x.dent(), true
			return false
		}
		return true
	})
	if err != nil || found {
		return e, found, 0, err
	}
	disc = -1
	for i, u := range used {
		if !u {
			disc = i
			break
		}
	}
	return dent{}, false, disc, nil
}

// dirEmpty reports whether dir has no entries.
func (t *tx) dirEmpty(dir *inode) (bool, error) {
	buf, err := t.readBlock(dir.inum, uint64(dir.ptr[0]))
	if err != nil {
		return false, err
	}
	return nodeKind(buf.Data) == kindLeaf && nodeCount(buf.Data) == 0, nil
}

// dirAdd inserts a new entry for name (which must not exist) pointing at
// child. disc is the discriminator dirLookup returned for name in this
// operation, or -1 to look it up here.
func (t *tx) dirAdd(dir *inode, name string, child *inode, disc int) error {
	if disc < 0 {
		_, found, d, err := t.dirLookup(dir, name)
		if err != nil {
			return err
		}
		if found {
			return fmt.Errorf("%w: %q", ErrExist, name)
		}
		disc = d
	}
	if disc < 0 {
		return fmt.Errorf("%w: too many names with one hash in directory %d", ErrNoSpace, dir.inum)
	}
	e := dent{key: t.f.hash(name)<<8 | uint64(disc), inum: child.inum, gen: child.gen, name: name}
	return t.treeInsert(dir, e)
}

// dirSet makes the existing entry with key point at child (rename over an
// existing name keeps the entry's key and so its cookie).
func (t *tx) dirSet(dir *inode, key uint64, child *inode) error {
	path, err := t.descend(dir, key)
	if err != nil {
		return err
	}
	bn := path[len(path)-1].bn
	buf, err := t.readBlock(dir.inum, bn)
	if err != nil {
		return err
	}
	es, err := t.leafNode(dir, bn, buf.Data)
	if err != nil {
		return err
	}
	for i := range es {
		if es[i].key == key {
			es[i].inum, es[i].gen = child.inum, child.gen
			copy(buf.Data, encodeLeaf(es))
			t.dirtyBuf(buf)
			return nil
		}
	}
	return corrupt(dir.inum, bn, "directory entry with key %#x missing from its leaf", key)
}

func (t *tx) treeInsert(dir *inode, e dent) error {
	path, err := t.descend(dir, e.key)
	if err != nil {
		return err
	}
	leaf := path[len(path)-1]
	buf, err := t.readBlock(dir.inum, leaf.bn)
	if err != nil {
		return err
	}
	// Fast path: room in the leaf, shift the bytes in place.
	off, _, end, err := t.leafFind(dir, leaf.bn, buf.Data, e.key)
	if err != nil {
		return err
	}
	if sz := e.size(); end+sz <= blockSize {
		b := buf.Data
		copy(b[off+sz:end+sz], b[off:end])
		putEntry(b[off:], e)
		binary.LittleEndian.PutUint16(b[2:], uint16(nodeCount(b)+1))
		t.dirtyBuf(buf)
		return nil
	}
	es, err := t.leafNode(dir, leaf.bn, buf.Data)
	if err != nil {
		return err
	}
	i := sort.Search(len(es), func(i int) bool { return es[i].key >= e.key })
	es = append(es, dent{})
	copy(es[i+1:], es[i:])
	es[i] = e
	if leafBytes(es) <= blockSize {
		copy(buf.Data, encodeLeaf(es))
		t.dirtyBuf(buf)
		return nil
	}
	// Split at the most balanced point (both halves fit: entries are at
	// most 276 bytes).
	m, best := 1, blockSize*2
	total, acc := sumSize(es), 0
	for k := 1; k < len(es); k++ {
		acc += es[k-1].size()
		if nodeHdr+acc > blockSize || nodeHdr+total-acc > blockSize {
			continue
		}
		if d := abs(2*acc - total); d < best {
			m, best = k, d
		}
	}
	left, right := encodeLeaf(es[:m]), encodeLeaf(es[m:])
	sep := es[m].key
	if len(path) == 1 { // the root: move both halves out
		return t.splitRoot(dir, left, right, sep)
	}
	rb, err := t.allocBlock()
	if err != nil {
		return err
	}
	if err := t.writeBlock(rb, right); err != nil {
		return err
	}
	copy(buf.Data, left)
	t.dirtyBuf(buf)
	dir.used++
	t.writeInode(dir)
	return t.innerInsert(dir, path, len(path)-2, sep, rb)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// splitRoot moves the two halves of the root into new blocks and makes the
// root an internal node over them.
func (t *tx) splitRoot(dir *inode, left, right []byte, sep uint64) error {
	lb, err := t.allocBlock()
	if err != nil {
		return err
	}
	rb, err := t.allocBlock()
	if err != nil {
		return err
	}
	if err := t.writeBlock(lb, left); err != nil {
		return err
	}
	if err := t.writeBlock(rb, right); err != nil {
		return err
	}
	buf, err := t.readBlock(dir.inum, uint64(dir.ptr[0]))
	if err != nil {
		return err
	}
	copy(buf.Data, encodeInner(inner{keys: []uint64{sep}, children: []uint64{lb, rb}}))
	t.dirtyBuf(buf)
	dir.used += 2
	t.writeInode(dir)
	return nil
}

// innerInsert adds (key, child) to the internal node path[level], right of
// the child taken on the path, splitting upwards as needed.
func (t *tx) innerInsert(dir *inode, path []pathStep, level int, key, child uint64) error {
	st := path[level]
	buf, err := t.readBlock(dir.inum, st.bn)
	if err != nil {
		return err
	}
	in, err := t.innerNode(dir, st.bn, buf.Data)
	if err != nil {
		return err
	}
	in.keys = append(in.keys, 0)
	copy(in.keys[st.idx+1:], in.keys[st.idx:])
	in.keys[st.idx] = key
	in.children = append(in.children, 0)
	copy(in.children[st.idx+2:], in.children[st.idx+1:])
	in.children[st.idx+1] = child
	if len(in.keys) <= t.f.innerMax {
		copy(buf.Data, encodeInner(in))
		t.dirtyBuf(buf)
		return nil
	}
	m := len(in.keys) / 2
	up := in.keys[m]
	left := inner{keys: in.keys[:m], children: in.children[:m+1]}
	right := inner{keys: in.keys[m+1:], children: in.children[m+1:]}
	if level == 0 {
		return t.splitRoot(dir, encodeInner(left), encodeInner(right), up)
	}
	rb, err := t.allocBlock()
	if err != nil {
		return err
	}
	if err := t.writeBlock(rb, encodeInner(right)); err != nil {
		return err
	}
	copy(buf.Data, encodeInner(left))
	t.dirtyBuf(buf)
	dir.used++
	t.writeInode(dir)
	return t.innerInsert(dir, path, level-1, up, rb)
}

// dirRemove deletes the entry with key from dir.
func (t *tx) dirRemove(dir *inode, key uint64) error {
	path, err := t.descend(dir, key)
	if err != nil {
		return err
	}
	leaf := path[len(path)-1]
	buf, err := t.readBlock(dir.inum, leaf.bn)
	if err != nil {
		return err
	}
	b := buf.Data
	off, found, end, err := t.leafFind(dir, leaf.bn, b, key)
	if err != nil {
		return err
	}
	if !found {
		return corrupt(dir.inum, leaf.bn, "directory entry with key %#x missing from its leaf", key)
	}
	if n := nodeCount(b); n > 1 || len(path) == 1 {
		sz := entHdr + int(b[off+20])
		copy(b[off:], b[off+sz:end])
		clear(b[end-sz : end])
		binary.LittleEndian.PutUint16(b[2:], uint16(n-1))
		t.dirtyBuf(buf)
		if len(path) > 1 && end-sz < mergeBelow {
			return t.mergeLeaf(dir, path)
		}
		return nil
	}
	if err := t.freeBlock(dir.inum, leaf.bn); err != nil {
		return err
	}
	dir.used--
	t.writeInode(dir)
	return t.innerRemove(dir, path, len(path)-2)
}

// innerRemove drops the child taken on the path from internal node
// path[level] (the child was freed).
func (t *tx) innerRemove(dir *inode, path []pathStep, level int) error {
	st := path[level]
	buf, err := t.readBlock(dir.inum, st.bn)
	if err != nil {
		return err
	}
	in, err := t.innerNode(dir, st.bn, buf.Data)
	if err != nil {
		return err
	}
	i := st.idx
	if i == 0 {
		in.children = in.children[1:]
		if len(in.keys) > 0 {
			in.keys = in.keys[1:]
		}
	} else {
		in.keys = append(in.keys[:i-1], in.keys[i:]...)
		in.children = append(in.children[:i], in.children[i+1:]...)
	}
	switch {
	case len(in.children) == 0 && level == 0:
		copy(buf.Data, encodeLeaf(nil))
		t.dirtyBuf(buf)
		return nil
	case len(in.children) == 0:
		if err := t.freeBlock(dir.inum, st.bn); err != nil {
			return err
		}
		dir.used--
		t.writeInode(dir)
		return t.innerRemove(dir, path, level-1)
	case len(in.children) == 1 && level == 0:
		// The root absorbs its only child.
		c := in.children[0]
		if c == st.bn {
			return corrupt(dir.inum, c, "directory root node is its own child")
		}
		cb, err := t.readBlock(dir.inum, c)
		if err != nil {
			return err
		}
		copy(buf.Data, cb.Data)
		t.dirtyBuf(buf)
		if err := t.freeBlock(dir.inum, c); err != nil {
			return err
		}
		dir.used--
		t.writeInode(dir)
		return nil
	default:
		copy(buf.Data, encodeInner(in))
		t.dirtyBuf(buf)
		if level > 0 && len(in.keys) < t.f.innerMax/4 {
			return t.mergeInner(dir, path, level)
		}
		return nil
	}
}

// mergeBelow is the fill (in bytes) under which a leaf that lost an entry
// is merged with a neighbour when both fit in one block: without merging, a
// directory that grew large and then shrank would keep a block per former
// leaf and list as slowly as when it was full.
const mergeBelow = blockSize / 4

// siblings returns, for the node on path at level (not the root), the
// index j in its parent such that children j and j+1 are the node and its
// left neighbour (or its right one, for a first child), the parent, and
// the two children's blocks, which must both be nodes of kind. ok is false
// if the node has no neighbour.
func (t *tx) siblings(dir *inode, path []pathStep, level int, kind byte) (j int, parent inner, lbuf, rbuf *journal.Buf, ok bool, err error) {
	pbuf, err := t.readBlock(dir.inum, path[level-1].bn)
	if err != nil {
		return 0, inner{}, nil, nil, false, err
	}
	parent, err = t.innerNode(dir, path[level-1].bn, pbuf.Data)
	if err != nil {
		return 0, inner{}, nil, nil, false, err
	}
	j = max(path[level-1].idx-1, 0)
	if j+1 >= len(parent.children) {
		return 0, inner{}, nil, nil, false, nil
	}
	if lbuf, err = t.readBlock(dir.inum, parent.children[j]); err != nil {
		return 0, inner{}, nil, nil, false, err
	}
	if rbuf, err = t.readBlock(dir.inum, parent.children[j+1]); err != nil {
		return 0, inner{}, nil, nil, false, err
	}
	switch {
	case parent.children[j] == parent.children[j+1]:
		return 0, inner{}, nil, nil, false, corrupt(dir.inum, path[level-1].bn, "directory node names block %d as two children", parent.children[j])
	case nodeKind(lbuf.Data) != kind || nodeKind(rbuf.Data) != kind:
		return 0, inner{}, nil, nil, false, corrupt(dir.inum, path[level-1].bn, "directory node's children %d and %d are of different kinds", parent.children[j], parent.children[j+1])
	}
	return j, parent, lbuf, rbuf, true, nil
}

// mergeLeaf merges the leaf at the end of path (not the root) with a
// neighbour under the same parent if their entries fit in one block: the
// left one takes them all, the right one is freed and leaves the parent.
// Keys do not change, so READDIR cookies stay valid.
func (t *tx) mergeLeaf(dir *inode, path []pathStep) error {
	level := len(path) - 1
	j, _, lbuf, rbuf, ok, err := t.siblings(dir, path, level, kindLeaf)
	if err != nil || !ok {
		return err
	}
	l, err := t.leafNode(dir, lbuf.Addr.Blkno, lbuf.Data)
	if err != nil {
		return err
	}
	r, err := t.leafNode(dir, rbuf.Addr.Blkno, rbuf.Data)
	if err != nil {
		return err
	}
	es := append(l, r...)
	if leafBytes(es) > blockSize {
		return nil
	}
	copy(lbuf.Data, encodeLeaf(es))
	t.dirtyBuf(lbuf)
	return t.dropRight(dir, path, level, j, rbuf.Addr.Blkno)
}

// mergeInner is mergeLeaf for the internal node path[level] (not the
// root): the separator between the two nodes comes down from the parent.
func (t *tx) mergeInner(dir *inode, path []pathStep, level int) error {
	j, parent, lbuf, rbuf, ok, err := t.siblings(dir, path, level, kindInternal)
	if err != nil || !ok {
		return err
	}
	l, err := t.innerNode(dir, lbuf.Addr.Blkno, lbuf.Data)
	if err != nil {
		return err
	}
	r, err := t.innerNode(dir, rbuf.Addr.Blkno, rbuf.Data)
	if err != nil {
		return err
	}
	if len(l.keys)+1+len(r.keys) > t.f.innerMax {
		return nil
	}
	m := inner{keys: append(append(l.keys, parent.keys[j]), r.keys...), children: append(l.children, r.children...)}
	copy(lbuf.Data, encodeInner(m))
	t.dirtyBuf(lbuf)
	return t.dropRight(dir, path, level, j, rbuf.Addr.Blkno)
}

// dropRight frees the right node of a merged pair (children j and j+1 of
// path[level-1]) and removes it from the parent, which may merge in turn.
func (t *tx) dropRight(dir *inode, path []pathStep, level, j int, right uint64) error {
	if err := t.freeBlock(dir.inum, right); err != nil {
		return err
	}
	dir.used--
	t.writeInode(dir)
	path[level-1].idx = j + 1
	return t.innerRemove(dir, path, level-1)
}

// newDirRoot allocates the (empty leaf) root block of a new directory.
func (t *tx) newDirRoot(dir *inode) error {
	bn, err := t.allocBlock()
	if err != nil {
		return err
	}
	if err := t.writeBlock(bn, encodeLeaf(nil)); err != nil {
		return err
	}
	dir.ptr[0] = uint32(bn)
	dir.used = 1
	dir.size = blockSize
	t.writeInode(dir)
	return nil
}
