package wor

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
)

// A persistent server whose value cache is tiny answers every request as
// a memory-mode server does (the model): random prepares, accepts, reads,
// segment batches, trims and dumps on a few segments, with spilled values
// read back from their slots, including across a crash and recovery.
func TestSpilledValuesMatchModel(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(0, 10)...) {
		rng := rand.New(rand.NewPCG(seed, 41))
		d := disk.NewCrashDisk(2 + 64 + 2048)
		if err := journal.Format(d, 64); err != nil {
			t.Fatal(err)
		}
		j := newJournal(t, d)
		s, err := NewPersistentServer(j, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.SetValueCache(rng.IntN(3) * 300) // 0, 300 or 600 bytes: most values spill
		model := NewServer(nil)
		ballot := uint64(0)
		spillReads := uint64(0)
		base := uint64(1) // segments below base are trimmed, as a log's prefix is
		for step := 0; step < 600; step++ {
			seg := base + uint64(rng.IntN(4))
			addr := Addr(seg, uint64(rng.IntN(40)))
			var r request
			switch k := rng.IntN(10); {
			case k < 3:
				ballot++
				r = request{Op: opAccept, Addr: addr, Ballot: ballot<<clientBits | 1, Value: bytes.Repeat([]byte{byte(step)}, 1+rng.IntN(200))}
			case k < 5:
				ballot++
				r = request{Op: opPrepare, Addr: addr, Ballot: ballot<<clientBits | 2}
			case k < 8:
				r = request{Op: opRead, Addr: addr}
			case k == 8:
				ballot++
				r = request{Op: opSegPrepare, Addr: Addr(seg, 0), Ballot: ballot<<clientBits | 3, Value: []byte{0, 0, 0, 40}}
			default:
				if rng.IntN(8) == 0 {
					r = request{Op: opTrim, Addr: base}
					base++
				} else {
					r = request{Op: opDump}
				}
			}
			want := callServer(t, model, r)
			got := callServer(t, s, r)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d step %d: %+v\npersistent answered %+v\nmemory model answered %+v", seed, step, r, got, want)
			}
			if step == 300 {
				// Crash (keeping everything durable: every reply waited for
				// it) and recover: every value comes back from its slot.
				spillReads += s.Stats().SpillReads
				nd := d.CrashRandom(rng)
				j.Close()
				j, d = newJournal(t, nd), nd
				if s, err = NewPersistentServer(j, nil); err != nil {
					t.Fatalf("seed %d: recovery: %v", seed, err)
				}
				s.SetValueCache(300)
			}
		}
		st := s.Stats()
		if spillReads+st.SpillReads == 0 {
			t.Fatalf("seed %d: no value was read back from a slot: the test spilled nothing (%+v)", seed, st)
		}
		if st.CachedValueBytes > 600+200+spillEntryCost {
			t.Fatalf("seed %d: %d bytes of values cached, over the budget", seed, st.CachedValueBytes)
		}
		j.Close()
	}
}

// A spilled register's slot is rewritten whole by a later prepare, value
// included: the value survives the rewrite and a restart.
func TestSpilledValueSurvivesRewrite(t *testing.T) {
	s, j, d := newPersistent(t, 64)
	s.SetValueCache(0)
	a := Addr(3, 1)
	if r := callServer(t, s, request{Op: opAccept, Addr: a, Ballot: 5, Value: []byte("chosen")}); r.Status != stOK {
		t.Fatalf("accept: %+v", r)
	}
	if !s.accs[a].spilled || s.accs[a].value != nil {
		t.Fatalf("with no cache the value stayed in memory: %+v", *s.accs[a])
	}
	if r := callServer(t, s, request{Op: opPrepare, Addr: a, Ballot: 9}); r.Status != stOK || string(r.Value) != "chosen" || r.AccBallot != 5 {
		t.Fatalf("prepare over a spilled value: %+v", r)
	}
	j.Close()
	s2, err := NewPersistentServer(newJournal(t, d), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callServer(t, s2, request{Op: opRead, Addr: a}); r.Status != stOK || string(r.Value) != "chosen" || r.Promised != 9 {
		t.Fatalf("after restart: %+v", r)
	}
}
