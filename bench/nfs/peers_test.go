package nfsbench

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// testLog is an io.Writer that logs complete lines with t.Log.
type testLog struct {
	t   *testing.T
	mu  sync.Mutex
	buf []byte
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		l.t.Log(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// mnt calls MOUNTPROC3_MNT (prog 100005 v3 proc 1) for export over TCP at
// addr with AUTH_SYS uid 0 and returns the root file handle.
func mnt(ctx context.Context, addr, export string) ([]byte, error) {
	c, err := rpc.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	host, _ := os.Hostname()
	c.SetAuthSys(rpc.AuthSys{Stamp: uint32(time.Now().Unix()), Machine: host})
	var w xdr.Writer
	w.String(export)
	res, err := c.Call(ctx, MountProg, MountVers, 1, w.Bytes())
	if err != nil {
		return nil, err
	}
	r := xdr.NewReader(res)
	if st := r.Uint32(); r.Err() != nil || st != 0 {
		return nil, fmt.Errorf("MNT %q: status %d (%v)", export, st, r.Err())
	}
	fh := r.Opaque(64)
	if r.Err() != nil {
		return nil, r.Err()
	}
	return fh, nil
}

func checkPeer(t *testing.T, ctx context.Context, p *Peer) {
	t.Helper()
	for _, a := range []string{p.MountAddr, p.NFSAddr} {
		c, err := net.DialTimeout("tcp", a, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: TCP connect to %s: %v", p.Name, a, err)
		}
		c.Close()
	}
	fh, err := mnt(ctx, p.MountAddr, p.Export)
	if err != nil {
		t.Fatalf("%s: %v\n%s", p.Name, err, p.LogTail(20))
	}
	if len(fh) == 0 {
		t.Fatalf("%s: MNT returned an empty file handle", p.Name)
	}
	t.Logf("%s: MNT %q at %s: root handle of %d bytes", p.Name, p.Export, p.MountAddr, len(fh))
	port, err := PmapGetPort(ctx, NFSProg, NFSVers, rpc.IPProtoTCP)
	if err != nil {
		t.Fatal(err)
	}
	if want := p.NFSAddr[strings.LastIndexByte(p.NFSAddr, ':')+1:]; fmt.Sprint(port) != want {
		t.Fatalf("%s: rpcbind maps NFS v3 to port %d, want %s", p.Name, port, want)
	}
}

// checkLargefile runs the largefile workload (16 MiB) against p.
func checkLargefile(t *testing.T, ctx context.Context, p *Peer) {
	t.Helper()
	w, r, err := Largefile(ctx, Server{Name: p.Name, NFSAddr: p.NFSAddr, MountAddr: p.MountAddr, Export: p.Export}, 16<<20, "peers")
	if err != nil {
		t.Fatalf("%s: largefile: %v\n%s", p.Name, err, p.LogTail(20))
	}
	t.Logf("%s: largefile write %.1f MB/s, read %.1f MB/s", p.Name, w.PerSec, r.PerSec)
}

// TestPeers installs and starts NFS-Ganesha and GoNFS one after the other,
// checks that each answers MNT, runs clnt-smallfile for 2 s with one
// thread against each (the one registered with rpcbind at the time), and
// the largefile workload (UNSTABLE writes, COMMIT, every byte read back
// and compared: GoNFS runs with -unstable=true). It installs Debian
// packages and builds a Go module, so it runs only when asked:
//
//	STRATA_NFS_PEERS=1 go test -v -run TestPeers ./bench/nfs/
func TestPeers(t *testing.T) {
	if os.Getenv("STRATA_NFS_PEERS") != "1" {
		t.Skip("installs NFS-Ganesha and rpcbind with apt-get and builds go-nfsd; " +
			"run with STRATA_NFS_PEERS=1 go test -v -run TestPeers ./bench/nfs/")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	log := &testLog{t: t}

	stopRpcbind, err := EnsureRpcbind(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopRpcbind)

	// The project disk: the repository's strata-data (ignored by git), not /tmp.
	dataDir, err := filepath.Abs(filepath.Join("..", "..", "strata-data", "bench"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("ganesha", func(t *testing.T) {
		dir, err := os.MkdirTemp(dataDir, "ganesha-export-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		t0 := time.Now()
		p, err := StartGanesha(ctx, dir, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("ganesha ready after %v", time.Since(t0).Round(time.Millisecond))
		defer func() {
			t0 := time.Now()
			if err := p.Stop(); err != nil {
				t.Error(err)
			}
			t.Logf("ganesha stopped in %v", time.Since(t0).Round(time.Millisecond))
		}()
		checkPeer(t, ctx, p)

		// clnt-smallfile works against Ganesha too (it MNTs "/").
		rate, err := ClntSmallfile(ctx, 1, 2*time.Second, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("clnt-smallfile against Ganesha, 1 thread, 2 s: %.1f files/s", rate)
		if rate <= 0 {
			t.Fatalf("rate %v files/s", rate)
		}
		checkLargefile(t, ctx, p)
	})

	t.Run("gonfs", func(t *testing.T) {
		t0 := time.Now()
		p, err := StartGoNFS(ctx, dataDir, 256, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("gonfs ready after %v (including any build)", time.Since(t0).Round(time.Millisecond))
		defer func() {
			if err := p.Stop(); err != nil {
				t.Error(err)
			}
			port, err := PmapGetPort(ctx, NFSProg, NFSVers, rpc.IPProtoTCP)
			if err != nil || port != 0 {
				t.Errorf("after Stop, rpcbind still maps NFS v3 to %d (%v)", port, err)
			}
		}()
		checkPeer(t, ctx, p)

		rate, err := ClntSmallfile(ctx, 1, 2*time.Second, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("clnt-smallfile against GoNFS, 1 thread, 2 s: %.1f files/s", rate)
		if rate <= 0 {
			t.Fatalf("rate %v files/s", rate)
		}
		checkLargefile(t, ctx, p)
		if p.Exited() {
			t.Fatalf("go-nfsd exited during the run:\n%s", p.LogTail(20))
		}
	})
}
