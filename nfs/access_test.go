package nfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"strata/nfs/fs"
	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// The access tests' server listens on 127.0.0.1 with accessExports;
// clients connect from other loopback addresses (all of 127/8 is local on
// Linux), each admitted by one rule.
const accessExports = "/strata 127.0.0.1(rw) 127.0.0.3(rw,no_root_squash) 127.0.0.4(ro,no_root_squash) " +
	"127.0.0.5(rw,all_squash,anonuid=1000,anongid=1000) 127.0.0.6(rw,sec=sys:none)\n" +
	"/strata/pub 127.0.0.7(ro) 127.0.0.3(rw,no_root_squash)\n"

// Client addresses of accessExports.
const (
	srcSquashed = "127.0.0.1" // rw, root_squash (the default)
	srcAdmin    = "127.0.0.3" // rw, no_root_squash
	srcRO       = "127.0.0.4" // ro, no_root_squash
	srcAll      = "127.0.0.5" // all_squash to 1000:1000
	srcNone     = "127.0.0.6" // AUTH_NONE allowed
	srcPub      = "127.0.0.7" // only /strata/pub, ro
	srcUnlisted = "127.0.0.9" // no rule
)

// startAccessServer starts a test server with accessExports.
func startAccessServer(t *testing.T) *testServer {
	t.Helper()
	ts := startTestServer(t, filepath.Join(t.TempDir(), "nfs.img"))
	ex, err := ParseExports("test", []byte(accessExports), "/strata")
	if err != nil {
		t.Fatal(err)
	}
	ts.srv.SetExports(ex)
	return ts
}

// dialFrom connects to ts from the local address src with AUTH_SYS
// uid/gid, or AUTH_NONE if none.
func dialFrom(t *testing.T, ts *testServer, src string, uid, gid uint32, none bool) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ts.port))
	if err != nil {
		t.Fatal(err)
	}
	c := rpc.NewClient(conn)
	if !none {
		c.SetAuthSys(rpc.AuthSys{Machine: "test", UID: uid, GID: gid})
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c}
}

