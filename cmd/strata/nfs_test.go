package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"strata/journal"
	"strata/journal/disk"
	"strata/nfs"
	"strata/nfs/fs"
)

// startNFS runs `strata nfs serve` as a child process on free ports and
// returns it with its NFS and MOUNT addresses.
func startNFS(t *testing.T, img string, extra ...string) (*exec.Cmd, string, string) {
	t.Helper()
	args := append([]string{"nfs", "serve", "--disk", img, "--size", "64", "--listen", "127.0.0.1:0", "--mount-listen", "127.0.0.1:0", "--rpcbind=false"}, extra...)
	p := exec.Command(os.Args[0], args...)
	p.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out, err := p.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var nfsPort, mountPort int
	if _, serr := fmt.Sscanf(line, "serving /strata on nfs port %d, mount port %d", &nfsPort, &mountPort); err != nil || serr != nil {
		p.Process.Kill()
		p.Wait()
		t.Fatalf("nfs server did not start: %q %v %v", line, err, serr)
	}
	return p, fmt.Sprintf("127.0.0.1:%d", nfsPort), fmt.Sprintf("127.0.0.1:%d", mountPort)
}

// TestNFSKillRealProcess: clients create files and write them FILE_SYNC
// while the server process is SIGKILLed, three times; after a restart
// every file whose write was acknowledged is there with its content, and
// `strata nfs fsck` finds the image clean.
func TestNFSKillRealProcess(t *testing.T) {
	img := filepath.Join(t.TempDir(), "nfs.img")
	acked := map[string][]byte{}
	var mu sync.Mutex
	for round := 0; round < 3; round++ {
		p, nfsAddr, mountAddr := startNFS(t, img)
		ctx, cancel := context.WithCancel(context.Background())
		c, err := nfs.DialClient(ctx, nfsAddr, mountAddr, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		root, err := c.Mount(ctx, "/strata")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				for i := 0; ctx.Err() == nil; i++ {
					name := fmt.Sprintf("r%d-g%d-%d", round, g, i)
					data := make([]byte, rng.IntN(20000))
					for k := range data {
						data[k] = byte(rng.Uint32())
					}
					fh, err := c.Create(ctx, root, name, 0o644)
					if err != nil {
						return // the server is gone
					}
					if _, err := c.Write(ctx, fh, 0, data, nfs.FileSync); err != nil {
						return
					}
					mu.Lock()
					acked[name] = data
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(200+100*round) * time.Millisecond)
		p.Process.Signal(syscall.SIGKILL)
		p.Wait()
		cancel()
		wg.Wait()
		c.Close()
	}
	if len(acked) < 10 {
		t.Fatalf("only %d files acknowledged", len(acked))
	}
	p, nfsAddr, mountAddr := startNFS(t, img)
	ctx := context.Background()
	c, err := nfs.DialClient(ctx, nfsAddr, mountAddr, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	root, err := c.Mount(ctx, "/strata")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range acked {
		fh, err := c.Lookup(ctx, root, name)
		if err != nil {
			t.Fatalf("%s after the crashes: %v", name, err)
		}
		got, _, err := c.Read(ctx, fh, 0, uint32(len(want))+1)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after the crashes: %d bytes (want %d), %v", name, len(got), len(want), err)
		}
	}
	c.Close()
	p.Process.Signal(os.Interrupt)
	p.Wait()
	out, err := run(t, "nfs", "fsck", img)
	if err != nil || !strings.Contains(out, "file system OK") {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
	t.Logf("%d acknowledged files survived 3 SIGKILLs", len(acked))
}

// TestUp runs the README's main command, `strata up`, as a child process:
// the write-once registers answer through the cluster file it writes, the
// NFS export takes a file from libnfs's nfs-cp and gives it back to
// nfs-cat, and after Ctrl-C and a second `up` both are still there.
func TestUp(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	nfsPort := adjacentFreePorts(t, 2)
	worPort := adjacentFreePorts(t, 3)
	up := func() *exec.Cmd {
		p := exec.Command(os.Args[0], "up", "--dir", data, "--port", fmt.Sprint(worPort), "--nfs-port", fmt.Sprint(nfsPort), "--nfs-size", "64")
		p.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
		out, err := p.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		var seen []string
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				p.Process.Kill()
				p.Wait()
				t.Fatalf("up did not finish starting: %v; output so far: %q", err, seen)
			}
			seen = append(seen, line)
			if strings.HasPrefix(line, "Ctrl-C stops them") {
				return p
			}
		}
	}
	stopUp := func(p *exec.Cmd) {
		p.Process.Signal(os.Interrupt)
		if err := p.Wait(); err != nil {
			t.Fatalf("up after Ctrl-C: %v", err)
		}
	}
	cluster := filepath.Join(data, "cluster.json")
	url := fmt.Sprintf("nfs://127.0.0.1/strata/hello.txt?version=3&nfsport=%d&mountport=%d", nfsPort, nfsPort+1)
	local := filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(local, []byte("hello over NFS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := up()
	if out, err := run(t, "wor", "--cluster", cluster, "alloc", "1"); err != nil {
		t.Fatalf("alloc: %v\n%s", err, out)
	}
	if out, err := run(t, "wor", "--cluster", cluster, "put", "1", "0", "hello"); err != nil || !strings.Contains(out, "wrote") {
		t.Fatalf("put: %v\n%s", err, out)
	}
	if out, err := exec.Command(nfsTool(t, "nfs-cp"), local, url).CombinedOutput(); err != nil {
		t.Fatalf("nfs-cp: %v\n%s", err, out)
	}
	stopUp(p)
	p = up()
	defer stopUp(p)
	if out, err := run(t, "wor", "--cluster", cluster, "get", "1", "0"); err != nil || !strings.Contains(out, `"hello"`) {
		t.Fatalf("get after restart: %v\n%s", err, out)
	}
	out, err := exec.Command(nfsTool(t, "nfs-cat"), url).Output()
	if err != nil || string(out) != "hello over NFS\n" {
		t.Fatalf("nfs-cat after restart: %q %v", out, err)
	}
}

func nfsTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: install Debian's libnfs-utils (scripts/setup.sh does)", name)
	}
	return p
}

