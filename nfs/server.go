// Package nfs is Strata's NFSv3 file server (RFC 1813) with its MOUNT v3
// service, after GoNFS: every NFS operation is one atomic operation of the
// file system on the journal (package nfs/fs), so a crash at any moment
// leaves a consistent file system and loses nothing acknowledged as
// stable.
//
// Guaranteed: every well-formed call gets a reply with the RFC's status
// codes, post-operation attributes and wcc data; arguments that do not
// decode get GARBAGE_ARGS; WRITE with DATA_SYNC or FILE_SYNC and COMMIT
// return only once the data is durable, and the write verifier changes on
// every start, so clients resend UNSTABLE data a crash may have lost.
//
// Assumed: clients are trusted to send their real AUTH_SYS identity (as
// with any AUTH_SYS server); permissions are evaluated for ACCESS and for
// owner/group/other mode bits, root (uid 0) is not squashed.
package nfs

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"strata/nfs/fs"
	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// Server answers NFSv3 and MOUNT v3 calls for one file system.
type Server struct {
	fs     *fs.FS
	export string
	verf   uint64 // the write verifier of this run
	log    *slog.Logger
	calls  [nProcs]atomic.Uint64
	errs   atomic.Uint64 // replies with a status other than NFS3_OK
}

// NewServer serves f under the export path export (e.g. "/strata").
func NewServer(f *fs.FS, export string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		binary.BigEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
	}
	return &Server{fs: f, export: export, verf: binary.BigEndian.Uint64(b[:]), log: log}
}

// Register adds the NFS and MOUNT programs to an RPC server.
func (s *Server) Register(r *rpc.Server) {
	r.Register(ProgNFS, VersNFS, s.nfs)
	r.Register(ProgMount, VersMount, s.mount)
}

// Calls returns how many calls of each procedure were answered, indexed
// like ProcNames, and how many replies carried an error status.
func (s *Server) Calls() (perProc [nProcs]uint64, errors uint64) {
	for i := range s.calls {
		perProc[i] = s.calls[i].Load()
	}
	return perProc, s.errs.Load()
}

func now() fs.Time {
	t := time.Now()
	return fs.Time{Sec: uint32(t.Unix()), Nsec: uint32(t.Nanosecond())}
}

// caller is the credential of a call: AUTH_SYS, or nobody for AUTH_NONE.
type caller struct {
	uid, gid uint32
	gids     []uint32
}

func callerOf(c *rpc.Call) caller {
	if c.Sys != nil {
		return caller{uid: c.Sys.UID, gid: c.Sys.GID, gids: c.Sys.GIDs}
	}
	return caller{uid: 65534, gid: 65534}
}

func (s *Server) nfs(_ context.Context, c *rpc.Call, w *xdr.Writer) rpc.AcceptStat {
	if c.Proc >= nProcs {
		return rpc.ProcUnavail
	}
	s.calls[c.Proc].Add(1)
	switch c.Proc {
	case procCommit, procSetattr, procCreate, procMkdir, procSymlink, procMknod, procRemove, procRmdir, procRename, procLink:
		// COMMIT waits for the disk; so do metadata operations when they
		// are durable on return: let the connection's other calls proceed
		// meanwhile (see rpc.Call.Detach). Stable WRITEs detach in write.
		if c.Proc == procCommit || s.fs.SyncMetadata() {
			c.Detach()
		}
	}
	r := c.Args
	var st uint32
	var err error
	switch c.Proc {
	case procNull:
		return rpc.Success
	case procGetattr:
		st, err = s.getattr(r, w)
	case procSetattr:
		st, err = s.setattr(r, w, callerOf(c))
	case procLookup:
		st, err = s.lookup(r, w, callerOf(c))
	case procAccess:
		st, err = s.access(r, w, callerOf(c))
	case procReadlink:
		st, err = s.readlink(r, w)
	case procRead:
		st, err = s.read(r, w, callerOf(c))
	case procWrite:
		st, err = s.write(r, w, callerOf(c), c)
	case procCreate, procMkdir, procSymlink, procMknod:
		st, err = s.create(c.Proc, r, w, callerOf(c))
	case procRemove, procRmdir:
		st, err = s.remove(c.Proc, r, w, callerOf(c))
	case procRename:
		st, err = s.rename(r, w, callerOf(c))
	case procLink:
		st, err = s.link(r, w, callerOf(c))
	case procReaddir, procReaddirplus:
		st, err = s.readdir(c.Proc == procReaddirplus, r, w, callerOf(c))
	case procFsstat:
		st, err = s.fsstat(r, w)
	case procFsinfo:
		st, err = s.fsinfo(r, w)
	case procPathconf:
		st, err = s.pathconf(r, w)
	case procCommit:
		st, err = s.commit(r, w)
	}
	if errors.Is(err, errGarbage) || (err != nil && errors.Is(err, xdr.ErrMalformed)) {
		w.Reset()
		return rpc.GarbageArgs
	}
	if st != nfsOK {
		s.errs.Add(1)
		if ce, ok := errors.AsType[*fs.CorruptError](err); ok {
			s.logDamage(ProcNames[c.Proc], ce)
		} else {
			s.log.Debug("nfs: error reply", "proc", ProcNames[c.Proc], "status", st, "err", err)
		}
	}
	return rpc.Success
}