// rawCall makes a call and returns the RPC error instead of failing.
func (c *client) rawCall(prog, vers, proc uint32, build func(w *xdr.Writer)) ([]byte, error) {
	w := xdr.NewWriter(nil)
	if build != nil {
		build(w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.c.Call(ctx, prog, vers, proc, w.Bytes())
}

// owner returns a handle's GETATTR status, owner and group.
func (c *client) owner(fh []byte) (st, uid, gid uint32) {
	c.t.Helper()
	r, st := c.call(procGetattr, func(w *xdr.Writer) { w.Opaque(fh) })
	if st != nfsOK {
		return st, 0, 0
	}
	r.Uint32() // type
	r.Uint32() // mode
	r.Uint32() // nlink
	return st, r.Uint32(), r.Uint32()
}

// access returns the ACCESS bits granted of asked.
func (c *client) access(fh []byte, asked uint32) (uint32, uint32) {
	c.t.Helper()
	r, st := c.call(procAccess, func(w *xdr.Writer) { w.Opaque(fh); w.Uint32(asked) })
	skipPostOp(r)
	if st != nfsOK {
		return 0, st
	}
	return r.Uint32(), st
}

func wantDenied(t *testing.T, what string, err error, as rpc.AuthStat) {
	t.Helper()
	if !errors.Is(err, &rpc.ReplyError{Denied: true, Reject: rpc.AuthError, Auth: as}) {
		t.Fatalf("%s: got %v, want AUTH_ERROR %v", what, err, as)
	}
}

// accessFixture is the tree the access tests share, made by the admin
// client: a 0600 file of root's, a 0777 directory, and /pub (exported on
// its own) with a file.
type accessFixture struct {
	ts                              *testServer
	admin                           *client
	root, secret, tmp, pub, pubFile []byte // handles of /strata as the admin has them
}

func newAccessFixture(t *testing.T) *accessFixture {
	ts := startAccessServer(t)
	f := &accessFixture{ts: ts, admin: dialFrom(t, ts, srcAdmin, 0, 0, false)}
	var st uint32
	if f.root, st = f.admin.mnt("/strata"); st != 0 {
		t.Fatalf("admin mnt: %d", st)
	}
	if f.secret, st = f.admin.create(f.root, "secret"); st != nfsOK {
		t.Fatalf("create secret: %d", st)
	}
	if st := f.admin.write(f.secret, 0, []byte("root's secret"), fileSync); st != nfsOK {
		t.Fatalf("write secret: %d", st)
	}
	if st := f.admin.setattrMode(f.secret, 0600); st != nfsOK {
		t.Fatal(st)
	}
	if f.tmp, st = f.admin.mkdir(f.root, "tmp"); st != nfsOK {
		t.Fatal(st)
	}
	if st := f.admin.setattrMode(f.tmp, 0777); st != nfsOK {
		t.Fatal(st)
	}
	if f.pub, st = f.admin.mkdir(f.root, "pub"); st != nfsOK {
		t.Fatal(st)
	}
	if f.pubFile, st = f.admin.create(f.pub, "readme"); st != nfsOK {
		t.Fatal(st)
	}
	if st := f.admin.write(f.pubFile, 0, []byte("public"), fileSync); st != nfsOK {
		t.Fatal(st)
	}
	return f
}

// TestUnlistedAddressRefused: a client whose address no export lists is
// refused on every NFS procedure but NULL (AUTH_ERROR/AUTH_BADCRED, as
// knfsd answers a client mountd does not know), even with a valid handle
// it got elsewhere; its MNT is MNT3ERR_ACCES; the refusals are counted.
func TestUnlistedAddressRefused(t *testing.T) {
	f := newAccessFixture(t)
	c := dialFrom(t, f.ts, srcUnlisted, 0, 0, false)
	before := f.ts.srv.Refused()
	if _, err := c.rawCall(ProgNFS, VersNFS, procNull, nil); err != nil {
		t.Fatalf("NULL: %v", err)
	}
	for _, proc := range []uint32{procGetattr, procRead, procReaddir, procFsinfo} {
		_, err := c.rawCall(ProgNFS, VersNFS, proc, func(w *xdr.Writer) {
			w.Opaque(f.secret)
			w.Uint64(0)
			w.Uint64(0)
			w.Uint32(4096)
		})
		wantDenied(t, ProcNames[proc], err, rpc.AuthBadCred)
	}
	_, err := c.rawCall(ProgNFS, VersNFS, procCreate, func(w *xdr.Writer) { dirop(w, f.root, "x"); w.Uint32(0); emptySattr(w) })
	wantDenied(t, "create", err, rpc.AuthBadCred)
	if _, st := c.mnt("/strata"); st != 13 {
		t.Fatalf("MNT from an unlisted address: %d, want MNT3ERR_ACCES (13)", st)
	}
	if got := f.ts.srv.Refused() - before; got != 6 {
		t.Fatalf("refused counter grew by %d, want 6", got)
	}
	if names, _ := f.admin.readdir(f.root); slices.Contains(names, "x") {
		t.Fatal("the refused CREATE created x")
	}
}

// TestRootSquash: root on a root_squash export acts as 65534:65534: its
// new files are owned by 65534, it cannot read root's 0600 file (READ and
// ACCESS agree), cannot give a file to root with SETATTR or at CREATE,
// and its gid 0 in the supplementary groups does not count.
func TestRootSquash(t *testing.T) {
	f := newAccessFixture(t)
	c := dialFrom(t, f.ts, srcSquashed, 0, 0, false)
	root, st := c.mnt("/strata")
	if st != 0 || !bytes.Equal(root, f.root) {
		t.Fatalf("mnt: %d", st)
	}
	fh, st := c.create(f.tmp, "new")
	if st != nfsOK {
		t.Fatalf("create in a 0777 directory: %d", st)
	}
	if st, uid, gid := c.owner(fh); st != nfsOK || uid != 65534 || gid != 65534 {
		t.Fatalf("new file: status %d owner %d:%d, want 65534:65534", st, uid, gid)
	}
	dh, st := c.mkdir(f.tmp, "newdir")
	if st != nfsOK {
		t.Fatal(st)
	}
	if _, uid, gid := c.owner(dh); uid != 65534 || gid != 65534 {
		t.Fatalf("new directory owned by %d:%d", uid, gid)
	}
	if data, _, st := c.read(f.secret, 0, 100); st != errAcces || data != nil {
		t.Fatalf("READ of root's 0600 file: status %d data %q, want ACCES", st, data)
	}
	if g, st := c.access(f.secret, accessRead|accessModify); st != nfsOK || g != 0 {
		t.Fatalf("ACCESS of root's 0600 file: %#x (status %d), want nothing", g, st)
	}
	if st := c.write(f.secret, 0, []byte("x"), fileSync); st != errAcces {
		t.Fatalf("WRITE of root's 0600 file: %d", st)
	}
	if _, st := c.create(f.root, "top"); st != errAcces {
		t.Fatalf("CREATE in root's 0755 directory: %d, want ACCES", st)
	}
	// chown to root of its own file: PERM.
	_, st = c.call(procSetattr, func(w *xdr.Writer) {
		w.Opaque(fh)
		w.Bool(false)
		w.Bool(true)
		w.Uint32(0) // uid
		w.Bool(false)
		w.Bool(false)
		w.Uint32(0)
		w.Uint32(0)
		w.Bool(false)
	})
	if st != errPerm {
		t.Fatalf("SETATTR uid 0 by a squashed root: %d, want PERM", st)
	}
	// CREATE asking for owner 0 and a set-uid mode: PERM, nothing made.
	_, st = c.call(procCreate, func(w *xdr.Writer) {
		dirop(w, f.tmp, "suid")
		w.Uint32(0)
		w.Bool(true)
		w.Uint32(04755)
		w.Bool(true)
		w.Uint32(0) // uid
		w.Bool(false)
		w.Bool(false)
		w.Uint32(0)
		w.Uint32(0)
	})
	if st != errPerm {
		t.Fatalf("CREATE with uid 0 by a squashed root: %d, want PERM", st)
	}
	if _, st := f.admin.lookup(f.tmp, "suid"); st != errNoEnt {
		t.Fatalf("the refused create left suid behind (%d)", st)
	}
	// A user with gid 0 among its groups: squashed too (knfsd does).
	g := dialFrom(t, f.ts, srcSquashed, 1000, 1000, false)
	g.c.SetAuthSys(rpc.AuthSys{Machine: "test", UID: 1000, GID: 1000, GIDs: []uint32{0}})
	if st := f.admin.setattrMode(f.secret, 0640); st != nfsOK {
		t.Fatal(st)
	}
	if _, _, st := g.read(f.secret, 0, 100); st != errAcces {
		t.Fatalf("READ of a 0640 root:0 file with supplementary gid 0: %d, want ACCES", st)
	}
	// The admin (no_root_squash) reads it.
	if data, _, st := f.admin.read(f.secret, 0, 100); st != nfsOK || string(data) != "root's secret" {
		t.Fatalf("admin READ: %d %q", st, data)
	}
}

// TestAllSquash: everyone is anonuid:anongid on an all_squash export.
func TestAllSquash(t *testing.T) {
	f := newAccessFixture(t)
	for _, uid := range []uint32{0, 1234} {
		c := dialFrom(t, f.ts, srcAll, uid, uid, false)
		fh, st := c.create(f.tmp, fmt.Sprint("by", uid))
		if st != nfsOK {
			t.Fatal(st)
		}
		if _, u, g := c.owner(fh); u != 1000 || g != 1000 {
			t.Fatalf("uid %d's file owned by %d:%d, want 1000:1000", uid, u, g)
		}
	}
}

// TestReadOnlyExport: every modifying procedure on a read-only export is
// NFS3ERR_ROFS and changes nothing, even for root; reads work; ACCESS
// grants no modify, extend or delete bits.
func TestReadOnlyExport(t *testing.T) {
	f := newAccessFixture(t)
	c := dialFrom(t, f.ts, srcRO, 0, 0, false)
	root, st := c.mnt("/strata")
	if st != 0 {
		t.Fatal(st)
	}
	file, _ := c.lookup(f.pub, "readme")
	sattr := func(w *xdr.Writer) { emptySattr(w) }
	for _, tc := range []struct {
		proc  uint32
		build func(w *xdr.Writer)
	}{
		{procSetattr, func(w *xdr.Writer) { w.Opaque(file); sattr(w); w.Bool(false) }},
		{procWrite, func(w *xdr.Writer) {
			w.Opaque(file)
			w.Uint64(0)
			w.Uint32(1)
			w.Uint32(fileSync)
			w.Opaque([]byte("X"))
		}},
		{procCreate, func(w *xdr.Writer) { dirop(w, root, "c"); w.Uint32(0); sattr(w) }},
		{procMkdir, func(w *xdr.Writer) { dirop(w, root, "d"); sattr(w) }},
		{procSymlink, func(w *xdr.Writer) { dirop(w, root, "l"); sattr(w); w.String("target") }},
		{procMknod, func(w *xdr.Writer) { dirop(w, root, "n"); w.Uint32(uint32(fs.TypeFifo)); sattr(w) }},
		{procRemove, func(w *xdr.Writer) { dirop(w, f.pub, "readme") }},
		{procRmdir, func(w *xdr.Writer) { dirop(w, root, "tmp") }},
		{procRename, func(w *xdr.Writer) { dirop(w, f.pub, "readme"); dirop(w, root, "moved") }},
		{procLink, func(w *xdr.Writer) { w.Opaque(file); dirop(w, root, "hard") }},
	} {
		if _, st := c.call(tc.proc, tc.build); st != errROFS {
			t.Errorf("%s on a read-only export: %d, want ROFS", ProcNames[tc.proc], st)
		}
	}
	if names, _ := f.admin.readdir(f.root); len(names) != 5 { // . .. secret tmp pub
		t.Fatalf("the read-only export changed the root: %q", names)
	}
	if data, _, st := c.read(file, 0, 100); st != nfsOK || string(data) != "public" {
		t.Fatalf("READ: %d %q", st, data)
	}
	if _, st := c.call(procCommit, func(w *xdr.Writer) { w.Opaque(file); w.Uint64(0); w.Uint32(0) }); st != nfsOK {
		t.Fatalf("COMMIT: %d", st)
	}
	if g, st := c.access(file, 0x3f); st != nfsOK || g&(accessModify|accessExtend|accessDelete) != 0 || g&accessRead == 0 {
		t.Fatalf("ACCESS on a read-only export: %#x (%d)", g, st)
	}
}

// TestAuthNone: AUTH_NONE where the export needs AUTH_SYS is denied with
// AUTH_ERROR/AUTH_TOOWEAK, for NFS calls and MNT; NULL is answered; on a
// sec=sys:none export AUTH_NONE works as the anonymous user.
func TestAuthNone(t *testing.T) {
	f := newAccessFixture(t)
	c := dialFrom(t, f.ts, srcSquashed, 0, 0, true)
	if _, err := c.rawCall(ProgNFS, VersNFS, procNull, nil); err != nil {
		t.Fatal(err)
	}
	_, err := c.rawCall(ProgNFS, VersNFS, procGetattr, func(w *xdr.Writer) { w.Opaque(f.root) })
	wantDenied(t, "GETATTR", err, rpc.AuthTooWeak)
	_, err = c.rawCall(ProgNFS, VersNFS, procGetattr, func(w *xdr.Writer) { w.Opaque([]byte("forged")) })
	wantDenied(t, "GETATTR of a bad handle", err, rpc.AuthTooWeak)
	_, err = c.rawCall(ProgMount, VersMount, mntMnt, func(w *xdr.Writer) { w.String("/strata") })
	wantDenied(t, "MNT", err, rpc.AuthTooWeak)

	n := dialFrom(t, f.ts, srcNone, 0, 0, true)
	fh, st := n.create(f.tmp, "anon")
	if st != nfsOK {
		t.Fatalf("AUTH_NONE create on a sec=sys:none export: %d", st)
	}
	if _, uid, _ := n.owner(fh); uid != 65534 {
		t.Fatalf("AUTH_NONE's file owned by %d", uid)
	}
}

// handleWith builds a handle with the server's key, as only the server
// can: for the forged-handle tests that need a valid checksum.
func handleWith(s *Server, id uint32, ino uint64, gen uint32) []byte {
	return s.fh.encode(id, fs.Handle{Ino: fs.Inum(ino), Gen: gen})
}

// TestForgedHandles: handles a client made up are BADHANDLE (wrong
// length, magic or checksum: a client without the key cannot name a file
// it was not given) or STALE (an old-format handle, an unknown export, a
// wrong generation, an inode out of range or free), and never return data.
func TestForgedHandles(t *testing.T) {
	f := newAccessFixture(t)
	s := f.ts.srv
	id, good, err := s.fh.decode(f.secret)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := slices.Clone(f.secret)
		b[i] ^= 1
		return b
	}
	old := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte(fhOldMagic), uint64(good.Ino)), good.Gen)
	for _, tc := range []struct {
		name string
		fh   []byte
		want uint32
	}{
		{"empty", nil, errBadHandle},
		{"short", f.secret[:27], errBadHandle},
		{"long", append(slices.Clone(f.secret), 0), errBadHandle},
		{"magic", flip(0), errBadHandle},
		{"export id", flip(5), errBadHandle},
		{"inode", flip(15), errBadHandle},
		{"generation", flip(19), errBadHandle},
		{"checksum", flip(27), errBadHandle},
		{"old format", old, errStale},
		{"unknown export", handleWith(s, id+1, uint64(good.Ino), good.Gen), errStale},
		{"wrong generation", handleWith(s, id, uint64(good.Ino), good.Gen+1), errStale},
		{"inode 0", handleWith(s, id, 0, 0), errStale},
		{"inode out of range", handleWith(s, id, 1<<40, good.Gen), errStale},
		{"free inode", handleWith(s, id, 4000, 0), errStale},
	} {
		if data, _, st := f.admin.read(tc.fh, 0, 100); st != tc.want || data != nil {
			t.Errorf("READ of a %s handle: status %d data %q, want %d", tc.name, st, data, tc.want)
		}
		if st, _, _ := f.admin.owner(tc.fh); st != tc.want {
			t.Errorf("GETATTR of a %s handle: %d, want %d", tc.name, st, tc.want)
		}
		if _, st := f.admin.lookup(tc.fh, "x"); st != tc.want {
			t.Errorf("LOOKUP in a %s handle: %d, want %d", tc.name, st, tc.want)
		}
	}
	// The genuine handle still reads.
	if data, _, st := f.admin.read(f.secret, 0, 100); st != nfsOK || string(data) != "root's secret" {
		t.Fatalf("READ of the real handle: %d %q", st, data)
	}
}

