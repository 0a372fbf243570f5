package tla

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"unsafe"
)

// The binary encoding, for persistent resources and mailboxes. A value
// is a tag byte and a body:
//
//	0 FALSE, 1 TRUE
//	2 integer: zigzag varint
//	3 big integer (outside int64): sign byte (0 +, 1 -), uvarint length, big-endian magnitude
//	4 string, 5 model value: uvarint length, bytes
//	6 sequence: uvarint n, n values
//	7 function (domain not 1..n): uvarint n, n (key, value) pairs, keys in canonical order
//	8 set: uvarint n, n values in canonical order
//	9 interval lo..hi (lo <= hi): zigzag varint lo, hi
//
// Decode accepts only this canonical form (keys and elements strictly
// increasing, no key set 1..n under tag 7, no big integer that fits in
// int64), so whatever it accepts re-encodes to a value it decodes to an
// equal value. It never panics and allocates at most in proportion to
// its input: every count is checked against the bytes left, and nesting
// is bounded.
const (
	tagFalse byte = iota
	tagTrue
	tagInt
	tagBigInt
	tagString
	tagModel
	tagSeq
	tagFn
	tagSet
	tagInterval
)

// maxDepth bounds nesting in Decode, so hostile input cannot exhaust the
// stack.
const maxDepth = 512

// AppendBinary appends v's encoding to b (encoding.BinaryAppender).
func (v Value) AppendBinary(b []byte) ([]byte, error) {
	switch v.r {
	case repInvalid:
		return b, errors.New("tla: encoding the invalid (zero) Value")
	case repBool:
		return append(b, tagFalse+byte(v.n)), nil
	case repInt:
		return binary.AppendVarint(append(b, tagInt), v.n), nil
	case repBigInt:
		x := v.big()
		sign := byte(0)
		if x.Sign() < 0 {
			sign = 1
		}
		mag := x.Bytes()
		b = append(b, tagBigInt, sign)
		b = binary.AppendUvarint(b, uint64(len(mag)))
		return append(b, mag...), nil
	case repString, repModel:
		tag := tagString
		if v.r == repModel {
			tag = tagModel
		}
		b = binary.AppendUvarint(append(b, tag), uint64(v.n))
		return append(b, v.str()...), nil
	case repTuple:
		s := v.seq()
		b = binary.AppendUvarint(append(b, tagSeq), uint64(len(s)))
		for _, e := range s {
			b, _ = e.AppendBinary(b) // elements are valid values
		}
		return b, nil
	case repFn:
		f := v.fn()
		b = binary.AppendUvarint(append(b, tagFn), uint64(len(f.keys)))
		for i := range f.keys {
			b, _ = f.keys[i].AppendBinary(b)
			b, _ = f.val(i).AppendBinary(b)
		}
		return b, nil
	case repSet:
		es := v.set().elems
		b = binary.AppendUvarint(append(b, tagSet), uint64(len(es)))
		for _, e := range es {
			b, _ = e.AppendBinary(b)
		}
		return b, nil
	case repInterval:
		iv := v.ival()
		b = binary.AppendVarint(append(b, tagInterval), iv.lo)
		return binary.AppendVarint(b, iv.hi), nil
	}
	return b, fmt.Errorf("tla: encoding unknown representation %d", v.r)
}

// MarshalBinary is v's encoding.
func (v Value) MarshalBinary() ([]byte, error) { return v.AppendBinary(nil) }

// UnmarshalBinary sets *v to the value b encodes.
func (v *Value) UnmarshalBinary(b []byte) error {
	x, err := Decode(b)
	if err != nil {
		return err
	}
	*v = x
	return nil
}

// Decode returns the value b encodes; b must hold exactly one value.
func Decode(b []byte) (Value, error) {
	d := decoder{b: b}
	v, err := d.value(0)
	if err != nil {
		return Value{}, err
	}
	if d.off != len(d.b) {
		return Value{}, d.fail("%d bytes after the value", len(d.b)-d.off)
	}
	return v, nil
}

type decoder struct {
	b   []byte
	off int
}

func (d *decoder) fail(format string, args ...any) error {
	return fmt.Errorf("tla: decoding at byte %d: %s", d.off, fmt.Sprintf(format, args...))
}

func (d *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, d.fail("bad uvarint")
	}
	d.off += n
	return x, nil
}

