package nfsbench

// The null server: the ceiling of the largefile workload on this machine.
// It serves NFSv3 and MOUNT v3 through Strata's own RPC path (nfs/rpc's
// server: the same record marking, call decoding, worker pool and reply
// writing that `strata nfs serve` uses, with the same defaults) over TCP on
// loopback, decodes every argument in full, and answers with correctly
// sized replies, but stores no file data: what it keeps is a namespace in
// memory (directories, files, their sizes) and, per file, one 8-byte word.
// Strata's largefile figures divided by the null server's say how much of
// what the RPC path, the client and the loopback allow on this machine
// Strata reaches, which a disk-bandwidth target cannot say here (the
// issue found a server that stores nothing at only 0.60-0.67 of fio's
// sequential bandwidth, client and server sharing two vCPUs).
//
// READ returns the bytes the largefile driver wrote without having stored
// them: the driver's data is a function of the file offset and a per-run
// seed (largeData), and the word a WRITE carries at an 8-aligned offset
// gives the seed (largeSeed), which is the one word kept per file. The
// data is made in the reply buffer at about the cost of a memory copy
// (one 64 KiB block per seed is copied, a word every 64 bytes patched), no
// more than the copy a real server makes from its cache, so the ceiling
// is not lowered by it. The driver's byte-for-byte comparison therefore
// stays on for the null server too: it checks offsets, lengths and framing
// of every READ reply, though not storage, which there is none of. A file written with other data
// reads back as the driver's pattern (or zeros, if nothing aligned was
// written), so only the largefile workload runs on it; smallfile and app
// measure metadata work the null server does not do.
//
// Procedures the largefile workload and its setup do not use (READLINK,
// SYMLINK, MKNOD, RENAME, LINK, READDIR, READDIRPLUS) answer PROC_UNAVAIL.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"strata/nfs"
	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// NFSv3 procedure numbers (RFC 1813) the null server answers.
const (
	nProcNull     = 0
	nProcGetattr  = 1
	nProcSetattr  = 2
	nProcLookup   = 3
	nProcAccess   = 4
	nProcRead     = 6
	nProcWrite    = 7
	nProcCreate   = 8
	nProcMkdir    = 9
	nProcRemove   = 12
	nProcRmdir    = 13
	nProcFsstat   = 18
	nProcFsinfo   = 19
	nProcPathconf = 20
	nProcCommit   = 21
)

// nfsstat3 values the null server answers.
const (
	st3OK        = 0
	st3NoEnt     = 2
	st3Exist     = 17
	st3NotDir    = 20
	st3IsDir     = 21
	st3Inval     = 22
	st3NotEmpty  = 66
	st3Stale     = 70
	st3BadHandle = 10001
)

// nullMagic starts the null server's 16-byte file handles (then the inode
// number, then 4 zero bytes).
const nullMagic = "NUL1"

// NullServer is the null server's state: a namespace with no file data.
type NullServer struct {
	verf  uint64
	start uint32 // the time in every attribute (seconds)

	mu    sync.Mutex
	nodes map[uint64]*nullNode
	next  uint64
}

type nullNode struct {
	ino     uint64
	dir     bool
	entries map[string]uint64 // a directory's
	size    uint64
	seed    uint64 // a file's largefile seed, once seeded
	seeded  bool
	mode    uint32
}

const nullRoot = 1

// NewNullServer returns a null server with an empty root directory.
func NewNullServer() *NullServer {
	var b [8]byte
	rand.Read(b[:])
	s := &NullServer{verf: binary.BigEndian.Uint64(b[:]), start: uint32(time.Now().Unix()), nodes: map[uint64]*nullNode{}, next: nullRoot + 1}
	s.nodes[nullRoot] = &nullNode{ino: nullRoot, dir: true, entries: map[string]uint64{}, mode: 0o777}
	return s
}

// Register adds the NFS and MOUNT programs to an RPC server.
func (s *NullServer) Register(r *rpc.Server) {
	r.Register(nfs.ProgNFS, nfs.VersNFS, s.nfs)
	r.Register(nfs.ProgMount, nfs.VersMount, s.mount)
}

// ServeNull runs the null server until ctx ends: NFS and MOUNT on their own
// loopback TCP ports (as `strata nfs serve --listen 127.0.0.1:0
// --mount-listen 127.0.0.1:0`; no UDP, no rpcbind: only the largefile
// driver talks to it), then prints its ready line on stdout,
// "null server: nfs port N, mount port M". It is `strata bench nfs
// --serve-null`, the benchmark's child process.
func ServeNull(ctx context.Context, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	r := rpc.NewServer(log)
	NewNullServer().Register(r)
	var ports [2]int
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("null server: %w", err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.ServeTCP(ctx, ln); err != nil && ctx.Err() == nil {
				log.Error("null server: rpc tcp", "err", err)
			}
		}()
	}
	fmt.Fprintf(stdout, "null server: nfs port %d, mount port %d\n", ports[0], ports[1])
	<-ctx.Done()
	return nil
}

