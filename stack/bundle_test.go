package stack

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Random frames survive appendToBundle and splitBundle unchanged, and no
// frame's capacity reaches into the next one.
func TestBundleRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for it := 0; it < 2000; it++ {
		var frames [][]byte
		var bundle []byte
		for range 2 + rng.IntN(10) {
			f := make([]byte, 1+rng.IntN(300))
			for i := range f {
				f[i] = byte(rng.Uint32())
			}
			frames = append(frames, f)
			bundle = appendToBundle(bundle, f)
		}
		var got [][]byte
		if err := splitBundle(bundle, func(f []byte) { got = append(got, f) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(frames) {
			t.Fatalf("%d frames back, want %d", len(got), len(frames))
		}
		for i := range got {
			if !bytes.Equal(got[i], frames[i]) || cap(got[i]) != len(got[i]) {
				t.Fatalf("frame %d differs (or its capacity %d exceeds its length %d)", i, cap(got[i]), len(got[i]))
			}
		}
	}
	// One frame is not a bundle.
	if err := splitBundle(appendToBundle(nil, []byte("x")), func([]byte) {}); err == nil {
		t.Fatal("a one-frame bundle was accepted")
	}
}

// FuzzSplitBundle: no input panics; what splits without error re-encodes
// to the same bytes.
func FuzzSplitBundle(f *testing.F) {
	f.Add(appendToBundle(appendToBundle(nil, []byte("ab")), []byte("c")))
	f.Add([]byte{'B', 1, 0})
	f.Add([]byte{'B', 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		var re []byte
		err := splitBundle(data, func(fr []byte) {
			if len(fr) == 0 {
				t.Fatal("empty frame")
			}
			re = appendToBundle(re, fr)
		})
		if err == nil && !bytes.Equal(re, data) {
			// Uvarints have one canonical form only when minimal; a
			// non-minimal length re-encodes shorter, which is fine.
			var n int
			_ = splitBundle(re, func([]byte) { n++ })
			if n < 2 {
				t.Fatalf("accepted bundle %x re-encodes to %x", data, re)
			}
		}
	})
}
