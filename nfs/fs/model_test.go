package fs

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"strata/internal/testseed"
)

// The model: a tree of nodes in memory, the file system's specification for
// the random-operation tests.

type mnode struct {
	typ          FileType
	size         uint64
	pages        map[uint64][]byte // 4 KiB pages of a regular file; absent = zeros
	target       string
	kids         map[string]*mnode
	parent       *mnode
	links        int // entries naming a non-directory
	mode         uint32
	mtime, ctime Time
	verf         uint64
	rdev         Rdev
	h            Handle
}

func (n *mnode) nlink() uint32 {
	if n.typ != TypeDir {
		return uint32(n.links)
	}
	k := uint32(2)
	for _, c := range n.kids {
		if c.typ == TypeDir {
			k++
		}
	}
	return k
}

func (n *mnode) read(off, count uint64) []byte {
	if off >= n.size {
		return []byte{}
	}
	count = min(count, n.size-off)
	out := make([]byte, count)
	for p := uint64(0); p < count; {
		pg, po := (off+p)/blockSize, (off+p)%blockSize
		k := min(blockSize-po, count-p)
		if b := n.pages[pg]; b != nil {
			copy(out[p:p+k], b[po:])
		}
		p += k
	}
	return out
}

func (n *mnode) write(off uint64, data []byte) {
	for p := 0; p < len(data); {
		pg, po := (off+uint64(p))/blockSize, (off+uint64(p))%blockSize
		k := min(blockSize-int(po), len(data)-p)
		b := n.pages[pg]
		if b == nil {
			b = make([]byte, blockSize)
			n.pages[pg] = b
		}
		copy(b[po:], data[p:p+k])
		p += k
	}
	n.size = max(n.size, off+uint64(len(data)))
}

func (n *mnode) truncate(size uint64) {
	if size < n.size {
		for pg := range n.pages {
			if pg*blockSize >= size {
				delete(n.pages, pg)
			}
		}
		if b := n.pages[size/blockSize]; b != nil {
			clear(b[size%blockSize:])
		}
	}
	n.size = size
}

// isAncestor reports whether a is d or one of d's ancestors.
func isAncestor(a, d *mnode) bool {
	for {
		if d == a {
			return true
		}
		if d.parent == d {
			return false
		}
		d = d.parent
	}
}

// runner applies random operations to a file system and the model and
// compares them.
type runner struct {
	t     testing.TB
	f     *FS
	rng   *rand.Rand
	seed  uint64
	root  *mnode
	step  int
	dead  []*mnode // nodes removed (their handles must be stale)
	crash bool     // crash mode: an ErrIO stops the run instead of failing
	ioErr bool     // set when an operation failed with ErrIO in crash mode
	// durable is set by an operation whose success means it is durable;
	// asyncMeta (Options.UnstableMetadata) leaves that to stable writes.
	durable, asyncMeta bool
	stableWrite        bool // the step was a stable write
	maxOffset          uint64
	stats              map[string]int // successful operations by kind
	// partials (crash mode) holds the model's states after the
	// intermediate steps of split operations (a big Write applied in
	// chunks, a truncation in steps): a crash may recover one of them.
	partials []partialState
}

// partialState is the model after an intermediate step of operation step.
type partialState struct {
	step int
	dump string
}

// onSteps makes the file system report the intermediate steps of the next
// operation to apply, which applies progress to the model (crash mode
// only); the returned function stops it.
func (r *runner) onSteps(apply func(progress uint64)) func() {
	if !r.crash {
		return func() {}
	}
	r.f.stepHook = func(p uint64) {
		apply(p)
		r.partials = append(r.partials, partialState{r.step, r.modelDump()})
	}
	return func() { r.f.stepHook = nil }
}

func newRunner(t testing.TB, f *FS, seed uint64) *runner {
	root := &mnode{typ: TypeDir, kids: map[string]*mnode{}, mode: 0755, h: f.Root()}
	root.parent = root
	a, err := f.GetAttr(f.Root())
	if err != nil {
		t.Fatal(err)
	}
	root.mtime, root.ctime = a.Mtime, a.Ctime
	return &runner{t: t, f: f, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed: seed, root: root, maxOffset: MaxFileSize}
}

