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
// Access: an export table (Exports, an exports(5)-like file) says which
// client addresses may use which exported directory, read-only or not,
// with root or everyone squashed to an anonymous id, and whether AUTH_NONE
// is enough; it is applied to every call, not only to MNT, since a client
// may use a handle without mounting. Handles carry their export and a
// checksum keyed with a secret of the file system, so they cannot be
// forged. Within that, clients are trusted to send their real AUTH_SYS
// identity (as with any AUTH_SYS server): the address is what protects.
// Permissions are evaluated for ACCESS and for owner/group/other mode
// bits, with the sticky bit of directories.
package nfs

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"strata/nfs/fs"
	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// Server answers NFSv3 and MOUNT v3 calls for one file system.
type Server struct {
	fs      *fs.FS
	export  string // the path the file system's root is exported as
	exports atomic.Pointer[Exports]
	fh      fhCodec
	verf    uint64 // the write verifier of this run
	log     *slog.Logger
	calls   [nProcs]atomic.Uint64
	errs    atomic.Uint64 // replies with a status other than NFS3_OK
	refused atomic.Uint64 // calls refused by the exports (see Refused)
	warnL   rpc.Limiter   // refusals logged at warning level, 5 a second
}

// NewServer serves f under the export path export (e.g. "/strata") to
// loopback clients only, with their credentials as sent (LoopbackExports:
// what in-process tests and benchmarks that act as root need), until
// SetExports says otherwise. strata nfs serve sets DefaultExports, which
// squashes root, or the table of its --exports file.
func NewServer(f *fs.FS, export string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		binary.BigEndian.PutUint64(b[:], uint64(time.Now().UnixNano()))
	}
	s := &Server{fs: f, export: export, verf: binary.BigEndian.Uint64(b[:]), log: log, fh: fhCodec{key: f.Secret()}}
	s.warnL.Rate = 5
	s.exports.Store(LoopbackExports(export))
	return s
}

// SetExports replaces the export table; calls that start afterwards use
// the new one. Handles stay valid for the exports of the same path.
func (s *Server) SetExports(e *Exports) { s.exports.Store(e) }

// Exports returns the export table in use.
func (s *Server) Exports() *Exports { return s.exports.Load() }

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

// Refused returns how many NFS and MOUNT calls the exports refused: from
// an address no export admits (AUTH_BADCRED), with AUTH_NONE where
// AUTH_SYS is required (AUTH_TOOWEAK), with a handle of an export that
// does not admit the caller (STALE), modifying a read-only export (ROFS),
// and MNT of an export that does not admit the caller (MNT3ERR_ACCES).
func (s *Server) Refused() uint64 { return s.refused.Load() }

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
	return caller{uid: DefaultAnonUID, gid: DefaultAnonGID}
}

// credOf is the identity a call acts with under rule r: AUTH_NONE (or
// AUTH_SYS on a sec=none-only rule) and all_squash are the anonymous user;
// root_squash maps uid 0 and gid 0, in the supplementary groups too, to
// the anonymous ids, as knfsd does.
func credOf(c *rpc.Call, r *Rule) caller {
	anon := caller{uid: r.AnonUID, gid: r.AnonGID}
	if c.Sys == nil || r.Squash == AllSquash || r.Sec&SecSys == 0 {
		return anon
	}
	cr := callerOf(c)
	if r.Squash == RootSquash {
		if cr.uid == 0 {
			cr.uid = r.AnonUID
		}
		if cr.gid == 0 {
			cr.gid = r.AnonGID
		}
		if slices.Contains(cr.gids, 0) {
			gids := slices.Clone(cr.gids) // c.Sys belongs to the RPC server
			for i, g := range gids {
				if g == 0 {
					gids[i] = r.AnonGID
				}
			}
			cr.gids = gids
		}
	}
	return cr
}

// flavorOK reports whether rule r accepts the call's credential flavor.
func flavorOK(c *rpc.Call, r *Rule) bool {
	if c.CredFlavor == rpc.AuthNone {
		return r.Sec&SecNone != 0
	}
	return true // AUTH_SYS: as itself under sec=sys, as anonymous under sec=none
}