// logDamage reports damage an operation found in the image (the call
// fails with NFS3ERR_IO, or MNT3ERR_IO): the operator must hear of it.
func (s *Server) logDamage(proc string, ce *fs.CorruptError) {
	s.log.Error("nfs: damaged file system (stop the server and run strata nfs fsck on the image)",
		"proc", proc, "inode", ce.Inode, "block", ce.Block, "damage", ce.Detail)
}

// args finishes decoding: undecodable or trailing-garbage arguments are
// GARBAGE_ARGS.
func args(r *xdr.Reader) error {
	if r.Err() != nil {
		return errGarbage
	}
	return nil
}

// fhArg reads a file handle argument; a malformed handle is a status
// (BADHANDLE), not garbage.
func fhArg(r *xdr.Reader) (fs.Handle, uint32, error) {
	h, err := readFH(r)
	if r.Err() != nil {
		return h, 0, errGarbage
	}
	if err != nil {
		return h, errBadHandle, nil
	}
	return h, nfsOK, nil
}

func (s *Server) getattr(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = s.fs.GetAttr(h)
		st = status(err)
	}
	w.Uint32(st)
	if st == nfsOK {
		putFattr(w, a)
	}
	return st, err
}

func (s *Server) setattr(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	sa, err := readSattr(r)
	if err != nil {
		return 0, err
	}
	var guard *fs.Time
	if r.Bool() {
		g := getTime(r)
		guard = &g
	}
	if err := args(r); err != nil {
		return 0, err
	}
	if st != nfsOK {
		w.Uint32(st)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return st, nil
	}
	err = s.mayChange(h, sa, c)
	var pre fs.WCC
	var post fs.Attr
	if err == nil {
		pre, post, err = s.fs.SetAttr(h, sa, guard, now())
	}
	return s.wccResult(w, h, pre, post, err)
}

// wccResult writes the status and wcc data of a change to one object: the
// pre- and post-operation attributes on success; on failure the object's
// current attributes, if it still has any.
func (s *Server) wccResult(w *xdr.Writer, h fs.Handle, pre fs.WCC, post fs.Attr, err error) (uint32, error) {
	st := status(err)
	w.Uint32(st)
	if err != nil {
		a, aerr := s.fs.GetAttr(h)
		wcc(w, fs.WCC{}, false, a, aerr == nil)
		return st, err
	}
	wcc(w, pre, true, post, true)
	return st, nil
}

func (s *Server) lookup(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, name, err := readDirop(r)
	if r.Err() != nil {
		return 0, errGarbage
	}
	if err != nil {
		w.Uint32(errBadHandle)
		postOp(w, fs.Attr{}, false)
		return errBadHandle, err
	}
	var h fs.Handle
	var a, da fs.Attr
	if err = s.may(dir, c, permX, false); err == nil {
		h, a, da, err = s.fs.Lookup(dir, name)
	}
	st := status(err)
	w.Uint32(st)
	if err != nil {
		d, derr := s.fs.GetAttr(dir)
		postOp(w, d, derr == nil)
		return st, err
	}
	w.Opaque(encodeFH(h))
	postOp(w, a, true)
	postOp(w, da, true)
	return st, nil
}