func (r *runner) now() Time { return ts(r.step) }

func (r *runner) fatalf(format string, args ...any) {
	r.t.Helper()
	if r.ioErr {
		return // crash mode after an I/O error: results are meaningless
	}
	r.t.Fatalf("seed %d step %d: %s", r.seed, r.step, fmt.Sprintf(format, args...))
}

// errOK compares an operation's error with the model's; it returns true if
// the operation succeeded (and the caller should compare results). In crash
// mode an ErrIO stops the run.
func (r *runner) errOK(op string, want, got error) bool {
	r.t.Helper()
	if r.crash && (r.ioErr || errors.Is(got, ErrIO)) {
		// The operation may or may not have happened: apply it to the
		// model if it should have succeeded (the caller compares states
		// after the crash), and stop comparing results.
		r.ioErr = true
		return want == nil
	}
	if want == nil && got != nil {
		r.fatalf("%s: unexpected error %v", op, got)
	}
	if want != nil && !errors.Is(got, want) {
		r.fatalf("%s: got error %v, want %v", op, got, want)
	}
	if got == nil {
		if r.stats == nil {
			r.stats = map[string]int{}
		}
		r.stats[strings.Fields(op)[0]]++
	}
	return got == nil
}

func (r *runner) dirs() []*mnode {
	var out []*mnode
	var walk func(n *mnode)
	walk = func(n *mnode) {
		out = append(out, n)
		for _, name := range sortedKeys(n.kids) {
			if c := n.kids[name]; c.typ == TypeDir {
				walk(c)
			}
		}
	}
	walk(r.root)
	return out
}

