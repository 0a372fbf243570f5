package smr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"strata/wor"
)

// Encodings of what WormPaxos keeps in registers. Every value starts with
// the magic byte 'W' and a kind byte; integers are unsigned varints; the
// decoders reject anything else (unknown kinds, short or trailing bytes,
// out-of-range fields) with ErrMalformed, never panic, and are fuzzed.
//
// Log entries (one per log register):
//
//	junk    'W' 'J'                                  written by a new leader's junk fill
//	noop    'W' 'N' leader epoch                     a leader's first entry and its heartbeats
//	batch   'W' 'B' proposer nonce count {len cmd}   commands, applied in order
//	part    'W' 'F' proposer nonce part parts len bytes  part `part` of `parts` (2..MaxParts) of one command
//	                                                 too large for an entry; the parts of a command are
//	                                                 written to consecutive registers, and the command is
//	                                                 applied with its last part (see assembly)
//	pointer 'W' 'P' k index seg off                  snapshot k, taken after applying the entry at (seg, off)
//
// Segment metadata (Alloc's metadata):
//
//	log segment      'W' 'L' leader epoch size addrlen addr
//	snapshot segment 'W' 'S' k index seg off size chunksize chunks crc32c(4 bytes, big endian)
//
// seg in a pointer or snapshot header is the log segment's index in the
// group (segment id minus Config.Log).

// ErrMalformed reports bytes that are not a valid WormPaxos encoding.
var ErrMalformed = errors.New("smr: malformed encoding")

const magic = 'W'

// Entry kinds.
const (
	kindJunk    = 'J'
	kindNoop    = 'N'
	kindBatch   = 'B'
	kindPointer = 'P'
	kindPart    = 'F'
)

// MaxParts bounds the entries one command is split into.
const MaxParts = 4096

// partOverhead bounds the bytes a part entry adds to its share of the
// command.
const partOverhead = 2 + 5*binary.MaxVarintLen64

// Segment metadata kinds.
const (
	metaLog  = 'L'
	metaSnap = 'S'
)

// junkEntry is the value a junk fill writes into every register it finds
// unwritten.
var junkEntry = []byte{magic, kindJunk}

// pos is a position in the log: a log segment's index in the group and a
// register offset in it.
type pos struct{ seg, off uint64 }

func (p pos) less(q pos) bool { return p.seg < q.seg || p.seg == q.seg && p.off < q.off }

func (p pos) String() string { return fmt.Sprintf("%d/%d", p.seg, p.off) }

// snapRef names a snapshot: its number k (it is stored in snapshot
// segment k), the command index it was taken at and the log position of
// the last entry it includes.
type snapRef struct {
	k, index uint64
	at       pos
}

// entry is a decoded log entry.
type entry struct {
	kind            byte
	leader, epoch   uint64   // noop
	proposer, nonce uint64   // batch
	cmds            [][]byte // batch
	snap            snapRef  // pointer
	part, parts     uint64   // part (proposer and nonce too)
	payload         []byte   // part: its bytes of the command
}

// batchOverhead bounds the bytes a batch entry adds besides its commands'
// length prefixes and bytes.
const batchOverhead = 2 + 3*binary.MaxVarintLen64

// cmdOverhead is the length prefix of one command in a batch.
func cmdOverhead(n int) int { return uvarintLen(uint64(n)) }

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func encodeNoop(leader, epoch uint64) []byte {
	b := []byte{magic, kindNoop}
	b = binary.AppendUvarint(b, leader)
	return binary.AppendUvarint(b, epoch)
}

