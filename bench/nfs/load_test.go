package nfsbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/journal"
	"strata/journal/disk"
	"strata/nfs"
	"strata/nfs/fs"
	"strata/nfs/rpc"
)

// startStrata serves a fresh Strata file system over NFS on loopback until
// the test ends; fsck checks it.
func startStrata(t *testing.T) (s Server, fsck func()) {
	t.Helper()
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
	t.Cleanup(func() { cancel(); ln.Close(); <-done; j.Close() })
	fsck = func() {
		if rep, err := f.Check(); err != nil || !rep.Clean() {
			t.Fatalf("fsck after the workloads: %v %v", rep, err)
		}
	}
	return Server{Name: "strata", NFSAddr: ln.Addr().String(), MountAddr: ln.Addr().String(), Export: "/strata"}, fsck
}

// The workloads run end to end against a Strata NFS server on a journal
// file and complete operations.
func TestWorkloads(t *testing.T) {
	s, fsck := startStrata(t)
	res, err := Smallfile(context.Background(), s, 2, 300*time.Millisecond, "t")
	if err != nil || res.Ops == 0 || res.PerSec <= 0 {
		t.Fatalf("smallfile: %+v %v", res, err)
	}
	w, rd, err := Largefile(context.Background(), s, 3<<20, "t")
	if err != nil || w.PerSec <= 0 || rd.PerSec <= 0 {
		t.Fatalf("largefile: %+v %+v %v", w, rd, err)
	}
	src := appTree(t)
	app, err := App(context.Background(), s, src, 2, "t")
	if err != nil || app.Ops != 3 {
		t.Fatalf("app: %+v %v", app, err)
	}
	fsck()
	t.Logf("smallfile %.0f files/s, largefile write %.1f MB/s, read %.1f MB/s", res.PerSec, w.PerSec, rd.PerSec)
}

// appTree is a small source tree for App.
func appTree(t *testing.T) string {
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
	return src
}

// freezer is a TCP proxy to a server that forwards both ways until
// `after` bytes went from clients to the server; then it stops reading
// from the clients and forwards nothing more, which is what a deadlocked
// server looks like from the client: no replies.
type freezer struct {
	ln     net.Listener
	after  int64
	sent   atomic.Int64
	frozen chan struct{}
	once   sync.Once
	mu     sync.Mutex
	conns  []net.Conn
}

func startFreezer(t *testing.T, target string, after int64) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezer{ln: ln, after: after, frozen: make(chan struct{})}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(c, s, true)
			go p.pipe(s, c, false)
		}
	}()
	return p
}

func (p *freezer) pipe(from, to net.Conn, up bool) {
	buf := make([]byte, 32<<10)
	for {
		select {
		case <-p.frozen:
			return // stop reading: from's writes block once buffers fill
		default:
		}
		n, err := from.Read(buf)
		if err != nil {
			return
		}
		if up && p.sent.Add(int64(n)) >= p.after {
			p.once.Do(func() { close(p.frozen) })
		}
		select {
		case <-p.frozen:
			return
		default:
		}
		if _, err := to.Write(buf[:n]); err != nil {
			return
		}
	}
}

func (p *freezer) server(s Server) Server {
	s.NFSAddr, s.MountAddr = p.ln.Addr().String(), p.ln.Addr().String()
	return s
}

// A server that stops answering mid-workload does not hang a workload:
// Smallfile reports the stall, and App and Largefile return when their
// context's deadline passes, with its cause.
func TestStalledServer(t *testing.T) {
	s, _ := startStrata(t)
	cause := errors.New("the test's deadline")
	t.Run("smallfile", func(t *testing.T) {
		defer func(g time.Duration) { StallGrace = g }(StallGrace)
		StallGrace = 300 * time.Millisecond
		p := startFreezer(t, s.NFSAddr, 4_000) // a few iterations: reached on a loaded machine too
		ctx, cancel := context.WithTimeoutCause(context.Background(), 20*time.Second, cause)
		defer cancel()
		t0 := time.Now()
		_, err := Smallfile(ctx, p.server(s), 2, 300*time.Millisecond, "stall")
		if err == nil || !strings.Contains(err.Error(), "stalled") {
			t.Fatalf("smallfile against a stalled server: %v, want a stall", err)
		}
		t.Logf("after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	})
	t.Run("app", func(t *testing.T) {
		src := appTree(t)
		p := startFreezer(t, s.NFSAddr, 2_000)
		ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, cause)
		defer cancel()
		t0 := time.Now()
		_, err := App(ctx, p.server(s), src, 2, "stall")
		// A hang would end at the test's timeout; no timing assertion.
		if !errors.Is(err, cause) {
			t.Fatalf("app against a stalled server: %v after %v, want %v", err, time.Since(t0), cause)
		}
		t.Logf("after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	})
	t.Run("largefile", func(t *testing.T) {
		p := startFreezer(t, s.NFSAddr, 1<<20)
		ctx, cancel := context.WithTimeoutCause(context.Background(), 1500*time.Millisecond, cause)
		defer cancel()
		t0 := time.Now()
		_, _, err := Largefile(ctx, p.server(s), 8<<20, "stall")
		// A hang would end at the test's timeout; no timing assertion.
		if !errors.Is(err, cause) {
			t.Fatalf("largefile against a stalled server: %v after %v, want %v", err, time.Since(t0), cause)
		}
		t.Logf("after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	})
}
