package wormtx

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
	"strata/journal/wal"
)

// crashJournal opens a journal on d that logs every operation as soon as
// it can (not batching them for 2 ms), so that a crash can fall between
// any two.
func crashJournal(t *testing.T, d *disk.CrashDisk) *journal.Journal {
	t.Helper()
	j, err := journal.Open(d, journal.Options{WAL: wal.Options{LogDelay: -1}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func newCrashDisk(t *testing.T, blocks uint64) *disk.CrashDisk {
	t.Helper()
	d := disk.NewCrashDisk(blocks)
	if err := journal.Format(d, 16); err != nil {
		t.Fatal(err)
	}
	return d
}

func syncNow(t *testing.T, s Store) {
	t.Helper()
	ch := make(chan error, 1)
	s.Sync(func(err error) { ch <- err })
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
}

// The journal store keeps what it was told across a restart, in a real
// journal file.
func TestJournalStore(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenJournalDir(dir, 256)
	if err != nil {
		t.Fatal(err)
	}
	p1 := Prepared{Tx: 1, Seg: 5, Base: 3, Parts: []uint32{0, 1}, Vote: []byte("v1"), Yes: true, Writes: map[string]int64{"a": 90, "c": 5}, Reads: []string{"b"}, By: 7}
	p2 := Prepared{Tx: 2, Seg: 5, Base: 6, Parts: []uint32{0}, Vote: []byte("v2"), Yes: true, Writes: map[string]int64{"a": 80}, By: 7}
	p3 := Prepared{Tx: 3, Vote: []byte("no"), Done: true, By: 7}
	for _, p := range []Prepared{p1, p2, p3} {
		if err := s.Prepare(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(1, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(3); err != nil {
		t.Fatal(err)
	}
	syncNow(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err = OpenJournalDir(dir, 256)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Balances(); !reflect.DeepEqual(got, map[string]int64{"a": 90, "c": 5}) {
			t.Fatalf("balances %v", got)
		}
		p1.Done = true
		if got := s.Votes(); len(got) != 2 || !reflect.DeepEqual(got[0], p1) || !reflect.DeepEqual(got[1], p2) {
			t.Fatalf("votes %+v", got)
		}
		s.Close()
	}
}

// Model-based crash test: random prepares, finishes and forgets, synced
// now and then, on a crash-simulating disk crashed at a random moment;
// the store recovered must hold the state after some prefix of the calls
// that includes every call a completed Sync covered.
func TestJournalStoreCrash(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(0, 60)...) {
		journalCrashRun(t, seed)
	}
}

type storeState struct {
	bal   map[string]int64
	votes []Prepared
}

func stateOf(s Store) storeState {
	v := s.Votes()
	for i := range v { // nil and empty are the same state
		if len(v[i].Writes) == 0 {
			v[i].Writes = nil
		}
		if len(v[i].Reads) == 0 {
			v[i].Reads = nil
		}
		if len(v[i].Parts) == 0 {
			v[i].Parts = nil
		}
	}
	bal := s.Balances()
	if len(bal) == 0 {
		bal = nil
	}
	return storeState{bal: bal, votes: v}
}

func journalCrashRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	d := newCrashDisk(t, 2+16+120)
	j := crashJournal(t, d)
	s, err := OpenJournalStore(j)
	if err != nil {
		t.Fatal(err)
	}
	model := NewMemStore(nil)
	states := []storeState{stateOf(model)} // after each call
	synced := 0                            // calls covered by a completed Sync
	nextTx := uint64(1)
	ops := 20 + rng.IntN(60)
	for range ops {
		open := []uint64{}
		for _, p := range model.Votes() {
			open = append(open, p.Tx)
		}
		var err, merr error
		switch k := rng.IntN(10); {
		case k < 4 || len(open) == 0:
			p := Prepared{Tx: nextTx, Seg: rng.Uint64N(9), Vote: []byte(fmt.Sprint("vote", nextTx)), Yes: rng.IntN(4) > 0, By: 3}
			if p.Yes {
				p.Writes = map[string]int64{}
				for range 1 + rng.IntN(3) {
					p.Writes[fmt.Sprint("acct-", rng.IntN(12))] = rng.Int64N(1000)
				}
				p.Reads = []string{fmt.Sprint("acct-", rng.IntN(12))}
			} else {
				p.Done = true
			}
			nextTx++
			err, merr = s.Prepare(p), model.Prepare(p)
		case k < 8:
			tx := open[rng.IntN(len(open))]
			commit := rng.IntN(3) > 0
			err, merr = s.Finish(tx, commit), model.Finish(tx, commit)
		default:
			tx := open[rng.IntN(len(open))]
			err, merr = s.Forget(tx), model.Forget(tx)
		}
		if err != nil || merr != nil {
			t.Fatalf("seed %d: %v / model %v", seed, err, merr)
		}
		states = append(states, stateOf(model))
		if got, want := stateOf(s), states[len(states)-1]; !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: live state %+v, model %+v", seed, got, want)
		}
		if rng.IntN(5) == 0 {
			syncNow(t, s)
			synced = len(states) - 1
		}
	}
	nd := d.CrashRandom(rng)
	s.sync.close()
	j.Close() // fails on the crashed disk: only its goroutines matter
	j2 := crashJournal(t, nd)
	defer j2.Close()
	s2, err := OpenJournalStore(j2)
	if err != nil {
		t.Fatalf("seed %d: recovery: %v", seed, err)
	}
	defer s2.sync.close()
	got := stateOf(s2)
	for k := len(states) - 1; k >= synced; k-- {
		if reflect.DeepEqual(got, states[k]) {
			return
		}
	}
	t.Fatalf("seed %d: recovered %+v: not the state after any prefix of at least %d of the %d calls (last synced: %+v)", seed, got, synced, ops, states[synced])
}

// Records and keys too large for a slot, a full store and a damaged slot
// get errors, not panics or silent loss.
func TestJournalStoreLimits(t *testing.T) {
	d := newCrashDisk(t, 2+16+5) // 5 data blocks: 2 vote slots, 2 account blocks
	j := crashJournal(t, d)
	s, err := OpenJournalStore(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(Prepared{Tx: 1, Yes: true, Writes: map[string]int64{strings.Repeat("k", MaxJournalKey+1): 1}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a long key: %v, want ErrTooLarge", err)
	}
	big := map[string]int64{}
	for i := range 400 {
		big[fmt.Sprint("account-", i)] = int64(i)
	}
	if err := s.Prepare(Prepared{Tx: 1, Yes: true, Writes: big}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a record larger than a slot: %v, want ErrTooLarge", err)
	}
	for tx := uint64(1); tx <= 2; tx++ {
		if err := s.Prepare(Prepared{Tx: tx, Vote: []byte("no"), Done: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Prepare(Prepared{Tx: 3, Vote: []byte("no"), Done: true}); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("a third record in two slots: %v", err)
	}
	if err := s.Forget(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(Prepared{Tx: 3, Vote: []byte("no"), Done: true}); err != nil {
		t.Fatalf("a record in a freed slot: %v", err)
	}
	syncNow(t, s)
	s.sync.close()
	j.Close()
	// Damage a vote slot's record on disk (its home block, the last
	// copy: earlier ones are in the log): recovery refuses it.
	nd := d.CrashAll()
	buf := make([]byte, disk.BlockSize)
	found := false
	for blk := nd.Size(); blk > 0 && !found; blk-- {
		nd.Read(blk-1, buf)
		if i := strings.Index(string(buf), `"Tx":3`); i >= 0 {
			buf[i+5] = '7'
			nd.Write(blk-1, buf)
			found = true
		}
	}
	if !found {
		t.Fatal("the record of transaction 3 is not on the disk")
	}
	j = crashJournal(t, nd.CrashAll())
	defer j.Close()
	if _, err := OpenJournalStore(j); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a damaged vote slot: %v, want a checksum error", err)
	}
}

// Syncs are answered in batches, and with ErrClosed after close.
func TestGroupSync(t *testing.T) {
	flushes := 0
	release := make(chan struct{})
	g := newGroupSync(func() error { flushes++; <-release; return nil })
	const n = 50
	errs := make(chan error, n+1)
	g.sync(func(err error) { errs <- err }) // the first flush starts and blocks
	for range n {
		g.sync(func(err error) { errs <- err })
	}
	close(release)
	for range n + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	g.close()
	if flushes > 2 {
		t.Fatalf("%d flushes for %d Syncs that arrived during one flush: want at most 2", flushes, n+1)
	}
	g.sync(func(err error) { errs <- err })
	if err := <-errs; !errors.Is(err, ErrClosed) {
		t.Fatalf("a Sync after close: %v, want ErrClosed", err)
	}
}

// The decoders of vote slots and account objects reject what they did
// not write, without panicking.
func FuzzDecodeVoteSlot(f *testing.F) {
	b, _ := encodeVoteSlot(Prepared{Tx: 4, Yes: true, Writes: map[string]int64{"a": 1}})
	f.Add(b)
	f.Add(make([]byte, 12))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, used, err := decodeVoteSlot(b)
		if err != nil || !used {
			return
		}
		again, err := encodeVoteSlot(p)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if q, _, err := decodeVoteSlot(again); err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip: %+v -> %+v (%v)", p, q, err)
		}
	})
}

func FuzzDecodeAccount(f *testing.F) {
	f.Add(encodeAccount("alice", 42))
	f.Add(make([]byte, acctBytes))
	f.Fuzz(func(t *testing.T, b []byte) {
		key, bal, used, err := decodeAccount(b)
		if err != nil || !used {
			return
		}
		if k2, b2, _, err := decodeAccount(encodeAccount(key, bal)); err != nil || k2 != key || b2 != bal {
			t.Fatalf("round trip: %q %d -> %q %d (%v)", key, bal, k2, b2, err)
		}
	})
}
