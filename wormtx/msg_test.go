package wormtx

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestMsgRoundTrip(t *testing.T) {
	ms := []msg{
		{kind: mBegin, variant: A8, tx: 1 << 40, origin: 3, ops: []Op{{Kind: Add, Key: "a", Delta: -5}, {Kind: Get, Key: "b"}}},
		{kind: mPrepare, variant: E3, tx: 9, seg: 1000, base: 12, token: 1<<32 | 4, parts: []uint32{0, 2, 5}, ops: []Op{{Kind: Add, Key: "x", Delta: 7}}},
		{kind: mVote, variant: B6, tx: 9, rm: 2, vote: vote{tx: 9, status: Committed, by: 1200, reads: []read{{"k", -3}}}.encode()},
		{kind: mDecide, variant: C5, tx: 9, outcome: Insufficient},
	}
	for _, m := range ms {
		got, err := decodeMsg(m.encode())
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%+v\ndecoded as %+v, %v", m, got, err)
		}
	}
	v := vote{tx: 5, status: Conflict, by: 7}
	if got, err := decodeVote(v.encode()); err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("vote %+v decoded as %+v, %v", v, got, err)
	}
	for _, bad := range [][]byte{nil, {'X'}, {'X', 'z', 1}, {'V', 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, append(ms[1].encode(), 0)} {
		if _, err := decodeMsg(bad); !errors.Is(err, ErrMalformed) {
			if _, err2 := decodeVote(bad); !errors.Is(err2, ErrMalformed) {
				t.Fatalf("%q: %v / %v, want ErrMalformed", bad, err, err2)
			}
		}
	}
}

// FuzzDecodeMsg: any bytes decode to an error or to a message that
// encodes back to the same bytes.
func FuzzDecodeMsg(f *testing.F) {
	f.Add(msg{kind: mPrepare, variant: E3, tx: 9, parts: []uint32{0, 1}, ops: []Op{{Kind: Add, Key: "x", Delta: 7}}}.encode())
	f.Add(msg{kind: mDecide, variant: A8, tx: 1, outcome: Committed, reads: []read{{"a", 1}}}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMsg(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if again, err := decodeMsg(m.encode()); err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("%+v re-decoded as %+v, %v", m, again, err)
		}
	})
}

// FuzzDecodeVote: the same for register values.
func FuzzDecodeVote(f *testing.F) {
	f.Add(vote{tx: 3, status: Committed, by: 1, reads: []read{{"k", 2}}}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeVote(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if again := v.encode(); !bytes.Equal(again, b) {
			if v2, err := decodeVote(again); err != nil || !reflect.DeepEqual(v2, v) {
				t.Fatalf("%+v re-decoded as %+v, %v", v, v2, err)
			}
		}
	})
}
