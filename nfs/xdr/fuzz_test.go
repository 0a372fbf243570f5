package xdr

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReader reads a sequence of types chosen by ops from data. It checks
// that nothing panics, that errors are sticky and wrap ErrMalformed, that
// the Reader never consumes more than it was given, and that whatever
// decoded successfully re-encodes to the bytes it came from (modulo
// padding, which the Reader does not check).
func FuzzReader(f *testing.F) {
	var w Writer
	w.Uint32(7)
	w.Opaque([]byte("abc"))
	w.Bool(true)
	w.Uint64(1 << 40)
	w.String("hello")
	f.Add([]byte{0, 1, 2, 3, 4, 5}, w.Bytes())
	f.Add([]byte{5, 5, 5}, []byte{0xff, 0xff, 0xff, 0xff, 1, 2})
	f.Add([]byte{6, 7, 8}, []byte{0, 0, 0, 2, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops, data []byte) {
		r := NewReader(data)
		var re Writer // re-encoding of what decoded successfully
		for i, op := range ops {
			before := r.Remaining()
			ok := r.Err() == nil
			arg := int(op>>4) * 3 // small limits and fixed sizes
			if op&0x80 != 0 {
				arg = -1
			}
			switch op % 9 {
			case 0:
				v := r.Uint32()
				if r.Err() == nil {
					re.Uint32(v)
				}
			case 1:
				v := r.Int32()
				if r.Err() == nil {
					re.Int32(v)
				}
			case 2:
				v := r.Uint64()
				if r.Err() == nil {
					re.Uint64(v)
				}
			case 3:
				v := r.Int64()
				if r.Err() == nil {
					re.Int64(v)
				}
			case 4:
				v := r.Bool()
				if r.Err() == nil {
					re.Bool(v)
				}
			case 5:
				v := r.Opaque(arg)
				if r.Err() == nil {
					if arg >= 0 && len(v) > arg {
						t.Fatalf("opaque of %d bytes over limit %d", len(v), arg)
					}
					re.Opaque(v)
				}
			case 6:
				n := arg
				if n < 0 {
					n = int(op & 0x7f)
				}
				v := r.FixedOpaque(n)
				if r.Err() == nil {
					if len(v) != n {
						t.Fatalf("fixed opaque %d bytes, want %d", len(v), n)
					}
					re.FixedOpaque(v)
				}
			case 7:
				v := r.String(arg)
				if r.Err() == nil {
					re.String(v)
				}
			case 8:
				v := r.Optional()
				if r.Err() == nil {
					re.Optional(v)
				}
			}
			if err := r.Err(); err != nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("op %d: error %v does not wrap ErrMalformed", i, err)
				}
				if r.Remaining() != 0 {
					t.Fatal("Remaining non-zero after error")
				}
				if !ok && r.Err() == nil {
					t.Fatal("error cleared")
				}
			} else if r.Remaining() > before {
				t.Fatal("Remaining grew")
			}
		}
		if r.Err() != nil {
			if r.Done() != r.Err() {
				t.Fatal("Done differs from Err")
			}
			return
		}
		consumed := len(data) - r.Remaining()
		got := re.Bytes()
		if len(got) != consumed {
			t.Fatalf("re-encoded %d bytes, consumed %d", len(got), consumed)
		}
		if bytes.Equal(got, data[:consumed]) {
			return
		}
		// They may differ only in padding, which the Reader does not check
		// and the Writer writes as zeros.
		for i := range got {
			if got[i] != data[i] && got[i] != 0 {
				t.Fatalf("byte %d: re-encoded %#x, input %#x", i, got[i], data[i])
			}
		}
	})
}