func nullFH(ino uint64) []byte {
	b := make([]byte, 0, 16)
	b = append(b, nullMagic...)
	b = binary.BigEndian.AppendUint64(b, ino)
	return binary.BigEndian.AppendUint32(b, 0)
}

// node decodes a file handle argument and returns its node (nil and a
// status for a handle that is not one of ours, or of a removed object).
func (s *NullServer) node(r *xdr.Reader) (*nullNode, uint32) {
	b := r.Opaque(nfs.MaxFH)
	if r.Err() != nil {
		return nil, st3BadHandle
	}
	if len(b) != 16 || string(b[:4]) != nullMagic {
		return nil, st3BadHandle
	}
	s.mu.Lock()
	n := s.nodes[binary.BigEndian.Uint64(b[4:])]
	s.mu.Unlock()
	if n == nil {
		return nil, st3Stale
	}
	return n, st3OK
}

// attr writes n's fattr3 (call with s.mu held, or on a node no call
// changes).
func (s *NullServer) attr(w *xdr.Writer, n *nullNode) {
	typ, nlink := uint32(1), uint32(1) // NF3REG
	if n.dir {
		typ, nlink = 2, 2 // NF3DIR
	}
	w.Uint32(typ)
	w.Uint32(n.mode)
	w.Uint32(nlink)
	w.Uint32(0) // uid
	w.Uint32(0) // gid
	w.Uint64(n.size)
	w.Uint64(n.size) // used
	w.Uint32(0)      // rdev
	w.Uint32(0)
	w.Uint64(0x4e554c4c) // fsid
	w.Uint64(n.ino)      // fileid
	for range 3 {        // atime, mtime, ctime
		w.Uint32(s.start)
		w.Uint32(0)
	}
}

// postOp writes a post_op_attr with n's attributes.
// handleHead reads the file handle of an FSSTAT, FSINFO or PATHCONF call
// and writes the reply's head: the status and, for a known file, its
// post-op attributes. ok reports whether the caller writes the rest;
// otherwise the reply is done and stat is the call's outcome.
func (s *NullServer) handleHead(r *xdr.Reader, w *xdr.Writer) (stat rpc.AcceptStat, ok bool) {
	n, st := s.node(r)
	if r.Err() != nil {
		return rpc.GarbageArgs, false
	}
	w.Uint32(st)
	if st != st3OK {
		w.Bool(false)
		return rpc.Success, false
	}
	s.postOp(w, n)
	return rpc.Success, true
}

func (s *NullServer) postOp(w *xdr.Writer, n *nullNode) {
	w.Bool(true)
	s.mu.Lock()
	s.attr(w, n)
	s.mu.Unlock()
}

// wcc writes wcc_data: no pre-operation attributes, n's after.
func (s *NullServer) wcc(w *xdr.Writer, n *nullNode) {
	w.Bool(false)
	if n == nil {
		w.Bool(false)
		return
	}
	s.postOp(w, n)
}

// skipSattr decodes a sattr3 and returns the size it sets, if any.
func skipSattr(r *xdr.Reader) (size uint64, setSize bool, ok bool) {
	if r.Bool() { // mode
		r.Uint32()
	}
	if r.Bool() { // uid
		r.Uint32()
	}
	if r.Bool() { // gid
		r.Uint32()
	}
	if setSize = r.Bool(); setSize {
		size = r.Uint64()
	}
	for range 2 { // atime, mtime
		switch r.Uint32() {
		case 0, 1:
		case 2:
			r.Uint32()
			r.Uint32()
		default:
			return 0, false, false
		}
	}
	return size, setSize, r.Err() == nil
}

