package xdr

import (
	"encoding/binary"
	"slices"
)

// Writer appends XDR-encoded values to a byte slice. The zero value is an
// empty Writer ready to use.
type Writer struct {
	buf []byte
}

// NewWriter returns a Writer that appends to buf[:0], reusing its storage.
func NewWriter(buf []byte) *Writer {
	return &Writer{buf: buf[:0]}
}

// Bytes returns the encoded data. It aliases the Writer's storage: it is
// valid until the next write or Reset, and changing its bytes changes the
// Writer's contents.
func (w *Writer) Bytes() []byte { return w.buf }

// Len returns the number of bytes written so far.
func (w *Writer) Len() int { return len(w.buf) }

// Reset empties the Writer, keeping its storage.
func (w *Writer) Reset() { w.buf = w.buf[:0] }

// Grow makes room for at least n more bytes without another allocation.
func (w *Writer) Grow(n int) { w.buf = slices.Grow(w.buf, n) }

// Truncate discards everything after the first n bytes. It panics if n is
// negative or greater than Len.
func (w *Writer) Truncate(n int) { w.buf = w.buf[:n] }

// PutUint32At overwrites the four bytes at offset off, which must already
// have been written (for a length or count known only later).
func (w *Writer) PutUint32At(off int, v uint32) {
	binary.BigEndian.PutUint32(w.buf[off:off+4], v)
}

// Write appends p verbatim, without length or padding, so that Writer is
// an io.Writer (for data that is already XDR-encoded). It never fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Uint32 appends an unsigned int.
func (w *Writer) Uint32(v uint32) { w.buf = binary.BigEndian.AppendUint32(w.buf, v) }

// Int32 appends an int.
func (w *Writer) Int32(v int32) { w.Uint32(uint32(v)) }

// Uint64 appends an unsigned hyper.
func (w *Writer) Uint64(v uint64) { w.buf = binary.BigEndian.AppendUint64(w.buf, v) }

// Int64 appends a hyper.
func (w *Writer) Int64(v int64) { w.Uint64(uint64(v)) }

// Bool appends a bool (1 or 0).
func (w *Writer) Bool(v bool) {
	if v {
		w.Uint32(1)
	} else {
		w.Uint32(0)
	}
}

// Optional appends the discriminant of optional data; the caller then
// writes the value if present is true.
func (w *Writer) Optional(present bool) { w.Bool(present) }

var zeros [4]byte

// FixedOpaque appends fixed-length opaque data: the bytes and zero padding
// to a multiple of four, without a length.
func (w *Writer) FixedOpaque(b []byte) {
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, zeros[:pad(len(b))]...)
}

// Opaque appends variable-length opaque data: a four-byte length, the
// bytes and zero padding to a multiple of four.
func (w *Writer) Opaque(b []byte) {
	w.Uint32(uint32(len(b)))
	w.FixedOpaque(b)
}

// String appends a string, encoded like Opaque.
func (w *Writer) String(s string) {
	w.Uint32(uint32(len(s)))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, zeros[:pad(len(s))]...)
}

// OpaqueFunc appends variable-length opaque data produced in place, with
// no intermediate copy: fill gets a buffer of length max inside the
// Writer, writes its data at the start and returns how many bytes it used.
// OpaqueFunc then writes the length and the padding. If fill returns an
// error, the Writer is left as it was before the call and the error is
// returned. OpaqueFunc panics if fill reports a count outside [0, max].
//
// The buffer's initial contents are unspecified.
func (w *Writer) OpaqueFunc(max int, fill func(p []byte) (int, error)) error {
	start := len(w.buf)
	w.Uint32(0)
	w.buf = slices.Grow(w.buf, max+3)
	p := w.buf[start+4 : start+4+max]
	n, err := fill(p)
	if err != nil {
		w.buf = w.buf[:start]
		return err
	}
	if n < 0 || n > max {
		w.buf = w.buf[:start]
		panic("xdr: OpaqueFunc: fill returned a count outside [0, max]")
	}
	binary.BigEndian.PutUint32(w.buf[start:], uint32(n))
	w.buf = w.buf[:start+4+n]
	w.buf = append(w.buf, zeros[:pad(n)]...)
	return nil
}
