package tla

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"strata/internal/testseed"
)

func TestEncodeRoundTrip(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Range(1, 300)...) {
		r := rand.New(rand.NewPCG(seed, 6))
		v := genValue(r, 4)
		b, err := v.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var w Value
		if err := w.UnmarshalBinary(b); err != nil {
			t.Fatalf("decoding %v (%x): %v", v, b, err)
		}
		if !Equal(v, w) || v.String() != w.String() {
			t.Fatalf("round trip: %v -> %v", v, w)
		}
		// Truncations never decode (a value's encoding has no proper
		// prefix that is one), and never panic.
		for i := range b {
			if x, err := Decode(b[:i]); err == nil {
				t.Fatalf("prefix %x of %x decoded to %v", b[:i], b, x)
			}
		}
	}
	if _, err := (Value{}).MarshalBinary(); err == nil {
		t.Error("encoding the invalid Value did not fail")
	}
}

func TestDecodeRejects(t *testing.T) {
	rows := map[string][]byte{
		"empty":                 {},
		"unknown tag":           {99},
		"trailing byte":         {tagTrue, 0},
		"forged count":          {tagSet, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"unsorted set":          {tagSet, 2, tagInt, 4, tagInt, 2},
		"duplicate set element": {tagSet, 2, tagInt, 2, tagInt, 2},
		"function 1..n":         {tagFn, 1, tagInt, 2, tagTrue},
		"empty function":        {tagFn, 0},
		"small big int":         {tagBigInt, 0, 1, 5},
		"bad sign":              {tagBigInt, 2, 1, 5},
		"empty interval":        {tagInterval, 4, 2},
		"interval too large":    {tagInterval, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"deep nesting":          append(bytes.Repeat([]byte{tagSeq, 1}, maxDepth+2), tagTrue),
	}
	for name, b := range rows {
		if v, err := Decode(b); err == nil {
			t.Errorf("%s: %x decoded to %v", name, b, v)
		}
	}
}

// FuzzDecode: arbitrary bytes never panic; whatever decodes re-encodes
// to bytes that decode to an equal value with the same encoding.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 30 {
		b, _ := genValue(r, 3).MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{tagInterval, 1, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			return
		}
		e1, err := v.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %v does not encode: %v", v, err)
		}
		w, err := Decode(e1)
		if err != nil {
			t.Fatalf("re-encoding %x of %v does not decode: %v", e1, v, err)
		}
		if !Equal(v, w) || v.Hash() != w.Hash() {
			t.Fatalf("%v re-decoded as %v", v, w)
		}
		e2, _ := w.MarshalBinary()
		if !bytes.Equal(e1, e2) {
			t.Fatalf("encoding not stable: %x then %x", e1, e2)
		}
		_ = v.String()
	})
}
