package nfsload

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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
	src := t.TempDir()
	for i, body := range []string{"package a\n", strings.Repeat("x", 200_000), ""} {
		sub := filepath.Join(src, fmt.Sprintf("d%d", i%2))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d.go", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app, err := App(context.Background(), s, src, 2, "t")
	if err != nil || app.Ops != 3 {
		t.Fatalf("app: %+v %v", app, err)
	}
	if rep, err := f.Check(); err != nil || !rep.Clean() {
		t.Fatalf("fsck after the workloads: %v %v", rep, err)
	}
	t.Logf("smallfile %.0f files/s, largefile write %.1f MB/s, read %.1f MB/s", res.PerSec, w.PerSec, rd.PerSec)
}
