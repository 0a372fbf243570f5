package wor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// latestOf asks a server for its latest reply on seg.
func latestOf(t *testing.T, s *Server, seg uint64) latestReply {
	t.Helper()
	r := callServer(t, s, request{Op: opLatest, Addr: seg})
	if r.Status != stOK || !r.Has {
		t.Fatalf("latest of %d: %+v", seg, r)
	}
	l, err := decodeLatest(r.Value)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A persistent server's keyed-log state: the top register follows the
// accepts (a prepare alone does not make one), the floor refuses and
// frees the registers below it, and both survive a crash; a full trim
// of the segment frees the floor's slot too.
func TestKeyedLogServerPersistent(t *testing.T) {
	s, j, d := newPersistent(t, 40)
	if l := latestOf(t, s, 5); l.Top || l.Floor != 0 {
		t.Fatalf("empty segment: %+v", l)
	}
	for off := range uint64(10) {
		if r := callServer(t, s, request{Op: opAccept, Addr: Addr(5, off), Ballot: 1, Value: []byte{'v', byte('0' + off)}}); r.Status != stOK {
			t.Fatalf("accept %d: status %d", off, r.Status)
		}
	}
	callServer(t, s, request{Op: opPrepare, Addr: Addr(5, 12), Ballot: 3}) // promised, nothing accepted
	callServer(t, s, request{Op: opCommit, Addr: Addr(5, 9), Ballot: 1})
	if l := latestOf(t, s, 5); !l.Top || l.Off != 9 || string(l.State.Value) != "v9" || !l.State.Chosen || l.State.AccBallot != 1 {
		t.Fatalf("latest: %+v", l)
	}
	if r := callServer(t, s, request{Op: opTrimBelow, Addr: Addr(5, 6)}); r.Status != stOK {
		t.Fatalf("trim below: status %d", r.Status)
	}
	if r := callServer(t, s, request{Op: opTrimBelow, Addr: Addr(5, 2)}); r.Status != stOK {
		t.Fatalf("a lower floor: status %d", r.Status) // accepted, changes nothing
	}
	check := func(s *Server, when string) {
		t.Helper()
		if l := latestOf(t, s, 5); !l.Top || l.Off != 9 || l.Floor != 6 || string(l.State.Value) != "v9" {
			t.Fatalf("%s: latest %+v", when, l)
		}
		for _, op := range []byte{opRead, opPrepare, opAccept} {
			if r := callServer(t, s, request{Op: op, Addr: Addr(5, 3), Ballot: 9, Value: []byte("x")}); r.Status != stFloor {
				t.Fatalf("%s: %s below the floor: status %d", when, OpName(op), r.Status)
			}
		}
		if r := callServer(t, s, request{Op: opRead, Addr: Addr(5, 7)}); r.Status != stOK || string(r.Value) != "v7" {
			t.Fatalf("%s: read above the floor: %+v", when, r)
		}
		// 10 accepted + the promise at 12; 6 collected.
		if st := s.Stats(); st.Registers != 5 || st.FreeSlots != 6 {
			t.Fatalf("%s: %d registers, %d free slots; want 5 and 6", when, st.Registers, st.FreeSlots)
		}
	}
	check(s, "before the crash")
	nd := d.CrashRandom(rand.New(rand.NewPCG(1, 2)))
	j.Close()
	j = newJournal(t, nd)
	s, err := NewPersistentServer(j, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(s, "after the crash")
	// The segment trimmed whole: registers, floor and all.
	if r := callServer(t, s, request{Op: opTrim, Addr: 5}); r.Status != stOK {
		t.Fatalf("trim: status %d", r.Status)
	}
	if r := callServer(t, s, request{Op: opLatest, Addr: 5}); r.Status != stTrim {
		t.Fatalf("latest of a trimmed segment: status %d", r.Status)
	}
	// Free: the 6 collected, the 5 registers and the floor, less the one
	// slot the trim mark took.
	if st := s.Stats(); st.FreeSlots != 6+5+1-1 {
		t.Fatalf("after the trim: %d free slots, want 11", st.FreeSlots)
	}
	j.Close()
}

// TestKeyedLogRounds: the ec engine's Latest over a simulated network
// with one-way delay d: one round trip when the top version is known
// chosen; the top settled (and written back) when it is not; the version
// below when the top cannot have been chosen; the versions below a
// raised floor refused with ErrCollected.
func TestKeyedLogRounds(t *testing.T) {
	const d = 5 * time.Millisecond
	net, mk, replicas := learnNet(t, d, 5)
	plan := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	e, err := NewEC(mk("sim:w"), replicas, 1, time.Second, plan)
	if err != nil {
		t.Fatal(err)
	}
	run := simRunner(t, net, 10*d) // the settling lets Phase 3 and floors land
	latest := func(seg uint64, wantOff uint64, want string) time.Duration {
		t.Helper()
		return run("latest", func(done func()) {
			e.Latest(seg, func(off uint64, v []byte, err error) {
				if (want == "" && !errors.Is(err, ErrUnwritten)) || (want != "" && (err != nil || off != wantOff || string(v) != want)) {
					t.Errorf("latest of %d: %d %q %v; want %d %q", seg, off, v, err, wantOff, want)
				}
				done()
			})
		})
	}
	if took := latest(3, 0, ""); took != 2*d {
		t.Errorf("latest of an empty log took %v, want %v", took, 2*d)
	}
	for i := range uint64(4) {
		run("propose", func(done func()) {
			e.Propose(Addr(3, i), fmt.Appendf(nil, "v%d", i), func(err error) {
				if err != nil {
					t.Errorf("propose %d: %v", i, err)
				}
				done()
			})
		})
	}
	if took := latest(3, 3, "v3"); took != 2*d {
		t.Errorf("latest of a chosen top took %v, want one round trip (%v)", took, 2*d)
	}
	// Version 4 accepted by three servers at ballot 7, not chosen: K
	// splits, so it may have been chosen, and Latest must settle it.
	c, _ := newSplitCodec(5, 3)
	x := mk("sim:x")
	accept := func(off uint64, v string, servers int) {
		splits, _ := c.encode([]byte(v))
		for i := range servers {
			if _, err := x.CallAsync(replicas[i], request{Op: opAccept, Addr: Addr(3, off), Ballot: 7, Value: splits[i]}.encode(), time.Second, func([]byte, error) {}); err != nil {
				t.Fatal(err)
			}
		}
		net.Run(10 * d)
	}
	accept(4, "partial", 3)
	if took := latest(3, 4, "partial"); took <= 2*d {
		t.Errorf("latest of a top not known chosen took %v: it cannot be one round", took)
	}
	if took := latest(3, 4, "partial"); took != 2*d {
		t.Errorf("latest after the write-back took %v, want %v", took, 2*d)
	}
	// Version 5 accepted by two servers only: fewer than K splits in any
	// Phase 1b quorum, so it was not chosen, and version 4 is the latest.
	accept(5, "orphan", 2)
	latest(3, 4, "partial")
	// Garbage collection: versions below 4 go, reads of them are
	// refused, the latest is unchanged, and a proposal below the floor is
	// refused too.
	run("trim below", func(done func()) {
		e.TrimBelow(3, 4, func(err error) {
			if err != nil {
				t.Errorf("trim below: %v", err)
			}
			done()
		})
	})
	run("read a collected version", func(done func()) {
		e.Read(Addr(3, 1), func(v []byte, err error) {
			if !errors.Is(err, ErrCollected) {
				t.Errorf("read of a collected version: %q, %v; want ErrCollected", v, err)
			}
			done()
		})
	})
	run("propose below the floor", func(done func()) {
		e.Propose(Addr(3, 2), []byte("late"), func(err error) {
			if !errors.Is(err, ErrCollected) {
				t.Errorf("propose below the floor: %v; want ErrCollected", err)
			}
			done()
		})
	})
	latest(3, 4, "partial")
}

// FuzzDecodeLatest: no input makes the latest-reply decoder panic, and
// what it accepts re-encodes to the same bytes.
func FuzzDecodeLatest(f *testing.F) {
	f.Add(latestReply{Floor: 3}.encode())
	f.Add(latestReply{Floor: 2, Top: true, Off: 9, State: response{Promised: 4, AccBallot: 4, Chosen: true, Value: []byte("split")}}.encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeLatest(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if got := l.encode(); string(got) != string(b) {
			t.Fatalf("re-encoded %x, was %x", got, b)
		}
	})
}