// TestOtherExport: a client admitted only to /strata/pub mounts it, not
// /strata; handles of /strata are STALE for it even for files inside pub;
// ".." of its export's root is the root itself (LOOKUP), and READDIRPLUS
// gives no handle for it; RENAME and LINK between handles of two exports
// are XDEV.
func TestOtherExport(t *testing.T) {
	f := newAccessFixture(t)
	c := dialFrom(t, f.ts, srcPub, 0, 0, false)
	if _, st := c.mnt("/strata"); st != 13 {
		t.Fatalf("MNT /strata from a client of /strata/pub only: %d, want ACCES", st)
	}
	pubRoot, st := c.mnt("/strata/pub")
	if st != 0 {
		t.Fatalf("MNT /strata/pub: %d", st)
	}
	if bytes.Equal(pubRoot, f.pub) {
		t.Fatal("the pub export's root handle equals /strata's handle of pub")
	}
	for name, fh := range map[string][]byte{"root": f.root, "pub": f.pub, "pub/readme": f.pubFile, "secret": f.secret} {
		if data, _, st := c.read(fh, 0, 100); st != errStale || data != nil {
			t.Errorf("READ of /strata's %s handle: %d %q, want STALE", name, st, data)
		}
		if st, _, _ := c.owner(fh); st != errStale {
			t.Errorf("GETATTR of /strata's %s handle: %d, want STALE", name, st)
		}
	}
	up, st := c.lookup(pubRoot, "..")
	if st != nfsOK || !bytes.Equal(up, pubRoot) {
		t.Fatalf("LOOKUP .. of the export's root: %d, not the root itself", st)
	}
	r, st := c.call(procReaddirplus, func(w *xdr.Writer) {
		w.Opaque(pubRoot)
		w.Uint64(0)
		w.Uint64(0)
		w.Uint32(4096)
		w.Uint32(65536)
	})
	if st != nfsOK {
		t.Fatal(st)
	}
	skipPostOp(r)
	r.Uint64()
	var sawDotDot bool
	for r.Bool() {
		r.Uint64()
		name := r.String(4096)
		r.Uint64()
		hasAttr := r.Bool()
		if hasAttr {
			skipFattr(r)
		}
		hasFH := r.Bool()
		var fh []byte
		if hasFH {
			fh = r.Opaque(MaxFH)
		}
		if name == ".." {
			sawDotDot = true
			if hasAttr || hasFH {
				t.Fatalf("READDIRPLUS gives .. of the export's root: handle %x", fh)
			}
		}
	}
	if r.Err() != nil || !sawDotDot {
		t.Fatalf("READDIRPLUS: %v, .. listed %v", r.Err(), sawDotDot)
	}
	// The file through its own export reads.
	file, st := c.lookup(pubRoot, "readme")
	if st != nfsOK {
		t.Fatal(st)
	}
	if data, _, st := c.read(file, 0, 100); st != nfsOK || string(data) != "public" {
		t.Fatalf("READ through /strata/pub: %d %q", st, data)
	}
	// The admin has both exports: mixing their handles is XDEV.
	apub, st := f.admin.mnt("/strata/pub")
	if st != 0 {
		t.Fatal(st)
	}
	if _, st := f.admin.call(procRename, func(w *xdr.Writer) { dirop(w, apub, "readme"); dirop(w, f.root, "stolen") }); st != errXDev {
		t.Fatalf("RENAME across exports: %d, want XDEV", st)
	}
	if _, st := f.admin.call(procLink, func(w *xdr.Writer) { w.Opaque(f.secret); dirop(w, apub, "secret") }); st != errXDev {
		t.Fatalf("LINK across exports: %d, want XDEV", st)
	}
}

