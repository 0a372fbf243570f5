package nfs

import (
	"context"
	"net"
	"testing"

	"strata/journal"
	"strata/journal/disk"
	"strata/nfs/fs"
	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// FuzzNFSArgs feeds arbitrary argument bytes to every NFSv3 and MOUNT
// procedure of a server on a real (in-memory) file system: every call is
// answered with GARBAGE_ARGS or a reply that starts with a status, the
// server never panics, and the file system stays consistent.
func FuzzNFSArgs(f *testing.F) {
	d := disk.NewMemDisk(8192)
	if err := journal.Format(d, 512); err != nil {
		f.Fatal(err)
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		f.Fatal(err)
	}
	if err := fs.Mkfs(j, 1024); err != nil {
		f.Fatal(err)
	}
	fsys, err := fs.Open(j)
	if err != nil {
		f.Fatal(err)
	}
	s := NewServer(fsys, "/strata", nil)
	root := testFH(s, fsys.Root())
	seed := func(proc uint32, build func(w *xdr.Writer)) {
		w := xdr.NewWriter(nil)
		build(w)
		f.Add(proc, false, w.Bytes())
	}
	seed(procGetattr, func(w *xdr.Writer) { w.Opaque(root) })
	seed(procLookup, func(w *xdr.Writer) { w.Opaque(root); w.String("x") })
	seed(procCreate, func(w *xdr.Writer) { w.Opaque(root); w.String("f"); w.Uint32(0); emptySattr(w) })
	seed(procMkdir, func(w *xdr.Writer) { w.Opaque(root); w.String("d"); emptySattr(w) })
	seed(procWrite, func(w *xdr.Writer) { w.Opaque(root); w.Uint64(0); w.Uint32(1); w.Uint32(2); w.Opaque([]byte{1}) })
	seed(procReaddirplus, func(w *xdr.Writer) { w.Opaque(root); w.Uint64(0); w.Uint64(0); w.Uint32(512); w.Uint32(4096) })
	seed(procRename, func(w *xdr.Writer) { w.Opaque(root); w.String("f"); w.Opaque(root); w.String("g") })
	seed(procSetattr, func(w *xdr.Writer) { w.Opaque(root); emptySattr(w); w.Bool(false) })
	f.Add(uint32(mntMnt), true, []byte{0, 0, 0, 7, '/', 's', 't', 'r', 'a', 't', 'a', 0})
	f.Fuzz(func(t *testing.T, proc uint32, mount bool, args []byte) {
		c := &rpc.Call{Prog: ProgNFS, Vers: VersNFS, Proc: proc % (nProcs + 1), Args: xdr.NewReader(args),
			CredFlavor: rpc.AuthSysFlavor, Sys: &rpc.AuthSys{UID: 0}, Peer: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
		w := xdr.NewWriter(nil)
		var st rpc.AcceptStat
		if mount {
			c.Prog, c.Vers, c.Proc = ProgMount, VersMount, proc%7
			st = s.mount(context.Background(), c, w)
		} else {
			st = s.nfs(context.Background(), c, w)
		}
		switch st {
		case rpc.Success:
			if c.Proc != procNull && !mount && len(w.Bytes()) < 4 {
				t.Fatalf("proc %d: a successful reply without a status", c.Proc)
			}
		case rpc.GarbageArgs, rpc.ProcUnavail:
		default:
			t.Fatalf("proc %d: accept status %v", c.Proc, st)
		}
	})
}
