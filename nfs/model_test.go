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
	"testing"
	"time"

	"strata/nfs/xdr"
)

// nfsModel is the simple file system the NFS server must behave like:
// directories and files by path.
type nfsModel struct {
	dirs  map[string]bool
	files map[string][]byte
}

func (m *nfsModel) exists(p string) bool { return m.dirs[p] || m.files[p] != nil }

func (m *nfsModel) children(dir string) []string {
	var out []string
	for p := range m.dirs {
		if p != "/" && path.Dir(p) == dir {
			out = append(out, path.Base(p))
		}
	}
	for p := range m.files {
		if path.Dir(p) == dir {
			out = append(out, path.Base(p))
		}
	}
	slices.Sort(out)
	return out
}

// TestNFSModel drives the server over NFS with random operations on a
// small name space (so names collide) and checks every status and every
// byte read against the model. STRATA_NFS_SEED replays one run,
// STRATA_NFS_STEPS sets the length.
func TestNFSModel(t *testing.T) {
	seeds := []uint64{uint64(time.Now().UnixNano()), 1, 2}
	if s := os.Getenv("STRATA_NFS_SEED"); s != "" {
		v, _ := strconv.ParseUint(s, 10, 64)
		seeds = []uint64{v}
	}
	steps := 400
	if v, err := strconv.Atoi(os.Getenv("STRATA_NFS_STEPS")); err == nil && v > 0 {
		steps = v
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { nfsModelRun(t, seed, steps) })
	}
}

func nfsModelRun(t *testing.T, seed uint64, steps int) {
	ts := startTestServer(t, filepath.Join(t.TempDir(), "nfs.img"))
	c := dialTest(t, ts)
	root, _ := c.mnt("/strata")
	rng := rand.New(rand.NewPCG(seed, 3))
	m := &nfsModel{dirs: map[string]bool{"/": true}, files: map[string][]byte{}}
	fh := map[string][]byte{"/": root}
	names := []string{"a", "b", "c", "d", "e"}
	pickDir := func() string {
		ds := make([]string, 0, len(m.dirs))
		for d := range m.dirs {
			ds = append(ds, d)
		}
		slices.Sort(ds)
		return ds[rng.IntN(len(ds))]
	}
	pickFile := func() (string, bool) {
		fs := make([]string, 0, len(m.files))
		for f := range m.files {
			fs = append(fs, f)
		}
		if len(fs) == 0 {
			return "", false
		}
		slices.Sort(fs)
		return fs[rng.IntN(len(fs))], true
	}
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (replay: STRATA_NFS_SEED=%d go test ./nfs -run TestNFSModel) step %d: %s", seed, seed, step, fmt.Sprintf(format, args...))
	}
	for step := 0; step < steps; step++ {
		dir := pickDir()
		name := names[rng.IntN(len(names))]
		p := path.Join(dir, name)
		switch op := rng.IntN(9); op {
		case 0: // GUARDED create
			_, st := c.call(procCreate, func(w *xdr.Writer) { dirop(w, fh[dir], name); w.Uint32(1); emptySattr(w) })
			want := uint32(nfsOK)
			if m.exists(p) {
				want = errExist
			}
			if st != want {
				fail(step, "create %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				m.files[p] = []byte{}
				fh[p], _ = c.lookup(fh[dir], name)
			}
		case 1: // mkdir
			h, st := c.mkdir(fh[dir], name)
			want := uint32(nfsOK)
			if m.exists(p) {
				want = errExist
			}
			if st != want {
				fail(step, "mkdir %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				m.dirs[p], fh[p] = true, h
			}
		case 2, 3: // write
			f, ok := pickFile()
			if !ok {
				continue
			}
			off := uint64(rng.IntN(9000))
			data := make([]byte, rng.IntN(5000))
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			if st := c.write(fh[f], off, data, []uint32{unstable, fileSync}[rng.IntN(2)]); st != nfsOK {
				fail(step, "write %s: %d", f, st)
			}
			cur := m.files[f]
			if end := off + uint64(len(data)); end > uint64(len(cur)) {
				cur = append(cur, make([]byte, end-uint64(len(cur)))...)
			}
			copy(cur[off:], data)
			m.files[f] = cur
		case 4: // read all
			f, ok := pickFile()
			if !ok {
				continue
			}
			got, _, st := c.read(fh[f], 0, 1<<20)
			if st != nfsOK || !bytes.Equal(got, m.files[f]) {
				fail(step, "read %s: %d, %d bytes, want %d", f, st, len(got), len(m.files[f]))
			}
		case 5: // remove
			_, st := c.call(procRemove, func(w *xdr.Writer) { dirop(w, fh[dir], name) })
			want := uint32(nfsOK)
			switch {
			case m.dirs[p]:
				want = errIsDir
			case m.files[p] == nil:
				want = errNoEnt
			}
			if st != want {
				fail(step, "remove %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				delete(m.files, p)
				delete(fh, p)
			}
		case 6: // rmdir
			_, st := c.call(procRmdir, func(w *xdr.Writer) { dirop(w, fh[dir], name) })
			want := uint32(nfsOK)
			switch {
			case m.files[p] != nil:
				want = errNotDir
			case !m.dirs[p]:
				want = errNoEnt
			case len(m.children(p)) > 0:
				want = errNotEmpty
			}
			if st != want {
				fail(step, "rmdir %s: %d, want %d", p, st, want)
			}
			if st == nfsOK {
				delete(m.dirs, p)
				delete(fh, p)
			}
		case 7: // rename a file to a fresh name or over another file
			f, ok := pickFile()
			to := path.Join(pickDir(), names[rng.IntN(len(names))])
			if !ok || m.dirs[to] || f == to {
				continue
			}
			_, st := c.call(procRename, func(w *xdr.Writer) {
				dirop(w, fh[path.Dir(f)], path.Base(f))
				dirop(w, fh[path.Dir(to)], path.Base(to))
			})
			if st != nfsOK {
				fail(step, "rename %s %s: %d", f, to, st)
			}
			m.files[to] = m.files[f]
			fh[to] = fh[f]
			delete(m.files, f)
			delete(fh, f)
		case 8: // readdir and lookup
			got, st := c.readdir(fh[dir])
			got = slices.DeleteFunc(got, func(n string) bool { return n == "." || n == ".." })
			slices.Sort(got)
			if want := m.children(dir); st != nfsOK || !slices.Equal(got, want) {
				fail(step, "readdir %s: %d %v, want %v", dir, st, got, want)
			}
			_, st = c.lookup(fh[dir], name)
			if want := map[bool]uint32{true: nfsOK, false: errNoEnt}[m.exists(p)]; st != want {
				fail(step, "lookup %s: %d, want %d", p, st, want)
			}
		}
	}
	if rep, err := ts.fs.Check(); err != nil || !rep.Clean() {
		t.Fatalf("seed %d: fsck after the run: %v %v", seed, rep, err)
	}
}
