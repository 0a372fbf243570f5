package wor

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/reedsolomon"
)

// Splits: what each server of the ec engine stores for a register
// instead of the whole value. A value is cut into K data splits (the
// last one padded with zeros) and R parity splits are computed from them
// with Reed–Solomon coding; any K of the K+R splits rebuild the value.
// With K = 1 every split is the whole value (replication), through the
// same header and checks.
//
// A split is a header and the split's data:
//
//	n(1) k(1) index(2) vlen(4) vid(8) crc(4) data
//
// n and k are the plan's (a split of another plan is refused), index is
// the split's position (server index), vlen the value's length (to strip
// the padding), vid the value's identity (the first 8 bytes of its
// SHA-256: splits of one value have one vid whatever ballot they were
// accepted at, which is how Phase 1b groups them, as Pando's pseudo-code
// groups by value id) and crc the CRC-32C of the header before it and
// the data. A split whose checksum, length, index or plan does not match
// is refused by decodeSplit and counts as missing; a value rebuilt from
// splits is checked against its vid, so even splits of different values
// that passed their checksums never yield a wrong value.
const splitHdr = 1 + 1 + 2 + 4 + 8 + 4

// ErrSplit is returned for a split that is not a valid split of the plan
// (damaged, truncated, of another index or plan), and for a value that
// cannot be rebuilt from the valid splits given.
var ErrSplit = errors.New("wor: bad split")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// split is a decoded split: its header's fields and its data (a view
// into the bytes decoded).
type split struct {
	n, k  int
	index int
	vlen  int
	vid   uint64
	data  []byte
}

// valueID is a value's identity: the first 8 bytes of its SHA-256.
func valueID(v []byte) uint64 {
	h := sha256.Sum256(v)
	return binary.BigEndian.Uint64(h[:8])
}

// shardSize is the length of each split's data for a value of vlen
// bytes cut into k splits.
func shardSize(vlen, k int) int { return (vlen + k - 1) / k }

// splitCodec encodes and decodes values for one plan's K and N. It is
// safe for concurrent use (reedsolomon encoders are).
type splitCodec struct {
	n, k int
	rs   reedsolomon.Encoder // nil when k == 1 (replication) or r == 0
}

func newSplitCodec(n, k int) (*splitCodec, error) {
	if k < 1 || n < k || n > maxServers {
		return nil, fmt.Errorf("%w: %d of %d splits", ErrBadPlan, k, n)
	}
	c := &splitCodec{n: n, k: k}
	if k > 1 && n > k {
		enc, err := reedsolomon.New(k, n-k)
		if err != nil {
			return nil, fmt.Errorf("wor: reed-solomon coder for %d+%d splits: %w", k, n-k, err)
		}
		c.rs = enc
	}
	return c, nil
}

// encode cuts v into the plan's n splits, each with its header.
func (c *splitCodec) encode(v []byte) ([][]byte, error) {
	size := shardSize(len(v), c.k)
	vid := valueID(v)
	data := make([][]byte, c.n)
	switch {
	case c.k == 1:
		for i := range data {
			data[i] = v
		}
	default:
		buf := make([]byte, size*c.n)
		copy(buf, v) // the data splits, zero-padded, then room for parity
		for i := range data {
			data[i] = buf[i*size : (i+1)*size]
		}
		if c.rs != nil && size > 0 {
			if err := c.rs.Encode(data); err != nil {
				return nil, fmt.Errorf("wor: reed-solomon encode: %w", err)
			}
		}
	}
	out := make([][]byte, c.n)
	for i, d := range data {
		out[i] = encodeSplit(split{n: c.n, k: c.k, index: i, vlen: len(v), vid: vid, data: d})
	}
	return out, nil
}

