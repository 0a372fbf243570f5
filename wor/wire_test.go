package wor

import (
	"bytes"
	"errors"
	"testing"
)

func FuzzDecodeRequest(f *testing.F) {
	f.Add(request{Op: opPrepare, Addr: 7, Ballot: 1 << 20}.encode())
	f.Add(request{Op: opAccept, Addr: 7, Ballot: 3, Value: []byte("v")}.encode())
	f.Add(request{Op: opRead, Addr: 1}.encode())
	f.Add(request{Op: opSeal, Part: 1, Epoch: 2}.encode())
	f.Add(request{Op: opDump, Part: 1}.encode())
	f.Add(request{Op: opInstall, Part: 1, Epoch: 2, Value: encodeRecords([]record{{addr: 7, a: acceptor{promised: 3, accBallot: 3, has: true, value: []byte("v")}}})}.encode())
	f.Add(request{Op: opActivate, Part: 1, Epoch: 2}.encode())
	f.Add(request{Op: opSegPrepare, Addr: Addr(3, 0), Ballot: 9, Value: countBytes(4)}.encode())
	f.Add(request{Op: opSegAccept, Addr: Addr(3, 0), Ballot: 9, Value: encodeValues([][]byte{[]byte("a"), nil})}.encode())
	f.Add(request{Op: opListen, Addr: 3, Ballot: 1000}.encode())
	f.Add(request{Op: opCommit, Addr: 7, Ballot: 3}.encode())
	f.Add(request{Op: opInstall, Part: 1, Epoch: 2, Value: encodeRecords([]record{{addr: 7, a: acceptor{promised: 3, accBallot: 3, has: true, chosen: 3, value: []byte("v")}}})}.encode())
	f.Add([]byte{9, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRequest(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if !bytes.Equal(r.encode(), b) {
			t.Fatal("decode then encode changed the request")
		}
		// The server answers every request, well-formed or not, without panicking.
		s := NewServer(nil)
		if _, err := decodeResponse(s.Handle("x", b)); err != nil {
			t.Fatalf("server reply does not decode: %v", err)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(response{Status: stOK, Promised: 5, AccBallot: 5, Has: true, Value: []byte("x")}.encode())
	f.Add(response{Status: stNack, Promised: 9}.encode())
	f.Add(response{Status: stOK, Promised: 5, AccBallot: 5, Has: true, Chosen: true, Value: []byte("x")}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponse(b)
		if err != nil {
			return
		}
		if r.Chosen && !r.Has {
			t.Fatal("a response marked chosen without a value")
		}
		if !bytes.Equal(r.encode(), b) {
			t.Fatal("decode then encode changed the response")
		}
	})
}

// Malformed requests get an error reply (and are counted); the acceptor
// rules hold for prepare and accept.
func TestServerRules(t *testing.T) {
	s := NewServer(nil)
	do := func(r request) response {
		resp, err := decodeResponse(s.Handle("c", r.encode()))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r, _ := decodeResponse(s.Handle("c", []byte{1, 2, 3})); r.Status != stErr || s.Requests[0] != 1 {
		t.Fatalf("malformed request: status %d, counted %d", r.Status, s.Requests[0])
	}
	if r := do(request{Op: opPrepare, Addr: 1, Ballot: 10}); r.Status != stOK || r.Promised != 10 {
		t.Fatalf("first prepare: %+v", r)
	}
	if r := do(request{Op: opPrepare, Addr: 1, Ballot: 5}); r.Status != stNack || r.Promised != 10 {
		t.Fatalf("lower prepare: %+v", r)
	}
	if r := do(request{Op: opAccept, Addr: 1, Ballot: 5, Value: []byte("low")}); r.Status != stNack || r.Has {
		t.Fatalf("accept below the promise: %+v", r)
	}
	if r := do(request{Op: opAccept, Addr: 1, Ballot: 10, Value: []byte("v")}); r.Status != stOK || !r.Has || string(r.Value) != "v" {
		t.Fatalf("accept at the promise: %+v", r)
	}
	if r := do(request{Op: opRead, Addr: 1}); !r.Has || string(r.Value) != "v" || r.AccBallot != 10 {
		t.Fatalf("read: %+v", r)
	}
	if r := do(request{Op: opRead, Addr: 2}); r.Has || len(s.accs) != 1 {
		t.Fatalf("read of an untouched address created state or a value: %+v, %d entries", r, len(s.accs))
	}
}

// The batch, record, value-list and notification decoders reject garbage
// with ErrMalformed and round-trip what they accept.
func FuzzDecodeBatches(f *testing.F) {
	f.Add(encodeRecords([]record{{addr: 1, a: acceptor{promised: 2, accBallot: 2, has: true, value: []byte("x"), part: 4}}}))
	f.Add(encodeRecords([]record{{addr: 1, a: acceptor{promised: 2, accBallot: 2, has: true, chosen: 2, value: []byte("x"), part: 4}}}))
	f.Add(encodeSegEntries([]segEntry{{off: 3, nack: true, promised: 9}, {off: 4, acc: 2, has: true, value: []byte("y")}}))
	f.Add(encodeValues([][]byte{[]byte("a"), {}, []byte("bc")}))
	f.Add(notification{Addr: 5, Ballot: 6, Value: []byte("z")}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		if rs, err := decodeRecords(b); err == nil {
			if !bytes.Equal(encodeRecords(rs), b) {
				t.Fatal("records do not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if es, err := decodeSegEntries(b); err == nil {
			if !bytes.Equal(encodeSegEntries(es), b) {
				t.Fatal("segment entries do not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if vs, err := decodeValues(b); err == nil {
			if !bytes.Equal(encodeValues(vs), b) {
				t.Fatal("values do not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
		if n, err := decodeNotification(b); err == nil {
			if !bytes.Equal(n.encode(), b) {
				t.Fatal("notification does not round-trip")
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatal(err)
		}
	})
}