func (s *NullServer) nfs(_ context.Context, c *rpc.Call, w *xdr.Writer) rpc.AcceptStat {
	r := c.Args
	switch c.Proc {
	case nProcNull:
		return rpc.Success
	case nProcGetattr:
		n, st := s.node(r)
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		w.Uint32(st)
		if st == st3OK {
			s.mu.Lock()
			s.attr(w, n)
			s.mu.Unlock()
		}
	case nProcSetattr:
		n, st := s.node(r)
		size, setSize, ok := skipSattr(r)
		if r.Bool() { // guard
			r.Uint32()
			r.Uint32()
		}
		if !ok || r.Err() != nil {
			return rpc.GarbageArgs
		}
		if st == st3OK && setSize {
			s.mu.Lock()
			if n.dir {
				st = st3IsDir
			} else {
				n.size = size
			}
			s.mu.Unlock()
		}
		w.Uint32(st)
		s.wcc(w, n)
	case nProcLookup:
		d, st := s.node(r)
		name := r.String(nfs.MaxIO)
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		var n *nullNode
		if st == st3OK {
			n, st = s.lookup(d, name)
		}
		w.Uint32(st)
		if st != st3OK {
			if d != nil {
				s.postOp(w, d)
			} else {
				w.Bool(false)
			}
			return rpc.Success
		}
		w.Opaque(nullFH(n.ino))
		s.postOp(w, n)
		s.postOp(w, d)
	case nProcAccess:
		n, st := s.node(r)
		asked := r.Uint32()
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		w.Uint32(st)
		if st != st3OK {
			w.Bool(false)
			return rpc.Success
		}
		s.postOp(w, n)
		w.Uint32(asked) // root: everything asked
	case nProcRead:
		return s.read(r, w)
	case nProcWrite:
		return s.write(r, w)
	case nProcCreate, nProcMkdir:
		return s.create(c.Proc, r, w)
	case nProcRemove, nProcRmdir:
		d, st := s.node(r)
		name := r.String(nfs.MaxIO)
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		if st == st3OK {
			st = s.remove(d, name, c.Proc == nProcRmdir)
		}
		w.Uint32(st)
		s.wcc(w, d)
	case nProcFsstat:
		if stat, ok := s.handleHead(r, w); !ok {
			return stat
		}
		for range 6 { // tbytes, fbytes, abytes, tfiles, ffiles, afiles
			w.Uint64(1 << 40)
		}
		w.Uint32(0) // invarsec
	case nProcFsinfo:
		if stat, ok := s.handleHead(r, w); !ok {
			return stat
		}
		// The limits Strata's server announces.
		w.Uint32(nfs.MaxIO) // rtmax
		w.Uint32(64 << 10)  // rtpref
		w.Uint32(4096)      // rtmult
		w.Uint32(nfs.MaxIO) // wtmax
		w.Uint32(64 << 10)  // wtpref
		w.Uint32(4096)      // wtmult
		w.Uint32(64 << 10)  // dtpref
		w.Uint64(1 << 40)   // maxfilesize
		w.Uint32(0)         // time_delta: 1 ns
		w.Uint32(1)
		w.Uint32(0x8 | 0x10) // HOMOGENEOUS, CANSETTIME
	case nProcPathconf:
		if stat, ok := s.handleHead(r, w); !ok {
			return stat
		}
		w.Uint32(1)   // linkmax
		w.Uint32(255) // name_max
		w.Bool(true)  // no_trunc
		w.Bool(true)  // chown_restricted
		w.Bool(false) // case_insensitive
		w.Bool(true)  // case_preserving
	case nProcCommit:
		n, st := s.node(r)
		r.Uint64() // offset
		r.Uint32() // count
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		w.Uint32(st)
		s.wcc(w, n)
		if st == st3OK {
			w.Uint64(s.verf) // nothing to make durable
		}
	default:
		return rpc.ProcUnavail
	}
	return rpc.Success
}

func (s *NullServer) lookup(d *nullNode, name string) (*nullNode, uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !d.dir {
		return nil, st3NotDir
	}
	switch name {
	case ".":
		return d, st3OK
	case "..":
		return s.nodes[nullRoot], st3OK // the driver never asks; the root is good enough
	}
	ino, ok := d.entries[name]
	if !ok {
		return nil, st3NoEnt
	}
	return s.nodes[ino], st3OK
}

func (s *NullServer) remove(d *nullNode, name string, rmdir bool) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !d.dir {
		return st3NotDir
	}
	ino, ok := d.entries[name]
	if !ok {
		return st3NoEnt
	}
	n := s.nodes[ino]
	switch {
	case rmdir && !n.dir:
		return st3NotDir
	case !rmdir && n.dir:
		return st3IsDir
	case n.dir && len(n.entries) > 0:
		return st3NotEmpty
	}
	delete(d.entries, name)
	delete(s.nodes, ino)
	return st3OK
}

func (s *NullServer) create(proc uint32, r *xdr.Reader, w *xdr.Writer) rpc.AcceptStat {
	d, st := s.node(r)
	name := r.String(nfs.MaxIO)
	guarded, exclusive := false, false
	var size uint64
	var setSize, ok bool
	if proc == nProcCreate {
		switch how := r.Uint32(); how {
		case 0, 1: // UNCHECKED, GUARDED
			guarded = how == 1
			size, setSize, ok = skipSattr(r)
		case 2: // EXCLUSIVE
			exclusive = true
			r.Uint64()
			ok = r.Err() == nil
		default:
			return rpc.GarbageArgs
		}
	} else {
		size, setSize, ok = skipSattr(r)
	}
	if !ok || r.Err() != nil {
		return rpc.GarbageArgs
	}
	var n *nullNode
	if st == st3OK {
		n, st = s.make(d, name, proc == nProcMkdir, guarded || exclusive, size, setSize)
	}
	w.Uint32(st)
	if st != st3OK {
		s.wcc(w, d)
		return rpc.Success
	}
	w.Bool(true)
	w.Opaque(nullFH(n.ino))
	s.postOp(w, n)
	s.wcc(w, d)
	return rpc.Success
}

