package wormlog

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestCodecRoundTrips(t *testing.T) {
	for _, r := range []request{{op: opTail}, {op: opToken, count: 1}, {op: opToken, count: MaxTokens, stale: 7}} {
		got, err := decodeRequest(encodeRequest(r))
		if err != nil || got != r {
			t.Fatalf("request %+v: got %+v, %v", r, got, err)
		}
	}
	for _, r := range []response{
		{status: stOK, pos: 1 << 40, count: 3, cid: 5<<32 | 9, epoch: 4},
		{status: stOK, pos: 17},
		{status: stNotSeq, leader: "udp:127.0.0.1:7301"},
		{status: stNotSeq},
		{status: stUnavailable, msg: "busy"},
		{status: stBadRequest, msg: "bad"},
	} {
		got, err := decodeResponse(encodeResponse(r))
		if err != nil || got != r {
			t.Fatalf("response %+v: got %+v, %v", r, got, err)
		}
	}
	m := segMeta{sequencer: 3, epoch: 9, size: 64, addr: "sim:l3"}
	if got, err := decodeSegMeta(encodeSegMeta(m)); err != nil || got != m {
		t.Fatalf("metadata %+v: got %+v, %v", m, got, err)
	}
	if d, junk, err := decodeEntry(encodeData([]byte("x"))); err != nil || junk || string(d) != "x" {
		t.Fatalf("entry: %q %v %v", d, junk, err)
	}
	if _, junk, err := decodeEntry(junkValue); err != nil || !junk {
		t.Fatalf("junk: %v %v", junk, err)
	}
}

func TestCodecRejects(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":          nil,
		"wrong magic":    {'x', byte(opTail)},
		"unknown op":     {reqMagic, 99},
		"zero tokens":    encodeRequest(request{op: opToken, count: 0}),
		"too many":       encodeRequest(request{op: opToken, count: MaxTokens + 1}),
		"trailing bytes": append(encodeRequest(request{op: opTail}), 0),
		"truncated":      encodeRequest(request{op: opToken, count: 300})[:3],
	} {
		if _, err := decodeRequest(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("request %s: %v, want ErrMalformed", name, err)
		}
	}
	long := encodeResponse(response{status: stNotSeq, leader: string(bytes.Repeat([]byte("a"), maxAddr+1))})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"unknown status": {respMagic, 42},
		"long address":   long,
		"truncated":      encodeResponse(response{status: stOK, pos: 1 << 50})[:4],
		"big token":      encodeResponse(response{status: stOK, count: MaxTokens + 1}),
	} {
		if _, err := decodeResponse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("response %s: %v, want ErrMalformed", name, err)
		}
	}
	for name, b := range map[string][]byte{
		"not a log's": []byte("kv metadata"),
		"size 0":      encodeSegMeta(segMeta{sequencer: 1, epoch: 1}),
	} {
		if _, err := decodeSegMeta(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("metadata %s: %v, want ErrMalformed", name, err)
		}
	}
	for _, v := range [][]byte{nil, {'J', 0}, {'X'}} {
		if _, _, err := decodeEntry(v); !errors.Is(err, ErrMalformed) {
			t.Errorf("entry %q: %v, want ErrMalformed", v, err)
		}
	}
}

// The decoders take any bytes without panicking; what they accept
// encodes back to the same bytes.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(encodeRequest(request{op: opToken, count: 2, stale: 1}))
	f.Add(encodeRequest(request{op: opTail}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRequest(b)
		if err == nil && !bytes.Equal(encodeRequest(r), b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, r, encodeRequest(r))
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(encodeResponse(response{status: stOK, pos: 5, count: 1, cid: 9, epoch: 2}))
	f.Add(encodeResponse(response{status: stNotSeq, leader: "udp:1.2.3.4:5"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponse(b)
		if err == nil && !bytes.Equal(encodeResponse(r), b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, r, encodeResponse(r))
		}
	})
}

func FuzzDecodeSegMeta(f *testing.F) {
	f.Add(encodeSegMeta(segMeta{sequencer: 1, epoch: 2, size: 64, addr: "sim:l1"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeSegMeta(b)
		if err == nil && !reflect.DeepEqual(encodeSegMeta(m), b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, m, encodeSegMeta(m))
		}
	})
}

// The sequencer's counter: each position once, in order, within a
// segment; the next segment only once it is ready.
func TestSeqState(t *testing.T) {
	s := seqState{size: 8, cur: 3, curCID: 11}
	seen := map[uint64]bool{}
	take := func(n uint64) (uint64, uint64, uint64, bool) {
		pos, count, cid, ok := s.issue(n)
		for p := pos; ok && p < pos+count; p++ {
			if seen[p] {
				t.Fatalf("position %d handed out twice", p)
			}
			seen[p] = true
		}
		return pos, count, cid, ok
	}
	if pos, count, cid, ok := take(3); !ok || pos != 24 || count != 3 || cid != 11 {
		t.Fatalf("first token: %d %d %d %v", pos, count, cid, ok)
	}
	if s.wantAhead() {
		t.Fatal("wants the next segment with 5 of 8 left")
	}
	if pos, count, _, _ := take(4); pos != 27 || count != 4 {
		t.Fatalf("second token: %d+%d", pos, count)
	}
	if !s.wantAhead() {
		t.Fatal("does not want the next segment with 1 of 8 left")
	}
	// A token does not cross into the next segment.
	if pos, count, _, _ := take(5); pos != 31 || count != 1 {
		t.Fatalf("token at the segment's end: %d+%d", pos, count)
	}
	if _, _, _, ok := take(1); ok {
		t.Fatal("handed out a position of a segment not ready")
	}
	if s.tail() != 32 {
		t.Fatalf("tail %d", s.tail())
	}
	s.setAhead(12)
	if pos, count, cid, ok := take(2); !ok || pos != 32 || count != 2 || cid != 12 {
		t.Fatalf("token in the next segment: %d %d %d %v", pos, count, cid, ok)
	}
	if s.newest() != 4 || s.tail() != 34 {
		t.Fatalf("newest %d tail %d", s.newest(), s.tail())
	}
}
