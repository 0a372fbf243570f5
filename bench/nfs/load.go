package nfsbench

// The driver: the GoJournal paper's workloads through Strata's RPC-level
// client (no kernel mount), the same driver for every server:
//
//   - smallfile: per client, repeatedly create a file, write 100 bytes,
//     COMMIT, and remove it (the paper's create/write/close/unlink loop);
//   - largefile: one client writes a file in 64 KiB UNSTABLE writes, then
//     COMMITs, then reads it back and compares every byte;
//   - app: copy a real source tree in with several clients, then read every
//     file back and compare.
//
// Each client has its own connection. Results count completed iterations
// in a measured window after a warm-up.
//
// Every workload honours its context: when ctx is done (a caller's
// deadline, say) the workload closes its connections, so that calls waiting
// for a reply, or blocked writing to a server that stopped reading, return,
// and it fails with an error naming context.Cause(ctx). A server that stops
// answering therefore never hangs a workload past its context.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"strata/nfs"
)

// Server names an NFS server's addresses and export.
type Server struct {
	Name      string
	NFSAddr   string
	MountAddr string
	Export    string
}

// Result is one measurement.
type Result struct {
	Server   string  `json:"server"`
	Workload string  `json:"workload"`
	Clients  int     `json:"clients"`
	Round    int     `json:"round"`
	Ops      int64   `json:"ops"`
	Seconds  float64 `json:"seconds"`
	PerSec   float64 `json:"per_sec"` // files/s (smallfile) or MB/s (largefile)
}

// closeOnDone closes c once ctx is done: rpc.Client.Call gives up waiting
// for a reply when its context is done, but not a write blocked by flow
// control (a server that stopped reading), which only closing the
// connection interrupts. Call the returned func when done with c.
func closeOnDone(ctx context.Context, c *nfs.Client) (stop func() bool) {
	return context.AfterFunc(ctx, func() { c.Close() })
}

// ctxErr adds the reason ctx ended to err when ctx is done: a call cut off
// by a deadline fails with a context or closed-connection error that does
// not say why the context ended (context.WithTimeoutCause can).
func ctxErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	if errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%v)", cause, err)
}

// dial connects a client as root and mounts the export; dir is a fresh
// working directory created under the export's root.
func dial(ctx context.Context, s Server, dir string) (*nfs.Client, []byte, error) {
	c, err := nfs.DialClient(ctx, s.NFSAddr, s.MountAddr, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	root, err := c.Mount(ctx, s.Export)
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("mount %s: %w", s.Export, err)
	}
	d, err := c.Mkdir(ctx, root, dir, 0o777)
	var se *nfs.StatusError
	if errors.As(err, &se) && se.Status == 17 { // EXIST: a previous round's
		d, err = c.Lookup(ctx, root, dir)
	}
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("mkdir %s: %w", dir, err)
	}
	return c, d, nil
}

// StallGrace is how long Smallfile waits, after its measured window,
// for every client to finish the iteration it is in; a client still
// waiting for a reply then fails the run (the server stalled). A variable
// for tests.
var StallGrace = 20 * time.Second

// Smallfile runs the smallfile loop with clients concurrent clients for d
// after a warm-up of d/5, and reports files per second. It fails if a
// client gets an error, or if a client is still waiting for a reply
// StallGrace after the window (a server that stopped answering some calls
// would otherwise only look slow).
func Smallfile(ctx context.Context, s Server, clients int, d time.Duration, tag string) (Result, error) {
	r, err := smallfile(ctx, s, clients, d, tag)
	return r, ctxErr(ctx, err)
}