// make makes name in d, or (a file, unless excl) opens the existing one.
func (s *NullServer) make(d *nullNode, name string, dir, excl bool, size uint64, setSize bool) (*nullNode, uint32) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, st3Inval
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !d.dir {
		return nil, st3NotDir
	}
	if ino, ok := d.entries[name]; ok {
		n := s.nodes[ino]
		if dir || excl || n.dir {
			return nil, st3Exist
		}
		if setSize {
			n.size = size
		}
		return n, st3OK
	}
	n := &nullNode{ino: s.next, dir: dir, mode: 0o644}
	if dir {
		n.entries, n.mode = map[string]uint64{}, 0o755
	} else if setSize {
		n.size = size
	}
	s.next++
	s.nodes[n.ino] = n
	d.entries[name] = n.ino
	return n, st3OK
}

// write decodes a WRITE in full (the data too, bounded as Strata's server
// bounds it) and keeps only the new size and, from the first 8-aligned
// write, the seed of the largefile pattern.
func (s *NullServer) write(r *xdr.Reader, w *xdr.Writer) rpc.AcceptStat {
	n, st := s.node(r)
	off, count, stable := r.Uint64(), r.Uint32(), r.Uint32()
	data := r.Opaque(nfs.MaxIO)
	if r.Err() != nil || stable > 2 {
		return rpc.GarbageArgs
	}
	if st == st3OK && count != uint32(len(data)) {
		st = st3Inval
	}
	if st == st3OK {
		s.mu.Lock()
		switch {
		case n.dir:
			st = st3IsDir
		default:
			n.size = max(n.size, off+uint64(len(data)))
			if !n.seeded && off%8 == 0 && len(data) >= 8 {
				n.seed, n.seeded = largeSeed(int64(off), binary.LittleEndian.Uint64(data)), true
			}
		}
		s.mu.Unlock()
	}
	w.Uint32(st)
	s.wcc(w, n)
	if st != st3OK {
		return rpc.Success
	}
	w.Uint32(uint32(len(data)))
	w.Uint32(stable) // nothing to make durable: committed as asked
	w.Uint64(s.verf)
	return rpc.Success
}

// read answers a READ with the largefile pattern of the file's seed (zeros
// if it has none), generated in the reply buffer.
func (s *NullServer) read(r *xdr.Reader, w *xdr.Writer) rpc.AcceptStat {
	n, st := s.node(r)
	off, count := r.Uint64(), r.Uint32()
	if r.Err() != nil {
		return rpc.GarbageArgs
	}
	var size, seed uint64
	var seeded bool
	if st == st3OK {
		s.mu.Lock()
		if n.dir {
			st = st3IsDir
		}
		size, seed, seeded = n.size, n.seed, n.seeded
		s.mu.Unlock()
	}
	w.Uint32(st)
	if st != st3OK {
		w.Bool(false)
		return rpc.Success
	}
	s.postOp(w, n)
	var k uint64
	if off < size {
		k = min(uint64(min(count, nfs.MaxIO)), size-off)
	}
	w.Uint32(uint32(k))
	w.Bool(off+k >= size)
	w.OpaqueFunc(int(k), func(p []byte) (int, error) {
		if seeded {
			largeData(p, int64(off), seed)
		} else {
			clear(p)
		}
		return len(p), nil
	})
	return rpc.Success
}

// MOUNT v3 procedures.
const (
	mntNull    = 0
	mntMnt     = 1
	mntDump    = 2
	mntUmnt    = 3
	mntUmntall = 4
	mntExport  = 5
)

// mount answers MOUNT v3: MNT of any absolute path is the root.
func (s *NullServer) mount(_ context.Context, c *rpc.Call, w *xdr.Writer) rpc.AcceptStat {
	r := c.Args
	switch c.Proc {
	case mntNull, mntUmntall:
	case mntMnt:
		path := r.String(1024)
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
		if !strings.HasPrefix(path, "/") {
			w.Uint32(2) // MNT3ERR_NOENT
			return rpc.Success
		}
		w.Uint32(0)
		w.Opaque(nullFH(nullRoot))
		w.Uint32(1) // one flavor
		w.Uint32(rpc.AuthSysFlavor)
	case mntDump:
		w.Bool(false)
	case mntUmnt:
		r.String(1024)
		if r.Err() != nil {
			return rpc.GarbageArgs
		}
	case mntExport:
		w.Bool(true)
		w.String("/")
		w.Bool(false)
		w.Bool(false)
	default:
		return rpc.ProcUnavail
	}
	return rpc.Success
}
