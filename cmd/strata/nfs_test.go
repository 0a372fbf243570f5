package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
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
