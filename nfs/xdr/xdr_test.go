package xdr

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	w := NewWriter(make([]byte, 0, 8))
	w.Uint32(0)
	w.Uint32(math.MaxUint32)
	w.Int32(-1)
	w.Int32(math.MinInt32)
	w.Uint64(math.MaxUint64)
	w.Uint64(0x0102030405060708)
	w.Int64(math.MinInt64)
	w.Int64(-2)
	w.Bool(true)
	w.Bool(false)
	w.Optional(true)
	for n := 0; n <= 9; n++ {
		w.Opaque(bytes.Repeat([]byte{byte(n + 1)}, n))
		w.FixedOpaque(bytes.Repeat([]byte{byte(n + 0x40)}, n))
		w.String(strings.Repeat("s", n))
	}
	if w.Len()%4 != 0 || w.Len() != len(w.Bytes()) {
		t.Fatalf("Len %d, len(Bytes) %d", w.Len(), len(w.Bytes()))
	}

	r := NewReader(w.Bytes())
	if v := r.Uint32(); v != 0 {
		t.Errorf("Uint32 = %d", v)
	}
	if v := r.Uint32(); v != math.MaxUint32 {
		t.Errorf("Uint32 = %d", v)
	}
	if v := r.Int32(); v != -1 {
		t.Errorf("Int32 = %d", v)
	}
	if v := r.Int32(); v != math.MinInt32 {
		t.Errorf("Int32 = %d", v)
	}
	if v := r.Uint64(); v != math.MaxUint64 {
		t.Errorf("Uint64 = %d", v)
	}
	if v := r.Uint64(); v != 0x0102030405060708 {
		t.Errorf("Uint64 = %#x", v)
	}
	if v := r.Int64(); v != math.MinInt64 {
		t.Errorf("Int64 = %d", v)
	}
	if v := r.Int64(); v != -2 {
		t.Errorf("Int64 = %d", v)
	}
	if !r.Bool() || r.Bool() || !r.Optional() {
		t.Errorf("bools wrong")
	}
	for n := 0; n <= 9; n++ {
		if b := r.Opaque(n); !bytes.Equal(b, bytes.Repeat([]byte{byte(n + 1)}, n)) || b == nil {
			t.Errorf("Opaque(%d) = %v", n, b)
		}
		if b := r.FixedOpaque(n); !bytes.Equal(b, bytes.Repeat([]byte{byte(n + 0x40)}, n)) {
			t.Errorf("FixedOpaque(%d) = %v", n, b)
		}
		if s := r.String(-1); s != strings.Repeat("s", n) {
			t.Errorf("String = %q", s)
		}
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
	if r.Remaining() != 0 {
		t.Fatal("bytes remain")
	}
}

func TestEncoding(t *testing.T) {
	var w Writer
	w.Opaque([]byte{1, 2, 3, 4, 5})
	w.String("ab")
	w.FixedOpaque([]byte{9})
	w.Bool(true)
	w.Int64(-1)
	want := []byte{
		0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0,
		0, 0, 0, 2, 'a', 'b', 0, 0,
		9, 0, 0, 0,
		0, 0, 0, 1,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	}
	if !bytes.Equal(w.Bytes(), want) {
		t.Fatalf("got %v\nwant %v", w.Bytes(), want)
	}
	w.Reset()
	if w.Len() != 0 {
		t.Fatal("Reset did not empty")
	}
}