// modifies lists the procedures a read-only export answers with
// NFS3ERR_ROFS. COMMIT is not among them: it writes nothing a client of
// a read-only export could have sent.
func modifies(proc uint32) bool {
	switch proc {
	case procSetattr, procWrite, procCreate, procMkdir, procSymlink, procMknod,
		procRemove, procRmdir, procRename, procLink:
		return true
	}
	return false
}

// admit applies the exports to an NFS call (not NULL, which anyone may
// ping, as with knfsd). A call from an address no export admits is denied
// at the RPC level with AUTH_BADCRED, which is what knfsd answers for a
// client unknown to mountd; AUTH_NONE where the export needs AUTH_SYS is
// AUTH_TOOWEAK (RFC 2623 §2.3.1's status for a flavor too weak). Both
// return nil. Otherwise the call's first file handle (every NFSv3
// procedure but NULL starts with one) picks the export; if that export
// does not admit the caller, every handle of the call is STALE (knfsd's
// answer for a file system not exported to the client), and on a
// read-only export modifying procedures are ROFS.
func (s *Server) admit(c *rpc.Call) *op {
	ex := s.exports.Load()
	addr := peerAddr(c.Peer)
	if !ex.admits(addr) {
		s.refuse(c, addr, "no export admits the address", rpc.AuthBadCred)
		return nil
	}
	// Until a rule is found the call acts as nobody; the procedures fail
	// on the handle before using it, but nothing should rely on that.
	o := &op{Server: s, ex: ex, cred: caller{uid: DefaultAnonUID, gid: DefaultAnonGID}}
	peek := *c.Args // the procedure decodes the handle again from the start
	b := peek.Opaque(MaxFH)
	if peek.Err() != nil {
		return o // the procedure answers GARBAGE_ARGS
	}
	id, h, err := s.fh.decode(b)
	e := ex.byID(id)
	if err != nil || e == nil {
		if c.CredFlavor == rpc.AuthNone && !ex.allows(addr, SecNone) {
			s.refuse(c, addr, "AUTH_NONE", rpc.AuthTooWeak)
			return nil
		}
		return o // the procedure answers BADHANDLE or STALE
	}
	rule := e.match(addr)
	if rule == nil {
		s.refuse(c, addr, "export "+e.Path+" does not admit the address", 0)
		o.deny = errStaleFH
		return o
	}
	if !flavorOK(c, rule) {
		s.refuse(c, addr, "AUTH_NONE on export "+e.Path, rpc.AuthTooWeak)
		return nil
	}
	o.exp, o.rule, o.cred = e, rule, credOf(c, rule)
	o.first, o.firstH = b, h
	if rule.ReadOnly && modifies(c.Proc) {
		s.refuse(c, addr, "read-only export "+e.Path, 0)
		o.deny = errReadOnly
	}
	return o
}

// refuse counts and logs a call the exports refuse; with a status other
// than AuthOK the RPC reply is MSG_DENIED/AUTH_ERROR with it. Warnings
// are limited to a few a second (a scanning client would flood the log);
// the rest go to debug level.
func (s *Server) refuse(c *rpc.Call, addr netip.Addr, why string, as rpc.AuthStat) {
	s.refused.Add(1)
	if as != rpc.AuthOK {
		c.DenyAuth(as)
	}
	proc := fmt.Sprint(c.Proc)
	switch {
	case c.Prog == ProgNFS && c.Proc < nProcs:
		proc = ProcNames[c.Proc]
	case c.Prog == ProgMount:
		proc = "mount." + proc
	}
	args := []any{"peer", addr, "net", c.Net, "proc", proc, "flavor", c.CredFlavor, "why", why}
	if ok, suppressed := s.warnL.Allow(); ok {
		if suppressed > 0 {
			args = append(args, "not_logged_since", suppressed)
		}
		s.log.Warn("nfs: call refused by the exports", args...)
		return
	}
	s.log.Debug("nfs: call refused by the exports", args...)
}

