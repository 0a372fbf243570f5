package fs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
)

// TestCrash runs random operations on a journal over a crash-simulating
// disk, crashes (between operations, or in the middle of one by making the
// disk fail after a random number of writes), keeps a random subset of the
// unbarriered writes, reopens, and checks that the file system is clean and
// equal to the model after some prefix of the operations that includes
// every operation acknowledged as durable (metadata operations, stable
// writes, and everything before a Flush).
//
// Each iteration has its own seed: 30 fresh ones (8 under the race
// detector; testseed: STRATA_SEEDS runs more, STRATA_SEED replays one).
func TestCrash(t *testing.T) {
	iters := 30
	if raceEnabled {
		iters = 8
	}
	stats := map[string]int{}
	n := 0
	for s := range testseed.Each(t, testseed.Fresh(iters)...) {
		res := crashIteration(t, s)
		stats[res]++
		n++
	}
	t.Logf("%d iterations: %v", n, stats)
}

func crashIteration(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 99))
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (its replay's crash point also depends on timing): %s", seed, fmt.Sprintf(format, args...))
	}
	logBlocks := uint64(48 + rng.IntN(200))
	d := disk.NewCrashDisk(8000)
	if err := journal.Format(d, logBlocks); err != nil {
		fail("format: %v", err)
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		fail("open: %v", err)
	}
	if err := Mkfs(j, 512); err != nil {
		fail("mkfs: %v", err)
	}
	opt := Options{}
	if rng.IntN(3) == 0 {
		opt.OpBlocks = minBudget
	}
	// Async metadata: only stable writes and flushes promise durability,
	// and the recovered state must still be a prefix of the operations.
	opt.UnstableMetadata = rng.IntN(3) == 0
	f, err := OpenOptions(j, opt)
	if err != nil {
		fail("fs open: %v", err)
	}
	r := newRunner(t, f, seed)
	r.crash = true
	r.asyncMeta = opt.UnstableMetadata
	snaps := []string{r.modelDump()}
	lastDurable := 0
	steps := 20 + rng.IntN(250)
	midOp := rng.IntN(2) == 0
	if midOp {
		d.CrashAfterWrites(int64(20 + rng.IntN(400)))
	}
	how := "between operations"
	for i := 1; i <= steps; i++ {
		if rng.IntN(25) == 0 {
			if err := f.Flush(); err != nil {
				if !errors.Is(err, ErrIO) {
					fail("flush: %v", err)
				}
				how = "in a flush"
				break
			}
			lastDurable = len(snaps) - 1
		}
		r.randomStep()
		snaps = append(snaps, r.modelDump())
		if r.ioErr {
			how = "in an operation"
			break
		}
		if r.durable {
			lastDurable = len(snaps) - 1
		}
	}
	nd := d.CrashRandom(rng)
	j.Close() // fails: its disk is gone
	j2, err := journal.Open(nd, journal.Options{})
	if err != nil {
		fail("journal recovery: %v", err)
	}
	defer j2.Close()
	f2, err := OpenOptions(j2, opt)
	if err != nil {
		fail("fs open after crash: %v", err)
	}
	rep, err := f2.Check()
	if err != nil || !rep.Clean() {
		fail("check after crash: %v %v", err, rep)
	}
	got, err := fsDump(t, f2)
	if err != nil {
		fail("dump after crash: %v", err)
	}
	match := -1
	for k := len(snaps) - 1; k >= lastDurable; k-- {
		if snaps[k] == got {
			match = k
			break
		}
	}
	intermediate := false
	for _, p := range r.partials {
		// The intermediate steps of an operation after the last durable
		// one (a durable operation's own steps precede it).
		if match < 0 && p.step > lastDurable && p.dump == got {
			match, intermediate = p.step, true
		}
	}
	if match < 0 {
		for k := lastDurable - 1; k >= 0; k-- {
			if snaps[k] == got {
				fail("state after crash is the state after step %d, but step %d was durable\ngot:\n%s\ndurable:\n%s", k, lastDurable, got, snaps[lastDurable])
			}
		}
		fail("state after crash matches no prefix in [%d, %d]\ngot:\n%s\nlast durable:\n%s\nlast:\n%s", lastDurable, len(snaps)-1,
			got, snaps[lastDurable], snaps[len(snaps)-1])
	}
	// The recovered file system works.
	if _, _, _, _, err := f2.Create(f2.Root(), "after-crash-"+strings.Repeat("z", 3), Guarded, SetAttr{}, 0, 0, 0, ts(0)); err != nil && !errors.Is(err, ErrExist) {
		fail("create after crash: %v", err)
	}
	mustCheck(t, f2)
	if intermediate {
		how += ", recovered an intermediate step"
	}
	if midOp {
		return "crash " + how
	}
	return "crash between operations"
}

