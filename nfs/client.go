package nfs

import (
	"context"
	"fmt"

	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// Client is a small NFSv3 client that speaks RPC directly (no kernel
// mount): the driver of Strata's tests and benchmarks, usable against any
// NFSv3 server. It is safe for concurrent use; calls share one connection.
type Client struct {
	nfs, mnt *rpc.Client
}

// StatusError is an NFS3 status other than NFS3_OK.
type StatusError struct {
	Proc   string
	Status uint32
}

func (e *StatusError) Error() string { return fmt.Sprintf("nfs %s: status %d", e.Proc, e.Status) }

// Stable-how values for Client.Write.
const (
	Unstable = unstable
	DataSync = dataSync
	FileSync = fileSync
)

// DialClient connects to an NFS server's NFS and MOUNT ports over TCP,
// sending AUTH_SYS credentials uid and gid.
func DialClient(ctx context.Context, nfsAddr, mountAddr string, uid, gid uint32) (*Client, error) {
	n, err := rpc.Dial(ctx, "tcp", nfsAddr)
	if err != nil {
		return nil, err
	}
	m := n
	if mountAddr != nfsAddr {
		if m, err = rpc.Dial(ctx, "tcp", mountAddr); err != nil {
			n.Close()
			return nil, err
		}
	}
	a := rpc.AuthSys{Machine: "strata", UID: uid, GID: gid}
	n.SetAuthSys(a)
	m.SetAuthSys(a)
	return &Client{nfs: n, mnt: m}, nil
}

// Close closes the connections.
func (c *Client) Close() error {
	err := c.nfs.Close()
	if c.mnt != c.nfs {
		c.mnt.Close()
	}
	return err
}

// Mount returns the root handle of an export.
func (c *Client) Mount(ctx context.Context, export string) ([]byte, error) {
	w := xdr.NewWriter(nil)
	w.String(export)
	res, err := c.mnt.Call(ctx, ProgMount, VersMount, mntMnt, w.Bytes())
	if err != nil {
		return nil, err
	}
	r := xdr.NewReader(res)
	if st := r.Uint32(); st != 0 {
		return nil, &StatusError{"mnt", st}
	}
	fh := r.Opaque(MaxFH)
	return fh, r.Err()
}

func (c *Client) call(ctx context.Context, proc uint32, build func(*xdr.Writer)) (*xdr.Reader, error) {
	w := xdr.NewWriter(nil)
	build(w)
	res, err := c.nfs.Call(ctx, ProgNFS, VersNFS, proc, w.Bytes())
	if err != nil {
		return nil, err
	}
	r := xdr.NewReader(res)
	if st := r.Uint32(); st != nfsOK {
		return r, &StatusError{ProcNames[proc], st}
	}
	return r, r.Err()
}

func skipAttr(r *xdr.Reader) (size uint64) {
	for range 5 {
		r.Uint32()
	}
	size = r.Uint64()
	for range 4 {
		r.Uint64()
	}
	for range 6 {
		r.Uint32()
	}
	return size
}

func skipPost(r *xdr.Reader) {
	if r.Bool() {
		skipAttr(r)
	}
}

// Lookup returns the handle of name in dir.
func (c *Client) Lookup(ctx context.Context, dir []byte, name string) ([]byte, error) {
	r, err := c.call(ctx, procLookup, func(w *xdr.Writer) { w.Opaque(dir); w.String(name) })
	if err != nil {
		return nil, err
	}
	return r.Opaque(MaxFH), r.Err()
}

// Create makes (or, if it exists, opens: UNCHECKED) a regular file.
func (c *Client) Create(ctx context.Context, dir []byte, name string, mode uint32) ([]byte, error) {
	return c.makeNode(ctx, procCreate, dir, name, mode)
}

// makeNode sends CREATE (UNCHECKED) or MKDIR with a mode and returns the
// new object's handle.
func (c *Client) makeNode(ctx context.Context, proc uint32, dir []byte, name string, mode uint32) ([]byte, error) {
	r, err := c.call(ctx, proc, func(w *xdr.Writer) {
		w.Opaque(dir)
		w.String(name)
		if proc == procCreate {
			w.Uint32(0) // UNCHECKED
		}
		w.Bool(true)
		w.Uint32(mode)
		w.Bool(false) // uid
		w.Bool(false) // gid
		w.Bool(false) // size
		w.Uint32(0)   // atime: don't change
		w.Uint32(0)   // mtime: don't change
	})
	if err != nil {
		return nil, err
	}
	if !r.Bool() {
		return nil, fmt.Errorf("nfs %s %s: no handle in the reply", ProcNames[proc], name)
	}
	return r.Opaque(MaxFH), r.Err()
}

// Mkdir makes a directory.
func (c *Client) Mkdir(ctx context.Context, dir []byte, name string, mode uint32) ([]byte, error) {
	return c.makeNode(ctx, procMkdir, dir, name, mode)
}

// Write writes data at off with a stable-how (Unstable, DataSync,
// FileSync) and returns the server's write verifier.
func (c *Client) Write(ctx context.Context, fh []byte, off uint64, data []byte, stable uint32) (uint64, error) {
	r, err := c.call(ctx, procWrite, func(w *xdr.Writer) {
		w.Opaque(fh)
		w.Uint64(off)
		w.Uint32(uint32(len(data)))
		w.Uint32(stable)
		w.Opaque(data)
	})
	if err != nil {
		return 0, err
	}
	if r.Bool() {
		r.Uint64()
		r.Uint64()
		r.Uint64()
	}
	skipPost(r)
	if n := r.Uint32(); int(n) != len(data) {
		return 0, fmt.Errorf("nfs write: %d of %d bytes written", n, len(data))
	}
	r.Uint32()
	return r.Uint64(), r.Err()
}

// Read reads up to n bytes at off.
func (c *Client) Read(ctx context.Context, fh []byte, off uint64, n uint32) ([]byte, bool, error) {
	r, err := c.call(ctx, procRead, func(w *xdr.Writer) { w.Opaque(fh); w.Uint64(off); w.Uint32(n) })
	if err != nil {
		return nil, false, err
	}
	skipPost(r)
	r.Uint32()
	eof := r.Bool()
	return r.Opaque(MaxIO), eof, r.Err()
}

// Commit makes the file's unstable writes durable and returns the write
// verifier.
func (c *Client) Commit(ctx context.Context, fh []byte) (uint64, error) {
	r, err := c.call(ctx, procCommit, func(w *xdr.Writer) { w.Opaque(fh); w.Uint64(0); w.Uint32(0) })
	if err != nil {
		return 0, err
	}
	if r.Bool() {
		r.Uint64()
		r.Uint64()
		r.Uint64()
	}
	skipPost(r)
	return r.Uint64(), r.Err()
}

// Remove removes a file's name.
func (c *Client) Remove(ctx context.Context, dir []byte, name string) error {
	_, err := c.call(ctx, procRemove, func(w *xdr.Writer) { w.Opaque(dir); w.String(name) })
	return err
}

// Size returns a file's size (GETATTR).
func (c *Client) Size(ctx context.Context, fh []byte) (uint64, error) {
	r, err := c.call(ctx, procGetattr, func(w *xdr.Writer) { w.Opaque(fh) })
	if err != nil {
		return 0, err
	}
	return skipAttr(r), r.Err()
}