// Permission bits of a mode triplet.
const (
	permR = 4
	permW = 2
	permX = 1
)

// Errors of permission checks (ACCES and PERM).
var (
	errAccessDenied = errors.New("nfs: permission denied")
	errNotOwner     = errors.New("nfs: operation reserved to the owner")
)

// bits returns the mode triplet that applies to c on a.
func (c caller) bits(a fs.Attr) uint32 {
	switch {
	case c.uid == a.UID:
		return (a.Mode >> 6) & 7
	case inGroup(c, a.GID):
		return (a.Mode >> 3) & 7
	}
	return a.Mode & 7
}

// may checks that c has the want bits on h (root has every bit; with
// ownerOK the owner may read and write its file whatever the mode, as
// Linux's NFS server allows so that a file created read-only can be
// written through the descriptor that created it).
func (s *Server) may(h fs.Handle, c caller, want uint32, ownerOK bool) error {
	a, err := s.fs.GetAttr(h)
	if err != nil {
		return err
	}
	return c.allowed(a, want, ownerOK)
}

// allowed is may's check on a file's attributes.
func (c caller) allowed(a fs.Attr, want uint32, ownerOK bool) error {
	if c.uid == 0 || (ownerOK && c.uid == a.UID) || c.bits(a)&want == want {
		return nil
	}
	return errAccessDenied
}

// mayChange checks a SETATTR: a size change needs write permission;
// mode and explicit times are the owner's (or root's) to set, times set
// to the server's clock need write permission; a new owner needs root, a
// new group the owner being in it.
func (s *Server) mayChange(h fs.Handle, sa fs.SetAttr, c caller) error {
	a, err := s.fs.GetAttr(h)
	if err != nil || c.uid == 0 {
		return err
	}
	owner := c.uid == a.UID
	writable := owner || c.bits(a)&permW != 0
	switch {
	case sa.Size != nil && !writable:
		return errAccessDenied
	case sa.Mode != nil && !owner:
		return errNotOwner
	case (sa.Atime == fs.ClientTime || sa.Mtime == fs.ClientTime) && !owner:
		return errNotOwner
	case (sa.Atime == fs.ServerTime || sa.Mtime == fs.ServerTime) && !writable:
		return errAccessDenied
	case sa.UID != nil && *sa.UID != a.UID:
		return errNotOwner
	case sa.GID != nil && *sa.GID != a.GID && (!owner || !inGroup(c, *sa.GID)):
		return errNotOwner
	}
	return nil
}

// granted computes the ACCESS bits of asked that c has on a.
func granted(a fs.Attr, asked uint32, c caller) uint32 {
	var rwx uint32
	switch {
	case c.uid == 0:
		rwx = 7
		if a.Type != fs.TypeDir && a.Mode&0111 == 0 {
			rwx = 6 // root executes only what someone may execute
		}
	case c.uid == a.UID:
		rwx = (a.Mode >> 6) & 7
	case inGroup(c, a.GID):
		rwx = (a.Mode >> 3) & 7
	default:
		rwx = a.Mode & 7
	}
	var g uint32
	if rwx&4 != 0 {
		g |= accessRead
	}
	if rwx&2 != 0 {
		g |= accessModify | accessExtend
		if a.Type == fs.TypeDir {
			g |= accessDelete
		}
	}
	if rwx&1 != 0 {
		if a.Type == fs.TypeDir {
			g |= accessLookup
		} else {
			g |= accessExecute
		}
	}
	return g & asked
}

func inGroup(c caller, gid uint32) bool {
	if c.gid == gid {
		return true
	}
	for _, g := range c.gids {
		if g == gid {
			return true
		}
	}
	return false
}

func (s *Server) access(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	asked := r.Uint32()
	if err := args(r); err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = s.fs.GetAttr(h)
		st = status(err)
	}
	w.Uint32(st)
	postOp(w, a, st == nfsOK)
	if st == nfsOK {
		w.Uint32(granted(a, asked, c))
	}
	return st, err
}

