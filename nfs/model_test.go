package nfs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"strata/internal/testseed"
	"strata/nfs/fs"
	"strata/nfs/xdr"
)

// ftype3 values the model uses.
const (
	typReg = 1
	typDir = 2
	typLnk = 5
)

// modelNode is one object of the model: a directory, a regular file or a
// symbolic link. The hard links of a file are several paths that map to
// the same *modelNode, so a change made through one name is seen through
// all of them, and its nlink is the number of those paths.
type modelNode struct {
	typ    uint32 // typReg, typDir or typLnk
	data   []byte // contents of a regular file
	target string // target of a symbolic link
	mode   uint32 // permission bits, as GETATTR reports them
	fh     []byte // the NFS file handle, which must survive renames
}

// nfsModel is the simple file system the NFS server must behave like:
// objects by path ("/" is the root), and the handles of objects that no
// longer exist (which must be STALE).
type nfsModel struct {
	paths map[string]*modelNode
	dead  [][]byte
}

func (m *nfsModel) exists(p string) bool { return m.paths[p] != nil }

func (m *nfsModel) isDir(p string) bool { return m.paths[p] != nil && m.paths[p].typ == typDir }

// inside reports whether p is dir or below it.
func inside(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// children returns the names in directory dir (symlinks included).
func (m *nfsModel) children(dir string) []string {
	var out []string
	for p := range m.paths {
		if p != "/" && path.Dir(p) == dir {
			out = append(out, path.Base(p))
		}
	}
	slices.Sort(out)
	return out
}

// nlink is what GETATTR must report for the object at p: the number of
// its names for a file or symlink, 2 plus the subdirectories for a
// directory.
func (m *nfsModel) nlink(p string) uint32 {
	n := m.paths[p]
	var count uint32
	if n.typ == typDir {
		count = 2
		for q, o := range m.paths {
			if q != "/" && o.typ == typDir && path.Dir(q) == p {
				count++
			}
		}
		return count
	}
	for _, o := range m.paths {
		if o == n {
			count++
		}
	}
	return count
}

// unlink removes name p; an object left without a name is dead.
func (m *nfsModel) unlink(p string) {
	n := m.paths[p]
	delete(m.paths, p)
	for _, o := range m.paths {
		if o == n {
			return
		}
	}
	m.dead = append(m.dead, n.fh)
}

// move renames from to to, with everything below from if it is a
// directory.
func (m *nfsModel) move(from, to string) {
	moved := map[string]*modelNode{}
	for p, n := range m.paths {
		if p == from || strings.HasPrefix(p, from+"/") {
			moved[to+p[len(from):]] = n
			delete(m.paths, p)
		}
	}
	for p, n := range moved {
		m.paths[p] = n
	}
}

// pick returns one of the paths whose object passes keep, chosen with
// rng; false if there is none.
func (m *nfsModel) pick(rng *rand.Rand, keep func(p string, n *modelNode) bool) (string, bool) {
	var ps []string
	for p, n := range m.paths {
		if keep(p, n) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return "", false
	}
	slices.Sort(ps)
	return ps[rng.IntN(len(ps))], true
}

// nfsTime is an nfstime3.
type nfsTime struct{ sec, nsec uint32 }

// nfsAttr is the part of a fattr3 the model checks.
type nfsAttr struct {
	typ, mode, nlink uint32
	size, fileid     uint64
	ctime            nfsTime
}

func readFattr(r *xdr.Reader) nfsAttr {
	var a nfsAttr
	a.typ, a.mode, a.nlink = r.Uint32(), r.Uint32(), r.Uint32()
	r.Uint32() // uid
	r.Uint32() // gid
	a.size = r.Uint64()
	r.Uint64() // used
	r.Uint32() // rdev
	r.Uint32()
	r.Uint64() // fsid
	a.fileid = r.Uint64()
	r.Uint32() // atime
	r.Uint32()
	r.Uint32() // mtime
	r.Uint32()
	a.ctime = nfsTime{r.Uint32(), r.Uint32()}
	return a
}

func (c *client) getattr(fh []byte) (nfsAttr, uint32) {
	c.t.Helper()
	r, st := c.call(procGetattr, func(w *xdr.Writer) { w.Opaque(fh) })
	if st != nfsOK {
		return nfsAttr{}, st
	}
	return readFattr(r), st
}

// setattr sets the mode and/or the size (nil: unchanged), with a ctime
// guard if guard is not nil.
func (c *client) setattr(fh []byte, mode *uint32, size *uint64, guard *nfsTime) uint32 {
	c.t.Helper()
	_, st := c.call(procSetattr, func(w *xdr.Writer) {
		w.Opaque(fh)
		w.Bool(mode != nil)
		if mode != nil {
			w.Uint32(*mode)
		}
		w.Bool(false) // uid
		w.Bool(false) // gid
		w.Bool(size != nil)
		if size != nil {
			w.Uint64(*size)
		}
		w.Uint32(0) // atime: DONT_CHANGE
		w.Uint32(0) // mtime: DONT_CHANGE
		w.Bool(guard != nil)
		if guard != nil {
			w.Uint32(guard.sec)
			w.Uint32(guard.nsec)
		}
	})
	return st
}

func (c *client) link(fh, dir []byte, name string) uint32 {
	c.t.Helper()
	_, st := c.call(procLink, func(w *xdr.Writer) { w.Opaque(fh); dirop(w, dir, name) })
	return st
}

func (c *client) symlink(dir []byte, name, target string) ([]byte, uint32) {
	c.t.Helper()
	r, st := c.call(procSymlink, func(w *xdr.Writer) { dirop(w, dir, name); emptySattr(w); w.String(target) })
	if st != nfsOK {
		return nil, st
	}
	if !r.Bool() {
		c.t.Fatal("symlink: no handle")
	}
	return r.Opaque(MaxFH), st
}

func (c *client) readlink(fh []byte) (string, uint32) {
	c.t.Helper()
	r, st := c.call(procReadlink, func(w *xdr.Writer) { w.Opaque(fh) })
	skipPostOp(r)
	if st != nfsOK {
		return "", st
	}
	return r.String(4096), st
}

func (c *client) rename(fromDir []byte, fromName string, toDir []byte, toName string) uint32 {
	c.t.Helper()
	_, st := c.call(procRename, func(w *xdr.Writer) { dirop(w, fromDir, fromName); dirop(w, toDir, toName) })
	return st
}

// TestNFSModel drives the server over NFS with random operations on a
// small name space (so names collide) and checks every status, every
// byte read, link counts, modes and handles against the model. The
// operations are CREATE, MKDIR, WRITE, READ, REMOVE, RMDIR, RENAME (of
// files, symlinks and whole directories), READDIR, LOOKUP, LINK, SYMLINK,
// READLINK, SETATTR (size, mode, ctime guard) and GETATTR, including
// their error cases and calls with the handles of removed objects.
// It runs a fresh seed and seeds 1 and 2 (testseed: STRATA_SEED replays
// one, STRATA_SEEDS runs more); STRATA_NFS_STEPS sets the length.
func TestNFSModel(t *testing.T) {
	steps := 400
	if v, err := strconv.Atoi(os.Getenv("STRATA_NFS_STEPS")); err == nil && v > 0 {
		steps = v
	}
	for seed := range testseed.Each(t, append(testseed.Fresh(1), 1, 2)...) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { nfsModelRun(t, seed, steps) })
	}
}

