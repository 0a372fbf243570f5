package wal

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"strata/journal/circular"
	"strata/journal/disk"
)

func block(b byte) []byte { return bytes.Repeat([]byte{b}, disk.BlockSize) }

func openTest(t *testing.T, d disk.Disk, logBlocks uint64) *WAL {
	t.Helper()
	if err := Format(d, logBlocks, 42); err != nil {
		t.Fatal(err)
	}
	w, err := Open(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestNoAbsorptionIntoLoggingRange is the bug of GoJournal §8.6: while the
// logger writes [diskEnd, nextDiskEnd), a new write to a block in that range
// must not be absorbed into it, or the record on disk would hold a state no
// prefix of commits produced. The logger is held between fixing its range
// and writing it while two more multiwrites arrive.
func TestNoAbsorptionIntoLoggingRange(t *testing.T) {
	d := disk.NewCrashDisk(2 + 32 + 16)
	w := openTest(t, d, 32)
	entered, release := make(chan struct{}), make(chan struct{})
	installOK := make(chan struct{})
	first := true
	w.mu.Lock()
	w.hookBeforeInstall = func() { <-installOK }
	w.hookBeforeAppend = func() {
		if first {
			first = false
			close(entered)
			<-release
		}
	}
	w.mu.Unlock()

	a, err := w.MemAppend([]Update{{Addr: 5, Data: block(1)}, {Addr: 6, Data: block(1)}})
	if err != nil {
		t.Fatal(err)
	}
	<-entered // the logger has frozen A and is about to write it
	b, err := w.MemAppend([]Update{{Addr: 5, Data: block(2)}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.MemAppend([]Update{{Addr: 5, Data: block(3)}, {Addr: 7, Data: block(3)}})
	if err != nil {
		t.Fatal(err)
	}
	// C may absorb B (both after nextDiskEnd); neither may touch A.
	if st := w.Stats(); st.Absorbed != 1 {
		t.Fatalf("absorbed %d updates, want exactly 1 (C into B, never into the range being logged)", st.Absorbed)
	}
	buf := make([]byte, disk.BlockSize)
	if err := w.Read(5, buf); err != nil || buf[0] != 3 {
		t.Fatalf("read of block 5 = %d, %v; want the latest value 3", buf[0], err)
	}
	close(release)
	if err := w.Flush(context.Background(), a.Pos); err != nil {
		t.Fatal(err)
	}
	_ = b
	// The first record on disk must be exactly A.
	snap := d.Snapshot(func(_ int, _ uint64, n int) int { return n })
	_, _, recs, err := circular.Recover(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no record logged")
	}
	r0 := recs[0]
	if len(r0.Updates) != 2 {
		t.Fatalf("first record has %d updates, want A's 2", len(r0.Updates))
	}
	for _, u := range r0.Updates {
		if u.Data[0] != 1 {
			t.Fatalf("first record holds value %d for block %d: a later multiwrite leaked into the range being logged", u.Data[0], u.Addr)
		}
	}
	close(installOK)
	if err := w.Flush(context.Background(), c.Pos); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// After recovery the latest state wins.
	w2, err := Open(d.CrashNone(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	for addr, want := range map[uint64]byte{5: 3, 6: 1, 7: 3} {
		if err := w2.Read(addr, buf); err != nil || buf[0] != want {
			t.Errorf("block %d = %d (%v), want %d", addr, buf[0], err, want)
		}
	}
}

// TestGroupCommitAndAbsorption: many multiwrites to one block while the
// logger is busy become one logged block.
func TestGroupCommitAndAbsorption(t *testing.T) {
	d := disk.NewMemDisk(2 + 64 + 16)
	w := openTest(t, d, 64)
	release := make(chan struct{})
	w.mu.Lock()
	w.hookBeforeAppend = func() { <-release }
	w.mu.Unlock()
	var last Txn
	for i := 0; i < 100; i++ {
		var err error
		if last, err = w.MemAppend([]Update{{Addr: 3, Data: block(byte(i))}}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := w.Flush(context.Background(), last.Pos); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Absorbed < 98 || st.LoggedBlks > 2 {
		t.Fatalf("100 writes to one block: absorbed %d, logged %d blocks; want >=98 absorbed, <=2 logged", st.Absorbed, st.LoggedBlks)
	}
	if last.Seq != 100 {
		t.Fatalf("seq %d, want 100", last.Seq)
	}
	w.Close()
}

func TestErrorsAreSticky(t *testing.T) {
	d := disk.NewCrashDisk(2 + 16 + 16)
	w := openTest(t, d, 16)
	d.Stop()
	txn, err := w.MemAppend([]Update{{Addr: 1, Data: block(1)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Flush(ctx, txn.Pos); !errors.Is(err, disk.ErrCrashed) {
		t.Fatalf("Flush on a dead disk = %v, want ErrCrashed", err)
	}
	if _, err := w.MemAppend([]Update{{Addr: 1, Data: block(2)}}); !errors.Is(err, disk.ErrCrashed) {
		t.Fatalf("MemAppend after a disk failure = %v, want the sticky error", err)
	}
	if err := w.Close(); !errors.Is(err, disk.ErrCrashed) {
		t.Fatalf("Close = %v, want ErrCrashed", err)
	}
}

func TestBadUpdates(t *testing.T) {
	d := disk.NewMemDisk(2 + 16 + 8)
	w := openTest(t, d, 16)
	defer w.Close()
	if _, err := w.MemAppend([]Update{{Addr: 8, Data: block(1)}}); !errors.Is(err, ErrAddr) {
		t.Errorf("update past the data region: %v", err)
	}
	if _, err := w.MemAppend([]Update{{Addr: 0, Data: make([]byte, 10)}}); err == nil {
		t.Error("short update accepted")
	}
	if err := w.Read(8, make([]byte, disk.BlockSize)); !errors.Is(err, ErrAddr) {
		t.Errorf("read past the data region: %v", err)
	}
	big := make([]Update, 16)
	for i := range big {
		big[i] = Update{Addr: uint64(i % 8), Data: block(1)}
	}
	if _, err := w.MemAppend(big); !errors.Is(err, ErrTooBig) {
		t.Errorf("multiwrite larger than the log: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Flush(ctx, 1<<40); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush with a cancelled context = %v", err)
	}
}

// ReadRun returns what Read returns for each block of a run, whether the
// latest value is in memory (logged or not) or installed at home, and
// rejects bad ranges.
func TestReadRunMatchesRead(t *testing.T) {
	d := disk.NewMemDisk(2 + 16 + 12)
	w := openTest(t, d, 16)
	// Blocks 0-3 installed (written, then Close installs everything).
	for i := uint64(0); i < 4; i++ {
		if _, err := w.MemAppend([]Update{{Addr: i, Data: block(byte(10 + i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err := Open(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Blocks 2 and 5 updated in memory; 6 written directly at home.
	if _, err := w.MemAppend([]Update{{Addr: 2, Data: block(22)}, {Addr: 5, Data: block(55)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteDirect(6, [][]byte{block(66)}); err != nil {
		t.Fatal(err)
	}
	want := []byte{10, 11, 22, 13, 0, 55, 66, 0}
	for start := uint64(0); start < 8; start++ {
		for n := uint64(1); start+n <= 8; n++ {
			got := make([]byte, n*disk.BlockSize)
			if err := w.ReadRun(start, got); err != nil {
				t.Fatal(err)
			}
			for i := uint64(0); i < n; i++ {
				if !bytes.Equal(got[i*disk.BlockSize:(i+1)*disk.BlockSize], block(want[start+i])) {
					t.Fatalf("ReadRun(%d, %d blocks): block %d is not %d", start, n, start+i, want[start+i])
				}
				one := make([]byte, disk.BlockSize)
				if err := w.Read(start+i, one); err != nil || !bytes.Equal(one, block(want[start+i])) {
					t.Fatalf("Read(%d) disagrees: %v", start+i, err)
				}
			}
		}
	}
	if err := w.WriteDirect(2, [][]byte{block(1)}); !errors.Is(err, ErrLogged) {
		t.Fatalf("WriteDirect over a block with a logged update: %v, want ErrLogged", err)
	}
	for _, bad := range []struct {
		a uint64
		n int
	}{{0, 0}, {0, 100}, {w.DataBlocks(), disk.BlockSize}, {w.DataBlocks() - 1, 2 * disk.BlockSize}} {
		if err := w.ReadRun(bad.a, make([]byte, bad.n)); err == nil {
			t.Errorf("ReadRun(%d, %d bytes) accepted", bad.a, bad.n)
		}
	}
}

// TestLazyLogging: multiwrites nobody waits for are logged after the log
// delay without any Flush; with a long delay they stay unlogged, and a
// Flush logs them at once (it does not wait for the delay).
func TestLazyLogging(t *testing.T) {
	d := disk.NewMemDisk(2 + 32 + 16)
	if err := Format(d, 32, 1); err != nil {
		t.Fatal(err)
	}
	w, err := Open(d, Options{LogDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, err := w.MemAppend([]Update{{Addr: 1, Data: block(1)}})
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); w.DurablePos() < a.Pos; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a multiwrite nobody waited for was never logged")
		}
	}
	w.Close()

	w, err = Open(d, Options{LogDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b, err := w.MemAppend([]Update{{Addr: 2, Data: block(2)}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if w.DurablePos() >= b.Pos {
		t.Fatal("logged before the log delay with nobody waiting")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Flush(ctx, b.Pos); err != nil {
		t.Fatalf("flush with a one-hour log delay: %v (it must not wait for the delay)", err)
	}
}