func (r *runner) files() []*mnode {
	seen := map[*mnode]bool{}
	var out []*mnode
	for _, d := range r.dirs() {
		for _, name := range sortedKeys(d.kids) {
			if c := d.kids[name]; c.typ != TypeDir && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (r *runner) pickDir() *mnode {
	if r.rng.IntN(3) == 0 {
		return r.root // a big directory
	}
	ds := r.dirs()
	return ds[r.rng.IntN(len(ds))]
}

var poolNames = []string{"a", "b", "c", "d", "e", "f", "g", "h", "a-long-name-" + strings.Repeat("x", 60)}

func (r *runner) pickName() string {
	switch k := r.rng.IntN(100); {
	case k < 2:
		return ""
	case k < 4:
		return "x/y"
	case k < 6:
		return "."
	case k < 8:
		return ".."
	case k < 10:
		return strings.Repeat("n", MaxName+1)
	case k < 12:
		return strings.Repeat("m", MaxName)
	case k < 30:
		// A wider pool so that directories grow past one tree block.
		return fmt.Sprintf("wide-%03d-%s", r.rng.IntN(300), strings.Repeat("w", r.rng.IntN(40)%3*30))
	default:
		return poolNames[r.rng.IntN(len(poolNames))]
	}
}

// nameErr is the error for a name that names nothing creatable (lookups,
// removes), nameErrNew for a new entry.
func nameErr(name string) error {
	switch {
	case name == "" || strings.ContainsAny(name, "/\x00"):
		return ErrInval
	case len(name) > MaxName:
		return ErrNameTooLong
	}
	return nil
}

func nameErrNew(name string) error {
	if err := nameErr(name); err != nil {
		return err
	}
	if name == "." || name == ".." {
		return ErrExist
	}
	return nil
}

func (r *runner) kill(n *mnode) { r.dead = append(r.dead, n) }

// compare checks a node's attributes (and small files' data).
func (r *runner) compare(n *mnode) {
	r.t.Helper()
	a, err := r.f.GetAttr(n.h)
	if !r.errOK("getattr", nil, err) {
		return
	}
	if a.Type != n.typ || a.Nlink != n.nlink() || a.Mode != n.mode || a.Mtime != n.mtime || a.Ctime != n.ctime || a.Gen != n.h.Gen || a.Fileid != uint64(n.h.Ino) {
		r.fatalf("attr of %v: got %+v, model type %d nlink %d mode %o mtime %v ctime %v", n.h, a, n.typ, n.nlink(), n.mode, n.mtime, n.ctime)
	}
	switch n.typ {
	case TypeReg:
		if a.Size != n.size {
			r.fatalf("size of %v: got %d want %d", n.h, a.Size, n.size)
		}
		if n.size <= 64<<10 {
			data, eof, _, err := r.f.Read(n.h, 0, uint32(n.size)+10)
			if !r.errOK("read", nil, err) {
				return
			}
			if !eof || !bytes.Equal(data, n.read(0, n.size)) {
				r.fatalf("data of %v differs (eof %v, %d bytes, want %d)", n.h, eof, len(data), n.size)
			}
		}
	case TypeLnk:
		s, _, err := r.f.Readlink(n.h)
		if r.errOK("readlink", nil, err) && s != n.target {
			r.fatalf("readlink %v: %q want %q", n.h, s, n.target)
		}
	case TypeChr, TypeBlk:
		if a.Rdev != n.rdev {
			r.fatalf("rdev of %v: %+v want %+v", n.h, a.Rdev, n.rdev)
		}
	}
}

func (r *runner) randomStep() {
	r.step++
	r.durable, r.stableWrite = false, false
	defer func() {
		if r.asyncMeta && !r.stableWrite {
			r.durable = false
		}
	}()
	switch k := r.rng.IntN(100); {
	case k < 14:
		r.opCreate()
	case k < 20:
		r.opMkdir()
	case k < 23:
		r.opSymlink()
	case k < 25:
		r.opMknod()
	case k < 40:
		r.opWrite()
	case k < 46:
		r.opSetAttr()
	case k < 53:
		r.opRead()
	case k < 61:
		r.opRemove()
	case k < 65:
		r.opRmdir()
	case k < 76:
		r.opRename()
	case k < 81:
		r.opLink()
	case k < 87:
		r.opReadDir()
	case k < 93:
		r.opLookup()
	case k < 96:
		r.opStale()
	default:
		fs := r.files()
		if len(fs) > 0 {
			r.compare(fs[r.rng.IntN(len(fs))])
		}
	}
}

func (r *runner) opCreate() {
	dir, name := r.pickDir(), r.pickName()
	mode := CreateMode(r.rng.IntN(3))
	verf := uint64(r.rng.IntN(3))
	now := r.now()
	var want error
	var existing *mnode
	if want = nameErrNew(name); want == nil {
		if ex := dir.kids[name]; ex != nil {
			switch {
			case mode == Guarded || ex.typ != TypeReg:
				want = ErrExist
			case mode == Exclusive && ex.verf != verf:
				want = ErrExist
			default:
				existing = ex
			}
		}
	}
	h, a, _, dattr, err := r.f.Create(dir.h, name, mode, SetAttr{Mode: u32p(0640)}, verf, 7, 8, now)
	if !r.errOK(fmt.Sprintf("create %q mode %d", name, mode), want, err) {
		return
	}
	r.durable = existing == nil // an existing file is returned without a commit
	if existing != nil {
		if h != existing.h {
			r.fatalf("create of existing %q returned %v, want %v", name, h, existing.h)
		}
		return
	}
	n := &mnode{typ: TypeReg, pages: map[uint64][]byte{}, links: 1, mode: 0640, mtime: now, ctime: now, h: h}
	if mode == Exclusive {
		n.mode, n.verf = 0644, verf
	}
	dir.kids[name] = n
	dir.mtime, dir.ctime = now, now
	if a.Type != TypeReg || a.UID != 7 || a.GID != 8 || dattr.Mtime != now {
		r.fatalf("create attrs %+v dir %+v", a, dattr)
	}
	r.compare(n)
	r.compare(dir)
}

func (r *runner) opMkdir() {
	dir, name := r.pickDir(), r.pickName()
	now := r.now()
	want := nameErrNew(name)
	if want == nil && dir.kids[name] != nil {
		want = ErrExist
	}
	h, _, _, _, err := r.f.Mkdir(dir.h, name, SetAttr{Mode: u32p(0700)}, 0, 0, now)
	if !r.errOK("mkdir "+name, want, err) {
		return
	}
	r.durable = true
	n := &mnode{typ: TypeDir, kids: map[string]*mnode{}, parent: dir, mode: 0700, mtime: now, ctime: now, h: h}
	dir.kids[name] = n
	dir.mtime, dir.ctime = now, now
	r.compare(n)
	r.compare(dir)
}

func (r *runner) opSymlink() {
	dir, name := r.pickDir(), r.pickName()
	now := r.now()
	target := strings.Repeat("t", 1+r.rng.IntN(300))
	want := error(nil)
	switch r.rng.IntN(20) {
	case 0:
		target = ""
		want = ErrInval
	case 1:
		target = strings.Repeat("l", MaxSymlink+1)
		want = ErrNameTooLong
	case 2:
		target = strings.Repeat("l", MaxSymlink)
	}
	if want == nil {
		want = nameErrNew(name)
	}
	if want == nil && dir.kids[name] != nil {
		want = ErrExist
	}
	h, _, _, _, err := r.f.Symlink(dir.h, name, target, SetAttr{}, 0, 0, now)
	if !r.errOK("symlink "+name, want, err) {
		return
	}
	r.durable = true
	n := &mnode{typ: TypeLnk, target: target, links: 1, mode: 0777, mtime: now, ctime: now, h: h, size: uint64(len(target))}
	dir.kids[name] = n
	dir.mtime, dir.ctime = now, now
	r.compare(n)
	r.compare(dir)
}

func (r *runner) opMknod() {
	dir, name := r.pickDir(), r.pickName()
	now := r.now()
	typ := []FileType{TypeChr, TypeBlk, TypeSock, TypeFifo, TypeReg}[r.rng.IntN(5)]
	want := error(nil)
	if typ == TypeReg {
		want = ErrInval
	}
	if want == nil {
		want = nameErrNew(name)
	}
	if want == nil && dir.kids[name] != nil {
		want = ErrExist
	}
	h, _, _, _, err := r.f.Mknod(dir.h, name, typ, 3, 4, SetAttr{Mode: u32p(0600)}, 0, 0, now)
	if !r.errOK("mknod "+name, want, err) {
		return
	}
	r.durable = true
	n := &mnode{typ: typ, links: 1, mode: 0600, mtime: now, ctime: now, h: h}
	if typ == TypeChr || typ == TypeBlk {
		n.rdev = Rdev{3, 4}
	}
	dir.kids[name] = n
	dir.mtime, dir.ctime = now, now
	r.compare(n)
	r.compare(dir)
}

func (r *runner) pickFile() *mnode {
	fs := r.files()
	if len(fs) == 0 || r.rng.IntN(20) == 0 {
		ds := r.dirs()
		return ds[r.rng.IntN(len(ds))]
	}
	return fs[r.rng.IntN(len(fs))]
}

func (r *runner) randOffset() uint64 {
	switch k := r.rng.IntN(100); {
	case k < 55:
		return uint64(r.rng.IntN(20000))
	case k < 85:
		return uint64(r.rng.IntN(6 << 20))
	case k < 92:
		return min(r.maxOffset, uint64(r.rng.IntN(64<<20)))
	default:
		return r.maxOffset - uint64(r.rng.IntN(3*blockSize))
	}
}

func (r *runner) opWrite() {
	n := r.pickFile()
	off := r.randOffset()
	size := r.rng.IntN(12000)
	if r.rng.IntN(8) == 0 { // big enough for direct block writes (directMin)
		size = directMin + r.rng.IntN(48<<10)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(r.rng.IntN(256))
	}
	stable := r.rng.IntN(2) == 0
	now := r.now()
	var want error
	switch {
	case n.typ == TypeDir:
		want = ErrIsDir
	case n.typ != TypeReg:
		want = ErrInval
	case off+uint64(len(data)) > MaxFileSize:
		want = ErrFBig
	}
	// The chunks of a split write land in file order; the model takes each
	// prefix as it is reported (the whole write follows on success).
	stop := r.onSteps(func(p uint64) {
		n.write(off, data[:p])
		n.mtime, n.ctime = now, now
	})
	_, a, err := r.f.Write(n.h, off, data, stable, now)
	stop()
	if !r.errOK(fmt.Sprintf("write %d+%d", off, len(data)), want, err) {
		return
	}
	r.durable = stable && len(data) > 0 // an empty write commits nothing
	r.stableWrite = r.durable
	if len(data) > 0 {
		n.write(off, data)
		n.mtime, n.ctime = now, now
	}
	if a.Size != n.size {
		r.fatalf("write: size %d want %d", a.Size, n.size)
	}
	if r.rng.IntN(3) == 0 {
		r.compare(n)
	}
}

func (r *runner) opSetAttr() {
	n := r.pickFile()
	now := r.now()
	var sa SetAttr
	var want error
	if r.rng.IntN(4) == 0 {
		sa.Mode = u32p(uint32(r.rng.IntN(010000)))
	}
	if r.rng.IntN(5) > 0 {
		var s uint64
		switch k := r.rng.IntN(10); {
		case k < 2:
			s = 0
		case k < 6:
			s = uint64(r.rng.IntN(30000))
		case k < 8:
			s = uint64(r.rng.IntN(8 << 20))
		case k < 9:
			s = n.size - min(n.size, uint64(r.rng.IntN(5000)))
		default:
			s = MaxFileSize + uint64(r.rng.IntN(2))
		}
		sa.Size = &s
		switch {
		case n.typ == TypeDir:
			want = ErrIsDir
		case n.typ != TypeReg:
			want = ErrInval
		case s > MaxFileSize:
			want = ErrFBig
		}
	}
	var guard *Time
	if r.rng.IntN(6) == 0 {
		g := n.ctime
		if r.rng.IntN(2) == 0 {
			g.Nsec++
			want = ErrNotSync // the guard is checked first
		}
		guard = &g
	}
	// A truncation in steps lowers only the size until its last step.
	stop := r.onSteps(func(p uint64) { n.truncate(p) })
	_, _, err := r.f.SetAttr(n.h, sa, guard, now)
	stop()
	if !r.errOK("setattr", want, err) {
		return
	}
	r.durable = true
	if sa.Size != nil && *sa.Size != n.size {
		n.truncate(*sa.Size)
		n.mtime = now
	}
	if sa.Mode != nil {
		n.mode = *sa.Mode & 07777
	}
	n.ctime = now
	r.compare(n)
}

func (r *runner) opRead() {
	n := r.pickFile()
	var off uint64
	if n.typ == TypeReg && n.size > 0 && r.rng.IntN(3) == 0 {
		off = n.size - min(n.size, uint64(r.rng.IntN(9000)))
	} else {
		off = r.randOffset()
	}
	count := uint32(r.rng.IntN(70000))
	var want error
	switch {
	case n.typ == TypeDir:
		want = ErrIsDir
	case n.typ != TypeReg:
		want = ErrInval
	}
	data, eof, _, err := r.f.Read(n.h, off, count)
	if !r.errOK("read", want, err) {
		return
	}
	exp := n.read(off, uint64(count))
	if !bytes.Equal(data, exp) || eof != (off+uint64(len(exp)) >= n.size) {
		r.fatalf("read %d+%d of size %d: %d bytes eof %v, want %d bytes", off, count, n.size, len(data), eof, len(exp))
	}
}

func (r *runner) opRemove() {
	dir := r.pickDir()
	name := r.pickName()
	if r.rng.IntN(3) > 0 && len(dir.kids) > 0 {
		ks := sortedKeys(dir.kids)
		name = ks[r.rng.IntN(len(ks))]
	}
	now := r.now()
	want := nameErr(name)
	c := dir.kids[name]
	switch {
	case want != nil:
	case name == "." || name == "..":
		want = ErrInval
	case c == nil:
		want = ErrNoEnt
	case c.typ == TypeDir:
		want = ErrIsDir
	}
	_, _, err := r.f.Remove(dir.h, name, now)
	if !r.errOK("remove "+name, want, err) {
		return
	}
	r.durable = true
	delete(dir.kids, name)
	dir.mtime, dir.ctime = now, now
	c.links--
	c.ctime = now
	if c.links == 0 {
		r.kill(c)
	} else {
		r.compare(c)
	}
	r.compare(dir)
}

func (r *runner) opRmdir() {
	dir := r.pickDir()
	name := r.pickName()
	if r.rng.IntN(3) > 0 && len(dir.kids) > 0 {
		ks := sortedKeys(dir.kids)
		name = ks[r.rng.IntN(len(ks))]
	}
	if r.rng.IntN(2) == 0 {
		for _, k := range sortedKeys(dir.kids) {
			if c := dir.kids[k]; c.typ == TypeDir && len(c.kids) == 0 {
				name = k
				break
			}
		}
	}
	now := r.now()
	want := nameErr(name)
	c := dir.kids[name]
	switch {
	case want != nil:
	case name == ".":
		want = ErrInval
	case name == "..":
		want = ErrExist
	case c == nil:
		want = ErrNoEnt
	case c.typ != TypeDir:
		want = ErrNotDir
	case len(c.kids) > 0:
		want = ErrNotEmpty
	}
	_, _, err := r.f.Rmdir(dir.h, name, now)
	if !r.errOK("rmdir "+name, want, err) {
		return
	}
	r.durable = true
	delete(dir.kids, name)
	dir.mtime, dir.ctime = now, now
	r.kill(c)
	r.compare(dir)
}

func (r *runner) opRename() {
	fd, td := r.pickDir(), r.pickDir()
	fn, tn := r.pickName(), r.pickName()
	if r.rng.IntN(4) > 0 && len(fd.kids) > 0 {
		ks := sortedKeys(fd.kids)
		fn = ks[r.rng.IntN(len(ks))]
	}
	if r.rng.IntN(3) == 0 && len(td.kids) > 0 {
		ks := sortedKeys(td.kids)
		tn = ks[r.rng.IntN(len(ks))]
	}
	now := r.now()
	var want error
	for _, n := range []string{fn, tn} {
		if want == nil {
			want = nameErr(n)
			if want == nil && (n == "." || n == "..") {
				want = ErrInval
			}
		}
	}
	s, d := fd.kids[fn], td.kids[tn]
	noop := false
	if want == nil {
		switch {
		case s == nil:
			want = ErrNoEnt
		case d == s:
			noop = true
		case d != nil && s.typ == TypeDir && d.typ != TypeDir:
			want = ErrNotDir
		case d != nil && s.typ != TypeDir && d.typ == TypeDir:
			want = ErrIsDir
		case d != nil && d.typ == TypeDir && len(d.kids) > 0:
			want = ErrNotEmpty
		case s.typ == TypeDir && fd != td && isAncestor(s, td):
			want = ErrInval
		}
	}
	_, _, _, _, err := r.f.Rename(fd.h, fn, td.h, tn, now)
	if !r.errOK(fmt.Sprintf("rename %q -> %q", fn, tn), want, err) {
		return
	}
	r.durable = !noop // a rename onto the same file commits nothing
	if noop {
		return
	}
	delete(fd.kids, fn)
	td.kids[tn] = s
	if s.typ == TypeDir {
		s.parent = td
	}
	s.ctime = now
	fd.mtime, fd.ctime = now, now
	td.mtime, td.ctime = now, now
	if d != nil {
		if d.typ == TypeDir {
			r.kill(d)
		} else {
			d.links--
			d.ctime = now
			if d.links == 0 {
				r.kill(d)
			} else {
				r.compare(d)
			}
		}
	}
	r.compare(s)
	r.compare(fd)
	r.compare(td)
}

func (r *runner) opLink() {
	n := r.pickFile()
	dir, name := r.pickDir(), r.pickName()
	now := r.now()
	want := nameErrNew(name)
	switch {
	case want != nil:
	case n.typ == TypeDir:
		want = ErrIsDir
	case dir.kids[name] != nil:
		want = ErrExist
	}
	_, _, _, err := r.f.Link(n.h, dir.h, name, now)
	if !r.errOK("link "+name, want, err) {
		return
	}
	r.durable = true
	dir.kids[name] = n
	n.links++
	n.ctime = now
	dir.mtime, dir.ctime = now, now
	r.compare(n)
	r.compare(dir)
}

func (r *runner) opReadDir() {
	dir := r.pickDir()
	plus := r.rng.IntN(2) == 0
	page := 1 + r.rng.IntN(6)
	got := map[string]DirEntry{}
	var cookie, verf uint64
	for round := 0; ; round++ {
		if round > 1000 {
			r.fatalf("readdir does not end")
		}
		ents, eof, nv, _, err := r.f.ReadDir(dir.h, cookie, verf, page, plus)
		if !r.errOK("readdir", nil, err) || r.ioErr {
			return
		}
		for _, e := range ents {
			if _, dup := got[e.Name]; dup {
				r.fatalf("readdir returned %q twice", e.Name)
			}
			got[e.Name] = e
			cookie = e.Cookie
		}
		verf = nv
		if eof {
			break
		}
		if len(ents) == 0 {
			r.fatalf("readdir: empty page without eof")
		}
	}
	if len(got) != len(dir.kids)+2 {
		r.fatalf("readdir: %d entries, want %d", len(got), len(dir.kids)+2)
	}
	if got["."].Handle != dir.h || got[".."].Handle != dir.parent.h {
		r.fatalf("readdir: bad . or ..")
	}
	for name, c := range dir.kids {
		e, ok := got[name]
		if !ok || e.Handle != c.h {
			r.fatalf("readdir: entry %q: %+v, want handle %v", name, e, c.h)
		}
		if plus && (e.Attr.Type != c.typ || e.Attr.Nlink != c.nlink()) {
			r.fatalf("readdirplus: entry %q attr %+v", name, e.Attr)
		}
	}
}

func (r *runner) opLookup() {
	dir := r.pickDir()
	name := r.pickName()
	if r.rng.IntN(2) == 0 && len(dir.kids) > 0 {
		ks := sortedKeys(dir.kids)
		name = ks[r.rng.IntN(len(ks))]
	}
	want := nameErr(name)
	var exp *mnode
	switch {
	case want != nil:
	case name == ".":
		exp = dir
	case name == "..":
		exp = dir.parent
	default:
		if exp = dir.kids[name]; exp == nil {
			want = ErrNoEnt
		}
	}
	h, a, _, err := r.f.Lookup(dir.h, name)
	if !r.errOK("lookup "+name, want, err) {
		return
	}
	if h != exp.h || a.Type != exp.typ {
		r.fatalf("lookup %q: %v %+v, want %v", name, h, a, exp.h)
	}
}

func (r *runner) opStale() {
	if len(r.dead) == 0 {
		return
	}
	n := r.dead[r.rng.IntN(len(r.dead))]
	var err error
	switch r.rng.IntN(4) {
	case 0:
		_, err = r.f.GetAttr(n.h)
	case 1:
		_, _, _, err = r.f.Read(n.h, 0, 10)
	case 2:
		_, _, _, err = r.f.Lookup(n.h, "a")
	default:
		_, _, err = r.f.Write(n.h, 0, []byte("x"), false, r.now())
	}
	r.errOK("stale handle", ErrStale, err)
}

// dump is a canonical description of a tree (file system or model) for
// comparing states after a crash.
func (r *runner) modelDump() string {
	var b strings.Builder
	var walk func(n *mnode, path string)
	walk = func(n *mnode, path string) {
		fmt.Fprintf(&b, "%s t%d n%d m%o mt%v", path, n.typ, n.nlink(), n.mode, n.mtime)
		switch n.typ {
		case TypeReg:
			h := fnv.New64a()
			pgs := make([]uint64, 0, len(n.pages))
			for p := range n.pages {
				pgs = append(pgs, p)
			}
			slices.Sort(pgs)
			for _, p := range pgs {
				if p*blockSize < n.size && !allZero(n.pages[p]) {
					fmt.Fprintf(h, "%d:", p)
					h.Write(n.read(p*blockSize, blockSize))
				}
			}
			fmt.Fprintf(&b, " s%d d%x", n.size, h.Sum64())
		case TypeLnk:
			fmt.Fprintf(&b, " ->%s", n.target)
		}
		b.WriteString("\n")
		for _, name := range sortedKeys(n.kids) {
			walk(n.kids[name], path+"/"+name)
		}
	}
	walk(r.root, "")
	return b.String()
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// fsDump describes the file system like modelDump.
func fsDump(t testing.TB, f *FS) (string, error) {
	var b strings.Builder
	var walk func(h Handle, path string) error
	walk = func(h Handle, path string) error {
		a, err := f.GetAttr(h)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s t%d n%d m%o mt%v", path, a.Type, a.Nlink, a.Mode, a.Mtime)
		switch a.Type {
		case TypeReg:
			hs := fnv.New64a()
			// Walk the mapped blocks only (files can be sparse and huge).
			t := f.begin()
			ip, err := t.live(h)
			if err != nil {
				return err
			}
			var pgs []uint64
			err = forEachBlock(ip, t.readBlockData, func(bn uint64, L int64) error {
				if L >= 0 {
					pgs = append(pgs, uint64(L))
				}
				return nil
			})
			if err != nil {
				return err
			}
			slices.Sort(pgs)
			for _, p := range pgs {
				data, _, _, err := f.Read(h, p*blockSize, blockSize)
				if err != nil {
					return err
				}
				if len(data) > 0 && !allZero(data) {
					fmt.Fprintf(hs, "%d:", p)
					hs.Write(data)
				}
			}
			fmt.Fprintf(&b, " s%d d%x", a.Size, hs.Sum64())
		case TypeLnk:
			s, _, err := f.Readlink(h)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " ->%s", s)
		}
		b.WriteString("\n")
		if a.Type == TypeDir {
			var ents []DirEntry
			var cookie uint64
			for {
				es, eof, _, _, err := f.ReadDir(h, cookie, 0, 100, false)
				if err != nil {
					return err
				}
				for _, e := range es {
					if e.Name != "." && e.Name != ".." {
						ents = append(ents, e)
					}
					cookie = e.Cookie
				}
				if eof {
					break
				}
			}
			sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
			for _, e := range ents {
				if err := walk(e.Handle, path+"/"+e.Name); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk(f.Root(), "")
	return b.String(), err
}

// testSeed is the seed of a test that runs one (testseed.One): STRATA_SEED
// if set, else a fresh seed; a failure logs the replay command.
func testSeed(t testing.TB) uint64 {
	return testseed.One(t)
}

func envInt(name string, def int) int {
	if s := os.Getenv(name); s != "" {
		if v, err := strconv.Atoi(s); err == nil {
			return v
		}
	}
	return def
}

// TestModel runs random operation sequences against the model, comparing
// results and errors after every step and checking the file system
// regularly: three fresh consecutive seeds (testseed: STRATA_SEED replays
// one, STRATA_SEEDS runs more), whose residues choose the options, so
// that the three cover them and a seed replays with its own.
func TestModel(t *testing.T) {
	steps := envInt("STRATA_FS_STEPS", 700)
	for s := range testseed.Each(t, testseed.Fresh(3)...) {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			opt := Options{UnstableMetadata: s%2 == 1}
			if s%3 == 2 {
				opt.OpBlocks = minBudget // force split writes and truncates
			}
			f := newMemFS(t, 40000, 1024, 2048, opt)
			r := newRunner(t, f, s)
			for i := 0; i < steps; i++ {
				r.randomStep()
				if i%100 == 99 {
					if rep, err := f.Check(); err != nil || !rep.Clean() {
						r.fatalf("check: %v %v", err, rep)
					}
				}
			}
			for _, n := range r.files() {
				r.compare(n)
			}
			for _, d := range r.dirs() {
				r.compare(d)
			}
			rep := mustCheck(t, f)
			t.Log(rep)
			t.Log(r.stats)
		})
	}
}