// adjacentFreePorts returns a port p such that p .. p+n-1 were free a
// moment ago (on TCP and UDP).
func adjacentFreePorts(t *testing.T, n int) int {
	t.Helper()
	for attempt := 0; attempt < 50; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := true
		for q := p; q < p+n; q++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", q))
			if err != nil {
				ok = false
				break
			}
			u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", q))
			l.Close()
			if err != nil {
				ok = false
				break
			}
			u.Close()
		}
		if ok {
			return p
		}
	}
	t.Fatal("no two adjacent free ports")
	return 0
}

// damagedImage makes a small file system image at path with a file in
// it, then lets damage change the journal's data region (where the file
// system lives: the superblock is block 0).
func damagedImage(t *testing.T, path string, damage func(op *journal.Op, f *fs.FS)) {
	t.Helper()
	d, err := disk.CreateFile(path, 4096, 2+journal.DefaultLogBlocks)
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
	if err := fs.Mkfs(j, 256); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Open(j)
	if err != nil {
		t.Fatal(err)
	}
	h, _, _, _, err := f.Create(f.Root(), "file", fs.Guarded, fs.SetAttr{}, 0, 0, 0, fs.Time{Sec: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Write(h, 0, bytes.Repeat([]byte("x"), 10000), true, fs.Time{Sec: 2}); err != nil {
		t.Fatal(err)
	}
	op := j.Begin()
	damage(op, f)
	if _, err := op.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// runCLI runs the strata binary (this test, as the CLI) with a deadline and
// returns its combined output and exit code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := exec.CommandContext(ctx, os.Args[0], args...)
	p.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out, err := p.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("strata %s: still running after 30 s:\n%s", strings.Join(args, " "), out)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return string(out), p.ProcessState.ExitCode()
}

// TestNfsServeRefusesDamagedImage: `strata nfs serve` on an image whose
// superblock is damaged (or, with --check, whose bitmap is) exits non-zero
// at once, with no panic, saying the image is damaged and pointing at
// `strata nfs fsck IMG`; fsck lists the damage.
func TestNfsServeRefusesDamagedImage(t *testing.T) {
	overwrite := func(op *journal.Op, bn uint64, off int, v uint64) {
		buf, err := op.ReadBuf(journal.Addr{Blkno: bn}, journal.BlockBits)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(buf.Data[off:], v)
		buf.SetDirty()
	}
	for _, c := range []struct {
		name   string
		damage func(op *journal.Op, f *fs.FS)
		flags  []string
		want   string // in the error and in fsck's report
	}{
		{name: "bad magic", damage: func(op *journal.Op, _ *fs.FS) { overwrite(op, 0, 0, 0x1234) },
			want: "no file system (bad superblock magic 0x1234)"},
		{name: "inode count not a multiple of 32", damage: func(op *journal.Op, _ *fs.FS) { overwrite(op, 0, 24, 1000) },
			want: "inconsistent superblock"},
		{name: "more blocks than the disk", damage: func(op *journal.Op, _ *fs.FS) { overwrite(op, 0, 16, 1<<30) },
			want: "inconsistent superblock"},
		{name: "block bitmap cleared, with --check", flags: []string{"--check"}, damage: func(op *journal.Op, _ *fs.FS) {
			// The block bitmap is the block before the data area; the
			// superblock's field bbmStart is at byte 48.
			sb, err := op.ReadBuf(journal.Addr{Blkno: 0}, journal.BlockBits)
			if err != nil {
				t.Fatal(err)
			}
			bbm := binary.LittleEndian.Uint64(sb.Data[48:])
			buf, err := op.ReadBuf(journal.Addr{Blkno: bbm}, journal.BlockBits)
			if err != nil {
				t.Fatal(err)
			}
			buf.Data[0] = 0 // the root's tree block and the file's first blocks
			buf.SetDirty()
		}, want: "but free in the bitmap"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "nfs.img")
			damagedImage(t, img, c.damage)
			args := append([]string{"nfs", "serve", "--disk", img, "--listen", "127.0.0.1:0", "--mount-listen", "127.0.0.1:0", "--rpcbind=false"}, c.flags...)
			out, code := runCLI(t, args...)
			if code == 0 || strings.Contains(out, "panic") || strings.Contains(out, "serving /strata") {
				t.Fatalf("serve on a damaged image: exit %d:\n%s", code, out)
			}
			for _, want := range []string{"file system on " + img + " is damaged, not serving it", c.want, "run `strata nfs fsck " + img + "`"} {
				if !strings.Contains(out, want) {
					t.Fatalf("serve's error lacks %q:\n%s", want, out)
				}
			}
			out, code = runCLI(t, "nfs", "fsck", img)
			if code == 0 || strings.Contains(out, "panic") || !strings.Contains(out, "file system has problems") || !strings.Contains(out, c.want) {
				t.Fatalf("fsck on the damaged image: exit %d:\n%s", code, out)
			}
		})
	}
}

