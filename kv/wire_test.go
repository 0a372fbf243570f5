package kv

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var sampleRequests = []Request{
	{Op: OpGet, Key: "k"},
	{Op: OpGet, Key: "k", Sequential: true, Timeout: time.Second},
	{Op: OpPut, Client: 1 << 63, Seq: 7, Key: "key", Value: []byte("value"), Hops: 1},
	{Op: OpDelete, Client: 3, Seq: 1, Key: "k"},
	{Op: OpCAS, Client: 3, Seq: 2, Key: "k", Version: 4, Value: []byte{0, 1, 2}},
	{Op: OpScan, Key: "a", End: "z", Limit: 100},
	{Op: OpWatch, Key: "pre/", Prefix: true, Rev: 1234, Wait: 5 * time.Second},
	{Op: OpStatus},
	{Op: 200, Key: "unknown op"},
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range sampleRequests {
		got, err := DecodeRequest(EncodeRequest(&r))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(*got, r) {
			t.Fatalf("round trip: %+v, want %+v", *got, r)
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for _, r := range []Response{
		{},
		{Status: StatusNotFound, Msg: "kv: key not found", Rev: 9},
		{Rev: 10, Version: 3, Succeeded: true, Existed: true, LeaderID: 2, Epoch: 5, Leader: "udp:127.0.0.1:7201"},
		{Rev: 11, More: true, KVs: []KeyValue{{Key: "a", Value: []byte("1"), Create: 1, Mod: 2, Version: 2}, {Key: "b", Create: 3, Mod: 3, Version: 1}}},
		{Rev: 12, Next: 13, Events: []Event{{Type: EventPut, KV: KeyValue{Key: "a", Value: []byte("x"), Create: 1, Mod: 12, Version: 3}}, {Type: EventDelete, KV: KeyValue{Key: "b", Mod: 12}}}},
		{Status: StatusCompacted, Floor: 100, Msg: "compacted"},
	} {
		got, err := DecodeResponse(EncodeResponse(&r))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if !reflect.DeepEqual(*got, r) {
			t.Fatalf("round trip: %+v, want %+v", *got, r)
		}
	}
}

// TestValidate: every limit and missing field has its own sentinel.
func TestValidate(t *testing.T) {
	big := strings.Repeat("k", MaxKey+1)
	for _, c := range []struct {
		r    Request
		want error
	}{
		{Request{Op: OpGet, Key: "k"}, nil},
		{Request{Op: OpGet}, ErrEmptyKey},
		{Request{Op: OpGet, Key: big}, ErrKeyTooLarge},
		{Request{Op: OpPut, Client: 1, Seq: 1, Key: strings.Repeat("k", MaxKey), Value: make([]byte, MaxValue)}, nil},
		{Request{Op: OpPut, Client: 1, Seq: 1, Key: "k", Value: make([]byte, MaxValue+1)}, ErrValueTooLarge},
		{Request{Op: OpPut, Key: "k"}, ErrMalformed},
		{Request{Op: OpDelete, Client: 1, Seq: 1}, ErrEmptyKey},
		{Request{Op: OpCAS, Client: 1, Seq: 1, Key: big}, ErrKeyTooLarge},
		{Request{Op: OpScan}, nil},
		{Request{Op: OpScan, End: big}, ErrKeyTooLarge},
		{Request{Op: OpWatch, Prefix: true}, nil},
		{Request{Op: OpWatch}, ErrEmptyKey},
		{Request{Op: 0}, ErrUnknownOp},
		{Request{Op: 99}, ErrUnknownOp},
	} {
		err := c.r.Validate()
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s key %d bytes: %v, want %v", c.r.Op, len(c.r.Key), err, c.want)
		}
		// The error crosses the wire intact.
		if err != nil {
			r, derr := DecodeResponse(EncodeResponse(errorResponse(err)))
			if derr != nil || !errors.Is(r.Err(), c.want) || r.Err().Error() != err.Error() {
				t.Errorf("%v over the wire: %v (%v)", err, r.Err(), derr)
			}
		}
	}
	// An oversize field decodes (and Validate names the limit) up to
	// one byte over; far beyond, the request is malformed.
	huge := EncodeRequest(&Request{Op: OpPut, Client: 1, Seq: 1, Key: "k", Value: make([]byte, 2*MaxValue)})
	if _, err := DecodeRequest(huge); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a 512 KiB value: %v, want ErrMalformed", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	good := EncodeRequest(&sampleRequests[2])
	for _, b := range [][]byte{nil, {reqMagic}, {0x00, 1, 0, 0}, good[:len(good)-1], append(append([]byte(nil), good...), 0), {reqMagic, 1, 0x80, 0}} {
		if _, err := DecodeRequest(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeRequest(%x): %v, want ErrMalformed", b, err)
		}
	}
	resp := EncodeResponse(&Response{KVs: []KeyValue{{Key: "a"}}})
	for _, b := range [][]byte{nil, {respMagic}, resp[:len(resp)-1], append(append([]byte(nil), resp...), 1)} {
		if _, err := DecodeResponse(b); !errors.Is(err, ErrBadReply) {
			t.Errorf("DecodeResponse(%x): %v, want ErrBadReply", b, err)
		}
	}
	// A count larger than the bytes could hold is refused before any
	// allocation.
	b := []byte{respMagic, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := DecodeResponse(b); !errors.Is(err, ErrBadReply) {
		t.Errorf("a huge key count: %v", err)
	}
}

func TestUnknownStatus(t *testing.T) {
	err := Status(200).Err("from the future")
	if !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), "from the future") {
		t.Fatalf("unknown status: %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, r := range sampleRequests {
		f.Add(EncodeRequest(&r))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		_ = r.Validate()
		// What decodes re-encodes to the same bytes (the encoding is
		// canonical but for varint padding, which Uvarint accepts: then
		// at least the decoded request round-trips).
		again, err := DecodeRequest(EncodeRequest(r))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoding: %+v vs %+v (%v)", again, r, err)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(EncodeResponse(&Response{Rev: 12, Next: 13, Events: []Event{{Type: EventPut, KV: KeyValue{Key: "a", Value: []byte("x")}}}}))
	f.Add(EncodeResponse(&Response{Status: StatusCompacted, Msg: "m", KVs: []KeyValue{{Key: "b"}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResponse(b)
		if err != nil {
			if !errors.Is(err, ErrBadReply) {
				t.Fatalf("error without ErrBadReply: %v", err)
			}
			return
		}
		_ = r.Err()
		again, err := DecodeResponse(EncodeResponse(r))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encoding: %+v vs %+v (%v)", again, r, err)
		}
	})
}

// FuzzApply: any bytes as a log command never panic the machine, and
// what it returns always decodes.
func FuzzApply(f *testing.F) {
	for _, r := range sampleRequests {
		f.Add(EncodeRequest(&r))
	}
	f.Fuzz(func(t *testing.T, cmd []byte) {
		m := NewMachine(MachineOptions{})
		m.Apply(1, EncodeRequest(&Request{Op: OpPut, Client: 3, Seq: 1, Key: "k", Value: []byte("v")}))
		out := m.Apply(2, cmd)
		if len(cmd) == 0 {
			if out != nil {
				t.Fatal("a no-op returned a result")
			}
			return
		}
		if _, err := DecodeResponse(out); err != nil {
			t.Fatalf("result does not decode: %v", err)
		}
	})
}

// FuzzRestore: any bytes as a snapshot either restore or are refused
// with ErrMalformed, never panic; a restored state's snapshot restores
// to the same state (the same bytes again).
func FuzzRestore(f *testing.F) {
	m := NewMachine(MachineOptions{})
	for i := uint64(1); i <= 5; i++ {
		m.Apply(i, EncodeRequest(&Request{Op: OpPut, Client: i, Seq: 1, Key: string(rune('a' + i)), Value: []byte("v")}))
	}
	snap, _ := m.Snapshot()
	f.Add(snap)
	empty, _ := NewMachine(MachineOptions{}).Snapshot()
	f.Add(empty)
	f.Fuzz(func(t *testing.T, b []byte) {
		m := NewMachine(MachineOptions{})
		if err := m.Restore(7, b); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		again, _ := m.Snapshot()
		m2 := NewMachine(MachineOptions{})
		if err := m2.Restore(7, again); err != nil {
			t.Fatalf("a restored state's snapshot does not restore: %v", err)
		}
		third, _ := m2.Snapshot()
		if !bytes.Equal(again, third) {
			t.Fatalf("snapshot, restore, snapshot: different bytes")
		}
	})
}
