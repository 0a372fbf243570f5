package fs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"strata/journal"
)

// expectedErr lists the errors random concurrent operations legitimately
// run into; anything else (ErrIO above all) fails the test.
func expectedErr(err error) bool {
	for _, e := range []error{ErrNoEnt, ErrExist, ErrNotDir, ErrIsDir, ErrNotEmpty, ErrStale, ErrInval} {
		if errors.Is(err, e) {
			return true
		}
	}
	return err == nil
}

// TestConcurrent runs goroutines doing creates, writes, renames (files and
// directories, across shared directories), links, removes and listings at
// once, then checks the file system. Each goroutine also keeps a private
// file whose content it verifies. A watchdog fails the test on deadlock.
func TestConcurrent(t *testing.T) {
	seed := testSeed(t)
	workers, ops := 8, 1000
	if raceEnabled {
		ops = 400
	}
	var okOps [100]atomic.Int64 // successes by operation kind
	f := newMemFS(t, 30000, 2048, 4096, Options{UnstableMetadata: seed%2 == 0})
	root := f.Root()
	var shared []Handle
	for i := 0; i < 3; i++ {
		h, _, _, _, err := f.Mkdir(root, fmt.Sprint("s", i), SetAttr{}, 0, 0, ts(0))
		if err != nil {
			t.Fatal(err)
		}
		shared = append(shared, h)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			panic(fmt.Sprintf("deadlock? goroutines:\n%s", buf[:n]))
		}
	}()
	defer close(done)
	names := []string{"a", "b", "c", "d", "e", "sub1", "sub2"}
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			fail := func(format string, args ...any) {
				select {
				case errc <- fmt.Errorf("worker %d: "+format, append([]any{w}, args...)...):
				default:
				}
			}
			// A private file, checked after every write.
			priv, _, _, _, err := f.Create(root, fmt.Sprint("private", w), Guarded, SetAttr{}, 0, 0, 0, ts(1))
			if err != nil {
				fail("%v", err)
				return
			}
			var content []byte
			// Handles this goroutine learnt (maybe stale by now).
			dirs := append([]Handle{}, shared...)
			var files []Handle
			pickDir := func() Handle { return dirs[rng.IntN(len(dirs))] }
			for i := 0; i < ops; i++ {
				now := ts(i)
				name := names[rng.IntN(len(names))]
				var err error
				k := rng.IntN(100)
				switch {
				case k < 15:
					var h Handle
					h, _, _, _, err = f.Create(pickDir(), name, CreateMode(rng.IntN(3)), SetAttr{}, uint64(w), 0, 0, now)
					if err == nil {
						files = append(files, h)
					}
				case k < 22:
					var h Handle
					h, _, _, _, err = f.Mkdir(pickDir(), name, SetAttr{}, 0, 0, now)
					if err == nil {
						dirs = append(dirs, h)
					}
				case k < 35:
					if len(files) > 0 {
						data := bytes.Repeat([]byte{byte(w)}, rng.IntN(10000))
						_, _, err = f.Write(files[rng.IntN(len(files))], uint64(rng.IntN(50000)), data, rng.IntN(2) == 0, now)
					}
				case k < 55:
					_, _, _, _, err = f.Rename(pickDir(), name, pickDir(), names[rng.IntN(len(names))], now)
				case k < 62:
					if len(files) > 0 {
						_, _, _, err = f.Link(files[rng.IntN(len(files))], pickDir(), name, now)
					}
				case k < 72:
					_, _, err = f.Remove(pickDir(), name, now)
				case k < 78:
					_, _, err = f.Rmdir(pickDir(), name, now)
				case k < 84:
					_, _, _, _, err = f.ReadDir(pickDir(), 0, 0, 1+rng.IntN(10), rng.IntN(2) == 0)
				case k < 88:
					if len(files) > 0 {
						_, _, err = f.SetAttr(files[rng.IntN(len(files))], SetAttr{Size: u64p(uint64(rng.IntN(30000)))}, nil, now)
					}
				case k < 92:
					var h Handle
					h, _, _, err = f.Lookup(pickDir(), name)
					if err == nil {
						if a, e := f.GetAttr(h); e == nil && a.Type == TypeDir {
							dirs = append(dirs, h)
						}
					}
				default:
					off := uint64(rng.IntN(20000))
					data := bytes.Repeat([]byte{byte(i)}, rng.IntN(5000))
					if _, _, err = f.Write(priv, off, data, false, now); err == nil {
						if end := int(off) + len(data); end > len(content) {
							content = append(content, make([]byte, end-len(content))...)
						}
						copy(content[off:], data)
						got, _, _, e := f.Read(priv, 0, uint32(len(content)+10))
						if e != nil || !bytes.Equal(got, content) {
							fail("private file content differs (%v)", e)
							return
						}
					}
				}
				if !expectedErr(err) {
					fail("op %d: %v", i, err)
					return
				}
				if err == nil {
					okOps[k].Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	r := mustCheck(t, f)
	t.Log(r)
	sum := func(a, b int) (n int64) {
		for k := a; k < b; k++ {
			n += okOps[k].Load()
		}
		return n
	}
	t.Logf("succeeded: %d creates, %d mkdirs, %d writes, %d renames, %d links, %d removes, %d rmdirs", sum(0, 15), sum(15, 22), sum(22, 35), sum(35, 55), sum(55, 62), sum(62, 72), sum(72, 78))
}

// TestStaleHandle removes a file and creates another that reuses its inode
// number: the old handle is stale, also after reopening.
func TestStaleHandle(t *testing.T) {
	d0, j, f := crashFS(t, 2048, 256, Options{})
	root := f.Root()
	old, _, _, _, err := f.Create(root, "a", Guarded, SetAttr{}, 0, 0, 0, ts(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Remove(root, "a", ts(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.GetAttr(old); !errors.Is(err, ErrStale) {
		t.Fatalf("getattr of a removed file: %v", err)
	}
	nh, _, _, _, err := f.Create(root, "b", Guarded, SetAttr{}, 0, 0, 0, ts(3))
	if err != nil {
		t.Fatal(err)
	}
	if nh.Ino != old.Ino || nh.Gen == old.Gen {
		t.Fatalf("inode not reused with a new generation: old %v new %v", old, nh)
	}
	check := func(f *FS) {
		t.Helper()
		if _, err := f.GetAttr(old); !errors.Is(err, ErrStale) {
			t.Fatalf("getattr: %v", err)
		}
		if _, _, _, err := f.Read(old, 0, 1); !errors.Is(err, ErrStale) {
			t.Fatalf("read: %v", err)
		}
		if _, _, err := f.Write(old, 0, []byte("x"), true, ts(4)); !errors.Is(err, ErrStale) {
			t.Fatalf("write: %v", err)
		}
		if _, _, err := f.SetAttr(old, SetAttr{Mode: u32p(0600)}, nil, ts(4)); !errors.Is(err, ErrStale) {
			t.Fatalf("setattr: %v", err)
		}
		if _, _, _, err := f.Link(old, f.Root(), "c", ts(4)); !errors.Is(err, ErrStale) {
			t.Fatalf("link: %v", err)
		}
		if _, err := f.GetAttr(nh); err != nil {
			t.Fatalf("new handle: %v", err)
		}
		for _, bad := range []Handle{{Ino: 0}, {Ino: 1 << 40}, {Ino: f.Root().Ino, Gen: f.Root().Gen + 1}} {
			if _, err := f.GetAttr(bad); !errors.Is(err, ErrStale) {
				t.Fatalf("getattr %v: %v", bad, err)
			}
		}
	}
	check(f)
	// A removed directory's handle is stale for directory operations too.
	d, _, _, _, err := f.Mkdir(root, "d", SetAttr{}, 0, 0, ts(5))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Rmdir(root, "d", ts(6)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := f.Create(d, "x", Guarded, SetAttr{}, 0, 0, 0, ts(7)); !errors.Is(err, ErrStale) {
		t.Fatalf("create in a removed directory: %v", err)
	}
	if _, _, _, _, err := f.ReadDir(d, 0, 0, 10, false); !errors.Is(err, ErrStale) {
		t.Fatalf("readdir of a removed directory: %v", err)
	}
	// Generations survive a restart.
	nd := d0.CrashAll()
	j.Close()
	j2, err := journal.Open(nd, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	f2, err := Open(j2)
	if err != nil {
		t.Fatal(err)
	}
	check(f2)
	mustCheck(t, f2)
}