// TestNfsServeExports: `strata nfs serve` refuses a bad --exports file
// naming the line, before touching the disk; with a file that admits only
// another address a loopback client's MNT is MNT3ERR_ACCES and its NFS
// calls are denied; without --exports loopback root is squashed to 65534,
// and a new image's root directory is 1777 so that it can still create
// files there.
func TestNfsServeExports(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "nfs.img")
	bad := filepath.Join(dir, "exports.bad")
	if err := os.WriteFile(bad, []byte("# ok so far\n/strata 127.0.0.1(rw)\n/strata/pub *(ro,no_such_option)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "nfs", "serve", "--disk", img, "--exports", bad, "--listen", "127.0.0.1:0", "--mount-listen", "127.0.0.1:0", "--rpcbind=false")
	if code == 0 || !strings.Contains(out, bad+":3: ") || !strings.Contains(out, "no_such_option") {
		t.Fatalf("bad exports file: exit %d, output %q", code, out)
	}
	if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused start created the disk (%v)", err)
	}

	other := filepath.Join(dir, "exports")
	if err := os.WriteFile(other, []byte("/strata 127.0.0.2(rw)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, nfsAddr, mountAddr := startNFS(t, img, "--exports", other)
	c, err := nfs.DialClient(ctx, nfsAddr, mountAddr, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var se *nfs.StatusError
	if _, err := c.Mount(ctx, "/strata"); !errors.As(err, &se) || se.Status != 13 {
		t.Fatalf("MNT from an address the exports do not list: %v, want MNT3ERR_ACCES", err)
	}
	c.Close()
	p.Process.Signal(os.Interrupt)
	p.Wait()

	p, nfsAddr, mountAddr = startNFS(t, img)
	c, err = nfs.DialClient(ctx, nfsAddr, mountAddr, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	root, err := c.Mount(ctx, "/strata")
	if err != nil {
		t.Fatal(err)
	}
	fh, err := c.Create(ctx, root, "by-root", 0o644)
	if err != nil {
		t.Fatalf("create at the top of a new image as squashed root: %v", err)
	}
	if _, err := c.Write(ctx, fh, 0, []byte("x"), nfs.FileSync); err != nil {
		t.Fatal(err)
	}
	c.Close()
	p.Process.Signal(os.Interrupt)
	p.Wait()

	d, err := disk.OpenFile(img)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	f, err := fs.Open(j)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := f.GetAttr(f.Root())
	if err != nil || ra.Mode != 0o1777 {
		t.Fatalf("root directory mode %o (%v), want 1777", ra.Mode, err)
	}
	_, a, _, err := f.Lookup(f.Root(), "by-root")
	if err != nil || a.UID != 65534 || a.GID != 65534 {
		t.Fatalf("file created by root over NFS: owner %d:%d (%v), want 65534:65534", a.UID, a.GID, err)
	}
}
