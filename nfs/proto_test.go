package nfs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// client speaks NFSv3 to a test server through the rpc package's client.
type client struct {
	t *testing.T
	c *rpc.Client
}

func dialTest(t *testing.T, ts *testServer) *client { return dialAs(t, ts, 0, 0) }

// dialAs connects with AUTH_SYS credentials uid and gid.
func dialAs(t *testing.T, ts *testServer, uid, gid uint32) *client {
	t.Helper()
	c, err := rpc.Dial(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", ts.port))
	if err != nil {
		t.Fatal(err)
	}
	c.SetAuthSys(rpc.AuthSys{Machine: "test", UID: uid, GID: gid})
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

// call makes an NFS call; build writes the arguments. It returns the
// results' reader and their status.
func (c *client) call(proc uint32, build func(w *xdr.Writer)) (*xdr.Reader, uint32) {
	c.t.Helper()
	w := xdr.NewWriter(nil)
	if build != nil {
		build(w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.c.Call(ctx, ProgNFS, VersNFS, proc, w.Bytes())
	if err != nil {
		c.t.Fatalf("%s: %v", ProcNames[proc], err)
	}
	r := xdr.NewReader(res)
	return r, r.Uint32()
}

func (c *client) mnt(path string) ([]byte, uint32) {
	c.t.Helper()
	w := xdr.NewWriter(nil)
	w.String(path)
	res, err := c.c.Call(context.Background(), ProgMount, VersMount, mntMnt, w.Bytes())
	if err != nil {
		c.t.Fatal(err)
	}
	r := xdr.NewReader(res)
	st := r.Uint32()
	if st != 0 {
		return nil, st
	}
	return r.Opaque(MaxFH), 0
}

// skipFattr skips a fattr3 and returns its type and size.
func skipFattr(r *xdr.Reader) (typ uint32, size uint64) {
	typ = r.Uint32()
	r.Uint32()
	r.Uint32()
	r.Uint32()
	r.Uint32()
	size = r.Uint64()
	r.Uint64()
	r.Uint64()
	r.Uint64()
	r.Uint64()
	for range 6 {
		r.Uint32()
	}
	return typ, size
}

func skipPostOp(r *xdr.Reader) {
	if r.Bool() {
		skipFattr(r)
	}
}

func skipWcc(r *xdr.Reader) {
	if r.Bool() {
		r.Uint64()
		r.Uint64()
		r.Uint64()
	}
	skipPostOp(r)
}

func dirop(w *xdr.Writer, fh []byte, name string) {
	w.Opaque(fh)
	w.String(name)
}

func emptySattr(w *xdr.Writer) {
	for range 4 {
		w.Bool(false)
	}
	w.Uint32(0)
	w.Uint32(0)
}

// create makes a file (UNCHECKED) and returns its handle.
func (c *client) create(dir []byte, name string) ([]byte, uint32) {
	c.t.Helper()
	r, st := c.call(procCreate, func(w *xdr.Writer) {
		dirop(w, dir, name)
		w.Uint32(0)
		emptySattr(w)
	})
	if st != nfsOK {
		return nil, st
	}
	if !r.Bool() {
		c.t.Fatal("create: no handle")
	}
	return r.Opaque(MaxFH), st
}

func (c *client) mkdir(dir []byte, name string) ([]byte, uint32) {
	c.t.Helper()
	r, st := c.call(procMkdir, func(w *xdr.Writer) {
		dirop(w, dir, name)
		emptySattr(w)
	})
	if st != nfsOK {
		return nil, st
	}
	r.Bool()
	return r.Opaque(MaxFH), st
}

func (c *client) lookup(dir []byte, name string) ([]byte, uint32) {
	c.t.Helper()
	r, st := c.call(procLookup, func(w *xdr.Writer) { dirop(w, dir, name) })
	if st != nfsOK {
		return nil, st
	}
	return r.Opaque(MaxFH), st
}

func (c *client) write(fh []byte, off uint64, data []byte, stable uint32) uint32 {
	c.t.Helper()
	_, st := c.call(procWrite, func(w *xdr.Writer) {
		w.Opaque(fh)
		w.Uint64(off)
		w.Uint32(uint32(len(data)))
		w.Uint32(stable)
		w.Opaque(data)
	})
	return st
}

func (c *client) read(fh []byte, off uint64, n uint32) ([]byte, bool, uint32) {
	c.t.Helper()
	r, st := c.call(procRead, func(w *xdr.Writer) {
		w.Opaque(fh)
		w.Uint64(off)
		w.Uint32(n)
	})
	skipPostOp(r)
	if st != nfsOK {
		return nil, false, st
	}
	r.Uint32()
	eof := r.Bool()
	return r.Opaque(MaxIO), eof, st
}

func (c *client) readdir(dir []byte) ([]string, uint32) {
	c.t.Helper()
	var names []string
	cookie, verf := uint64(0), uint64(0)
	for {
		r, st := c.call(procReaddir, func(w *xdr.Writer) {
			w.Opaque(dir)
			w.Uint64(cookie)
			w.Uint64(verf)
			w.Uint32(1024)
		})
		skipPostOp(r)
		if st != nfsOK {
			return names, st
		}
		verf = r.Uint64()
		for r.Bool() {
			r.Uint64()
			names = append(names, r.String(4096))
			cookie = r.Uint64()
		}
		if r.Bool() {
			return names, nfsOK
		}
		if r.Err() != nil {
			c.t.Fatal(r.Err())
		}
	}
}

// TestProtocol exercises every procedure and the RFC 1813 error cases
// that apply, over a real TCP connection.
func TestProtocol(t *testing.T) {
	ts := startTestServer(t, filepath.Join(t.TempDir(), "nfs.img"))
	c := dialTest(t, ts)
	root, st := c.mnt("/strata")
	if st != 0 {
		t.Fatalf("MNT: status %d", st)
	}
	if _, st := c.mnt("/elsewhere"); st != 2 {
		t.Fatalf("MNT of an unknown export: status %d, want NOENT", st)
	}
	if res, err := c.c.Call(context.Background(), ProgNFS, VersNFS, procNull, nil); err != nil || len(res) != 0 {
		t.Fatalf("NULL: %d result bytes, %v", len(res), err)
	}

	// GETATTR of the root: a directory.
	r, st := c.call(procGetattr, func(w *xdr.Writer) { w.Opaque(root) })
	if typ, _ := skipFattr(r); st != nfsOK || typ != 2 {
		t.Fatalf("GETATTR root: status %d type %d", st, typ)
	}
	// Bad and stale handles.
	if _, st := c.call(procGetattr, func(w *xdr.Writer) { w.Opaque([]byte("short")) }); st != errBadHandle {
		t.Fatalf("GETATTR of a malformed handle: %d, want BADHANDLE", st)
	}
	f, st := c.create(root, "file")
	if st != nfsOK {
		t.Fatalf("CREATE: %d", st)
	}
	if _, st := c.create(root, "file"); st != nfsOK {
		t.Fatalf("UNCHECKED CREATE of an existing file: %d, want OK", st)
	}
	_, st = c.call(procCreate, func(w *xdr.Writer) {
		dirop(w, root, "file")
		w.Uint32(1) // GUARDED
		emptySattr(w)
	})
	if st != errExist {
		t.Fatalf("GUARDED CREATE of an existing file: %d, want EXIST", st)
	}
	// EXCLUSIVE: a retry with the same verifier succeeds, another fails.
	excl := func(v uint64) uint32 {
		_, st := c.call(procCreate, func(w *xdr.Writer) {
			dirop(w, root, "excl")
			w.Uint32(2)
			w.Uint64(v)
		})
		return st
	}
	if st := excl(42); st != nfsOK {
		t.Fatalf("EXCLUSIVE CREATE: %d", st)
	}
	if st := excl(42); st != nfsOK {
		t.Fatalf("EXCLUSIVE CREATE retry: %d", st)
	}
	if st := excl(43); st != errExist {
		t.Fatalf("EXCLUSIVE CREATE with another verifier: %d, want EXIST", st)
	}
	if _, st := c.create(root, strings.Repeat("n", 256)); st != errNameTooLong {
		t.Fatalf("CREATE of a 256-byte name: %d, want NAMETOOLONG", st)
	}
	// WRITE and READ, including a hole and reading past the end.
	if st := c.write(f, 0, []byte("hello"), fileSync); st != nfsOK {
		t.Fatalf("WRITE: %d", st)
	}
	if st := c.write(f, 10, []byte("world"), unstable); st != nfsOK {
		t.Fatalf("WRITE unstable: %d", st)
	}
	data, eof, st := c.read(f, 0, 100)
	if st != nfsOK || string(data) != "hello\x00\x00\x00\x00\x00world" || !eof {
		t.Fatalf("READ: %d %q eof=%v", st, data, eof)
	}
	if data, eof, st := c.read(f, 100, 10); st != nfsOK || len(data) != 0 || !eof {
		t.Fatalf("READ past the end: %d %q %v", st, data, eof)
	}
	// COMMIT returns the write verifier of WRITE.
	r, st = c.call(procCommit, func(w *xdr.Writer) { w.Opaque(f); w.Uint64(0); w.Uint32(0) })
	skipWcc(r)
	if v := r.Uint64(); st != nfsOK || v != ts.srv.verf {
		t.Fatalf("COMMIT: %d verifier %x", st, v)
	}
	// SETATTR: truncate, and the ctime guard.
	_, st = c.call(procSetattr, func(w *xdr.Writer) {
		w.Opaque(f)
		w.Bool(false)
		w.Bool(false)
		w.Bool(false)
		w.Bool(true)
		w.Uint64(3)
		w.Uint32(0)
		w.Uint32(0)
		w.Bool(false)
	})
	if data, _, _ := c.read(f, 0, 100); st != nfsOK || string(data) != "hel" {
		t.Fatalf("SETATTR size 3: %d, then %q", st, data)
	}
	_, st = c.call(procSetattr, func(w *xdr.Writer) {
		w.Opaque(f)
		emptySattr(w)
		w.Bool(true) // guard with a ctime that does not match
		w.Uint32(1)
		w.Uint32(2)
	})
	if st != errNotSync {
		t.Fatalf("SETATTR with a wrong guard: %d, want NOT_SYNC", st)
	}
	// LOOKUP and directories.
	if _, st := c.lookup(root, "nope"); st != errNoEnt {
		t.Fatalf("LOOKUP of a missing name: %d, want NOENT", st)
	}
	if _, st := c.lookup(f, "x"); st != errNotDir {
		t.Fatalf("LOOKUP in a file: %d, want NOTDIR", st)
	}
	d, st := c.mkdir(root, "dir")
	if st != nfsOK {
		t.Fatalf("MKDIR: %d", st)
	}
	if _, st := c.mkdir(root, "dir"); st != errExist {
		t.Fatalf("MKDIR existing: %d, want EXIST", st)
	}
	if _, st := c.create(d, "inner"); st != nfsOK {
		t.Fatalf("CREATE in dir: %d", st)
	}
	if _, st := c.call(procRmdir, func(w *xdr.Writer) { dirop(w, root, "dir") }); st != errNotEmpty {
		t.Fatalf("RMDIR of a non-empty directory: %d, want NOTEMPTY", st)
	}
	if _, st := c.call(procRmdir, func(w *xdr.Writer) { dirop(w, root, "file") }); st != errNotDir {
		t.Fatalf("RMDIR of a file: %d, want NOTDIR", st)
	}
	if _, st := c.call(procRemove, func(w *xdr.Writer) { dirop(w, root, "dir") }); st != errIsDir {
		t.Fatalf("REMOVE of a directory: %d, want ISDIR", st)
	}
	// RENAME across directories and over an existing file.
	if _, st := c.call(procRename, func(w *xdr.Writer) { dirop(w, d, "inner"); dirop(w, root, "excl") }); st != nfsOK {
		t.Fatalf("RENAME over an existing file: %d", st)
	}
	if _, st := c.lookup(d, "inner"); st != errNoEnt {
		t.Fatalf("the renamed name still exists: %d", st)
	}
	// LINK, SYMLINK, READLINK, MKNOD.
	if _, st := c.call(procLink, func(w *xdr.Writer) { w.Opaque(f); dirop(w, d, "hard") }); st != nfsOK {
		t.Fatalf("LINK: %d", st)
	}
	if _, st := c.call(procLink, func(w *xdr.Writer) { w.Opaque(d); dirop(w, root, "dirlink") }); st != errIsDir {
		t.Fatalf("LINK of a directory: %d, want ISDIR", st)
	}
	r, st = c.call(procSymlink, func(w *xdr.Writer) {
		dirop(w, root, "sym")
		emptySattr(w)
		w.String("file")
	})
	if st != nfsOK || !r.Bool() {
		t.Fatalf("SYMLINK: %d", st)
	}
	sym := r.Opaque(MaxFH)
	r, st = c.call(procReadlink, func(w *xdr.Writer) { w.Opaque(sym) })
	skipPostOp(r)
	if target := r.String(4096); st != nfsOK || target != "file" {
		t.Fatalf("READLINK: %d %q", st, target)
	}
	if _, st := c.call(procMknod, func(w *xdr.Writer) { dirop(w, root, "fifo"); w.Uint32(7); emptySattr(w) }); st != nfsOK {
		t.Fatalf("MKNOD fifo: %d", st)
	}
	if _, st := c.call(procMknod, func(w *xdr.Writer) { dirop(w, root, "reg"); w.Uint32(1) }); st != errBadType {
		t.Fatalf("MKNOD of a regular file: %d, want BADTYPE", st)
	}
	// READDIR lists everything, over several replies.
	for i := range 40 {
		if _, st := c.create(d, fmt.Sprintf("many-%02d", i)); st != nfsOK {
			t.Fatal(st)
		}
	}
	names, st := c.readdir(d)
	if st != nfsOK || len(names) < 41 {
		t.Fatalf("READDIR: %d, %d names", st, len(names))
	}
	// A made-up cookie verifier with a non-zero cookie is BAD_COOKIE.
	if _, st := c.call(procReaddir, func(w *xdr.Writer) { w.Opaque(d); w.Uint64(5); w.Uint64(0xdead); w.Uint32(1024) }); st != errBadCookie {
		t.Fatalf("READDIR with a made-up verifier: %d, want BAD_COOKIE", st)
	}
	// ACCESS answers exactly the bits asked that are granted.
	r, st = c.call(procAccess, func(w *xdr.Writer) { w.Opaque(root); w.Uint32(0x3f) })
	skipPostOp(r)
	if got := r.Uint32(); st != nfsOK || got&^0x3f != 0 || got&accessLookup == 0 {
		t.Fatalf("ACCESS on root: %d %#x", st, got)
	}
	r, _ = c.call(procAccess, func(w *xdr.Writer) { w.Opaque(root); w.Uint32(accessRead) })
	skipPostOp(r)
	if got := r.Uint32(); got != accessRead {
		t.Fatalf("ACCESS READ on root: %#x, want exactly READ", got)
	}
	// FSSTAT, FSINFO, PATHCONF.
	for _, p := range []uint32{procFsstat, procFsinfo, procPathconf} {
		if _, st := c.call(p, func(w *xdr.Writer) { w.Opaque(root) }); st != nfsOK {
			t.Fatalf("%s: %d", ProcNames[p], st)
		}
	}
	// Stale handle: remove the file and ask again.
	if _, st := c.call(procRemove, func(w *xdr.Writer) { dirop(w, root, "file") }); st != nfsOK {
		t.Fatalf("REMOVE: %d", st)
	}
	if _, st := c.call(procRemove, func(w *xdr.Writer) { dirop(w, d, "hard") }); st != nfsOK {
		t.Fatalf("REMOVE of the last link: %d", st)
	}
	if _, st := c.call(procGetattr, func(w *xdr.Writer) { w.Opaque(f) }); st != errStale {
		t.Fatalf("GETATTR of a removed file: %d, want STALE", st)
	}
	// Garbage arguments and unknown procedures.
	_, err := c.c.Call(context.Background(), ProgNFS, VersNFS, procRead, []byte{1, 2, 3})
	var re *rpc.ReplyError
	if !errors.As(err, &re) || re.Accept != rpc.GarbageArgs {
		t.Fatalf("truncated READ arguments: %v, want GARBAGE_ARGS", err)
	}
	_, err = c.c.Call(context.Background(), ProgNFS, VersNFS, 22, nil)
	if !errors.As(err, &re) || re.Accept != rpc.ProcUnavail {
		t.Fatalf("procedure 22: %v, want PROC_UNAVAIL", err)
	}
	if rep, err := ts.fs.Check(); err != nil || !rep.Clean() {
		t.Fatalf("fsck: %v %v", rep, err)
	}
}

func (c *client) setattrMode(fh []byte, mode uint32) uint32 {
	c.t.Helper()
	_, st := c.call(procSetattr, func(w *xdr.Writer) {
		w.Opaque(fh)
		w.Bool(true)
		w.Uint32(mode)
		w.Bool(false)
		w.Bool(false)
		w.Bool(false)
		w.Uint32(0)
		w.Uint32(0)
		w.Bool(false)
	})
	return st
}

// TestPermissions: AUTH_SYS identities are held to the mode bits: a user
// cannot look into a 0700 directory of root's, read a 0600 file, create in
// a 0755 directory it does not own, or chmod someone else's file; it can
// create in a 0777 directory, and write its own file even when the mode
// says read-only; ACCESS agrees with what the operations allow; root may
// do everything.
func TestPermissions(t *testing.T) {
	ts := startTestServer(t, filepath.Join(t.TempDir(), "nfs.img"))
	root := dialAs(t, ts, 0, 0)
	user := dialAs(t, ts, 1000, 1000)
	top, _ := root.mnt("/strata")
	private, st := root.mkdir(top, "private")
	if st != nfsOK || root.setattrMode(private, 0o700) != nfsOK {
		t.Fatal("setup private dir")
	}
	secret, st := root.create(top, "secret")
	if st != nfsOK || root.setattrMode(secret, 0o600) != nfsOK || root.write(secret, 0, []byte("s"), fileSync) != nfsOK {
		t.Fatal("setup secret file")
	}
	shared, st := root.mkdir(top, "shared")
	if st != nfsOK || root.setattrMode(shared, 0o777) != nfsOK {
		t.Fatal("setup shared dir")
	}
	if _, st := user.lookup(private, "x"); st != errAcces {
		t.Fatalf("LOOKUP in a 0700 directory of root's: %d, want ACCES", st)
	}
	if _, _, st := user.read(secret, 0, 10); st != errAcces {
		t.Fatalf("READ of a 0600 file of root's: %d, want ACCES", st)
	}
	if st := user.write(secret, 0, []byte("x"), fileSync); st != errAcces {
		t.Fatalf("WRITE to a 0600 file of root's: %d, want ACCES", st)
	}
	if _, st := user.create(top, "mine"); st != errAcces {
		t.Fatalf("CREATE in a 0755 directory of root's: %d, want ACCES", st)
	}
	if _, st := user.call(procRemove, func(w *xdr.Writer) { dirop(w, top, "secret") }); st != errAcces {
		t.Fatalf("REMOVE from a 0755 directory of root's: %d, want ACCES", st)
	}
	if st := user.setattrMode(secret, 0o666); st != errPerm {
		t.Fatalf("chmod of root's file: %d, want PERM", st)
	}
	mine, st := user.create(shared, "mine")
	if st != nfsOK {
		t.Fatalf("CREATE in a 0777 directory: %d", st)
	}
	if st := user.setattrMode(mine, 0o400); st != nfsOK {
		t.Fatalf("chmod of one's own file: %d", st)
	}
	if st := user.write(mine, 0, []byte("still mine"), fileSync); st != nfsOK {
		t.Fatalf("owner writing its read-only file: %d", st)
	}
	r, st := user.call(procAccess, func(w *xdr.Writer) { w.Opaque(secret); w.Uint32(accessRead | accessModify) })
	skipPostOp(r)
	if got := r.Uint32(); st != nfsOK || got != 0 {
		t.Fatalf("ACCESS on root's 0600 file for a user: %d %#x, want nothing granted", st, got)
	}
	if data, _, st := root.read(secret, 0, 10); st != nfsOK || string(data) != "s" {
		t.Fatalf("root reads anything: %d %q", st, data)
	}
}
