package wor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"strata/journal"
	"strata/journal/disk"
)

// TestAcceptorStep: the acceptor rule, case by case.
func TestAcceptorStep(t *testing.T) {
	fresh := acceptor{}
	promised := acceptor{promised: 5, part: 2}
	accepted := acceptor{promised: 7, accBallot: 5, has: true, value: []byte("x"), part: 2}
	chosenX := acceptor{promised: 7, accBallot: 5, has: true, value: []byte("x"), chosen: 5, part: 2}
	chosenAt5 := acceptor{promised: 5, accBallot: 5, has: true, value: []byte("x"), chosen: 5, part: 2}
	for _, c := range []struct {
		name     string
		cur      acceptor
		op       byte
		ballot   uint64
		value    string
		want     acceptor
		status   byte
		changed  bool
		conflict bool
	}{
		{"prepare promises a first ballot", fresh, opPrepare, 5, "", acceptor{promised: 5, part: 2}, stOK, true, false},
		{"prepare at ballot 0 is not above nothing", fresh, opPrepare, 0, "", fresh, stNack, false, false},
		{"prepare at the promised ballot is refused", promised, opPrepare, 5, "", promised, stNack, false, false},
		{"prepare below the promise is refused, reporting it", promised, opPrepare, 4, "", promised, stNack, false, false},
		{"prepare above the promise promises it", promised, opPrepare, 6, "", acceptor{promised: 6, part: 2}, stOK, true, false},
		{"prepare reports the accepted value", accepted, opPrepare, 9, "", acceptor{promised: 9, accBallot: 5, has: true, value: []byte("x"), part: 2}, stOK, true, false},
		{"prepare below the promise of an accepted register", accepted, opPrepare, 6, "", accepted, stNack, false, false},
		{"accept at the promised ballot", promised, opAccept, 5, "v", acceptor{promised: 5, accBallot: 5, has: true, value: []byte("v"), part: 2}, stOK, true, false},
		{"accept above the promise promises it too", promised, opAccept, 8, "v", acceptor{promised: 8, accBallot: 8, has: true, value: []byte("v"), part: 2}, stOK, true, false},
		{"accept without a prepare (unsafe write, ballot 1)", fresh, opAccept, 1, "v", acceptor{promised: 1, accBallot: 1, has: true, value: []byte("v"), part: 2}, stOK, true, false},
		{"accept below the promise is refused", promised, opAccept, 4, "v", promised, stNack, false, false},
		{"accept below the promise keeps the accepted value", accepted, opAccept, 6, "y", accepted, stNack, false, false},
		{"accept of the same value again (a duplicate)", acceptor{promised: 5, accBallot: 5, has: true, value: []byte("x")}, opAccept, 5, "x", acceptor{promised: 5, accBallot: 5, has: true, value: []byte("x"), part: 2}, stOK, true, false},
		{"accept of another value at the accepted ballot: a client bug, counted", acceptor{promised: 5, accBallot: 5, has: true, value: []byte("x")}, opAccept, 5, "y", acceptor{promised: 5, accBallot: 5, has: true, value: []byte("y"), part: 2}, stOK, true, true},
		{"accept at a higher ballot replaces the value (proposers keep it once chosen)", accepted, opAccept, 7, "y", acceptor{promised: 7, accBallot: 7, has: true, value: []byte("y"), part: 2}, stOK, true, false},
		{"accept of an empty value", fresh, opAccept, 3, "", acceptor{promised: 3, accBallot: 3, has: true, part: 2}, stOK, true, false},
		{"read of a fresh register", fresh, opRead, 0, "", fresh, stOK, false, false},
		{"read reports the accepted value, whatever its ballot", accepted, opRead, 1, "", accepted, stOK, false, false},
		{"not a register request", accepted, opTrim, 9, "", accepted, stErr, false, false},
		// The chosen marker (the ec engine's Phase 3).
		{"commit at the accepted ballot marks it chosen", accepted, opCommit, 5, "", chosenX, stOK, true, false},
		{"commit of another ballot is ignored", accepted, opCommit, 6, "", accepted, stOK, false, false},
		{"commit of a register with nothing accepted is ignored", promised, opCommit, 5, "", promised, stOK, false, false},
		{"commit again changes nothing", chosenX, opCommit, 5, "", chosenX, stOK, false, false},
		{"commit below the promise still marks (it reports a fact, not a vote)", acceptor{promised: 9, accBallot: 5, has: true, value: []byte("x"), part: 2}, opCommit, 5, "", acceptor{promised: 9, accBallot: 5, has: true, value: []byte("x"), chosen: 5, part: 2}, stOK, true, false},
		{"prepare keeps the marker", chosenX, opPrepare, 9, "", acceptor{promised: 9, accBallot: 5, has: true, value: []byte("x"), chosen: 5, part: 2}, stOK, true, false},
		{"a duplicate accept keeps the marker", chosenAt5, opAccept, 5, "x", acceptor{promised: 5, accBallot: 5, has: true, value: []byte("x"), chosen: 5, part: 2}, stOK, true, false},
		{"an accept at a higher ballot clears the marker (it names the split held)", chosenX, opAccept, 8, "x", acceptor{promised: 8, accBallot: 8, has: true, value: []byte("x"), part: 2}, stOK, true, false},
		{"another value at the marked ballot clears it (a client bug)", chosenAt5, opAccept, 5, "y", acceptor{promised: 5, accBallot: 5, has: true, value: []byte("y"), part: 2}, stOK, true, true},
		{"read reports the marker", chosenX, opRead, 0, "", chosenX, stOK, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			value := []byte(c.value)
			got := c.cur.step(c.op, 2, c.ballot, value)
			if !sameAcceptor(got.next, c.want) || got.status != c.status || got.changed != c.changed || got.conflict != c.conflict {
				t.Fatalf("%+v.step(%s, ballot %d, %q) = %+v; want next %+v, status %d, changed %v, conflict %v",
					c.cur, OpName(c.op), c.ballot, c.value, got, c.want, c.status, c.changed, c.conflict)
			}
			// The reply reports the state after the request.
			r := got.next.reply(got.status)
			if r.Status != c.status || r.Promised != c.want.promised || r.AccBallot != c.want.accBallot || r.Has != c.want.has || r.Chosen != (c.want.chosen != 0) || !bytes.Equal(r.Value, c.want.value) {
				t.Fatalf("reply %+v does not report %+v", r, c.want)
			}
			// The request's buffer is not kept.
			if len(value) > 0 {
				value[0] ^= 0xff
				if got.next.has && got.changed && !bytes.Equal(got.next.value, []byte(c.value)) {
					t.Fatalf("the accepted value changed with the request's buffer: %q", got.next.value)
				}
			}
		})
	}
}