// TestMountExports: MNT of a path no export covers is MNT3ERR_NOENT, of a
// missing directory below an export NOENT, of a file NOTDIR; EXPORT lists
// every export with its client patterns.
func TestMountExports(t *testing.T) {
	f := newAccessFixture(t)
	for path, want := range map[string]uint32{
		"/other": 2, "/": 2, "/strat": 2, "/strataX": 2, "relative": 2,
		"/strata/nothing": 2, "/strata/secret": 20, "/strata/tmp": 0, "/strata/pub/": 0,
	} {
		if _, st := f.admin.mnt(path); st != want {
			t.Errorf("MNT %q: %d, want %d", path, st, want)
		}
	}
	res, err := f.admin.rawCall(ProgMount, VersMount, mntExport, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := xdr.NewReader(res)
	got := map[string][]string{}
	for r.Bool() {
		p := r.String(maxPath)
		for r.Bool() {
			got[p] = append(got[p], r.String(255))
		}
	}
	want := map[string][]string{
		"/strata":     {"127.0.0.1", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"},
		"/strata/pub": {"127.0.0.7", "127.0.0.3"},
	}
	if r.Err() != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("EXPORT: %v (%v), want %v", got, r.Err(), want)
	}
}

// TestProgramsAndVersions: other programs are PROG_UNAVAIL, other versions
// of NFS and MOUNT PROG_MISMATCH with the supported range (3 to 3).
func TestProgramsAndVersions(t *testing.T) {
	f := newAccessFixture(t)
	for _, tc := range []struct{ prog, vers uint32 }{{ProgNFS, 2}, {ProgNFS, 4}, {ProgMount, 1}} {
		_, err := f.admin.rawCall(tc.prog, tc.vers, 0, nil)
		var re *rpc.ReplyError
		if !errors.As(err, &re) || re.Denied || re.Accept != rpc.ProgMismatch || re.Low != 3 || re.High != 3 {
			t.Errorf("program %d version %d: %v, want PROG_MISMATCH 3..3", tc.prog, tc.vers, err)
		}
	}
	_, err := f.admin.rawCall(100227, 3, 0, nil) // NFS_ACL
	if !errors.Is(err, &rpc.ReplyError{Accept: rpc.ProgUnavail}) {
		t.Fatalf("NFS_ACL: %v, want PROG_UNAVAIL", err)
	}
}

// TestStickyDirectory: in a 1777 directory a user may not remove or
// rename over another user's file; its own it may.
func TestStickyDirectory(t *testing.T) {
	f := newAccessFixture(t)
	if st := f.admin.setattrMode(f.tmp, 01777); st != nfsOK {
		t.Fatal(st)
	}
	a := dialFrom(t, f.ts, srcSquashed, 1000, 1000, false)
	b := dialFrom(t, f.ts, srcSquashed, 1001, 1001, false)
	if _, st := a.create(f.tmp, "a"); st != nfsOK {
		t.Fatal(st)
	}
	if _, st := b.create(f.tmp, "b"); st != nfsOK {
		t.Fatal(st)
	}
	if _, st := b.call(procRemove, func(w *xdr.Writer) { dirop(w, f.tmp, "a") }); st != errAcces {
		t.Fatalf("REMOVE of another user's file in a sticky directory: %d", st)
	}
	if _, st := b.call(procRename, func(w *xdr.Writer) { dirop(w, f.tmp, "b"); dirop(w, f.tmp, "a") }); st != errAcces {
		t.Fatalf("RENAME over another user's file in a sticky directory: %d", st)
	}
	if _, st := b.call(procRename, func(w *xdr.Writer) { dirop(w, f.tmp, "a"); dirop(w, f.tmp, "c") }); st != errAcces {
		t.Fatalf("RENAME of another user's file in a sticky directory: %d", st)
	}
	if _, st := b.call(procRename, func(w *xdr.Writer) { dirop(w, f.tmp, "b"); dirop(w, f.tmp, "b2") }); st != nfsOK {
		t.Fatalf("RENAME of its own file: %d", st)
	}
	if _, st := a.call(procRemove, func(w *xdr.Writer) { dirop(w, f.tmp, "a") }); st != nfsOK {
		t.Fatalf("REMOVE of its own file: %d", st)
	}
}
