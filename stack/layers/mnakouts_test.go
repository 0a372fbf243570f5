package layers

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestMnakOutsModel runs random pushes and drops against a slice: the ring
// keeps every entry in order through wrap-arounds and growth, and a
// dropped entry's headers keep their bytes.
func TestMnakOutsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q mnakOuts
	var model []mnakOut
	var handed [][2][]byte // an entry's headers as the queue holds them, and as written
	for step := range 20000 {
		if len(model) > 0 && rng.IntN(100) < 45 {
			model = model[1:]
			q.drop()
		} else {
			h := []byte{byte(step), byte(step >> 8), byte(step >> 16)}[:1+rng.IntN(3)]
			o := q.push()
			o.hdr = append(q.room(len(h)), h...)
			o.body = []byte{byte(step)}
			model = append(model, mnakOut{hdr: bytes.Clone(h), body: o.body})
			handed = append(handed, [2][]byte{o.hdr, bytes.Clone(h)})
		}
		if q.n != len(model) {
			t.Fatalf("step %d: %d entries, model %d", step, q.n, len(model))
		}
		if step%97 == 0 {
			for i, m := range model {
				if o := q.at(i); !bytes.Equal(o.hdr, m.hdr) || !bytes.Equal(o.body, m.body) {
					t.Fatalf("step %d: entry %d is %x/%x, model %x/%x", step, i, o.hdr, o.body, m.hdr, m.body)
				}
			}
		}
	}
	// The headers' slices, dropped entries' too, still read what was
	// written.
	for i, h := range handed {
		if !bytes.Equal(h[0], h[1]) {
			t.Fatalf("entry %d: headers %x, written %x", i, h[0], h[1])
		}
	}
	if len(q.ring) < 64 {
		t.Fatalf("ring never grew: %d", len(q.ring))
	}
}