func encodeSplit(s split) []byte {
	b := make([]byte, splitHdr, splitHdr+len(s.data))
	b[0], b[1] = byte(s.n), byte(s.k)
	binary.BigEndian.PutUint16(b[2:], uint16(s.index))
	binary.BigEndian.PutUint32(b[4:], uint32(s.vlen))
	binary.BigEndian.PutUint64(b[8:], s.vid)
	crc := crc32.Update(crc32.Checksum(b[:16], castagnoli), castagnoli, s.data)
	binary.BigEndian.PutUint32(b[16:], crc)
	return append(b, s.data...)
}

// decodeSplit checks b as split number index of this codec's plan and
// returns it (its data a view into b), or an error wrapping ErrSplit.
func (c *splitCodec) decodeSplit(b []byte, index int) (split, error) {
	if len(b) < splitHdr {
		return split{}, fmt.Errorf("%w: %d bytes", ErrSplit, len(b))
	}
	s := split{n: int(b[0]), k: int(b[1]), index: int(binary.BigEndian.Uint16(b[2:])),
		vlen: int(binary.BigEndian.Uint32(b[4:])), vid: binary.BigEndian.Uint64(b[8:]), data: b[splitHdr:]}
	switch {
	case s.n != c.n || s.k != c.k:
		return split{}, fmt.Errorf("%w: split of a %d-of-%d plan, want %d of %d", ErrSplit, s.k, s.n, c.k, c.n)
	case s.index != index:
		return split{}, fmt.Errorf("%w: split %d where split %d belongs", ErrSplit, s.index, index)
	case s.vlen > MaxValue || len(s.data) != shardSize(s.vlen, s.k):
		return split{}, fmt.Errorf("%w: %d data bytes for a %d-byte value", ErrSplit, len(s.data), s.vlen)
	}
	crc := crc32.Update(crc32.Checksum(b[:16], castagnoli), castagnoli, s.data)
	if crc != binary.BigEndian.Uint32(b[16:]) {
		return split{}, fmt.Errorf("%w: checksum mismatch in split %d", ErrSplit, index)
	}
	return s, nil
}

// decode rebuilds the value from splits, indexed by split number (nil:
// missing), all of which must be valid splits of one value (decodeSplit,
// same vid). It needs k of them; the result is checked against the vid.
func (c *splitCodec) decode(splits []*split) ([]byte, error) {
	if len(splits) != c.n {
		return nil, fmt.Errorf("%w: %d splits for a plan of %d", ErrSplit, len(splits), c.n)
	}
	var first *split
	have := 0
	for i, s := range splits {
		if s == nil {
			continue
		}
		if s.index != i || (first != nil && (s.vid != first.vid || s.vlen != first.vlen)) {
			return nil, fmt.Errorf("%w: splits of different values or places", ErrSplit)
		}
		if first == nil {
			first = s
		}
		have++
	}
	if have < c.k {
		return nil, fmt.Errorf("%w: %d valid splits, %d needed", ErrSplit, have, c.k)
	}
	var v []byte
	switch {
	case c.k == 1:
		v = first.data
	case first.vlen == 0:
		v = []byte{}
	default:
		shards := make([][]byte, c.n)
		complete := true
		for i, s := range splits {
			if s != nil {
				shards[i] = s.data
			} else if i < c.k {
				complete = false
			}
		}
		if !complete {
			// ReconstructData fills the missing data splits in place:
			// give it copies, not views into the replies.
			for i := range shards {
				if shards[i] != nil {
					shards[i] = append([]byte(nil), shards[i]...)
				}
			}
			if err := c.rs.ReconstructData(shards); err != nil {
				return nil, fmt.Errorf("%w: reed-solomon: %v", ErrSplit, err)
			}
		}
		v = make([]byte, 0, c.k*len(shards[0]))
		for _, d := range shards[:c.k] {
			v = append(v, d...)
		}
		v = v[:first.vlen]
	}
	if len(v) != first.vlen || valueID(v) != first.vid {
		return nil, fmt.Errorf("%w: rebuilt value does not match its id", ErrSplit)
	}
	return append([]byte(nil), v...), nil
}
