package nfs

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/journal"
	"strata/journal/disk"
	"strata/nfs/fs"
	"strata/nfs/rpc"
)

// testServer is an NFS server on a fresh file system in a journal file,
// serving NFS and MOUNT on one TCP port (and UDP on the same port).
type testServer struct {
	srv  *Server
	fs   *fs.FS
	j    *journal.Journal
	port int
	stop func()
}

// startTestServer serves the file system on the disk file path, creating
// and formatting it first if it does not exist.
func startTestServer(t *testing.T, path string) *testServer {
	t.Helper()
	d, err := disk.OpenFile(path)
	fresh := false
	if err != nil {
		if d, err = disk.CreateFile(path, 32768, 2+journal.DefaultLogBlocks); err != nil {
			t.Fatal(err)
		}
		if err := journal.Format(d, 0); err != nil {
			t.Fatal(err)
		}
		fresh = true
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh {
		if err := fs.Mkfs(j, 4096); err != nil {
			t.Fatal(err)
		}
	}
	f, err := fs.Open(j)
	if err != nil {
		t.Fatal(err)
	}
	r := rpc.NewServer(nil)
	srv := NewServer(f, "/strata", nil)
	// The tests act as root and as other users on loopback: root keeps
	// its powers here; the exports' own tests are in exports_test.go.
	ex, err := ParseExports("test", []byte("/strata 127.0.0.1(rw,no_root_squash)"), "/strata")
	if err != nil {
		t.Fatal(err)
	}
	srv.SetExports(ex)
	srv.Register(r)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.ServeTCP(ctx, ln)
	}()
	ts := &testServer{fs: f, j: j, srv: srv, port: ln.Addr().(*net.TCPAddr).Port}
	var once sync.Once
	ts.stop = func() {
		once.Do(func() {
			cancel()
			ln.Close()
			<-done
			j.Close()
		})
	}
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) url(path string) string {
	return fmt.Sprintf("nfs://127.0.0.1/strata%s?version=3&nfsport=%d&mountport=%d", path, ts.port, ts.port)
}

// libnfsTool finds a libnfs utility; `make test` installs libnfs-utils.
func libnfsTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install Debian's libnfs-utils (make test does: scripts/setup.sh)", name)
	}
	return p
}

func runTool(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, libnfsTool(t, name), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestLibnfsClient: Debian's libnfs utilities (a real NFSv3 client written
// by others) copy a tree of files into the server, list it and read every
// file back byte for byte, also after the server restarts from its
// journal.
func TestLibnfsClient(t *testing.T) {
	img := filepath.Join(t.TempDir(), "nfs.img")
	ts := startTestServer(t, img)
	rng := rand.New(rand.NewPCG(1, 2))
	local := t.TempDir()
	files := map[string][]byte{}
	for i, size := range []int{0, 1, 100, 4095, 4096, 4097, 65536 + 7, 300_000, 2_500_000} {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(rng.Uint32())
		}
		dir := []string{"", "/a", "/a/b"}[i%3]
		files[fmt.Sprintf("%s/f%d-%d", dir, i, size)] = b
	}
	// Directories through the file system API (the libnfs tools copy files).
	now := fs.Time{Sec: uint32(time.Now().Unix())}
	a, _, _, _, err := ts.fs.Mkdir(ts.fs.Root(), "a", fs.SetAttr{}, 0, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := ts.fs.Mkdir(a, "b", fs.SetAttr{}, 0, 0, now); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		src := filepath.Join(local, strings.ReplaceAll(name, "/", "_"))
		if err := os.WriteFile(src, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		runTool(t, "nfs-cp", src, ts.url(name))
	}
	check := func(ts *testServer) {
		for _, dir := range []string{"/", "/a/", "/a/b/"} {
			out := string(runTool(t, "nfs-ls", ts.url(dir)))
			for name := range files {
				if filepath.Dir(name)+"/" == strings.Replace(dir, "//", "/", 1) || (dir == "/" && filepath.Dir(name) == "/") {
					if !strings.Contains(out, filepath.Base(name)) {
						t.Fatalf("nfs-ls %s does not list %s:\n%s", dir, name, out)
					}
				}
			}
		}
		for _, name := range names {
			got := runTool(t, "nfs-cat", ts.url(name))
			if !bytes.Equal(got, files[name]) {
				t.Fatalf("nfs-cat %s: %d bytes, want %d (or different content)", name, len(got), len(files[name]))
			}
			dst := filepath.Join(local, "back")
			runTool(t, "nfs-cp", ts.url(name), dst)
			back, err := os.ReadFile(dst)
			if err != nil || !bytes.Equal(back, files[name]) {
				t.Fatalf("nfs-cp back %s: %d bytes, %v", name, len(back), err)
			}
			os.Remove(dst)
		}
	}
	check(ts)
	if rep, err := ts.fs.Check(); err != nil || !rep.Clean() {
		t.Fatalf("fsck after the copy: %v %v", rep, err)
	}
	ts.stop()
	ts = startTestServer(t, img)
	check(ts)
}

// testFH is the handle of h in the server's first export.
func testFH(s *Server, h fs.Handle) []byte { return s.fh.encode(s.Exports().List()[0].id, h) }

// TestLibnfsRootSquashed: with the default exports (loopback, root
// squashed), a real client run by root (libnfs sends the process's uid)
// writes files owned by 65534 and cannot read a 0600 file of root's.
func TestLibnfsRootSquashed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("libnfs sends the caller's uid: squashing root needs the test to run as root")
	}
	ts := startTestServer(t, filepath.Join(t.TempDir(), "nfs.img"))
	admin := dialTest(t, ts)
	root, st := admin.mnt("/strata")
	if st != 0 {
		t.Fatal(st)
	}
	tmp, st := admin.mkdir(root, "tmp")
	if st != nfsOK || admin.setattrMode(tmp, 0777) != nfsOK {
		t.Fatalf("mkdir tmp: %d", st)
	}
	secret, st := admin.create(root, "secret")
	if st != nfsOK || admin.write(secret, 0, []byte("root only"), fileSync) != nfsOK || admin.setattrMode(secret, 0600) != nfsOK {
		t.Fatalf("secret: %d", st)
	}
	ts.srv.SetExports(DefaultExports("/strata"))

	local := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(local, []byte("from root"), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, "nfs-cp", local, ts.url("/tmp/f"))
	dir, _, _, err := ts.fs.Lookup(ts.fs.Root(), "tmp")
	if err != nil {
		t.Fatal(err)
	}
	_, a, _, err := ts.fs.Lookup(dir, "f")
	if err != nil {
		t.Fatal(err)
	}
	if a.UID != 65534 || a.GID != 65534 {
		t.Fatalf("file copied in by root is owned by %d:%d, want 65534:65534", a.UID, a.GID)
	}
	out, err := exec.Command(libnfsTool(t, "nfs-cat"), ts.url("/secret")).Output()
	if err == nil || bytes.Contains(out, []byte("root only")) {
		t.Fatalf("nfs-cat of root's 0600 file as squashed root: %v, %q", err, out)
	}
	if err := exec.Command(libnfsTool(t, "nfs-cp"), local, ts.url("/g")).Run(); err == nil {
		t.Fatal("squashed root created a file in root's 0755 directory")
	}
}
