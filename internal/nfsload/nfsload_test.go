package nfsload

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"strata/journal"
	"strata/journal/disk"
	"strata/nfs"
	"strata/nfs/fs"
	"strata/nfs/rpc"
)

// The workloads run end to end against a Strata NFS server on a journal
// file and complete operations.
func TestWorkloads(t *testing.T) {
	d, err := disk.CreateFile(filepath.Join(t.TempDir(), "nfs.img"), 16384, 2+journal.DefaultLogBlocks)
	if err != nil {
		t.Fatal(err)
	}
	if err := journal.Format(d, 0); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := fs.Mkfs(j, 2048); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(j)
	if err != nil {
		t.Fatal(err)
	}
	r := rpc.NewServer(nil)
	nfs.NewServer(f, "/strata", nil).Register(r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.ServeTCP(ctx, ln) }()
	defer func() { cancel(); ln.Close(); <-done }()
	s := Server{Name: "strata", NFSAddr: ln.Addr().String(), MountAddr: ln.Addr().String(), Export: "/strata"}
	res, err := Smallfile(context.Background(), s, 2, 300*time.Millisecond, "t")
	if err != nil || res.Ops == 0 || res.PerSec <= 0 {
		t.Fatalf("smallfile: %+v %v", res, err)
	}
	w, rd, err := Largefile(context.Background(), s, 3<<20, "t")
	if err != nil || w.PerSec <= 0 || rd.PerSec <= 0 {
		t.Fatalf("largefile: %+v %+v %v", w, rd, err)
	}
	if rep, err := f.Check(); err != nil || !rep.Clean() {
		t.Fatalf("fsck after the workloads: %v %v", rep, err)
	}
	t.Logf("smallfile %.0f files/s, largefile write %.1f MB/s, read %.1f MB/s", res.PerSec, w.PerSec, rd.PerSec)
}