func TestNonZeroPaddingAccepted(t *testing.T) {
	r := NewReader([]byte{0, 0, 0, 1, 'x', 7, 7, 7, 'y', 8, 8, 8})
	if s := r.String(4); s != "x" {
		t.Fatalf("String = %q", s)
	}
	if b := r.FixedOpaque(1); !bytes.Equal(b, []byte{'y'}) {
		t.Fatalf("FixedOpaque = %v", b)
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
}

func TestAliasCapacityClipped(t *testing.T) {
	in := []byte{0, 0, 0, 2, 'a', 'b', 0, 0, 0, 0, 0, 9}
	r := NewReader(in)
	b := r.Opaque(10)
	_ = append(b, 'Z')
	if in[6] != 0 {
		t.Fatal("append to result wrote into the input")
	}
	if r.Uint32() != 9 {
		t.Fatal("wrong value after opaque")
	}
}

func TestOpaqueFunc(t *testing.T) {
	var w Writer
	w.Uint32(7)
	if err := w.OpaqueFunc(10, func(p []byte) (int, error) {
		if len(p) != 10 {
			t.Fatalf("len(p) = %d", len(p))
		}
		return copy(p, "hello"), nil
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := w.OpaqueFunc(100, func(p []byte) (int, error) { return 0, boom }); err != boom {
		t.Fatalf("err = %v", err)
	}
	w.Uint32(8)
	var want Writer
	want.Uint32(7)
	want.Opaque([]byte("hello"))
	want.Uint32(8)
	if !bytes.Equal(w.Bytes(), want.Bytes()) {
		t.Fatalf("got %v want %v", w.Bytes(), want.Bytes())
	}
	w.PutUint32At(0, 99)
	if NewReader(w.Bytes()).Uint32() != 99 {
		t.Fatal("PutUint32At")
	}
}

func wantMalformed(t *testing.T, name string, r *Reader) {
	t.Helper()
	if !errors.Is(r.Err(), ErrMalformed) {
		t.Errorf("%s: Err = %v, want ErrMalformed", name, r.Err())
	}
	if !errors.Is(r.Done(), ErrMalformed) {
		t.Errorf("%s: Done = %v", name, r.Done())
	}
	// Sticky: everything after returns zero values.
	if r.Uint32() != 0 || r.Uint64() != 0 || r.Bool() || r.Opaque(-1) != nil ||
		r.FixedOpaque(0) != nil || r.String(-1) != "" || r.Remaining() != 0 || r.Int32() != 0 || r.Int64() != 0 {
		t.Errorf("%s: reads after error are not zero", name)
	}
}

func TestMalformed(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		read func(r *Reader)
	}{
		{"short uint32", []byte{1, 2, 3}, func(r *Reader) { r.Uint32() }},
		{"short int32", nil, func(r *Reader) { r.Int32() }},
		{"short uint64", []byte{1, 2, 3, 4, 5, 6, 7}, func(r *Reader) { r.Uint64() }},
		{"short int64", []byte{1}, func(r *Reader) { r.Int64() }},
		{"bad bool", []byte{0, 0, 0, 2}, func(r *Reader) { r.Bool() }},
		{"bad bool high", []byte{0x80, 0, 0, 1}, func(r *Reader) { r.Bool() }},
		{"bad optional", []byte{0xff, 0xff, 0xff, 0xff}, func(r *Reader) { r.Optional() }},
		{"short bool", []byte{0, 0}, func(r *Reader) { r.Bool() }},
		{"opaque over limit", []byte{0, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0}, func(r *Reader) { r.Opaque(4) }},
		{"opaque beyond data", []byte{0, 0, 0, 5, 1, 2, 3, 4}, func(r *Reader) { r.Opaque(-1) }},
		{"opaque padding missing", []byte{0, 0, 0, 5, 1, 2, 3, 4, 5}, func(r *Reader) { r.Opaque(-1) }},
		{"opaque huge", []byte{0xff, 0xff, 0xff, 0xff, 0}, func(r *Reader) { r.Opaque(-1) }},
		{"opaque huge 2", []byte{0xff, 0xff, 0xff, 0xfd}, func(r *Reader) { r.Opaque(-1) }},
		{"opaque no length", []byte{0, 0}, func(r *Reader) { r.Opaque(10) }},
		{"string over limit", []byte{0, 0, 0, 3, 'a', 'b', 'c', 0}, func(r *Reader) { r.String(2) }},
		{"string beyond data", []byte{0, 0, 0, 8, 'a'}, func(r *Reader) { r.String(100) }},
		{"string zero limit", []byte{0, 0, 0, 1, 'a', 0, 0, 0}, func(r *Reader) { r.String(0) }},
		{"fixed short", []byte{1, 2, 3}, func(r *Reader) { r.FixedOpaque(4) }},
		{"fixed padding missing", []byte{1, 2, 3}, func(r *Reader) { r.FixedOpaque(2) }},
		{"fixed negative", []byte{1, 2, 3, 4}, func(r *Reader) { r.FixedOpaque(-1) }},
		{"fixed huge", []byte{1, 2, 3, 4}, func(r *Reader) { r.FixedOpaque(math.MaxInt) }},
		{"fixed maxint-2", []byte{1, 2, 3, 4}, func(r *Reader) { r.FixedOpaque(math.MaxInt - 2) }},
	}
	for _, c := range cases {
		r := NewReader(c.in)
		c.read(r)
		wantMalformed(t, c.name, r)
	}
}

func TestStickyFirstError(t *testing.T) {
	r := NewReader([]byte{0, 0, 0, 9, 0, 0, 0, 1})
	r.Bool()
	first := r.Err()
	r.Uint64()
	r.Opaque(1)
	if r.Err() != first {
		t.Fatalf("error changed: %v -> %v", first, r.Err())
	}
}

func TestDoneTrailing(t *testing.T) {
	r := NewReader([]byte{0, 0, 0, 1, 0})
	if !r.Bool() {
		t.Fatal("bool")
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if err := r.Done(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Done = %v", err)
	}
	if r.Err() != nil {
		t.Fatal("Done made the error sticky")
	}
	if r.Remaining() != 1 || len(r.Rest()) != 1 {
		t.Fatal("Remaining/Rest")
	}
	r.Reset([]byte{0, 0, 0, 0})
	if r.Bool() || r.Done() != nil {
		t.Fatal("Reset")
	}
}

func TestZeroValues(t *testing.T) {
	var r Reader
	if r.Done() != nil || r.Remaining() != 0 {
		t.Fatal("zero Reader not empty")
	}
	r.Uint32()
	if !errors.Is(r.Err(), ErrMalformed) {
		t.Fatal("zero Reader read succeeded")
	}
	var w Writer
	w.Uint32(1)
	if w.Len() != 4 {
		t.Fatal("zero Writer")
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	w := NewWriter(make([]byte, 0, 256))
	data := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		w.Reset()
		w.Uint32(1)
		w.Uint64(2)
		w.Opaque(data)
		w.String("name")
		r := NewReader(w.Bytes())
		r.Uint32()
		r.Uint64()
		r.Opaque(64)
		r.Opaque(255)
		if r.Done() != nil {
			b.Fatal(r.Err())
		}
	}
}