func smallfile(outer context.Context, s Server, clients int, d time.Duration, tag string) (Result, error) {
	var done atomic.Int64
	var measuring, stopping atomic.Bool
	var running atomic.Int32
	// ctx ends the clients: cancelled with the first client's error, a
	// stall, or (nil cause) when Smallfile returns.
	ctx, cancel := context.WithCancelCause(outer)
	var wg sync.WaitGroup
	defer func() { cancel(nil); wg.Wait() }()
	data := make([]byte, 100)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for g := 0; g < clients; g++ {
		c, dir, err := dial(ctx, s, fmt.Sprintf("small-%s-%d", tag, g))
		if err != nil {
			return Result{}, fmt.Errorf("smallfile client %d: %w", g, err)
		}
		wg.Add(1)
		running.Add(1)
		go func() {
			defer wg.Done()
			defer running.Add(-1)
			defer c.Close()
			defer closeOnDone(ctx, c)()
			for i := 0; ctx.Err() == nil && !stopping.Load(); i++ {
				name := fmt.Sprintf("f%d", i)
				fh, err := c.Create(ctx, dir, name, 0o644)
				if err == nil {
					_, err = c.Write(ctx, fh, 0, data, nfs.Unstable)
				}
				if err == nil {
					_, err = c.Commit(ctx, fh)
				}
				if err == nil {
					err = c.Remove(ctx, dir, name)
				}
				if err != nil {
					if ctx.Err() == nil {
						cancel(fmt.Errorf("smallfile client %d: %w", g, err))
					}
					return
				}
				if measuring.Load() {
					done.Add(1)
				}
			}
		}()
	}
	select {
	case <-time.After(d / 5):
	case <-ctx.Done():
	}
	measuring.Store(true)
	start := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	measuring.Store(false)
	elapsed := time.Since(start)
	n := done.Load()
	// Let every client finish the iteration it is in.
	stopping.Store(true)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
	case <-time.After(StallGrace):
		cancel(fmt.Errorf("smallfile: %d of %d clients still had no reply %v after the measured window ended (server stalled)",
			running.Load(), clients, StallGrace))
	}
	if err := context.Cause(ctx); err != nil {
		return Result{}, err
	}
	return Result{Server: s.Name, Workload: "smallfile", Clients: clients, Ops: n, Seconds: elapsed.Seconds(), PerSec: float64(n) / elapsed.Seconds()}, nil
}

// Largefile writes size bytes in 64 KiB UNSTABLE writes (up to 16 in
// flight), COMMITs, then reads the file back and checks every byte; it
// reports the write throughput (MB/s, write phase including the COMMIT) and
// the read throughput. Every 64-byte line of the file starts with a word
// found nowhere else in it, and a file of another run matches nowhere (see
// largeData), so a chunk or block that lands at the wrong offset, or is
// overwritten, fails the check.
func Largefile(ctx context.Context, s Server, size int64, tag string) (write, read Result, err error) {
	write, read, err = largefile(ctx, s, size, tag)
	return write, read, ctxErr(ctx, err)
}

func largefile(ctx context.Context, s Server, size int64, tag string) (write, read Result, err error) {
	c, dir, err := dial(ctx, s, "large-"+tag)
	if err != nil {
		return write, read, err
	}
	defer c.Close()
	defer closeOnDone(ctx, c)()
	fh, err := c.Create(ctx, dir, "big", 0o644)
	if err != nil {
		return write, read, err
	}
	const chunk = 64 << 10
	const depth = 16
	seed := uint64(time.Now().UnixNano())
	// bufs holds one buffer per write in flight and bounds the writes in
	// flight.
	bufs := make(chan []byte, depth)
	for range depth {
		bufs <- make([]byte, chunk)
	}
	// wctx ends the writes: cancelled with the first write's error.
	wctx, wcancel := context.WithCancelCause(ctx)
	defer wcancel(nil)
	var wg sync.WaitGroup
	start := time.Now()
	for off := int64(0); off < size && wctx.Err() == nil; off += chunk {
		buf := <-bufs
		wg.Add(1)
		go func(off int64) {
			defer wg.Done()
			defer func() { bufs <- buf }()
			largeData(buf, off, seed)
			if _, err := c.Write(wctx, fh, uint64(off), buf[:min(chunk, size-off)], nfs.Unstable); err != nil {
				wcancel(fmt.Errorf("largefile: write at %d: %w", off, err))
			}
		}(off)
	}
	wg.Wait()
	if err := context.Cause(wctx); err != nil {
		return write, read, err
	}
	if _, err := c.Commit(ctx, fh); err != nil {
		return write, read, err
	}
	el := time.Since(start).Seconds()
	write = Result{Server: s.Name, Workload: "largefile-write", Clients: 1, Ops: size, Seconds: el, PerSec: float64(size) / el / 1e6}
	want := <-bufs
	start = time.Now()
	for off := int64(0); off < size; off += chunk {
		got, _, err := c.Read(ctx, fh, uint64(off), chunk)
		if err != nil {
			return write, read, err
		}
		largeData(want, off, seed)
		w := want[:min(chunk, size-off)]
		if !bytes.Equal(got, w) {
			d := firstDiff(got, w)
			return write, read, fmt.Errorf("largefile: read at %d returned %d bytes (of %d) that differ from the written data at file offset %d (read %x, wrote %x)",
				off, len(got), len(w), off+int64(d), excerpt(got, d), excerpt(w, d))
		}
	}
	el = time.Since(start).Seconds()
	read = Result{Server: s.Name, Workload: "largefile-read", Clients: 1, Ops: size, Seconds: el, PerSec: float64(size) / el / 1e6}
	if err := c.Remove(ctx, dir, "big"); err != nil {
		return write, read, err
	}
	return write, read, nil
}