func (s *Server) readlink(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	var target string
	var a fs.Attr
	if st == nfsOK {
		target, a, err = s.fs.Readlink(h)
		st = status(err)
	}
	w.Uint32(st)
	postOp(w, a, st == nfsOK)
	if st == nfsOK {
		w.String(target)
	}
	return st, err
}

func (s *Server) read(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	off, count := r.Uint64(), r.Uint32()
	if err := args(r); err != nil {
		return 0, err
	}
	if st != nfsOK {
		w.Uint32(st)
		postOp(w, fs.Attr{}, false)
		return st, nil
	}
	// The data is read straight into the reply, after a place for the
	// attributes, count and eof, which are known only then (fattr3 has a
	// fixed size).
	start := w.Len()
	w.Uint32(nfsOK)
	w.Bool(true)
	attrAt := w.Len()
	putFattr(w, fs.Attr{})
	countAt := w.Len()
	w.Uint32(0) // count
	w.Bool(false)
	t := now()
	var n int
	var eof bool
	var a fs.Attr
	err = w.OpaqueFunc(int(min(count, MaxIO)), func(p []byte) (int, error) {
		var err error
		n, eof, a, err = s.fs.ReadAt(h, off, p, &t, func(a fs.Attr) error { return c.allowed(a, permR, true) })
		return n, err
	})
	if err != nil {
		w.Truncate(start)
		st = status(err)
		w.Uint32(st)
		postOp(w, fs.Attr{}, false)
		return st, err
	}
	var ab [fattrSize]byte
	aw := xdr.NewWriter(ab[:0])
	putFattr(aw, a)
	copy(w.Bytes()[attrAt:countAt], aw.Bytes())
	w.PutUint32At(countAt, uint32(n))
	if eof {
		w.PutUint32At(countAt+4, 1)
	}
	return st, nil
}

// fattrSize is the size of an encoded fattr3.
const fattrSize = 84

func (s *Server) write(r *xdr.Reader, w *xdr.Writer, c caller, call *rpc.Call) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	off, count, stable := r.Uint64(), r.Uint32(), r.Uint32()
	data := r.Opaque(MaxIO)
	if err := args(r); err != nil || stable > fileSync {
		return 0, errGarbage
	}
	if st == nfsOK && count != uint32(len(data)) {
		st = errInval
	}
	if st != nfsOK {
		w.Uint32(st)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return st, nil
	}
	if stable != unstable {
		call.Detach() // it waits for the disk
	}
	pre, post, err := s.fs.WriteChecked(h, off, data, stable != unstable, now(),
		func(a fs.Attr) error { return c.allowed(a, permW, true) })
	if st, err = s.wccResult(w, h, pre, post, err); err != nil {
		return st, err
	}
	w.Uint32(uint32(len(data)))
	if stable != unstable {
		w.Uint32(fileSync) // durable, data and metadata
	} else {
		w.Uint32(unstable)
	}
	w.Uint64(s.verf)
	return st, nil
}