func (d *decoder) varint() (int64, error) {
	x, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		return 0, d.fail("bad varint")
	}
	d.off += n
	return x, nil
}

// count reads a count of items each at least min bytes long, checked
// against the bytes left so a forged count cannot force a huge
// allocation.
func (d *decoder) count(min int) (int, error) {
	n, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.b)-d.off)/uint64(min) {
		return 0, d.fail("count %d exceeds the %d bytes left", n, len(d.b)-d.off)
	}
	return int(n), nil
}

func (d *decoder) bytes(n int) []byte {
	s := d.b[d.off : d.off+n]
	d.off += n
	return s
}

func (d *decoder) value(depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, d.fail("nested deeper than %d", maxDepth)
	}
	if d.off >= len(d.b) {
		return Value{}, d.fail("unexpected end of input")
	}
	tag := d.b[d.off]
	d.off++
	switch tag {
	case tagFalse, tagTrue:
		return Bool(tag == tagTrue), nil
	case tagInt:
		x, err := d.varint()
		return Int(x), err
	case tagBigInt:
		if d.off >= len(d.b) {
			return Value{}, d.fail("unexpected end of input")
		}
		sign := d.b[d.off]
		d.off++
		if sign > 1 {
			return Value{}, d.fail("bad sign byte %d", sign)
		}
		n, err := d.count(1)
		if err != nil {
			return Value{}, err
		}
		x := new(big.Int).SetBytes(d.bytes(n))
		if sign == 1 {
			x.Neg(x)
		}
		if x.IsInt64() {
			return Value{}, d.fail("big integer %s fits in int64", x)
		}
		return Value{r: repBigInt, p: unsafe.Pointer(x)}, nil
	case tagString, tagModel:
		n, err := d.count(1)
		if err != nil {
			return Value{}, err
		}
		s := string(d.bytes(n)) // a copy: b is the caller's
		if tag == tagModel {
			return ModelValue(s), nil
		}
		return String(s), nil
	case tagSeq:
		n, err := d.count(1)
		if err != nil {
			return Value{}, err
		}
		if n > maxSeqLen {
			return Value{}, d.fail("sequence of %d elements", n)
		}
		vals := make([]Value, n)
		for i := range vals {
			if vals[i], err = d.value(depth + 1); err != nil {
				return Value{}, err
			}
		}
		return tupleOwned(vals), nil
	case tagFn:
		n, err := d.count(2)
		if err != nil {
			return Value{}, err
		}
		if n == 0 {
			return Value{}, d.fail("empty function under the function tag (<< >> is a sequence)")
		}
		var keys, vals []Value
		if n <= chunkedAbove {
			// One allocation for both halves (a message record is
			// decoded per delivery); larger functions get their values
			// copied into chunks, which would leave half of it dead.
			kv := make([]Value, 2*n)
			keys, vals = kv[:n:n], kv[n:]
		} else {
			keys, vals = make([]Value, n), make([]Value, n)
		}
		for i := range keys {
			if keys[i], err = d.value(depth + 1); err != nil {
				return Value{}, err
			}
			if i > 0 && Compare(keys[i-1], keys[i]) >= 0 {
				return Value{}, d.fail("function keys not strictly increasing")
			}
			if vals[i], err = d.value(depth + 1); err != nil {
				return Value{}, err
			}
		}
		v := fnSorted(keys, vals)
		if v.r != repFn {
			return Value{}, d.fail("function with domain 1..%d under the function tag", n)
		}
		return v, nil
	case tagSet:
		n, err := d.count(1)
		if err != nil {
			return Value{}, err
		}
		es := make([]Value, n)
		for i := range es {
			if es[i], err = d.value(depth + 1); err != nil {
				return Value{}, err
			}
			if i > 0 && Compare(es[i-1], es[i]) >= 0 {
				return Value{}, d.fail("set elements not strictly increasing")
			}
		}
		return setSorted(es), nil
	case tagInterval:
		lo, err := d.varint()
		if err != nil {
			return Value{}, err
		}
		hi, err := d.varint()
		if err != nil {
			return Value{}, err
		}
		if lo > hi {
			return Value{}, d.fail("empty interval %d..%d", lo, hi)
		}
		return Range(lo, hi)
	}
	return Value{}, d.fail("unknown tag %d", tag)
}
