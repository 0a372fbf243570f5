package xdr

import (
	"encoding/binary"
	"fmt"
)

// Reader decodes XDR values from a byte slice. See the package comment for
// its error and aliasing rules. The zero value is a Reader of no bytes.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b. The Reader does not copy b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Reset makes r read b from the start, clearing any error.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// Err returns the first decode error, or nil.
func (r *Reader) Err() error { return r.err }

// Remaining returns the number of bytes not yet consumed; 0 after an error.
func (r *Reader) Remaining() int {
	if r.err != nil {
		return 0
	}
	return len(r.b) - r.off
}

// Rest returns the bytes not yet consumed (aliasing the input) without
// consuming them; nil after an error.
func (r *Reader) Rest() []byte {
	if r.err != nil {
		return nil
	}
	return r.b[r.off:len(r.b):len(r.b)]
}

// Done returns Err if there was an error, an error wrapping ErrMalformed
// if bytes remain, and nil otherwise. It does not change r.
func (r *Reader) Done() error {
	if r.err != nil {
		return r.err
	}
	if n := len(r.b) - r.off; n > 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, n)
	}
	return nil
}

func (r *Reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// take consumes n bytes and returns them, or fails.
func (r *Reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("%s needs %d bytes, %d remain", what, n, len(r.b)-r.off)
		return nil
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

// Uint32 reads an unsigned int.
func (r *Reader) Uint32() uint32 {
	b := r.take(4, "uint32")
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// Int32 reads an int.
func (r *Reader) Int32() int32 { return int32(r.Uint32()) }

// Uint64 reads an unsigned hyper.
func (r *Reader) Uint64() uint64 {
	b := r.take(8, "uint64")
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// Int64 reads a hyper.
func (r *Reader) Int64() int64 { return int64(r.Uint64()) }

// Bool reads a bool. Values other than 0 and 1 are an error.
func (r *Reader) Bool() bool {
	if r.err != nil {
		return false
	}
	switch v := r.Uint32(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		if r.err == nil {
			r.off -= 4
			r.fail("bool value %d", v)
		}
		return false
	}
}

// Optional reads the discriminant of optional data (an XDR pointer): true
// if a value follows.
func (r *Reader) Optional() bool { return r.Bool() }

// FixedOpaque reads n bytes of fixed-length opaque data and their padding.
// A negative n is an error. The result aliases the input.
func (r *Reader) FixedOpaque(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.fail("negative fixed opaque length %d", n)
		return nil
	}
	rem := len(r.b) - r.off
	// Compare before adding the padding so that n+3 cannot overflow.
	if n > rem || pad(n) > rem-n {
		r.fail("fixed opaque of %d bytes, %d remain", n, rem)
		return nil
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n + pad(n)
	return b
}

// opaque reads a length and that many bytes plus padding.
func (r *Reader) opaque(max int, what string) []byte {
	l := r.Uint32()
	if r.err != nil {
		return nil
	}
	// uint64 so that neither the comparison nor the padding overflows on
	// 32-bit platforms.
	if max >= 0 && uint64(l) > uint64(max) {
		r.off -= 4
		r.fail("%s length %d exceeds limit %d", what, l, max)
		return nil
	}
	rem := len(r.b) - r.off
	if uint64(l)+uint64(pad(int(l&3))) > uint64(rem) {
		r.off -= 4
		r.fail("%s of %d bytes, %d remain", what, l, rem)
		return nil
	}
	n := int(l)
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n + pad(n)
	return b
}

// Opaque reads variable-length opaque data of at most max bytes (max < 0:
// no limit). A longer length, or one beyond the data, is an error. The
// result aliases the input; it is non-nil (possibly empty) on success.
func (r *Reader) Opaque(max int) []byte { return r.opaque(max, "opaque") }

// String reads a string of at most max bytes (max < 0: no limit), encoded
// like Opaque. The result is a copy.
func (r *Reader) String(max int) string { return string(r.opaque(max, "string")) }