// create handles CREATE, MKDIR, SYMLINK and MKNOD, which share their
// result: the new object's handle and attributes, and the directory's wcc.
func (s *Server) create(proc uint32, r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, name, ferr := readDirop(r)
	if r.Err() != nil {
		return 0, errGarbage
	}
	var (
		sa     fs.SetAttr
		err    error
		mode   = fs.Unchecked
		verf   uint64
		target string
		ftype  fs.FileType
		major  uint32
		minor  uint32
	)
	switch proc {
	case procCreate:
		switch how := r.Uint32(); how {
		case 0, 1:
			mode = fs.Unchecked
			if how == 1 {
				mode = fs.Guarded
			}
			sa, err = readSattr(r)
		case 2:
			mode = fs.Exclusive
			verf = r.Uint64()
		default:
			return 0, errGarbage
		}
	case procMkdir:
		sa, err = readSattr(r)
	case procSymlink:
		sa, err = readSattr(r)
		target = r.String(-1) // nfspath3 has no bound; fs says NAMETOOLONG beyond MaxSymlink
	case procMknod:
		ftype = fs.FileType(r.Uint32())
		switch ftype {
		case fs.TypeChr, fs.TypeBlk:
			sa, err = readSattr(r)
			major, minor = r.Uint32(), r.Uint32()
		case fs.TypeSock, fs.TypeFifo:
			sa, err = readSattr(r)
		}
	}
	if err != nil {
		return 0, err
	}
	if err := args(r); err != nil {
		return 0, err
	}
	fail := func(st uint32, err error) (uint32, error) {
		w.Uint32(st)
		var d fs.Attr
		derr := errBadFH
		if ferr == nil {
			d, derr = s.fs.GetAttr(dir)
		}
		wcc(w, fs.WCC{}, false, d, derr == nil)
		return st, err
	}
	if ferr != nil {
		return fail(errBadHandle, ferr)
	}
	if proc == procMknod && ftype != fs.TypeChr && ftype != fs.TypeBlk && ftype != fs.TypeSock && ftype != fs.TypeFifo {
		return fail(errBadType, nil)
	}
	t := now()
	var (
		h        fs.Handle
		a, after fs.Attr
		pre      fs.WCC
	)
	if err := s.may(dir, c, permW|permX, false); err != nil {
		return fail(status(err), err)
	}
	switch proc {
	case procCreate:
		h, a, pre, after, err = s.fs.Create(dir, name, mode, sa, verf, c.uid, c.gid, t)
	case procMkdir:
		h, a, pre, after, err = s.fs.Mkdir(dir, name, sa, c.uid, c.gid, t)
	case procSymlink:
		h, a, pre, after, err = s.fs.Symlink(dir, name, target, sa, c.uid, c.gid, t)
	case procMknod:
		h, a, pre, after, err = s.fs.Mknod(dir, name, ftype, major, minor, sa, c.uid, c.gid, t)
	}
	if err != nil {
		return fail(status(err), err)
	}
	w.Uint32(nfsOK)
	postFH(w, h, true)
	postOp(w, a, true)
	wcc(w, pre, true, after, true)
	return nfsOK, nil
}

func (s *Server) remove(proc uint32, r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, name, err := readDirop(r)
	if r.Err() != nil {
		return 0, errGarbage
	}
	if err != nil {
		w.Uint32(errBadHandle)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return errBadHandle, err
	}
	var pre fs.WCC
	var post fs.Attr
	switch err = s.may(dir, c, permW|permX, false); {
	case err != nil:
	case proc == procRemove:
		pre, post, err = s.fs.Remove(dir, name, now())
	default:
		pre, post, err = s.fs.Rmdir(dir, name, now())
	}
	return s.wccResult(w, dir, pre, post, err)
}

func (s *Server) rename(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	from, fname, ferr := readDirop(r)
	to, tname, terr := readDirop(r)
	if err := args(r); err != nil {
		return 0, err
	}
	if ferr != nil || terr != nil {
		w.Uint32(errBadHandle)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return errBadHandle, errors.Join(ferr, terr)
	}
	var fpre, tpre fs.WCC
	var fpost, tpost fs.Attr
	err := s.may(from, c, permW|permX, false)
	if err == nil {
		err = s.may(to, c, permW|permX, false)
	}
	if err == nil {
		fpre, fpost, tpre, tpost, err = s.fs.Rename(from, fname, to, tname, now())
	}
	st := status(err)
	w.Uint32(st)
	if err != nil {
		fa, faErr := s.fs.GetAttr(from)
		ta, taErr := s.fs.GetAttr(to)
		wcc(w, fs.WCC{}, false, fa, faErr == nil)
		wcc(w, fs.WCC{}, false, ta, taErr == nil)
		return st, err
	}
	wcc(w, fpre, true, fpost, true)
	wcc(w, tpre, true, tpost, true)
	return st, nil
}

func (s *Server) link(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, hst, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	dir, name, derr := readDirop(r)
	if err := args(r); err != nil {
		return 0, err
	}
	if hst != nfsOK || derr != nil {
		w.Uint32(errBadHandle)
		postOp(w, fs.Attr{}, false)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return errBadHandle, derr
	}
	var a, post fs.Attr
	var pre fs.WCC
	err = s.may(dir, c, permW|permX, false)
	if err == nil {
		a, pre, post, err = s.fs.Link(h, dir, name, now())
	}
	st := status(err)
	w.Uint32(st)
	if err != nil {
		fa, faErr := s.fs.GetAttr(h)
		da, daErr := s.fs.GetAttr(dir)
		postOp(w, fa, faErr == nil)
		wcc(w, fs.WCC{}, false, da, daErr == nil)
		return st, err
	}
	postOp(w, a, true)
	wcc(w, pre, true, post, true)
	return st, nil
}

