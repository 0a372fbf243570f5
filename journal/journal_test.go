package journal_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
	"strata/journal/killtest"
	"strata/journal/lockmap"
)

func newJournal(t *testing.T, d disk.Disk, logBlocks uint64) *journal.Journal {
	t.Helper()
	if err := journal.Format(d, logBlocks); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestExhaustiveCrashStates runs a short sequential workload and, after each
// of its first disk writes, enumerates every crash state the disk allows
// (every combination of surviving unbarriered block writes), recovering and
// checking each.
func TestExhaustiveCrashStates(t *testing.T) {
	objs := modelObjects()
	states := 0
	for cut := int64(1); cut <= 150; cut += 1 + cut/40 {
		rng := rand.New(rand.NewPCG(7, uint64(cut)))
		d := disk.NewCrashDisk(2 + 16 + 20)
		if err := journal.Format(d, 16); err != nil {
			t.Fatal(err)
		}
		j, err := journal.Open(d, journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d.CrashAfterWrites(cut)
		w := &workload{objs: objs, locks: lockmap.New(), hist: &history{}}
		for _, o := range objs {
			w.live = append(w.live, zeroValue(o))
		}
		w.worker(j, rng, 40)
		if p := w.readErr.Load(); p != nil {
			t.Fatal(*p)
		}
		blocks, writes := d.PendingBlocks()
		total := 1
		for _, n := range writes {
			total *= n + 1
			if total > 4096 {
				break
			}
		}
		choice := make([]int, len(blocks))
		enumerate := total <= 4096
		for s := 0; ; s++ {
			var pick func(i int, _ uint64, n int) int
			if enumerate {
				c := s // mixed-radix digits of s
				for i, n := range writes {
					choice[i] = c % (n + 1)
					c /= n + 1
				}
				pick = func(i int, _ uint64, _ int) int { return choice[i] }
				if s >= total {
					break
				}
			} else {
				if s >= 4096 {
					break
				}
				pick = func(_ int, _ uint64, n int) int { return rng.IntN(n + 1) }
			}
			nd := d.Crash(pick)
			j2, err := journal.Open(nd, journal.Options{})
			if err != nil {
				t.Fatalf("cut %d state %d: recovery: %v", cut, s, err)
			}
			got, err := readAll(j2, objs)
			if err != nil {
				t.Fatal(err)
			}
			base := make([][]byte, len(objs))
			for i, o := range objs {
				base[i] = zeroValue(o)
			}
			if _, err := checkPrefix(base, got, w.hist.ops, w.hist.acked.Load()); err != nil {
				t.Fatalf("cut %d state %d: %v", cut, s, err)
			}
			j2.Close()
			states++
		}
		j.Close()
	}
	t.Logf("checked %d crash states", states)
}

// TestSharedBlockConcurrency is the paper's Figure 10 case: objects that
// share a block are committed concurrently while others read them lock-free;
// no commit may lose a neighbour's update and reads must see a value of the
// object's own history.
func TestSharedBlockConcurrency(t *testing.T) {
	d := disk.NewCrashDisk(2 + 64 + 16)
	j := newJournal(t, d, 64)
	const writers, rounds = 8, 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	fail := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	addr := func(g int) journal.Addr { return journal.Addr{Blkno: 0, Off: uint64(g) * 1024} }
	bitAddr := func(g int) journal.Addr { return journal.Addr{Blkno: 1, Off: uint64(g)} }
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			val := make([]byte, 128)
			for i := uint64(1); i <= rounds; i++ {
				op := j.Begin()
				binary.LittleEndian.PutUint64(val, i)
				binary.LittleEndian.PutUint64(val[8:], uint64(g))
				if err := op.OverWrite(addr(g), 1024, val); err != nil {
					fail(err)
					return
				}
				// Bits of 8 writers share one byte: the finest-grained sharing.
				if err := op.OverWrite(bitAddr(g), 1, []byte{byte(i & 1)}); err != nil {
					fail(err)
					return
				}
				if _, err := op.Commit(i%4 == 0); err != nil {
					fail(err)
					return
				}
				rd := j.Begin()
				b, err := rd.ReadBuf(addr(g), 1024)
				if err != nil {
					fail(err)
					return
				}
				if got := binary.LittleEndian.Uint64(b.Data); got != i {
					fail(fmt.Errorf("writer %d: read back %d after committing %d", g, got, i))
				}
				bb, err := rd.ReadBuf(bitAddr(g), 1)
				if err != nil {
					fail(err)
					return
				}
				if bb.Data[0] != byte(i&1) {
					fail(fmt.Errorf("writer %d: bit read back %d after committing %d", g, bb.Data[0], i&1))
				}
			}
		}()
	}
	// Lock-free readers of every neighbour: values only move forward.
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for r := 0; r < 2; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			last := make([]uint64, writers)
			for {
				select {
				case <-stop:
					return
				default:
				}
				for g := 0; g < writers; g++ {
					b, err := j.Begin().ReadBuf(addr(g), 1024)
					if err != nil {
						fail(err)
						return
					}
					v := binary.LittleEndian.Uint64(b.Data)
					if v != 0 && binary.LittleEndian.Uint64(b.Data[8:]) != uint64(g) {
						fail(fmt.Errorf("reader: object %d holds writer %d's data", g, binary.LittleEndian.Uint64(b.Data[8:])))
					}
					if v < last[g] {
						fail(fmt.Errorf("reader: object %d went back from %d to %d", g, last[g], v))
					}
					last[g] = v
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	j2, err := journal.Open(d.CrashNone(), journal.Options{}) // Close made everything durable
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	for g := 0; g < writers; g++ {
		b, err := j2.Begin().ReadBuf(addr(g), 1024)
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.LittleEndian.Uint64(b.Data); got != rounds {
			t.Errorf("after reopen, object %d holds %d, want %d (a neighbour's commit lost it)", g, got, rounds)
		}
		bb, _ := j2.Begin().ReadBuf(bitAddr(g), 1)
		if bb.Data[0] != rounds&1 {
			t.Errorf("after reopen, bit %d is %d, want %d", g, bb.Data[0], rounds&1)
		}
	}
}

func TestTooBigOperationIsRejected(t *testing.T) {
	d := disk.NewMemDisk(2 + 8 + 64)
	j := newJournal(t, d, 8)
	defer j.Close()
	op := j.Begin()
	blk := make([]byte, disk.BlockSize)
	for b := uint64(0); b < 10; b++ {
		blk[0] = byte(b + 1)
		if err := op.OverWrite(journal.Addr{Blkno: b}, journal.BlockBits, blk); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var ok bool
	var err error
	go func() { ok, err = op.Commit(true); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Commit of an operation larger than the log hung")
	}
	if ok || !errors.Is(err, journal.ErrTooBig) {
		t.Fatalf("Commit = %v, %v; want false, ErrTooBig", ok, err)
	}
	b, err := j.Begin().ReadBuf(journal.Addr{Blkno: 0}, journal.BlockBits)
	if err != nil {
		t.Fatal(err)
	}
	if b.Data[0] != 0 {
		t.Fatalf("rejected operation changed block 0 to %d", b.Data[0])
	}
	// The largest operation that fits still commits.
	op = j.Begin()
	for b := uint64(0); b < 7; b++ {
		op.OverWrite(journal.Addr{Blkno: b}, journal.BlockBits, blk)
	}
	if ok, err := op.Commit(true); !ok || err != nil {
		t.Fatalf("7-block operation on an 8-block log: %v %v", ok, err)
	}
}

func TestBadObjectsAreErrors(t *testing.T) {
	d := disk.NewMemDisk(2 + 8 + 4)
	j := newJournal(t, d, 8)
	defer j.Close()
	op := j.Begin()
	cases := []struct {
		a  journal.Addr
		sz uint64
	}{
		{journal.Addr{Blkno: 4}, journal.BlockBits},         // past the data region
		{journal.Addr{Blkno: 0, Off: 8}, journal.BlockBits}, // overruns the block
		{journal.Addr{Blkno: 0, Off: 3}, 16},                // unaligned bytes
		{journal.Addr{Blkno: 0}, 12},                        // not whole bytes
		{journal.Addr{Blkno: 0}, 0},                         // empty
		{journal.Addr{Blkno: 0, Off: journal.BlockBits}, 1}, // offset past the block
		{journal.Addr{Blkno: 1 << 62}, journal.BlockBits},   // absurd block
	}
	for _, c := range cases {
		if _, err := op.ReadBuf(c.a, c.sz); !errors.Is(err, journal.ErrObject) {
			t.Errorf("ReadBuf(%+v, %d) = %v, want ErrObject", c.a, c.sz, err)
		}
		if err := op.OverWrite(c.a, c.sz, make([]byte, max(c.sz/8, 1))); !errors.Is(err, journal.ErrObject) {
			t.Errorf("OverWrite(%+v, %d) = %v, want ErrObject", c.a, c.sz, err)
		}
	}
	if err := op.OverWrite(journal.Addr{Blkno: 0}, 1024, make([]byte, 3)); !errors.Is(err, journal.ErrObject) {
		t.Errorf("OverWrite with short data = %v, want ErrObject", err)
	}
	if _, err := op.ReadBuf(journal.Addr{Blkno: 0}, 1024); err != nil {
		t.Fatal(err)
	}
	if _, err := op.ReadBuf(journal.Addr{Blkno: 0}, 2048); !errors.Is(err, journal.ErrObject) {
		t.Errorf("re-reading an object with another size = %v, want ErrObject", err)
	}
}

func TestOpenRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	// A file of random bytes is not a journal.
	p := filepath.Join(dir, "garbage")
	junk := make([]byte, 64*disk.BlockSize)
	rand.NewChaCha8([32]byte{1}).Read(junk)
	if err := os.WriteFile(p, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := disk.OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Open(d, journal.Options{}); err == nil {
		t.Fatal("Open accepted a file of random bytes")
	}
	// A truncated journal file is reported, not read past its end.
	p2 := filepath.Join(dir, "j")
	d2, err := disk.CreateFile(p2, 256, 0)
	if err != nil {
		t.Fatal(err)
	}
	j := newJournal(t, d2, 32)
	j.Close()
	if err := os.Truncate(p2, 100*disk.BlockSize); err != nil {
		t.Fatal(err)
	}
	d3, err := disk.OpenFile(p2)
	if err != nil {
		t.Fatal(err)
	}
	_, err = journal.Open(d3, journal.Options{})
	if err == nil {
		t.Fatal("Open accepted a truncated journal")
	}
	t.Logf("truncated: %v", err)
}

// The kill -9 test runs this test binary as the child.
func TestMain(m *testing.M) {
	if path := os.Getenv("STRATA_KILLTEST_CHILD"); path != "" {
		if err := killtest.Worker(context.Background(), path, 8, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKill9 runs a child process committing operations on a real file,
// kills it with SIGKILL at random moments and checks recovery.
func TestKill9(t *testing.T) {
	rounds := envInt("STRATA_KILL_ROUNDS", 12)
	if testing.Short() {
		rounds = 3
	}
	path := filepath.Join(t.TempDir(), "journal.img")
	rng := rand.New(rand.NewPCG(testseed.One(t), 3)) // the kill times (the child's progress varies anyway)
	acked := 0
	for r := 0; r < rounds; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "STRATA_KILLTEST_CHILD="+path)
		res, err := killtest.Round(context.Background(), cmd, path, 8, rng, 5*time.Millisecond, 300*time.Millisecond)
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		acked += res.Acked
	}
	t.Logf("%d rounds, %d acknowledged operations checked", rounds, acked)
	if acked == 0 {
		t.Fatal("no operation was acknowledged")
	}
}
