package nfs

import (
	"errors"

	"strata/nfs/fs"
	"strata/nfs/xdr"
)

// Program numbers and versions (RFC 1813).
const (
	ProgNFS    = 100003
	ProgMount  = 100005
	VersNFS    = 3
	VersMount  = 3
	MaxFH      = 64   // NFS3_FHSIZE
	maxPath    = 1024 // MNTPATHLEN
	maxNameArg = 4096 // names are checked against fs.MaxName after decoding
	// MaxIO is the largest READ or WRITE this server does in one call.
	MaxIO = 1 << 20
)

// Procedure numbers of NFSv3.
const (
	procNull = iota
	procGetattr
	procSetattr
	procLookup
	procAccess
	procReadlink
	procRead
	procWrite
	procCreate
	procMkdir
	procSymlink
	procMknod
	procRemove
	procRmdir
	procRename
	procLink
	procReaddir
	procReaddirplus
	procFsstat
	procFsinfo
	procPathconf
	procCommit
	nProcs
)

// ProcNames names the NFSv3 procedures, for metrics and logs.
var ProcNames = [nProcs]string{"null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit"}

// nfsstat3 values.
const (
	nfsOK          = 0
	errPerm        = 1
	errNoEnt       = 2
	errIO          = 5
	errAcces       = 13
	errExist       = 17
	errXDev        = 18
	errNotDir      = 20
	errIsDir       = 21
	errInval       = 22
	errFBig        = 27
	errNoSpc       = 28
	errROFS        = 30
	errMLink       = 31
	errNameTooLong = 63
	errNotEmpty    = 66
	errStale       = 70
	errBadHandle   = 10001
	errNotSync     = 10002
	errBadCookie   = 10003
	errNotSupp     = 10004
	errTooSmall    = 10005
	errServerFault = 10006
	errBadType     = 10007
)

// Stable-how values of WRITE.
const (
	unstable = 0
	dataSync = 1
	fileSync = 2
)

// ACCESS bits.
const (
	accessRead    = 0x01
	accessLookup  = 0x02
	accessModify  = 0x04
	accessExtend  = 0x08
	accessDelete  = 0x10
	accessExecute = 0x20
)

// status maps a file system error to an nfsstat3.
func status(err error) uint32 {
	switch {
	case err == nil:
		return nfsOK
	case errors.Is(err, fs.ErrNoEnt):
		return errNoEnt
	case errors.Is(err, fs.ErrExist):
		return errExist
	case errors.Is(err, fs.ErrIncompatible):
		// RFC 1813 3.3.14: a rename target of the other kind, or a
		// non-empty directory, is NFS3ERR_EXIST (rename(2) would say
		// ENOTDIR, EISDIR or ENOTEMPTY, which the error also wraps).
		return errExist
	case errors.Is(err, fs.ErrNotDir):
		return errNotDir
	case errors.Is(err, fs.ErrIsDir):
		return errIsDir
	case errors.Is(err, fs.ErrNotEmpty):
		return errNotEmpty
	case errors.Is(err, fs.ErrNameTooLong):
		return errNameTooLong
	case errors.Is(err, fs.ErrStale):
		return errStale
	case errors.Is(err, fs.ErrNoSpace):
		return errNoSpc
	case errors.Is(err, fs.ErrMLink):
		return errMLink
	case errors.Is(err, fs.ErrInval):
		return errInval
	case errors.Is(err, fs.ErrFBig):
		return errFBig
	case errors.Is(err, fs.ErrBadCookie):
		return errBadCookie
	case errors.Is(err, fs.ErrNotSync):
		return errNotSync
	case errors.Is(err, errBadFH):
		return errBadHandle
	case errors.Is(err, errXDevFH):
		return errXDev
	case errors.Is(err, errReadOnly):
		return errROFS
	case errors.Is(err, errAccessDenied):
		return errAcces
	case errors.Is(err, errNotOwner):
		return errPerm
	case errors.Is(err, fs.ErrIO):
		return errIO
	}
	return errServerFault
}

// fsid is the file system id in attributes (one file system per server).
const fsid = 0x5354524154410001

func putTime(w *xdr.Writer, t fs.Time) {
	w.Uint32(t.Sec)
	w.Uint32(t.Nsec)
}

func getTime(r *xdr.Reader) fs.Time { return fs.Time{Sec: r.Uint32(), Nsec: r.Uint32()} }

// putFattr writes a fattr3.
func putFattr(w *xdr.Writer, a fs.Attr) {
	w.Uint32(uint32(a.Type))
	w.Uint32(a.Mode & 07777)
	w.Uint32(a.Nlink)
	w.Uint32(a.UID)
	w.Uint32(a.GID)
	w.Uint64(a.Size)
	w.Uint64(a.Used)
	w.Uint32(a.Rdev.Major)
	w.Uint32(a.Rdev.Minor)
	w.Uint64(fsid)
	w.Uint64(a.Fileid)
	putTime(w, a.Atime)
	putTime(w, a.Mtime)
	putTime(w, a.Ctime)
}

// postOp writes a post_op_attr: present if ok.
func postOp(w *xdr.Writer, a fs.Attr, ok bool) {
	w.Bool(ok)
	if ok {
		putFattr(w, a)
	}
}

// wcc writes wcc_data from pre-operation attributes and the attributes
// after (either may be absent).
func wcc(w *xdr.Writer, pre fs.WCC, preOK bool, post fs.Attr, postOK bool) {
	w.Bool(preOK)
	if preOK {
		w.Uint64(pre.Size)
		putTime(w, pre.Mtime)
		putTime(w, pre.Ctime)
	}
	postOp(w, post, postOK)
}

// errGarbage marks arguments that do not decode (GARBAGE_ARGS).
var errGarbage = errors.New("nfs: undecodable arguments")

// readSattr decodes a sattr3.
func readSattr(r *xdr.Reader) (fs.SetAttr, error) {
	var sa fs.SetAttr
	if r.Bool() {
		v := r.Uint32()
		sa.Mode = &v
	}
	if r.Bool() {
		v := r.Uint32()
		sa.UID = &v
	}
	if r.Bool() {
		v := r.Uint32()
		sa.GID = &v
	}
	if r.Bool() {
		v := r.Uint64()
		sa.Size = &v
	}
	bad := false
	readHow := func() (fs.SetTime, fs.Time) {
		switch how := r.Uint32(); how {
		case 0:
			return fs.DontChange, fs.Time{}
		case 1:
			return fs.ServerTime, fs.Time{}
		case 2:
			return fs.ClientTime, getTime(r)
		default:
			bad = true
			return fs.DontChange, fs.Time{}
		}
	}
	sa.Atime, sa.AtimeVal = readHow()
	sa.Mtime, sa.MtimeVal = readHow()
	if bad || r.Err() != nil {
		return sa, errGarbage
	}
	return sa, nil
}

// readName decodes a filename3.
func readName(r *xdr.Reader) string { return r.String(maxNameArg) }