// Sizes used to bound READDIR replies: an entry3 costs its fixed fields
// plus the name; entryplus3 adds attributes and a handle.
const (
	entryFixed     = 4 + 8 + 4 + 8       // value_follows, fileid, name length, cookie
	entryPlusExtra = 4 + 84 + 4 + 4 + 16 // post_op_attr, post_op_fh3
	readdirFixed   = 4 + 4 + 84 + 8 + 4 + 4
)

func (s *Server) readdir(plus bool, r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	cookie, verf := r.Uint64(), r.Uint64()
	count := r.Uint32() // READDIR: reply bytes; READDIRPLUS: dircount
	maxcount := count
	if plus {
		maxcount = r.Uint32()
	}
	if err := args(r); err != nil {
		return 0, err
	}
	if st != nfsOK {
		w.Uint32(st)
		postOp(w, fs.Attr{}, false)
		return st, nil
	}
	// Ask for as many entries as could fit, then trim to the byte limits.
	perEntry := entryFixed + 8
	if plus {
		perEntry += entryPlusExtra
	}
	want := max(1, int(maxcount)/perEntry+1)
	var entries []fs.DirEntry
	var eof bool
	var newVerf uint64
	var da fs.Attr
	if err = s.may(dir, c, permR, false); err == nil {
		entries, eof, newVerf, da, err = s.fs.ReadDir(dir, cookie, verf, min(want, 4096), plus)
	}
	st = status(err)
	if err != nil {
		w.Uint32(st)
		d, derr := s.fs.GetAttr(dir)
		postOp(w, d, derr == nil)
		return st, err
	}
	used := readdirFixed
	dirBytes := 0
	n := 0
	for _, e := range entries {
		sz := entryFixed + (len(e.Name)+3)&^3
		dsz := sz
		if plus {
			sz += entryPlusExtra
		}
		if used+sz > int(maxcount) || (plus && dirBytes+dsz > int(count)) {
			eof = false
			break
		}
		used += sz
		dirBytes += dsz
		n++
	}
	if n == 0 && len(entries) > 0 {
		w.Uint32(errTooSmall)
		postOp(w, da, true)
		return errTooSmall, nil
	}
	w.Uint32(nfsOK)
	postOp(w, da, true)
	w.Uint64(newVerf)
	for _, e := range entries[:n] {
		w.Bool(true)
		w.Uint64(uint64(e.Ino))
		w.String(e.Name)
		w.Uint64(e.Cookie)
		if plus {
			postOp(w, e.Attr, true)
			postFH(w, e.Handle, true)
		}
	}
	w.Bool(false)
	w.Bool(eof)
	return nfsOK, nil
}

func (s *Server) fsstat(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = s.fs.GetAttr(h)
		st = status(err)
	}
	var stat fs.Stat
	if st == nfsOK {
		stat, err = s.fs.Stat()
		st = status(err)
	}
	w.Uint32(st)
	postOp(w, a, st == nfsOK)
	if st == nfsOK {
		w.Uint64(stat.TotalBytes)
		w.Uint64(stat.FreeBytes)
		w.Uint64(stat.AvailBytes)
		w.Uint64(stat.TotalFiles)
		w.Uint64(stat.FreeFiles)
		w.Uint64(stat.FreeFiles)
		w.Uint32(0) // invarsec: the values change at any time
	}
	return st, err
}

// attrReply decodes a lone file handle argument and writes the status and
// the object's post-operation attributes, which FSINFO and PATHCONF
// results start with. Undecodable arguments return errGarbage (the
// dispatcher discards whatever was written).
func (s *Server) attrReply(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return errServerFault, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = s.fs.GetAttr(h)
		st = status(err)
	}
	w.Uint32(st)
	postOp(w, a, st == nfsOK)
	return st, err
}