// Largefile's data is a function of the file offset and the run's seed,
// cheap to make (a copy and a word every 64 bytes: about a memory copy, so
// that making it, on the client and on the null server, costs no more
// than a real server's copy from its cache) and checked word by word:
//
//   - the word at an 8-aligned offset pos is mix(q) XOR seed, where mix is
//     a bijection on 64-bit words and q is pos itself at the start of each
//     64-byte line and pos mod 64 KiB elsewhere;
//   - so the rest of a line repeats every 64 KiB (a block of 64 KiB, made
//     once per seed, is copied), while the first word of every line is
//     unique in the file and no two words of one 64 KiB block are equal; a
//     block or line at the wrong offset, shifted, or overwritten by another
//     part of the file fails the comparison, and every word of a file of
//     another run (another seed) differs.
const (
	largeLine   = 64       // bytes a unique word heads
	largePeriod = 64 << 10 // bytes after which the rest of a line repeats
)

// largeMix is a bijection on 64-bit words: times an odd constant, the high
// half folded into the low half.
func largeMix(q uint64) uint64 {
	v := q * 0x9e3779b97f4a7c15
	return v ^ v>>32
}

// largeQ is the argument of largeMix for the word at offset pos.
func largeQ(pos int64) uint64 {
	if pos%largeLine == 0 {
		return uint64(pos)
	}
	return uint64(pos % largePeriod)
}

// largeWord is Largefile's 8-byte word at the 8-aligned file offset pos.
func largeWord(pos int64, seed uint64) uint64 { return largeMix(largeQ(pos)) ^ seed }

// largeSeed returns the seed of a Largefile whose word at the 8-aligned
// file offset pos is w (what the null server learns from a WRITE).
func largeSeed(pos int64, w uint64) uint64 { return w ^ largeMix(largeQ(pos)) }

// largeBlocks caches the 64 KiB block of recent seeds (the driver uses one
// per run, the null server one per file).
var largeBlocks struct {
	sync.Mutex
	seeds  [4]uint64
	blocks [4][]byte
	next   int
}

// largeBlock returns seed's 64 KiB block: the words of offsets 0 to 64 KiB
// (never modified once made).
func largeBlock(seed uint64) []byte {
	c := &largeBlocks
	c.Lock()
	defer c.Unlock()
	for i, b := range c.blocks {
		if b != nil && c.seeds[i] == seed {
			return b
		}
	}
	b := make([]byte, largePeriod)
	for i := 0; i < largePeriod; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], largeMix(uint64(i))^seed)
	}
	c.seeds[c.next], c.blocks[c.next] = seed, b
	c.next = (c.next + 1) % len(c.blocks)
	return b
}

// largeData fills p with Largefile's data from file offset off (any
// offset and length).
func largeData(p []byte, off int64, seed uint64) {
	block := largeBlock(seed)
	for i := 0; i < len(p); {
		i += copy(p[i:], block[(off+int64(i))%largePeriod:])
	}
	// The line heads: the word at each multiple of 64 that overlaps p,
	// whole ones stored at once, one cut by either end of p copied in
	// part.
	end := off + int64(len(p))
	partial := func(line int64) {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], largeMix(uint64(line))^seed)
		from := max(off, line)
		copy(p[from-off:], w[from-line:min(8, end-line)])
	}
	line := off - off%largeLine
	if line < off {
		if line+8 > off {
			partial(line)
		}
		line += largeLine
	}
	for ; line+8 <= end; line += largeLine {
		binary.LittleEndian.PutUint64(p[line-off:], largeMix(uint64(line))^seed)
	}
	if line < end {
		partial(line)
	}
}

