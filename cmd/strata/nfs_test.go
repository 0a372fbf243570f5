package main

import (
	"bufio"
	"bytes"
	"context"
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

	"strata/nfs"
)

// startNFS runs `strata nfs serve` as a child process on free ports and
// returns it with its NFS and MOUNT addresses.
func startNFS(t *testing.T, img string) (*exec.Cmd, string, string) {
	t.Helper()
	p := exec.Command(os.Args[0], "nfs", "serve", "--disk", img, "--size", "64", "--listen", "127.0.0.1:0", "--mount-listen", "127.0.0.1:0", "--rpcbind=false")
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