func (s *Server) fsinfo(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	st, err := s.attrReply(r, w)
	if st == nfsOK {
		w.Uint32(MaxIO)    // rtmax
		w.Uint32(64 << 10) // rtpref
		w.Uint32(4096)     // rtmult
		w.Uint32(MaxIO)    // wtmax
		w.Uint32(64 << 10) // wtpref
		w.Uint32(4096)     // wtmult
		w.Uint32(64 << 10) // dtpref
		w.Uint64(fs.MaxFileSize)
		putTime(w, fs.Time{Sec: 0, Nsec: 1})
		w.Uint32(0x1 | 0x2 | 0x8 | 0x10) // LINK, SYMLINK, HOMOGENEOUS, CANSETTIME
	}
	return st, err
}

func (s *Server) pathconf(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	st, err := s.attrReply(r, w)
	if st == nfsOK {
		w.Uint32(fs.MaxLinks) // linkmax
		w.Uint32(fs.MaxName)
		w.Bool(true)  // no_trunc: long names are refused, not truncated
		w.Bool(true)  // chown_restricted
		w.Bool(false) // case_insensitive
		w.Bool(true)  // case_preserving
	}
	return st, err
}

func (s *Server) commit(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := fhArg(r)
	if err != nil {
		return 0, err
	}
	_, _ = r.Uint64(), r.Uint32() // offset and count: everything is flushed
	if err := args(r); err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		if a, err = s.fs.GetAttr(h); err == nil {
			err = s.fs.FlushFile(h)
		}
		st = status(err)
	}
	w.Uint32(st)
	wcc(w, fs.WCC{}, false, a, st == nfsOK)
	if st == nfsOK {
		w.Uint64(s.verf)
	}
	return st, err
}

// mountPoint resolves a MNT path: the export, or a directory under it
// (as NFS servers commonly allow, and libnfs relies on for URLs whose
// file is in a subdirectory). It returns a mountstat3.
func (s *Server) mountPoint(path string) (fs.Handle, uint32) {
	rest, ok := strings.CutPrefix(path, strings.TrimSuffix(s.export, "/"))
	if !ok || (rest != "" && rest[0] != '/') {
		return fs.Handle{}, 2 // MNT3ERR_NOENT
	}
	h := s.fs.Root()
	for _, name := range strings.Split(rest, "/") {
		if name == "" {
			continue
		}
		next, a, _, err := s.fs.Lookup(h, name)
		switch {
		case errors.Is(err, fs.ErrNoEnt):
			return fs.Handle{}, 2
		case errors.Is(err, fs.ErrNotDir):
			return fs.Handle{}, 20 // MNT3ERR_NOTDIR
		case err != nil:
			if ce, ok := errors.AsType[*fs.CorruptError](err); ok {
				s.logDamage("mnt", ce)
			}
			return fs.Handle{}, 5 // MNT3ERR_IO
		case a.Type != fs.TypeDir:
			return fs.Handle{}, 20
		}
		h = next
	}
	return h, 0
}

// MOUNT v3 (RFC 1813 appendix I).
const (
	mntNull = iota
	mntMnt
	mntDump
	mntUmnt
	mntUmntall
	mntExport
)

func (s *Server) mount(_ context.Context, c *rpc.Call, w *xdr.Writer) rpc.AcceptStat {
	r := c.Args
	switch c.Proc {
	case mntNull, mntUmntall:
		return rpc.Success
	case mntMnt:
		path := r.String(maxPath)
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		h, st := s.mountPoint(path)
		w.Uint32(st)
		if st != 0 {
			return rpc.Success
		}
		w.Opaque(encodeFH(h))
		w.Uint32(1) // one flavor
		w.Uint32(rpc.AuthSysFlavor)
		return rpc.Success
	case mntDump:
		w.Bool(false) // no mount list is kept
		return rpc.Success
	case mntUmnt:
		r.String(maxPath)
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		return rpc.Success
	case mntExport:
		w.Bool(true)
		w.String(s.export)
		w.Bool(false) // no groups: everyone
		w.Bool(false)
		return rpc.Success
	}
	return rpc.ProcUnavail
}
