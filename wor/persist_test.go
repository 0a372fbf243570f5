package wor

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"strata/internal/testseed"
	"strata/journal"
	"strata/journal/disk"
)

func newJournal(t *testing.T, d disk.Disk) *journal.Journal {
	t.Helper()
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// newPersistent is a persistent server on a fresh crash disk with room
// for slots registers.
func newPersistent(t *testing.T, slots uint64) (*Server, *journal.Journal, *disk.CrashDisk) {
	t.Helper()
	d := disk.NewCrashDisk(2 + 64 + slots)
	if err := journal.Format(d, 64); err != nil {
		t.Fatal(err)
	}
	j := newJournal(t, d)
	s, err := NewPersistentServer(j, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, j, d
}

// Persistent mode: every state a reply reported survives a crash (the
// crash keeps a random subset of unbarriered writes), and concurrent
// requests share barriers.
func TestPersistentStateSurvivesCrashes(t *testing.T) {
	for iter := range testseed.Each(t, testseed.Range(0, 20)...) { // iter is the seed
		rng := rand.New(rand.NewPCG(uint64(iter), 77))
		d := disk.NewCrashDisk(2 + 64 + 256)
		if err := journal.Format(d, 64); err != nil {
			t.Fatal(err)
		}
		j := newJournal(t, d)
		s, err := NewPersistentServer(j, nil)
		if err != nil {
			t.Fatal(err)
		}
		type acked struct {
			addr uint64
			resp response
		}
		var mu sync.Mutex
		var acks []acked
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			grng := rand.New(rand.NewPCG(uint64(iter), uint64(g)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 30; k++ {
					addr := uint64(grng.IntN(12))
					b := uint64(grng.IntN(50)+1)<<clientBits | uint64(g+1)
					var req request
					if grng.IntN(2) == 0 {
						req = request{Op: opPrepare, Addr: addr, Ballot: b}
					} else {
						// One value per ballot, as a correct proposer does.
						req = request{Op: opAccept, Addr: addr, Ballot: b, Value: []byte(fmt.Sprintf("v%d", b))}
					}
					done := make(chan []byte, 1)
					s.HandleAsync("c", req.encode(), func(r []byte) { done <- r })
					r, err := decodeResponse(<-done)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acks = append(acks, acked{addr, r})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		st := j.Stats()
		nd := d.CrashRandom(rng)
		j.Close()
		j2 := newJournal(t, nd)
		s2, err := NewPersistentServer(j2, nil)
		if err != nil {
			t.Fatalf("iter %d: recovery: %v", iter, err)
		}
		for _, a := range acks {
			got := s2.accs[a.addr]
			if got == nil {
				if a.resp.Promised != 0 {
					t.Fatalf("iter %d: address %d lost (reply promised %d)", iter, a.addr, a.resp.Promised)
				}
				continue
			}
			if got.promised < a.resp.Promised {
				t.Fatalf("iter %d: address %d promised %d after recovery, a reply said %d", iter, a.addr, got.promised, a.resp.Promised)
			}
			v, err := s2.loaded(a.addr, *got)
			if err != nil {
				t.Fatalf("iter %d: address %d: %v", iter, a.addr, err)
			}
			if a.resp.Has && (got.accBallot < a.resp.AccBallot || (got.accBallot == a.resp.AccBallot && string(v.value) != string(a.resp.Value))) {
				t.Fatalf("iter %d: address %d accepted (%d, %q) after recovery, a reply said (%d, %q)", iter, a.addr, got.accBallot, v.value, a.resp.AccBallot, a.resp.Value)
			}
		}
		if iter == 0 {
			t.Logf("%d replies, %d journal records, %d barriers", len(acks), st.Records, st.Barriers)
		}
		if st.Records >= uint64(len(acks)) {
			t.Fatalf("iter %d: %d records for %d replies: no group commit", iter, st.Records, len(acks))
		}
		j2.Close()
	}
}

func TestSlotCodec(t *testing.T) {
	a := acceptor{promised: 9, accBallot: 7, has: true, value: []byte("value"), part: 3}
	kind, addr, got, flags, err := decodeSlot(encodeSlot(slotMagic, 42, &a, 0))
	if err != nil || kind != slotReg || addr != 42 || flags != 0 || got.promised != 9 || got.accBallot != 7 || !got.has || string(got.value) != "value" || got.part != 3 {
		t.Fatalf("round trip: %d %+v %v %v", addr, got, kind, err)
	}
	if kind, addr, got, flags, err := decodeSlot(encodeSlot(partMagic, 5, &acceptor{promised: 4}, 2)); err != nil || kind != slotPart || addr != 5 || got.promised != 4 || flags != 2 {
		t.Fatalf("partition slot: %v %d %+v %d %v", kind, addr, got, flags, err)
	}
	if kind, _, _, _, err := decodeSlot(encodeSlot(freeMagic, 0, &acceptor{}, 0)); err != nil || kind != slotFree {
		t.Fatalf("free slot: %v %v", kind, err)
	}
	for _, i := range []int{0, 4, 8, 16, 24, 36, slotHdr} {
		b := encodeSlot(slotMagic, 42, &a, 0)
		b[i] ^= 1
		if _, _, _, _, err := decodeSlot(b); err == nil {
			t.Fatalf("slot corrupted at byte %d accepted", i)
		}
	}
	if kind, _, _, _, err := decodeSlot(make([]byte, disk.BlockSize)); kind != slotEmpty || err != nil {
		t.Fatal("zero slot is not empty")
	}
}

// A trim is durable: after a crash the server still refuses the segment.
func TestPersistentTrim(t *testing.T) {
	s, j, d := newPersistent(t, 256)
	call := func(s *Server, r request) response { return callServer(t, s, r) }
	call(s, request{Op: opAccept, Addr: Addr(5, 1), Ballot: 3, Value: []byte("x")})
	call(s, request{Op: opAccept, Addr: Addr(6, 1), Ballot: 3, Value: []byte("y")})
	if r := call(s, request{Op: opTrim, Addr: 5}); r.Status != stOK {
		t.Fatalf("trim: status %d", r.Status)
	}
	nd := d.CrashRandom(rand.New(rand.NewPCG(1, 2))) // the trim's reply was durable
	j.Close()
	s2, err := NewPersistentServer(newJournal(t, nd), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := call(s2, request{Op: opRead, Addr: Addr(5, 1)}); r.Status != stTrim {
		t.Fatalf("trimmed segment after recovery: status %d", r.Status)
	}
	if r := call(s2, request{Op: opRead, Addr: Addr(6, 1)}); r.Status != stOK || string(r.Value) != "y" {
		t.Fatalf("other segment after recovery: %+v", r)
	}
}

// Trimming a segment reclaims the journal slots of its registers: a
// server whose journal holds 40 slots serves 30 registers, is trimmed, and
// serves 30 more, across a crash; the other segment keeps its values.
func TestPersistentTrimReclaimsSlots(t *testing.T) {
	const slots = 40
	d := disk.NewCrashDisk(2 + 64 + slots)
	if err := journal.Format(d, 64); err != nil {
		t.Fatal(err)
	}
	j := newJournal(t, d)
	s, err := NewPersistentServer(j, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(s *Server, r request) response { return callServer(t, s, r) }
	call(s, request{Op: opAccept, Addr: Addr(9, 0), Ballot: 1, Value: []byte("keep")})
	fill := func(s *Server, seg uint64) {
		for off := range uint64(30) {
			if r := call(s, request{Op: opAccept, Addr: Addr(seg, off), Ballot: 1, Value: []byte{byte(off)}}); r.Status != stOK {
				t.Fatalf("segment %d offset %d: status %d", seg, off, r.Status)
			}
		}
	}
	fill(s, 5)
	// The trim register itself is written first, as Client.Trim does: its
	// slot becomes the trim mark and must not be reclaimed.
	if r := call(s, request{Op: opAccept, Addr: Addr(5, trimOffset), Ballot: 1, Value: []byte("trim")}); r.Status != stOK {
		t.Fatalf("trim register: status %d", r.Status)
	}
	if r := call(s, request{Op: opAccept, Addr: Addr(6, 0), Ballot: 1, Value: []byte("x")}); r.Status != stOK {
		t.Fatalf("status %d", r.Status)
	}
	if r := call(s, request{Op: opTrim, Addr: 5}); r.Status != stOK {
		t.Fatalf("trim: status %d", r.Status)
	}
	if st := s.Stats(); st.FreeSlots != 30 {
		t.Fatalf("after the trim: %d free slots, want 30", st.FreeSlots)
	}
	nd := d.CrashRandom(rand.New(rand.NewPCG(3, 4)))
	j.Close()
	s2, err := NewPersistentServer(newJournal(t, nd), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := s2.Stats(); st.FreeSlots != 30 {
		t.Fatalf("after recovery: %d free slots, want 30", st.FreeSlots)
	}
	fill(s2, 7) // needs the reclaimed slots: fewer than 30 were never used
	// What is left are the never-used slots: 33 were used before the trim
	// (30 + 2 registers + the trim mark).
	left := 0
	for ; ; left++ {
		if r := call(s2, request{Op: opAccept, Addr: Addr(8, uint64(left)), Ballot: 1, Value: []byte("y")}); r.Status == stFull {
			break
		}
	}
	if size := int(j.Size()); left != size-33 || left >= 30 {
		t.Fatalf("%d slots left after reusing the reclaimed ones; journal of %d slots", left, size)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{{Addr(9, 0), "keep"}, {Addr(6, 0), "x"}, {Addr(7, 29), "\x1d"}} {
		if r := call(s2, request{Op: opRead, Addr: c.addr}); r.Status != stOK || string(r.Value) != c.want {
			t.Fatalf("read %x: %+v", c.addr, r)
		}
	}
	if r := call(s2, request{Op: opRead, Addr: Addr(5, 3)}); r.Status != stTrim {
		t.Fatalf("trimmed segment: status %d", r.Status)
	}
}

// callServer sends one request through HandleAsync and waits for the reply.
func callServer(t *testing.T, s *Server, r request) response {
	t.Helper()
	done := make(chan []byte, 1)
	s.HandleAsync("c", r.encode(), func(b []byte) { done <- b })
	resp, err := decodeResponse(<-done)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The chosen marker (the ec engine's Phase 3) is durable like the rest of
// the state: after a crash it is still reported, and a slot written
// without it (as every slot before it existed) reads as not chosen.
func TestPersistentChosenMarker(t *testing.T) {
	s, j, d := newPersistent(t, 256)
	call := func(s *Server, r request) response { return callServer(t, s, r) }
	call(s, request{Op: opAccept, Addr: 1, Ballot: 3, Value: []byte("x")})
	call(s, request{Op: opAccept, Addr: 2, Ballot: 3, Value: []byte("y")})
	if r := call(s, request{Op: opCommit, Addr: 1, Ballot: 3}); r.Status != stOK || !r.Chosen {
		t.Fatalf("commit: %+v", r)
	}
	if r := call(s, request{Op: opCommit, Addr: 2, Ballot: 4}); r.Status != stOK || r.Chosen {
		t.Fatalf("commit of a ballot not accepted: %+v", r)
	}
	nd := d.CrashRandom(rand.New(rand.NewPCG(5, 6))) // the replies were durable
	j.Close()
	j2 := newJournal(t, nd)
	s2, err := NewPersistentServer(j2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := call(s2, request{Op: opRead, Addr: 1}); !r.Chosen || r.AccBallot != 3 || string(r.Value) != "x" {
		t.Fatalf("chosen register after recovery: %+v", r)
	}
	if r := call(s2, request{Op: opRead, Addr: 2}); r.Chosen || string(r.Value) != "y" {
		t.Fatalf("unchosen register after recovery: %+v", r)
	}
	// A later ballot's accept clears the marker, durably too.
	call(s2, request{Op: opAccept, Addr: 1, Ballot: 9, Value: []byte("x")})
	nd = nd.CrashRandom(rand.New(rand.NewPCG(7, 8)))
	j2.Close()
	s3, err := NewPersistentServer(newJournal(t, nd), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := call(s3, request{Op: opRead, Addr: 1}); r.Chosen || r.AccBallot != 9 {
		t.Fatalf("re-accepted register after recovery: %+v", r)
	}
	// The slot codec: the flag round-trips; without it, not chosen.
	a := acceptor{promised: 9, accBallot: 7, has: true, value: []byte("v"), chosen: 7}
	if _, _, got, flags, err := decodeSlot(encodeSlot(slotMagic, 1, &a, slotChosen)); err != nil || flags != slotChosen {
		t.Fatalf("chosen slot: %+v %d %v", got, flags, err)
	}
	if _, _, _, flags, err := decodeSlot(encodeSlot(slotMagic, 1, &a, 0)); err != nil || flags != 0 {
		t.Fatalf("old-style slot: flags %d %v", flags, err)
	}
}