func encodeBatch(proposer, nonce uint64, cmds [][]byte) []byte {
	size := batchOverhead
	for _, c := range cmds {
		size += cmdOverhead(len(c)) + len(c)
	}
	b := make([]byte, 0, size)
	b = append(b, magic, kindBatch)
	b = binary.AppendUvarint(b, proposer)
	b = binary.AppendUvarint(b, nonce)
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, c := range cmds {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

// encodeParts splits cmd into part entries of at most maxEntry bytes each.
func encodeParts(proposer, nonce uint64, cmd []byte, maxEntry int) [][]byte {
	per := maxEntry - partOverhead
	n := (len(cmd) + per - 1) / per
	out := make([][]byte, 0, n)
	for i := range n {
		out = append(out, encodePart(proposer, nonce, uint64(i), uint64(n), cmd[i*per:min((i+1)*per, len(cmd))]))
	}
	return out
}

func encodePart(proposer, nonce, part, parts uint64, payload []byte) []byte {
	b := make([]byte, 0, partOverhead+len(payload))
	b = append(b, magic, kindPart)
	for _, v := range []uint64{proposer, nonce, part, parts, uint64(len(payload))} {
		b = binary.AppendUvarint(b, v)
	}
	return append(b, payload...)
}

func encodePointer(s snapRef) []byte {
	b := []byte{magic, kindPointer}
	for _, v := range []uint64{s.k, s.index, s.at.seg, s.at.off} {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// reader decodes varints from a byte slice, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad %s", ErrMalformed, what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes reads n bytes (a copy).
func (r *reader) bytes(n uint64, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: %s of %d bytes, %d left", ErrMalformed, what, n, len(r.b))
		return nil
	}
	out := make([]byte, n)
	copy(out, r.b)
	r.b = r.b[n:]
	return out
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(r.b))
	}
	return r.err
}

func header(b []byte, what string) (byte, *reader, error) {
	if len(b) < 2 || b[0] != magic {
		return 0, nil, fmt.Errorf("%w: %s without the 'W' header", ErrMalformed, what)
	}
	return b[1], &reader{b: b[2:]}, nil
}

// decodeEntry decodes a log register's value.
func decodeEntry(b []byte) (entry, error) {
	kind, r, err := header(b, "log entry")
	if err != nil {
		return entry{}, err
	}
	e := entry{kind: kind}
	switch kind {
	case kindJunk:
	case kindNoop:
		e.leader = r.uvarint("leader")
		e.epoch = r.uvarint("epoch")
	case kindBatch:
		e.proposer = r.uvarint("proposer")
		e.nonce = r.uvarint("nonce")
		n := r.uvarint("count")
		// Every command takes at least one byte (its length), so a count
		// above what is left is malformed: checked before allocating.
		if r.err == nil && n > uint64(len(r.b)) {
			return entry{}, fmt.Errorf("%w: batch of %d commands in %d bytes", ErrMalformed, n, len(r.b))
		}
		if r.err == nil && n == 0 {
			return entry{}, fmt.Errorf("%w: empty batch", ErrMalformed)
		}
		e.cmds = make([][]byte, 0, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			l := r.uvarint("command length")
			e.cmds = append(e.cmds, r.bytes(l, "command"))
		}
	case kindPart:
		e.proposer = r.uvarint("proposer")
		e.nonce = r.uvarint("nonce")
		e.part = r.uvarint("part")
		e.parts = r.uvarint("parts")
		n := r.uvarint("part length")
		if r.err == nil && (e.parts < 2 || e.parts > MaxParts || e.part >= e.parts || n == 0) {
			return entry{}, fmt.Errorf("%w: part %d of %d with %d bytes", ErrMalformed, e.part, e.parts, n)
		}
		e.payload = r.bytes(n, "part")
	case kindPointer:
		e.snap.k = r.uvarint("snapshot number")
		e.snap.index = r.uvarint("snapshot index")
		e.snap.at.seg = r.uvarint("snapshot segment")
		e.snap.at.off = r.uvarint("snapshot offset")
		if r.err == nil && (e.snap.at.seg >= MaxLogSegments || e.snap.at.off >= wor.MaxOffset || e.snap.k >= GroupSpan-MaxLogSegments) {
			return entry{}, fmt.Errorf("%w: snapshot pointer out of range", ErrMalformed)
		}
	default:
		return entry{}, fmt.Errorf("%w: unknown entry kind %q", ErrMalformed, kind)
	}
	if err := r.end(); err != nil {
		return entry{}, err
	}
	return e, nil
}

// logMeta is a log segment's metadata: who leads in it, at which epoch,
// and how many registers it has.
type logMeta struct {
	leader, epoch uint64
	size          uint64
	addr          string
}

func encodeLogMeta(m logMeta) []byte {
	b := []byte{magic, metaLog}
	b = binary.AppendUvarint(b, m.leader)
	b = binary.AppendUvarint(b, m.epoch)
	b = binary.AppendUvarint(b, m.size)
	b = binary.AppendUvarint(b, uint64(len(m.addr)))
	return append(b, m.addr...)
}

func decodeLogMeta(b []byte) (logMeta, error) {
	kind, r, err := header(b, "log segment metadata")
	if err != nil {
		return logMeta{}, err
	}
	if kind != metaLog {
		return logMeta{}, fmt.Errorf("%w: segment metadata of kind %q, not a log segment", ErrMalformed, kind)
	}
	var m logMeta
	m.leader = r.uvarint("leader")
	m.epoch = r.uvarint("epoch")
	m.size = r.uvarint("size")
	n := r.uvarint("address length")
	if r.err == nil && n > maxAddr {
		return logMeta{}, fmt.Errorf("%w: address of %d bytes", ErrMalformed, n)
	}
	m.addr = string(r.bytes(n, "address"))
	if err := r.end(); err != nil {
		return logMeta{}, err
	}
	if m.size < 2 || m.size > wor.MaxOffset {
		return logMeta{}, fmt.Errorf("%w: log segment of %d registers", ErrMalformed, m.size)
	}
	return m, nil
}

// snapMeta is a snapshot segment's metadata: which snapshot it holds and
// how its bytes are cut into chunks (registers 0..chunks-1).
type snapMeta struct {
	ref       snapRef
	size      uint64 // bytes
	chunkSize uint64
	chunks    uint64
	crc       uint32 // CRC-32C of the snapshot bytes
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newSnapMeta(ref snapRef, data []byte, chunkSize int) snapMeta {
	n := chunksFor(uint64(len(data)), uint64(chunkSize))
	return snapMeta{ref: ref, size: uint64(len(data)), chunkSize: uint64(chunkSize), chunks: n, crc: crc32.Checksum(data, castagnoli)}
}

// chunksFor is how many chunks of chunkSize bytes hold size bytes.
func chunksFor(size, chunkSize uint64) uint64 {
	n := size / chunkSize
	if size%chunkSize != 0 {
		n++
	}
	return n
}

func encodeSnapMeta(m snapMeta) []byte {
	b := []byte{magic, metaSnap}
	for _, v := range []uint64{m.ref.k, m.ref.index, m.ref.at.seg, m.ref.at.off, m.size, m.chunkSize, m.chunks} {
		b = binary.AppendUvarint(b, v)
	}
	return binary.BigEndian.AppendUint32(b, m.crc)
}

func decodeSnapMeta(b []byte) (snapMeta, error) {
	kind, r, err := header(b, "snapshot metadata")
	if err != nil {
		return snapMeta{}, err
	}
	if kind != metaSnap {
		return snapMeta{}, fmt.Errorf("%w: segment metadata of kind %q, not a snapshot", ErrMalformed, kind)
	}
	var m snapMeta
	m.ref.k = r.uvarint("snapshot number")
	m.ref.index = r.uvarint("index")
	m.ref.at.seg = r.uvarint("segment")
	m.ref.at.off = r.uvarint("offset")
	m.size = r.uvarint("size")
	m.chunkSize = r.uvarint("chunk size")
	m.chunks = r.uvarint("chunks")
	crc := r.bytes(4, "checksum")
	if err := r.end(); err != nil {
		return snapMeta{}, err
	}
	m.crc = binary.BigEndian.Uint32(crc)
	switch {
	case m.chunkSize == 0 || m.chunkSize > wor.MaxValue:
		return snapMeta{}, fmt.Errorf("%w: chunk size %d", ErrMalformed, m.chunkSize)
	case m.chunks > wor.MaxOffset || m.chunks != chunksFor(m.size, m.chunkSize):
		return snapMeta{}, fmt.Errorf("%w: %d chunks of %d bytes for %d bytes", ErrMalformed, m.chunks, m.chunkSize, m.size)
	case m.ref.at.seg >= MaxLogSegments || m.ref.at.off >= wor.MaxOffset:
		return snapMeta{}, fmt.Errorf("%w: snapshot position out of range", ErrMalformed)
	}
	return m, nil
}

// chunk returns chunk i of data as cut by m.
func (m snapMeta) chunk(data []byte, i uint64) []byte {
	lo := i * m.chunkSize
	return data[lo:min(lo+m.chunkSize, uint64(len(data)))]
}

// check verifies the assembled snapshot bytes against the header.
func (m snapMeta) check(data []byte) error {
	if uint64(len(data)) != m.size {
		return fmt.Errorf("%w: snapshot %d has %d bytes, header says %d", ErrMalformed, m.ref.k, len(data), m.size)
	}
	if crc32.Checksum(data, castagnoli) != m.crc {
		return fmt.Errorf("%w: snapshot %d fails its checksum", ErrMalformed, m.ref.k)
	}
	return nil
}