func (s *Server) nfs(_ context.Context, c *rpc.Call, w *xdr.Writer) rpc.AcceptStat {
	if c.Proc >= nProcs {
		return rpc.ProcUnavail
	}
	s.calls[c.Proc].Add(1)
	if c.Proc == procNull {
		return rpc.Success
	}
	o := s.admit(c)
	if o == nil {
		return rpc.Success // denied (c.DenyAuth): the results are not sent
	}
	switch c.Proc {
	case procCommit, procSetattr, procCreate, procMkdir, procSymlink, procMknod, procRemove, procRmdir, procRename, procLink:
		// COMMIT waits for the disk; so do metadata operations when they
		// are durable on return: let the connection's other calls proceed
		// meanwhile (see rpc.Call.Detach). Stable WRITEs detach in write.
		if o.deny == nil && (c.Proc == procCommit || s.fs.SyncMetadata()) {
			c.Detach()
		}
	}
	r := c.Args
	cr := o.cred
	var st uint32
	var err error
	switch c.Proc {
	case procGetattr:
		st, err = o.getattr(r, w)
	case procSetattr:
		st, err = o.setattr(r, w, cr)
	case procLookup:
		st, err = o.lookup(r, w, cr)
	case procAccess:
		st, err = o.access(r, w, cr)
	case procReadlink:
		st, err = o.readlink(r, w)
	case procRead:
		st, err = o.read(r, w, cr)
	case procWrite:
		st, err = o.write(r, w, cr, c)
	case procCreate, procMkdir, procSymlink, procMknod:
		st, err = o.create(c.Proc, r, w, cr)
	case procRemove, procRmdir:
		st, err = o.remove(c.Proc, r, w, cr)
	case procRename:
		st, err = o.rename(r, w, cr)
	case procLink:
		st, err = o.link(r, w, cr)
	case procReaddir, procReaddirplus:
		st, err = o.readdir(c.Proc == procReaddirplus, r, w, cr)
	case procFsstat:
		st, err = o.fsstat(r, w)
	case procFsinfo:
		st, err = o.fsinfo(r, w)
	case procPathconf:
		st, err = o.pathconf(r, w)
	case procCommit:
		st, err = o.commit(r, w)
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

func (o *op) getattr(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := o.fhArg(r)
	if err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = o.fs.GetAttr(h)
		st = status(err)
	}
	w.Uint32(st)
	if st == nfsOK {
		putFattr(w, a)
	}
	return st, err
}

func (o *op) setattr(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, st, err := o.fhArg(r)
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
	err = o.mayChange(h, sa, c)
	var pre fs.WCC
	var post fs.Attr
	if err == nil {
		pre, post, err = o.fs.SetAttr(h, sa, guard, now())
	}
	return o.wccResult(w, h, pre, post, err)
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

func (o *op) lookup(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, name, err := o.readDirop(r)
	if r.Err() != nil {
		return 0, errGarbage
	}
	if err != nil {
		st := status(err)
		w.Uint32(st)
		postOp(w, fs.Attr{}, false)
		return st, err
	}
	var h fs.Handle
	var a, da fs.Attr
	if err = o.may(dir, c, permX, false); err == nil {
		if name == ".." && o.isExportRoot(dir) {
			name = "." // the export's root is its own parent
		}
		h, a, da, err = o.fs.Lookup(dir, name)
	}
	st := status(err)
	w.Uint32(st)
	if err != nil {
		d, derr := o.fs.GetAttr(dir)
		postOp(w, d, derr == nil)
		return st, err
	}
	w.Opaque(o.encodeFH(h))
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

// mayUnlink applies the sticky bit: in a directory with mode 01000 (like
// /tmp, or the root of a file system made by strata nfs serve) only the
// owner of an entry or of the directory, or root, may remove or replace
// it. Elsewhere write and search permission on the directory suffice
// (checked by may).
func (s *Server) mayUnlink(dir fs.Handle, name string, c caller) error {
	if c.uid == 0 {
		return nil
	}
	d, err := s.fs.GetAttr(dir)
	if err != nil || d.Mode&01000 == 0 || c.uid == d.UID {
		return err
	}
	_, a, _, err := s.fs.Lookup(dir, name)
	if err != nil {
		if errors.Is(err, fs.ErrNoEnt) || errors.Is(err, fs.ErrInval) {
			return err
		}
		return nil // let the operation report what is wrong with the name
	}
	if a.UID != c.uid {
		return errAccessDenied
	}
	return nil
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

// mayOwn checks the owner and group a create asks for in its attributes:
// only root may give a new file to someone else, and a group must be one
// the caller is in (else anyone could create a set-uid file of root's,
// and a squashed root could undo its squashing).
func (c caller) mayOwn(sa fs.SetAttr) error {
	if c.uid == 0 {
		return nil
	}
	if (sa.UID != nil && *sa.UID != c.uid) || (sa.GID != nil && !inGroup(c, *sa.GID)) {
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

func (o *op) access(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, st, err := o.fhArg(r)
	if err != nil {
		return 0, err
	}
	asked := r.Uint32()
	if err := args(r); err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = o.fs.GetAttr(h)
		st = status(err)
	}
	w.Uint32(st)
	postOp(w, a, st == nfsOK)
	if st == nfsOK {
		g := granted(a, asked, c)
		if o.rule != nil && o.rule.ReadOnly {
			g &^= accessModify | accessExtend | accessDelete
		}
		w.Uint32(g)
	}
	return st, err
}

func (o *op) readlink(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := o.fhArg(r)
	if err != nil {
		return 0, err
	}
	var target string
	var a fs.Attr
	if st == nfsOK {
		target, a, err = o.fs.Readlink(h)
		st = status(err)
	}
	w.Uint32(st)
	postOp(w, a, st == nfsOK)
	if st == nfsOK {
		w.String(target)
	}
	return st, err
}

func (o *op) read(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, st, err := o.fhArg(r)
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
		n, eof, a, err = o.fs.ReadAt(h, off, p, &t, func(a fs.Attr) error { return c.allowed(a, permR, true) })
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

func (o *op) write(r *xdr.Reader, w *xdr.Writer, c caller, call *rpc.Call) (uint32, error) {
	h, st, err := o.fhArg(r)
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
	pre, post, err := o.fs.WriteChecked(h, off, data, stable != unstable, now(),
		func(a fs.Attr) error { return c.allowed(a, permW, true) })
	if st, err = o.wccResult(w, h, pre, post, err); err != nil {
		return st, err
	}
	w.Uint32(uint32(len(data)))
	if stable != unstable {
		w.Uint32(fileSync) // durable, data and metadata
	} else {
		w.Uint32(unstable)
	}
	w.Uint64(o.verf)
	return st, nil
}

// create handles CREATE, MKDIR, SYMLINK and MKNOD, which share their
// result: the new object's handle and attributes, and the directory's wcc.
func (o *op) create(proc uint32, r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, name, ferr := o.readDirop(r)
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
			d, derr = o.fs.GetAttr(dir)
		}
		wcc(w, fs.WCC{}, false, d, derr == nil)
		return st, err
	}
	if ferr != nil {
		return fail(status(ferr), ferr)
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
	if err := o.may(dir, c, permW|permX, false); err != nil {
		return fail(status(err), err)
	}
	if err := c.mayOwn(sa); err != nil {
		return fail(status(err), err)
	}
	switch proc {
	case procCreate:
		h, a, pre, after, err = o.fs.Create(dir, name, mode, sa, verf, c.uid, c.gid, t)
	case procMkdir:
		h, a, pre, after, err = o.fs.Mkdir(dir, name, sa, c.uid, c.gid, t)
	case procSymlink:
		h, a, pre, after, err = o.fs.Symlink(dir, name, target, sa, c.uid, c.gid, t)
	case procMknod:
		h, a, pre, after, err = o.fs.Mknod(dir, name, ftype, major, minor, sa, c.uid, c.gid, t)
	}
	if err != nil {
		return fail(status(err), err)
	}
	w.Uint32(nfsOK)
	o.postFH(w, h, true)
	postOp(w, a, true)
	wcc(w, pre, true, after, true)
	return nfsOK, nil
}

func (o *op) remove(proc uint32, r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, name, err := o.readDirop(r)
	if r.Err() != nil {
		return 0, errGarbage
	}
	if err != nil {
		st := status(err)
		w.Uint32(st)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return st, err
	}
	var pre fs.WCC
	var post fs.Attr
	if err = o.may(dir, c, permW|permX, false); err == nil {
		err = o.mayUnlink(dir, name, c)
	}
	switch {
	case err != nil:
	case proc == procRemove:
		pre, post, err = o.fs.Remove(dir, name, now())
	default:
		pre, post, err = o.fs.Rmdir(dir, name, now())
	}
	return o.wccResult(w, dir, pre, post, err)
}

func (o *op) rename(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	from, fname, ferr := o.readDirop(r)
	to, tname, terr := o.readDirop(r)
	if err := args(r); err != nil {
		return 0, err
	}
	if ferr != nil || terr != nil {
		err := errors.Join(ferr, terr)
		st := status(err)
		w.Uint32(st)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return st, err
	}
	var fpre, tpre fs.WCC
	var fpost, tpost fs.Attr
	err := o.may(from, c, permW|permX, false)
	if err == nil {
		err = o.may(to, c, permW|permX, false)
	}
	if err == nil {
		err = o.mayUnlink(from, fname, c)
	}
	if err == nil {
		if err = o.mayUnlink(to, tname, c); errors.Is(err, fs.ErrNoEnt) {
			err = nil // nothing to replace
		}
	}
	if err == nil {
		fpre, fpost, tpre, tpost, err = o.fs.Rename(from, fname, to, tname, now())
	}
	st := status(err)
	w.Uint32(st)
	if err != nil {
		fa, faErr := o.fs.GetAttr(from)
		ta, taErr := o.fs.GetAttr(to)
		wcc(w, fs.WCC{}, false, fa, faErr == nil)
		wcc(w, fs.WCC{}, false, ta, taErr == nil)
		return st, err
	}
	wcc(w, fpre, true, fpost, true)
	wcc(w, tpre, true, tpost, true)
	return st, nil
}

func (o *op) link(r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	h, hst, err := o.fhArg(r)
	if err != nil {
		return 0, err
	}
	dir, name, derr := o.readDirop(r)
	if err := args(r); err != nil {
		return 0, err
	}
	if hst != nfsOK || derr != nil {
		st := hst
		if st == nfsOK {
			st = status(derr)
		}
		w.Uint32(st)
		postOp(w, fs.Attr{}, false)
		wcc(w, fs.WCC{}, false, fs.Attr{}, false)
		return st, derr
	}
	var a, post fs.Attr
	var pre fs.WCC
	err = o.may(dir, c, permW|permX, false)
	if err == nil {
		a, pre, post, err = o.fs.Link(h, dir, name, now())
	}
	st := status(err)
	w.Uint32(st)
	if err != nil {
		fa, faErr := o.fs.GetAttr(h)
		da, daErr := o.fs.GetAttr(dir)
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
	entryFixed     = 4 + 8 + 4 + 8           // value_follows, fileid, name length, cookie
	entryPlusExtra = 4 + 84 + 4 + 4 + fhSize // post_op_attr, post_op_fh3
	readdirFixed   = 4 + 4 + 84 + 8 + 4 + 4
)

func (o *op) readdir(plus bool, r *xdr.Reader, w *xdr.Writer, c caller) (uint32, error) {
	dir, st, err := o.fhArg(r)
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
	if err = o.may(dir, c, permR, false); err == nil {
		entries, eof, newVerf, da, err = o.fs.ReadDir(dir, cookie, verf, min(want, 4096), plus)
	}
	st = status(err)
	if err != nil {
		w.Uint32(st)
		d, derr := o.fs.GetAttr(dir)
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
			// No handle for ".." of the export's root: it is outside
			// the export (knfsd leaves it out too).
			ok := e.Name != ".." || !o.isExportRoot(dir)
			postOp(w, e.Attr, ok)
			o.postFH(w, e.Handle, ok)
		}
	}
	w.Bool(false)
	w.Bool(eof)
	return nfsOK, nil
}

func (o *op) fsstat(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := o.fhArg(r)
	if err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = o.fs.GetAttr(h)
		st = status(err)
	}
	var stat fs.Stat
	if st == nfsOK {
		stat, err = o.fs.Stat()
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
func (o *op) attrReply(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := o.fhArg(r)
	if err != nil {
		return errServerFault, err
	}
	var a fs.Attr
	if st == nfsOK {
		a, err = o.fs.GetAttr(h)
		st = status(err)
	}
	w.Uint32(st)
	postOp(w, a, st == nfsOK)
	return st, err
}

func (o *op) fsinfo(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	st, err := o.attrReply(r, w)
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

func (o *op) pathconf(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	st, err := o.attrReply(r, w)
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

func (o *op) commit(r *xdr.Reader, w *xdr.Writer) (uint32, error) {
	h, st, err := o.fhArg(r)
	if err != nil {
		return 0, err
	}
	_, _ = r.Uint64(), r.Uint32() // offset and count: everything is flushed
	if err := args(r); err != nil {
		return 0, err
	}
	var a fs.Attr
	if st == nfsOK {
		if a, err = o.fs.GetAttr(h); err == nil {
			err = o.fs.FlushFile(h)
		}
		st = status(err)
	}
	w.Uint32(st)
	wcc(w, fs.WCC{}, false, a, st == nfsOK)
	if st == nfsOK {
		w.Uint64(o.verf)
	}
	return st, err
}

// resolve walks names down from the file system's root and returns the
// directory they name, as a mountstat3. Permissions are not checked: the
// exports say who may mount.
func (s *Server) resolve(names []string) (fs.Handle, uint32) {
	h := s.fs.Root()
	for _, name := range names {
		if name == "" || name == "." || name == ".." {
			return fs.Handle{}, 2 // MNT3ERR_NOENT: export paths are clean
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

// exportRoot is the handle of the directory export e exports (resolved
// on each use: only LOOKUP of ".." and READDIRPLUS need it, and the
// directory may be replaced while serving).
func (s *Server) exportRoot(e *Export) (fs.Handle, bool) {
	if len(e.Dir) == 0 {
		return s.fs.Root(), true
	}
	h, st := s.resolve(e.Dir)
	return h, st == 0
}

// isExportRoot reports whether dir is the call's export's root, whose
// ".." is itself: a client may not walk out of its export (knfsd does the
// same).
func (o *op) isExportRoot(dir fs.Handle) bool {
	if o.exp == nil {
		return false
	}
	root, ok := o.exportRoot(o.exp)
	return ok && root == dir
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
		addr := peerAddr(c.Peer)
		e, rule, rest, found := s.exports.Load().forMount(path, addr)
		switch {
		case e == nil && found:
			s.refuse(c, addr, "MNT "+path+": no export of it admits the address", 0)
			w.Uint32(13) // MNT3ERR_ACCES
			return rpc.Success
		case e == nil:
			w.Uint32(2) // MNT3ERR_NOENT: not exported
			return rpc.Success
		case !flavorOK(c, rule):
			s.refuse(c, addr, "MNT "+path+" with AUTH_NONE", rpc.AuthTooWeak)
			return rpc.Success
		}
		h, st := s.resolve(append(slices.Clone(e.Dir), rest...))
		w.Uint32(st)
		if st != 0 {
			return rpc.Success
		}
		w.Opaque(s.fh.encode(e.id, h))
		var flavors []uint32
		if rule.Sec&SecSys != 0 {
			flavors = append(flavors, rpc.AuthSysFlavor)
		}
		if rule.Sec&SecNone != 0 {
			flavors = append(flavors, rpc.AuthNone)
		}
		w.Uint32(uint32(len(flavors)))
		for _, f := range flavors {
			w.Uint32(f)
		}
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
		// exports: every export with its client patterns as groups
		// (showmount -e prints them), as mountd answers.
		for _, e := range s.exports.Load().List() {
			w.Bool(true)
			w.String(e.Path)
			for _, r := range e.Rules {
				w.Bool(true)
				w.String(r.Pattern)
			}
			w.Bool(false)
		}
		w.Bool(false)
		return rpc.Success
	}
	return rpc.ProcUnavail
}