// TestFlushFileCrash: unstable writes to several files (small ones logged,
// big ones written directly), FlushFile of one, more unstable writes to the
// others, then a crash keeping a random subset of the unbarriered writes:
// the flushed file must hold exactly what was written to it, with
// synchronous metadata (FlushFile waits for that file's operations only)
// and with unstable metadata (it flushes everything).
func TestFlushFileCrash(t *testing.T) {
	for s := range testseed.Each(t, testseed.Fresh(20)...) {
		rng := rand.New(rand.NewPCG(s, 7))
		d := disk.NewCrashDisk(8000)
		if err := journal.Format(d, uint64(64+rng.IntN(200))); err != nil {
			t.Fatal(err)
		}
		j, err := journal.Open(d, journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := Mkfs(j, 128); err != nil {
			t.Fatal(err)
		}
		opt := Options{UnstableMetadata: rng.IntN(2) == 0}
		f, err := OpenOptions(j, opt)
		if err != nil {
			t.Fatal(err)
		}
		const files = 4
		var hs [files]Handle
		var want [files][]byte
		for i := range hs {
			if hs[i], _, _, _, err = f.Create(f.Root(), fmt.Sprint("f", i), Guarded, SetAttr{}, 0, 0, 0, ts(0)); err != nil {
				t.Fatal(err)
			}
		}
		write := func(i int) {
			off := rng.IntN(64 << 10)
			n := 1 + rng.IntN(80<<10)
			data := make([]byte, n)
			for k := range data {
				data[k] = byte(rng.Uint32())
			}
			if _, _, err := f.Write(hs[i], uint64(off), data, false, ts(1)); err != nil {
				t.Fatalf("seed %d: write: %v", s, err)
			}
			if end := off + n; end > len(want[i]) {
				want[i] = append(want[i], make([]byte, end-len(want[i]))...)
			}
			copy(want[i][off:], data)
		}
		for range 10 + rng.IntN(20) {
			write(rng.IntN(files))
		}
		k := rng.IntN(files)
		if err := f.FlushFile(hs[k]); err != nil {
			t.Fatalf("seed %d: FlushFile: %v", s, err)
		}
		for range rng.IntN(20) {
			if i := rng.IntN(files); i != k {
				write(i)
			}
		}
		nd := d.CrashRandom(rng)
		j.Close()
		j2, err := journal.Open(nd, journal.Options{})
		if err != nil {
			t.Fatalf("seed %d: recovery: %v", s, err)
		}
		f2, err := OpenOptions(j2, opt)
		if err != nil {
			t.Fatalf("seed %d: open after crash: %v", s, err)
		}
		h, a, _, err := f2.Lookup(f2.Root(), fmt.Sprint("f", k))
		if err != nil {
			t.Fatalf("seed %d (unstable metadata %v): flushed file f%d: %v", s, opt.UnstableMetadata, k, err)
		}
		got, _, _, err := f2.Read(h, 0, uint32(a.Size)+1)
		if err != nil {
			t.Fatalf("seed %d: read: %v", s, err)
		}
		if !bytes.Equal(got, want[k]) {
			t.Fatalf("seed %d (unstable metadata %v): flushed file f%d has %d bytes after the crash, differing from the %d written", s, opt.UnstableMetadata, k, len(got), len(want[k]))
		}
		mustCheck(t, f2)
		j2.Close()
	}
}
