package stack

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// The compressed header's field encoding round-trips every value, at the
// length varLen promises, and refuses what is cut short or overlong.
func TestVarRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := []uint64{0, 1, 1<<7 - 1, 1 << 7, 1<<14 - 1, 1 << 14, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, 1<<60 + 12345, math.MaxUint64}
	for range 10000 {
		vals = append(vals, rng.Uint64()>>rng.IntN(64))
	}
	var buf [9]byte
	for _, v := range vals {
		n := putVar(buf[:], v)
		if n != varLen(v) {
			t.Fatalf("%d: wrote %d bytes, varLen says %d", v, n, varLen(v))
		}
		got, m := getVar(buf[:n])
		if got != v || m != n {
			t.Fatalf("%d: read back %d (%d bytes of %d)", v, got, m, n)
		}
		// Up to 28 bits, as long as a uvarint.
		if v < 1<<28 && n != uvarintLen(v) {
			t.Fatalf("%d: %d bytes, a uvarint takes %d", v, n, uvarintLen(v))
		}
		if n > 1 {
			if _, m := getVar(buf[:n-1]); m != 0 {
				t.Fatalf("%d: read %d bytes from %d of %d", v, m, n-1, n)
			}
		}
	}
	// Overlong forms: each value below a form's range, in that form.
	for _, b := range [][]byte{{0x80, 0x00}, {0x80, 0x7f}, {0xc0, 0x3f, 0xff}, {0xe0, 0x1f, 0xff, 0xff}, {0xf0, 0, 0, 0, 0, 0x0f, 0xff, 0xff, 0xff}, {0xf0, 0, 0, 0, 0, 0, 0, 0, 1}} {
		if v, m := getVar(b); m != 0 {
			t.Fatalf("overlong %x accepted as %d", b, v)
		}
	}
	for tag := 0xf1; tag <= 0xff; tag++ {
		if _, m := getVar([]byte{byte(tag), 0, 0, 0, 0, 0, 0, 0, 0}); m != 0 {
			t.Fatalf("tag %#x accepted", tag)
		}
	}
}

func FuzzVar(f *testing.F) {
	f.Add([]byte{0x80, 1})
	f.Add([]byte{0xf0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0xc1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n := getVar(b)
		if n == 0 {
			return
		}
		// What it read re-encodes to the same bytes: one form per value.
		var buf [9]byte
		if w := buf[:putVar(buf[:], v)]; string(w) != string(b[:n]) {
			t.Fatalf("%x: read %d, which encodes as %x", b[:n], v, w)
		}
	})
}

func uvarintLen(v uint64) int {
	var b [10]byte
	return binary.PutUvarint(b[:], v)
}