// App copies the tree at src (a real source tree, e.g. a Go toolchain's
// src/net) into the server with clients concurrent clients (files dealt
// round-robin; directories made first), each file written in 64 KiB
// UNSTABLE writes and COMMITted, then reads every file back and compares
// it. It reports the copy's files per second (the read-back is checked,
// not timed).
func App(ctx context.Context, s Server, src string, clients int, tag string) (Result, error) {
	r, err := app(ctx, s, src, clients, tag)
	return r, ctxErr(ctx, err)
}

func app(ctx context.Context, s Server, src string, clients int, tag string) (Result, error) {
	type file struct {
		rel  string
		data []byte
	}
	var dirs []string
	var files []file
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, rel)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, file{rel, b})
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("app: read %s: %w", src, err)
	}
	if len(files) == 0 {
		return Result{}, fmt.Errorf("app: no files under %s", src)
	}
	c0, top, err := dial(ctx, s, "app-"+tag)
	if err != nil {
		return Result{}, err
	}
	defer c0.Close()
	defer closeOnDone(ctx, c0)()
	start := time.Now()
	handles := map[string][]byte{".": top}
	for _, d := range dirs { // WalkDir lists parents before children
		fh, err := c0.Mkdir(ctx, handles[filepath.Dir(d)], filepath.Base(d), 0o755)
		if err != nil {
			return Result{}, fmt.Errorf("app: mkdir %s: %w", d, err)
		}
		handles[d] = fh
	}
	copyFile := func(ctx context.Context, c *nfs.Client, f file) error {
		fh, err := c.Create(ctx, handles[filepath.Dir(f.rel)], filepath.Base(f.rel), 0o644)
		if err != nil {
			return err
		}
		for off := 0; off < len(f.data); off += 64 << 10 {
			if _, err := c.Write(ctx, fh, uint64(off), f.data[off:min(off+64<<10, len(f.data))], nfs.Unstable); err != nil {
				return err
			}
		}
		_, err = c.Commit(ctx, fh)
		return err
	}
	// cctx ends the copy: cancelled with the first client's error.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for g := 0; g < clients; g++ {
		c, err := nfs.DialClient(cctx, s.NFSAddr, s.MountAddr, 0, 0)
		if err != nil {
			cancel(fmt.Errorf("app: client %d: %w", g, err))
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			defer closeOnDone(cctx, c)()
			for i := g; i < len(files) && cctx.Err() == nil; i += clients {
				if err := copyFile(cctx, c, files[i]); err != nil {
					if cctx.Err() == nil {
						cancel(fmt.Errorf("app: copy %s: %w", files[i].rel, err))
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if err := context.Cause(cctx); err != nil {
		return Result{}, err
	}
	for _, f := range files {
		fh, err := c0.Lookup(ctx, handles[filepath.Dir(f.rel)], filepath.Base(f.rel))
		if err != nil {
			return Result{}, fmt.Errorf("app: look up %s: %w", f.rel, err)
		}
		var got []byte
		for off := 0; ; {
			b, eof, err := c0.Read(ctx, fh, uint64(off), 64<<10)
			if err != nil {
				return Result{}, fmt.Errorf("app: read back %s: %w", f.rel, err)
			}
			got = append(got, b...)
			off += len(b)
			if eof || len(b) == 0 {
				break
			}
		}
		if !bytes.Equal(got, f.data) {
			d := firstDiff(got, f.data)
			return Result{}, fmt.Errorf("app: %s (%d bytes) read back %d bytes that differ from byte %d on (read %q, wrote %q)",
				f.rel, len(f.data), len(got), d, excerpt(got, d), excerpt(f.data, d))
		}
	}
	return Result{Server: s.Name, Workload: "app", Clients: clients, Ops: int64(len(files)), Seconds: el, PerSec: float64(len(files)) / el}, nil
}

// firstDiff is the offset of the first byte where a and b differ (the
// shorter length if one is a prefix of the other).
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// excerpt is up to 16 bytes of b from off, for error messages.
func excerpt(b []byte, off int) []byte {
	if off >= len(b) {
		return nil
	}
	return b[off:min(off+16, len(b))]
}