func sameAcceptor(a, b acceptor) bool {
	return a.promised == b.promised && a.accBallot == b.accBallot && a.has == b.has && bytes.Equal(a.value, b.value) && a.part == b.part && a.chosen == b.chosen
}

// TestAdmit: the epoch check every register request passes first.
func TestAdmit(t *testing.T) {
	for _, c := range []struct {
		ps     partState
		epoch  uint32
		status byte
	}{
		{partState{epoch: 0, active: true}, 0, stOK},
		{partState{epoch: 0, active: true}, 1, stNotReady}, // a newer configuration, not installed here yet
		{partState{epoch: 2, active: true}, 1, stSealed},   // the client's configuration was replaced
		{partState{epoch: 2, active: true}, 2, stOK},
		{partState{epoch: 2, active: false}, 2, stNotReady}, // sealed, the new one not active yet
		{partState{epoch: 2, active: false}, 1, stSealed},
		{partState{epoch: 2, active: false}, 3, stNotReady},
	} {
		st, ok := admit(c.ps, c.epoch)
		if st != c.status || ok != (c.status == stOK) {
			t.Errorf("admit(%+v, epoch %d) = %d, %v; want %d", c.ps, c.epoch, st, ok, c.status)
		}
	}
}

// TestServerAcceptorRules: the acceptor rule, the trim refusal and the
// epoch checks as a server answers them on the wire, in memory and in
// persistent mode (both go through Server.apply); the persistent server
// then restarts from its journal with every state it replied.
func TestServerAcceptorRules(t *testing.T) {
	a, b := Addr(1, 1), Addr(1, 2)
	other := Addr(2, 1)
	type want struct {
		status    byte
		promised  uint64
		accBallot uint64
		has       bool
		value     string
	}
	steps := []struct {
		what string
		req  request
		want want
	}{
		{"prepare", request{Op: opPrepare, Addr: a, Ballot: 5}, want{stOK, 5, 0, false, ""}},
		{"prepare at the same ballot", request{Op: opPrepare, Addr: a, Ballot: 5}, want{stNack, 5, 0, false, ""}},
		{"accept below the promise", request{Op: opAccept, Addr: a, Ballot: 3, Value: []byte("x")}, want{stNack, 5, 0, false, ""}},
		{"accept at the promise", request{Op: opAccept, Addr: a, Ballot: 5, Value: []byte("x")}, want{stOK, 5, 5, true, "x"}},
		{"prepare above reports the accepted value", request{Op: opPrepare, Addr: a, Ballot: 7}, want{stOK, 7, 5, true, "x"}},
		{"accept of another value below the promise", request{Op: opAccept, Addr: a, Ballot: 6, Value: []byte("y")}, want{stNack, 7, 5, true, "x"}},
		{"accept completing the value at the new ballot", request{Op: opAccept, Addr: a, Ballot: 7, Value: []byte("x")}, want{stOK, 7, 7, true, "x"}},
		{"read", request{Op: opRead, Addr: a}, want{stOK, 7, 7, true, "x"}},
		{"read of a register never written", request{Op: opRead, Addr: b}, want{stOK, 0, 0, false, ""}},
		{"prepare at ballot 0 of a register never written", request{Op: opPrepare, Addr: b}, want{stNack, 0, 0, false, ""}},
		{"segment accept", request{Op: opSegAccept, Addr: b, Ballot: 9, Value: encodeValues([][]byte{[]byte("p"), []byte("q")})}, want{stOK, 0, 0, false, ""}},
		{"read of a register the segment accept wrote", request{Op: opRead, Addr: b + 1}, want{stOK, 9, 9, true, "q"}},
		{"segment prepare below the promise: nacks", request{Op: opSegPrepare, Addr: b, Ballot: 8, Value: binary.BigEndian.AppendUint32(nil, 2)}, want{stOK, 9, 0, true, string(encodeSegEntries([]segEntry{{off: 0, nack: true, promised: 9}, {off: 1, nack: true, promised: 9}}))}},
		{"a request of an epoch not served yet", request{Op: opRead, Addr: a, Epoch: 1}, want{stNotReady, 0, 0, false, ""}},
		{"seal epoch 0", request{Op: opSeal, Epoch: 1}, want{stOK, 1, 0, false, ""}},
		{"a request of the sealed epoch", request{Op: opPrepare, Addr: a, Ballot: 11}, want{stSealed, 1, 0, false, ""}},
		{"a request of the new epoch before it is active", request{Op: opRead, Addr: a, Epoch: 1}, want{stNotReady, 1, 0, false, ""}},
		{"another partition is not sealed", request{Op: opRead, Part: 1, Addr: Addr(3, 0)}, want{stOK, 0, 0, false, ""}},
		{"activate epoch 1", request{Op: opActivate, Epoch: 1}, want{stOK, 1, 0, false, ""}},
		{"the state carried over to epoch 1", request{Op: opRead, Addr: a, Epoch: 1}, want{stOK, 7, 7, true, "x"}},
		{"a request of an epoch above", request{Op: opRead, Addr: a, Epoch: 2}, want{stNotReady, 1, 0, false, ""}},
		{"prepare of another segment", request{Op: opPrepare, Addr: other, Ballot: 4, Epoch: 1}, want{stOK, 4, 0, false, ""}},
		{"trim of the sealed epoch", request{Op: opTrim, Addr: 1}, want{stSealed, 1, 0, false, ""}},
		{"trim", request{Op: opTrim, Addr: 1, Epoch: 1}, want{stOK, 0, 0, false, ""}},
		{"read of a trimmed register", request{Op: opRead, Addr: a, Epoch: 1}, want{stTrim, 0, 0, false, ""}},
		{"prepare of a trimmed register", request{Op: opPrepare, Addr: a, Ballot: 20, Epoch: 1}, want{stTrim, 0, 0, false, ""}},
		{"accept of a trimmed register", request{Op: opAccept, Addr: b, Ballot: 20, Value: []byte("z"), Epoch: 1}, want{stTrim, 0, 0, false, ""}},
		{"segment prepare of a trimmed segment", request{Op: opSegPrepare, Addr: b, Ballot: 20, Value: binary.BigEndian.AppendUint32(nil, 2), Epoch: 1}, want{stTrim, 0, 0, false, ""}},
		{"another segment is not trimmed", request{Op: opRead, Addr: other, Epoch: 1}, want{stOK, 4, 0, false, ""}},
	}
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistent=%v", persistent), func(t *testing.T) {
			s := NewServer(nil)
			var d *disk.CrashDisk
			var j *journal.Journal
			if persistent {
				d = disk.NewCrashDisk(2 + 64 + 256)
				if err := journal.Format(d, 64); err != nil {
					t.Fatal(err)
				}
				j = newJournal(t, d)
				var err error
				if s, err = NewPersistentServer(j, nil); err != nil {
					t.Fatal(err)
				}
			}
			for k, st := range steps {
				r, err := decodeResponse(s.Handle("c", st.req.encode()))
				if err != nil {
					t.Fatalf("step %d (%s): %v", k, st.what, err)
				}
				got := want{r.Status, r.Promised, r.AccBallot, r.Has, string(r.Value)}
				if got != st.want {
					t.Fatalf("step %d (%s): got %+v, want %+v", k, st.what, got, st.want)
				}
			}
			// Registers with state: segment 2's (segment 1 was trimmed);
			// nothing was kept for the read or the refused prepare of a
			// register never written.
			if n := s.Registers(); n != 1 {
				t.Errorf("%d registers with state, want 1", n)
			}
			if !persistent {
				return
			}
			j.Close()
			s2, err := NewPersistentServer(newJournal(t, d.CrashNone()), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range []struct {
				req  request
				want want
			}{
				{request{Op: opRead, Addr: other, Epoch: 1}, want{stOK, 4, 0, false, ""}},
				{request{Op: opRead, Addr: a, Epoch: 1}, want{stTrim, 0, 0, false, ""}},
				{request{Op: opRead, Addr: a}, want{stSealed, 1, 0, false, ""}},
			} {
				r, err := decodeResponse(s2.Handle("c", st.req.encode()))
				if err != nil {
					t.Fatal(err)
				}
				if got := (want{r.Status, r.Promised, r.AccBallot, r.Has, string(r.Value)}); got != st.want {
					t.Errorf("after restart, %s of %d at epoch %d: got %+v, want %+v", OpName(st.req.Op), st.req.Addr, st.req.Epoch, got, st.want)
				}
			}
		})
	}
}

// BenchmarkServerPrepareAccept: a memory server's prepare and accept of
// one register at rising ballots (the server's hot path without I/O): 5
// allocs/op (two requests, two replies, the accepted value's copy) before
// and after the acceptor step was made one function.
func BenchmarkServerPrepareAccept(b *testing.B) {
	s := NewServer(nil)
	val := []byte("value")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		addr := Addr(3, uint64(i%1024))
		ballot := uint64(i+1)<<clientBits | 1
		s.Handle("c", request{Op: opPrepare, Addr: addr, Ballot: ballot}.encode())
		s.Handle("c", request{Op: opAccept, Addr: addr, Ballot: ballot, Value: val}.encode())
	}
}