func nfsModelRun(t *testing.T, seed uint64, steps int) {
	ts := startTestServer(t, filepath.Join(t.TempDir(), "nfs.img"))
	c := dialTest(t, ts)
	root, _ := c.mnt("/strata")
	rng := rand.New(rand.NewPCG(seed, 3))
	m := &nfsModel{paths: map[string]*modelNode{"/": {typ: typDir, mode: 0o755, fh: root}}}
	names := []string{"a", "b", "c", "d", "e"}
	randName := func() string { return names[rng.IntN(len(names))] }
	pickDir := func() string {
		p, _ := m.pick(rng, func(_ string, n *modelNode) bool { return n.typ == typDir })
		return p
	}
	notRoot := func(p string, _ *modelNode) bool { return p != "/" }
	regular := func(_ string, n *modelNode) bool { return n.typ == typReg }
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
	}
	randData := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	randTarget := func() string {
		switch rng.IntN(10) {
		case 0:
			return "" // INVAL
		case 1:
			return string(randData(1 + rng.IntN(fs.MaxSymlink))) // any bytes, up to the longest a symlink holds
		case 2:
			if rng.IntN(3) == 0 {
				return string(randData(fs.MaxSymlink + 1 + rng.IntN(100))) // NAMETOOLONG
			}
		}
		parts := make([]string, 1+rng.IntN(4))
		for i := range parts {
			parts[i] = []string{"..", ".", randName(), "x y", "ünï"}[rng.IntN(5)]
		}
		if rng.IntN(3) == 0 {
			return "/" + strings.Join(parts, "/")
		}
		return strings.Join(parts, "/")
	}
	deadFH := func() ([]byte, bool) {
		if len(m.dead) == 0 {
			return nil, false
		}
		return m.dead[rng.IntN(len(m.dead))], true
	}
	// checkAttr compares GETATTR of the object at p with the model.
	checkAttr := func(step int, p string) {
		t.Helper()
		n := m.paths[p]
		a, st := c.getattr(n.fh)
		if st != nfsOK {
			fail(step, "getattr %s: %d", p, st)
		}
		if a.typ != n.typ || a.mode != n.mode || a.nlink != m.nlink(p) {
			fail(step, "getattr %s: type %d mode %#o nlink %d, want type %d mode %#o nlink %d", p, a.typ, a.mode, a.nlink, n.typ, n.mode, m.nlink(p))
		}
		want := uint64(len(n.data))
		if n.typ == typLnk {
			want = uint64(len(n.target))
		}
		if n.typ != typDir && a.size != want {
			fail(step, "getattr %s: size %d, want %d", p, a.size, want)
		}
	}
	// checkContent reads a regular file whole and compares it with the
	// model.
	checkContent := func(step int, p string, fh []byte) {
		t.Helper()
		got, _, st := c.read(fh, 0, 1<<20)
		if want := m.paths[p].data; st != nfsOK || !bytes.Equal(got, want) {
			fail(step, "read %s: %d, %d bytes, want %d", p, st, len(got), len(want))
		}
	}
	// walk resolves p by LOOKUPs from the root and checks that it finds
	// the model's handle.
	walk := func(step int, p string) {
		t.Helper()
		h := root
		for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
			if name == "" {
				continue
			}
			next, st := c.lookup(h, name)
			if st != nfsOK {
				fail(step, "lookup of %q on the way to %s: %d", name, p, st)
			}
			h = next
		}
		if !bytes.Equal(h, m.paths[p].fh) {
			fail(step, "lookups of %s found handle %x, want %x", p, h, m.paths[p].fh)
		}
	}
	// checkAll compares the whole tree with the model.
	checkAll := func(step int) {
		t.Helper()
		ps := make([]string, 0, len(m.paths))
		for p := range m.paths {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		for _, p := range ps {
			n := m.paths[p]
			walk(step, p)
			checkAttr(step, p)
			switch n.typ {
			case typDir:
				got, st := c.readdir(n.fh)
				got = slices.DeleteFunc(got, func(n string) bool { return n == "." || n == ".." })
				slices.Sort(got)
				if want := m.children(p); st != nfsOK || !slices.Equal(got, want) {
					fail(step, "readdir %s: %d %v, want %v", p, st, got, want)
				}
			case typReg:
				checkContent(step, p, n.fh)
			case typLnk:
				if got, st := c.readlink(n.fh); st != nfsOK || got != n.target {
					fail(step, "readlink %s: %d %q, want %q", p, st, got, n.target)
				}
			}
		}
		for _, h := range m.dead {
			if _, st := c.getattr(h); st != errStale {
				fail(step, "getattr of the handle %x of a removed object: %d, want STALE", h, st)
			}
		}
	}

	for step := 0; step < steps; step++ {
		dir := pickDir()
		name := randName()
		p := path.Join(dir, name)
		switch op := rng.IntN(20); op {
		case 0: // GUARDED create
			r, st := c.call(procCreate, func(w *xdr.Writer) { dirop(w, m.paths[dir].fh, name); w.Uint32(1); emptySattr(w) })
			want := uint32(nfsOK)
			if m.exists(p) {
				want = errExist
			}
			if st != want {
				fail(step, "create %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				if !r.Bool() {
					fail(step, "create %s: no handle", p)
				}
				m.paths[p] = &modelNode{typ: typReg, data: []byte{}, mode: 0o644, fh: r.Opaque(MaxFH)}
			}
		case 1: // mkdir
			h, st := c.mkdir(m.paths[dir].fh, name)
			want := uint32(nfsOK)
			if m.exists(p) {
				want = errExist
			}
			if st != want {
				fail(step, "mkdir %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				m.paths[p] = &modelNode{typ: typDir, mode: 0o755, fh: h}
			}
		case 2, 3: // write (through any of the file's names), or of a non-file
			f, ok := m.pick(rng, regular)
			if rng.IntN(10) == 0 {
				f, ok = m.pick(rng, func(string, *modelNode) bool { return true })
			}
			if !ok {
				continue
			}
			n := m.paths[f]
			off := uint64(rng.IntN(9000))
			data := randData(rng.IntN(5000))
			st := c.write(n.fh, off, data, []uint32{unstable, fileSync}[rng.IntN(2)])
			want := map[uint32]uint32{typReg: nfsOK, typDir: errIsDir, typLnk: errInval}[n.typ]
			if st != want {
				fail(step, "write %s (type %d): %d, want %d", f, n.typ, st, want)
			}
			if st != nfsOK {
				continue
			}
			if end := off + uint64(len(data)); end > uint64(len(n.data)) {
				n.data = append(n.data, make([]byte, end-uint64(len(n.data)))...)
			}
			copy(n.data[off:], data)
		case 4: // look a name up and read all through the handle found
			f, ok := m.pick(rng, notRoot)
			if !ok {
				continue
			}
			n := m.paths[f]
			h, st := c.lookup(m.paths[path.Dir(f)].fh, path.Base(f))
			if st != nfsOK || !bytes.Equal(h, n.fh) {
				fail(step, "lookup %s: %d, handle %x, want %x", f, st, h, n.fh)
			}
			if n.typ == typReg {
				checkContent(step, f, h)
				continue
			}
			_, _, st = c.read(h, 0, 100)
			if want := map[uint32]uint32{typDir: errIsDir, typLnk: errInval}[n.typ]; st != want {
				fail(step, "read %s (type %d): %d, want %d", f, n.typ, st, want)
			}
		case 5: // remove
			_, st := c.call(procRemove, func(w *xdr.Writer) { dirop(w, m.paths[dir].fh, name) })
			want := uint32(nfsOK)
			switch {
			case m.isDir(p):
				want = errIsDir
			case !m.exists(p):
				want = errNoEnt
			}
			if st != want {
				fail(step, "remove %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				n := m.paths[p]
				m.unlink(p)
				if other, ok := m.pick(rng, func(_ string, o *modelNode) bool { return o == n }); ok {
					checkAttr(step, other) // the other names keep the file, one link less
					if n.typ == typReg {
						checkContent(step, other, n.fh)
					}
				} else if _, st := c.getattr(n.fh); st != errStale {
					fail(step, "getattr after the last name %s is removed: %d, want STALE", p, st)
				}
			}
		case 6: // rmdir
			_, st := c.call(procRmdir, func(w *xdr.Writer) { dirop(w, m.paths[dir].fh, name) })
			want := uint32(nfsOK)
			switch {
			case !m.exists(p):
				want = errNoEnt
			case !m.isDir(p):
				want = errNotDir
			case len(m.children(p)) > 0:
				want = errNotEmpty
			}
			if st != want {
				fail(step, "rmdir %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				m.unlink(p)
			}
		case 7, 8: // rename anything (file, symlink, directory) anywhere
			from := p // maybe missing: NOENT
			switch rng.IntN(4) {
			case 0, 1:
				from, _ = m.pick(rng, notRoot)
			case 2:
				from, _ = m.pick(rng, func(p string, n *modelNode) bool { return p != "/" && n.typ == typDir })
			}
			if from == "" {
				continue
			}
			to := path.Join(pickDir(), randName())
			switch rng.IntN(6) {
			case 0: // over an existing object, maybe itself or another link to it
				to, _ = m.pick(rng, notRoot)
			case 1: // over an empty directory, maybe inside from
				to, _ = m.pick(rng, func(p string, n *modelNode) bool { return p != "/" && n.typ == typDir && len(m.children(p)) == 0 })
				if q := path.Join(pickDir(), randName()); to == "" && !m.exists(q) {
					// None: make one (empty directories are rare).
					h, st := c.mkdir(m.paths[path.Dir(q)].fh, path.Base(q))
					if st != nfsOK {
						fail(step, "mkdir %s: %d", q, st)
					}
					m.paths[q] = &modelNode{typ: typDir, mode: 0o755, fh: h}
					to = q
				}
				if rng.IntN(2) == 0 { // and a directory over it
					from, _ = m.pick(rng, func(p string, n *modelNode) bool { return p != "/" && n.typ == typDir })
				}
			}
			if to == "" {
				continue
			}
			toDir := path.Dir(to)
			src, dst := m.paths[from], m.paths[to]
			want, refused := uint32(nfsOK), false
			switch {
			case src == nil:
				want = errNoEnt
			case dst == src:
				// The same name, or another link to the same file:
				// RFC 1813 says do nothing and return NFS3_OK.
			case dst != nil && (src.typ == typDir) != (dst.typ == typDir),
				dst != nil && dst.typ == typDir && len(m.children(to)) > 0:
				// Incompatible target, or a non-empty directory: RFC
				// 1813 (3.3.14) asks for NFS3ERR_EXIST.
				want, refused = errExist, true
			case src.typ == typDir && path.Dir(from) != toDir && inside(toDir, from):
				want = errInval // into its own subtree
			}
			st := c.rename(m.paths[path.Dir(from)].fh, path.Base(from), m.paths[toDir].fh, path.Base(to))
			if refused {
				if st != want {
					fail(step, "rename %s %s (type %d over type %d, %d entries): %d, want %d", from, to, src.typ, dst.typ, len(m.children(to)), st, want)
				}
				walk(step, from) // both are still where they were
				walk(step, to)
				continue
			}
			if st != want {
				fail(step, "rename %s %s: %d, want %d", from, to, st, want)
			}
			if st != nfsOK || dst == src {
				if dst == src && src != nil {
					checkAttr(step, from) // both names are still there
					checkAttr(step, to)
				}
				continue
			}
			if dst != nil {
				m.unlink(to)
			}
			m.move(from, to)
			if _, ok := m.paths[from]; ok {
				fail(step, "model: %s still exists after its rename", from)
			}
			// Every moved object is found under its new path, with the
			// handle it had.
			var moved []string
			for q := range m.paths {
				if inside(q, to) {
					moved = append(moved, q)
				}
			}
			slices.Sort(moved)
			for _, q := range moved {
				walk(step, q)
			}
			checkAttr(step, to)
			if dst != nil {
				if other, ok := m.pick(rng, func(_ string, o *modelNode) bool { return o == dst }); ok {
					checkAttr(step, other) // the replaced file lives on under another name
				} else if _, st := c.getattr(dst.fh); st != errStale {
					fail(step, "getattr of %s's replaced object: %d, want STALE", to, st)
				}
			}
		case 9: // readdir and lookup
			got, st := c.readdir(m.paths[dir].fh)
			got = slices.DeleteFunc(got, func(n string) bool { return n == "." || n == ".." })
			slices.Sort(got)
			if want := m.children(dir); st != nfsOK || !slices.Equal(got, want) {
				fail(step, "readdir %s: %d %v, want %v", dir, st, got, want)
			}
			h, st := c.lookup(m.paths[dir].fh, name)
			if want := map[bool]uint32{true: nfsOK, false: errNoEnt}[m.exists(p)]; st != want {
				fail(step, "lookup %s: %d, want %d", p, st, want)
			}
			if st == nfsOK && !bytes.Equal(h, m.paths[p].fh) {
				fail(step, "lookup %s: handle %x, want %x", p, h, m.paths[p].fh)
			}
		case 10, 11: // link
			linkDir := rng.IntN(6) == 0 // a directory: ISDIR
			src, ok := m.pick(rng, func(_ string, n *modelNode) bool { return (n.typ == typDir) == linkDir })
			if !ok {
				continue
			}
			srcFH, srcDead := m.paths[src].fh, false
			if h, ok := deadFH(); ok && rng.IntN(10) == 0 {
				srcFH, srcDead, src = h, true, "(removed)"
			}
			dirFH, dirState := m.paths[dir].fh, "dir"
			switch k := rng.IntN(12); {
			case k == 0:
				if h, ok := deadFH(); ok {
					dirFH, dirState, p = h, "dead", "(removed)/"+name
				}
			case k == 1:
				if f, ok := m.pick(rng, func(_ string, n *modelNode) bool { return n.typ != typDir }); ok {
					dirFH, dirState, p = m.paths[f].fh, "file", f+"/"+name
				}
			}
			want := uint32(nfsOK)
			switch {
			case dirState == "dead":
				want = errStale
			case dirState == "file":
				want = errNotDir
			case srcDead:
				want = errStale
			case m.isDir(src):
				want = errIsDir
			case m.exists(p):
				want = errExist
			}
			if st := c.link(srcFH, dirFH, name); st != want {
				fail(step, "link %s %s: %d, want %d", src, p, st, want)
			}
			if want == nfsOK {
				m.paths[p] = m.paths[src]
				checkAttr(step, p)
				checkAttr(step, src)
				if m.paths[p].typ == typReg {
					checkContent(step, p, m.paths[p].fh)
				}
			}
		case 12: // symlink
			target := randTarget()
			h, st := c.symlink(m.paths[dir].fh, name, target)
			want := uint32(nfsOK)
			switch {
			case target == "":
				want = errInval
			case len(target) > fs.MaxSymlink:
				want = errNameTooLong
			case m.exists(p):
				want = errExist
			}
			if st != want {
				fail(step, "symlink %s -> %q: %d, want %d", p, target, st, want)
			}
			if st == nfsOK {
				m.paths[p] = &modelNode{typ: typLnk, target: target, mode: 0o777, fh: h}
			}
		case 13: // readlink of anything, or of a removed object
			onlyLinks := rng.IntN(4) != 0
			f, ok := m.pick(rng, func(_ string, n *modelNode) bool { return n.typ == typLnk || !onlyLinks })
			if !ok {
				continue
			}
			n := m.paths[f]
			fh, want := n.fh, map[uint32]uint32{typReg: errInval, typDir: errInval, typLnk: nfsOK}[n.typ]
			if h, ok := deadFH(); ok && rng.IntN(8) == 0 {
				fh, want, f = h, errStale, "(removed)"
			}
			got, st := c.readlink(fh)
			if st != want || (st == nfsOK && got != n.target) {
				fail(step, "readlink %s: %d %q, want %d %q", f, st, got, want, n.target)
			}
		case 14, 15: // setattr size: truncate or extend with zeros
			f, ok := m.pick(rng, regular)
			if rng.IntN(8) == 0 {
				f, ok = m.pick(rng, func(string, *modelNode) bool { return true })
			}
			if !ok {
				continue
			}
			n := m.paths[f]
			size := uint64(rng.IntN(len(n.data) + 1))
			switch rng.IntN(4) {
			case 0:
				size = uint64(rng.IntN(50000)) // may cross into the indirect block
			case 1:
				size = uint64(len(n.data) + rng.IntN(5000))
			}
			st := c.setattr(n.fh, nil, &size, nil)
			want := map[uint32]uint32{typReg: nfsOK, typDir: errIsDir, typLnk: errInval}[n.typ]
			if st != want {
				fail(step, "setattr %s (type %d) size %d: %d, want %d", f, n.typ, size, st, want)
			}
			if st == nfsOK {
				if size <= uint64(len(n.data)) {
					n.data = n.data[:size:size]
				} else {
					n.data = append(n.data, make([]byte, size-uint64(len(n.data)))...)
				}
				checkContent(step, f, n.fh)
			}
		case 16: // setattr mode
			f, ok := m.pick(rng, func(_ string, n *modelNode) bool { return n.typ != typLnk })
			if !ok {
				continue
			}
			n := m.paths[f]
			mode := uint32(rng.IntN(0o10000))
			if st := c.setattr(n.fh, &mode, nil, nil); st != nfsOK {
				fail(step, "setattr %s mode %#o: %d", f, mode, st)
			}
			n.mode = mode
			checkAttr(step, f)
		case 17: // guarded setattr: a wrong ctime changes nothing, the right one succeeds
			f, ok := m.pick(rng, func(_ string, n *modelNode) bool { return n.typ != typLnk })
			if !ok {
				continue
			}
			n := m.paths[f]
			before, st := c.getattr(n.fh)
			if st != nfsOK {
				fail(step, "getattr %s: %d", f, st)
			}
			mode := uint32(rng.IntN(0o10000))
			var size *uint64
			if n.typ == typReg && rng.IntN(2) == 0 {
				s := uint64(rng.IntN(2 * (len(n.data) + 1)))
				size = &s
			}
			stale := nfsTime{before.ctime.sec - 1, before.ctime.nsec} // what a client with old attributes sends
			if st := c.setattr(n.fh, &mode, size, &stale); st != errNotSync {
				fail(step, "setattr %s with a wrong ctime guard: %d, want NOT_SYNC", f, st)
			}
			if after, _ := c.getattr(n.fh); after != before {
				fail(step, "setattr %s with a wrong ctime guard changed the attributes: %+v, were %+v", f, after, before)
			}
			if n.typ == typReg {
				checkContent(step, f, n.fh)
			}
			if st := c.setattr(n.fh, &mode, size, &before.ctime); st != nfsOK {
				fail(step, "setattr %s with the right ctime guard: %d", f, st)
			}
			n.mode = mode
			if size != nil {
				if *size <= uint64(len(n.data)) {
					n.data = n.data[:*size:*size]
				} else {
					n.data = append(n.data, make([]byte, *size-uint64(len(n.data)))...)
				}
				checkContent(step, f, n.fh)
			}
			checkAttr(step, f)
		case 18: // getattr and a walk from the root
			f, ok := m.pick(rng, func(string, *modelNode) bool { return true })
			if !ok {
				continue
			}
			checkAttr(step, f)
			walk(step, f)
		case 19: // calls with the handle of a removed object are STALE
			h, ok := deadFH()
			if !ok {
				continue
			}
			var st uint32
			var what string
			switch rng.IntN(6) {
			case 0:
				what = "getattr"
				_, st = c.getattr(h)
			case 1:
				what = "read"
				_, _, st = c.read(h, 0, 10)
			case 2:
				what = "write"
				st = c.write(h, 0, []byte("x"), fileSync)
			case 3:
				what = "lookup in"
				_, st = c.lookup(h, name)
			case 4:
				what = "setattr"
				mode := uint32(0o600)
				st = c.setattr(h, &mode, nil, nil)
			case 5:
				what = "readdir"
				_, st = c.readdir(h)
			}
			if st != errStale {
				fail(step, "%s a removed object: %d, want STALE", what, st)
			}
		}
	}
	checkAll(steps)
	if rep, err := ts.fs.Check(); err != nil || !rep.Clean() {
		t.Fatalf("seed %d: fsck after the run: %v %v", seed, rep, err)
	}
}
