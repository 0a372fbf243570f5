package nfsbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/nfs"
	"strata/nfs/rpc"
	"strata/nfs/xdr"
)

// startNull serves s (a null server) on loopback in process until the test
// ends, with handler wrapping its NFS program if not nil.
func startNull(t *testing.T, s *NullServer, wrap func(rpc.Handler) rpc.Handler) Server {
	t.Helper()
	r := rpc.NewServer(nil)
	s.Register(r)
	if wrap != nil {
		r.Register(nfs.ProgNFS, nfs.VersNFS, wrap(s.nfs))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.ServeTCP(ctx, ln) }()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return Server{Name: Null, NFSAddr: ln.Addr().String(), MountAddr: ln.Addr().String(), Export: "/"}
}

// The largefile workload runs against the null server through the real
// driver, with its byte-for-byte comparison, and twice in a row (another
// seed, another directory); the server keeps no file data, only sizes and
// one word per file.
func TestNullLargefile(t *testing.T) {
	s := NewNullServer()
	srv := startNull(t, s, nil)
	for i, tag := range []string{"a", "b"} {
		w, rd, err := Largefile(context.Background(), srv, 4<<20, tag)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if w.PerSec <= 0 || rd.PerSec <= 0 || w.Ops != 4<<20 {
			t.Fatalf("run %d: write %+v read %+v", i, w, rd)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Left: the root and the two large-* directories (the files were
	// removed by the workload).
	if len(s.nodes) != 3 {
		t.Errorf("%d nodes after two runs, want 3", len(s.nodes))
	}
}

// The comparison is not vacuous on the null server: a READ reply that does
// not carry the written data (here: the file's seed changed between the
// writes and the reads) fails the workload with a mismatch.
func TestNullReadMismatchIsCaught(t *testing.T) {
	s := NewNullServer()
	var once sync.Once
	srv := startNull(t, s, func(h rpc.Handler) rpc.Handler {
		return func(ctx context.Context, c *rpc.Call, w *xdr.Writer) rpc.AcceptStat {
			if c.Proc == nProcRead {
				once.Do(func() {
					s.mu.Lock()
					for _, n := range s.nodes {
						n.seed ^= 1 << 40
					}
					s.mu.Unlock()
				})
			}
			return h(ctx, c, w)
		}
	})
	_, _, err := Largefile(context.Background(), srv, 1<<20, "x")
	if err == nil || !strings.Contains(err.Error(), "differ") {
		t.Fatalf("Largefile with wrong READ data: %v, want a mismatch", err)
	}
}

// The null server stores nothing: data that is not the largefile pattern
// does not read back; a file never written with an aligned word reads as
// zeros; sizes, EOF and short reads at the end are right.
func TestNullStoresNothing(t *testing.T) {
	srv := startNull(t, NewNullServer(), nil)
	ctx := context.Background()
	c, dir, err := dial(ctx, srv, "d")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fh, err := c.Create(ctx, dir, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("strata"), 1000) // 6000 bytes
	if _, err := c.Write(ctx, fh, 0, data, nfs.Unstable); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Commit(ctx, fh); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Size(ctx, fh); err != nil || n != 6000 {
		t.Fatalf("size %d, %v; want 6000", n, err)
	}
	got, eof, err := c.Read(ctx, fh, 0, 64<<10)
	if err != nil || !eof || len(got) != 6000 {
		t.Fatalf("read: %d bytes, eof %v, %v; want 6000, true", len(got), eof, err)
	}
	if bytes.Equal(got, data) {
		t.Fatal("the null server returned the written bytes: it stores data")
	}
	// What it returns is the pattern of the seed the first word implies.
	want := make([]byte, 6000)
	largeData(want, 0, largeSeed(0, binary.LittleEndian.Uint64(data)))
	if !bytes.Equal(got, want) {
		t.Fatal("READ is not the pattern of the written first word")
	}
	got, eof, err = c.Read(ctx, fh, 5990, 100)
	if err != nil || !eof || len(got) != 10 {
		t.Fatalf("read at 5990: %d bytes, eof %v, %v; want 10, true", len(got), eof, err)
	}
	// Unaligned writes give no seed: zeros.
	fh2, err := c.Create(ctx, dir, "g", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, fh2, 3, []byte("0123456789abcdef"), nfs.FileSync); err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.Read(ctx, fh2, 0, 100); err != nil || !bytes.Equal(got, make([]byte, 19)) {
		t.Fatalf("unseeded file read %q, %v; want 19 zeros", got, err)
	}
	// Names: an existing directory is EXIST, a missing file NOENT, a
	// removed file's handle STALE.
	if _, err := c.Mkdir(ctx, dir, "f", 0o755); err == nil {
		t.Error("MKDIR over a file succeeded")
	}
	if _, err := c.Lookup(ctx, dir, "nope"); err == nil {
		t.Error("LOOKUP of a missing name succeeded")
	}
	if err := c.Remove(ctx, dir, "f"); err != nil {
		t.Fatal(err)
	}
	var se *nfs.StatusError
	if _, err := c.Size(ctx, fh); !errors.As(err, &se) || se.Status != st3Stale {
		t.Errorf("GETATTR of a removed file: %v, want STALE", err)
	}
}

// largeData makes, at any offset and length, the bytes of largeWord: a
// reference built word by word.
func TestLargeData(t *testing.T) {
	const seed = 0x1234_5678_9abc_def0
	const size = 3*largePeriod + 200
	ref := make([]byte, size)
	for pos := 0; pos+8 <= size; pos += 8 {
		binary.LittleEndian.PutUint64(ref[pos:], largeWord(int64(pos), seed))
	}
	for _, off := range []int{0, 1, 7, 8, 60, 63, 64, 65, 100, largePeriod - 3, largePeriod, 2*largePeriod + 61} {
		for _, n := range []int{0, 1, 5, 8, 9, 63, 64, 65, 130, largePeriod, largePeriod + 77} {
			if off+n > size-8 {
				continue
			}
			p := make([]byte, n)
			largeData(p, int64(off), seed)
			if !bytes.Equal(p, ref[off:off+n]) {
				t.Fatalf("largeData(off %d, len %d) differs from the reference at byte %d", off, n, firstDiff(p, ref[off:off+n]))
			}
		}
	}
	// Line heads are unique in the file, words unique in a block.
	seen := map[uint64]int{}
	for pos := 0; pos+8 <= size; pos += 8 {
		w := largeWord(int64(pos), seed)
		if prev, ok := seen[w]; ok && (pos%largeLine == 0 || prev%largeLine == 0 || pos/largePeriod == prev/largePeriod) {
			t.Fatalf("words at %d and %d are equal", prev, pos)
		}
		seen[w] = pos
		if got := largeSeed(int64(pos), w); got != seed {
			t.Fatalf("largeSeed at %d = %x, want %x", pos, got, seed)
		}
		if largeWord(int64(pos), seed+1) == w {
			t.Fatalf("another seed gives the same word at %d", pos)
		}
	}
}

// ServeNull prints its ready line with two ports that answer, and returns
// when its context ends.
func TestServeNull(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeNull(ctx, pw, &bytes.Buffer{}) }()
	buf := make([]byte, 200)
	pr.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := pr.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	var np, mp int
	if _, err := fmt.Sscanf(string(buf[:n]), "null server: nfs port %d, mount port %d", &np, &mp); err != nil {
		t.Fatalf("ready line %q: %v", buf[:n], err)
	}
	srv := Server{Name: Null, NFSAddr: fmt.Sprintf("127.0.0.1:%d", np), MountAddr: fmt.Sprintf("127.0.0.1:%d", mp), Export: "/"}
	if _, _, err := Largefile(ctx, srv, 1<<20, "s"); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeNull did not return after its context ended")
	}
}
