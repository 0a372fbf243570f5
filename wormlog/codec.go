package wormlog

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed marks bytes that do not decode: a log entry, a segment's
// metadata, a request or a response.
var ErrMalformed = errors.New("wormlog: malformed")

// Log entries: the value of one write-once register.
const (
	entryData byte = 'D' // 'D' payload: an appended entry
	entryJunk byte = 'J' // a hole a reader or a new sequencer filled
)

var junkValue = []byte{entryJunk}

func encodeData(payload []byte) []byte {
	return append([]byte{entryData}, payload...)
}

// decodeEntry returns the payload of a register's value; junk is true for
// a filled hole.
func decodeEntry(v []byte) (payload []byte, junk bool, err error) {
	switch {
	case len(v) == 1 && v[0] == entryJunk:
		return nil, true, nil
	case len(v) >= 1 && v[0] == entryData:
		return v[1:], false, nil
	}
	return nil, false, fmt.Errorf("%w: log entry of %d bytes", ErrMalformed, len(v))
}

// segMeta is a log segment's metadata, written by the sequencer that
// allocated it: who hands out its positions, from which epoch.
type segMeta struct {
	sequencer uint64 // server id
	epoch     uint64 // one more than the newest before it: sequencers' terms
	size      uint64 // registers; the same for every segment of a log
	addr      string // where the sequencer serves tokens
}

const metaMagic = "WLS1"

func encodeSegMeta(m segMeta) []byte {
	b := []byte(metaMagic)
	b = binary.AppendUvarint(b, m.sequencer)
	b = binary.AppendUvarint(b, m.epoch)
	b = binary.AppendUvarint(b, m.size)
	return appendString(b, m.addr)
}

func decodeSegMeta(b []byte) (segMeta, error) {
	var m segMeta
	if len(b) < len(metaMagic) || string(b[:len(metaMagic)]) != metaMagic {
		return m, fmt.Errorf("%w: segment metadata is not a log's", ErrMalformed)
	}
	d := decoder{b: b[len(metaMagic):]}
	m.sequencer, m.epoch, m.size = d.uvarint(), d.uvarint(), d.uvarint()
	m.addr = d.string(maxAddr)
	if err := d.end(); err != nil {
		return segMeta{}, fmt.Errorf("segment metadata: %w", err)
	}
	if m.size == 0 {
		return segMeta{}, fmt.Errorf("%w: segment metadata: size 0", ErrMalformed)
	}
	return m, nil
}

// The wire protocol between clients and log servers (over the stack's
// RPC): one request, one response.

type op byte

const (
	opToken op = 1 // reserve positions to append at
	opTail  op = 2 // the next position the sequencer will hand out
)

func (o op) String() string {
	switch o {
	case opToken:
		return "token"
	case opTail:
		return "tail"
	}
	return fmt.Sprintf("op(%d)", byte(o))
}

// Status of a response.
type status byte

const (
	stOK          status = 0
	stNotSeq      status = 1 // this server is not the sequencer; leader names the one it knows (maybe none)
	stUnavailable status = 2 // the sequencer is taking over or out of captured positions: retry shortly
	stBadRequest  status = 3
)

// MaxTokens is the most positions one token request reserves.
const MaxTokens = 64

const (
	reqMagic  = 'w'
	respMagic = 'W'
	maxAddr   = 256
	maxErrMsg = 1024
)

type request struct {
	op op
	// token: how many consecutive positions (1..MaxTokens), and the epoch
	// of a token the client could not use (0: none), which makes the
	// sequencer check that it still leads before it answers.
	count, stale uint64
}

func encodeRequest(r request) []byte {
	b := []byte{reqMagic, byte(r.op)}
	if r.op == opToken {
		b = binary.AppendUvarint(b, r.count)
		b = binary.AppendUvarint(b, r.stale)
	}
	return b
}

func decodeRequest(b []byte) (request, error) {
	if len(b) < 2 || b[0] != reqMagic {
		return request{}, fmt.Errorf("%w: not a log request", ErrMalformed)
	}
	r := request{op: op(b[1])}
	d := decoder{b: b[2:]}
	switch r.op {
	case opToken:
		r.count, r.stale = d.uvarint(), d.uvarint()
		if d.err == nil && (r.count == 0 || r.count > MaxTokens) {
			return request{}, fmt.Errorf("%w: token request for %d positions (1..%d)", ErrMalformed, r.count, MaxTokens)
		}
	case opTail:
	default:
		return request{}, fmt.Errorf("%w: unknown operation %d", ErrMalformed, b[1])
	}
	if err := d.end(); err != nil {
		return request{}, fmt.Errorf("%s request: %w", r.op, err)
	}
	return r, nil
}

type response struct {
	status status
	// ok token: positions [pos, pos+count) under capture cid, from the
	// sequencer of epoch; ok tail: pos (count 0).
	pos, count, cid, epoch uint64
	leader                 string // stNotSeq: the sequencer's address if known
	msg                    string // stBadRequest, stUnavailable: why
}

func encodeResponse(r response) []byte {
	b := []byte{respMagic, byte(r.status)}
	switch r.status {
	case stOK:
		b = binary.AppendUvarint(b, r.pos)
		b = binary.AppendUvarint(b, r.count)
		b = binary.AppendUvarint(b, r.cid)
		b = binary.AppendUvarint(b, r.epoch)
	case stNotSeq:
		b = appendString(b, r.leader)
	default:
		b = appendString(b, r.msg)
	}
	return b
}

func decodeResponse(b []byte) (response, error) {
	if len(b) < 2 || b[0] != respMagic {
		return response{}, fmt.Errorf("%w: not a log response", ErrMalformed)
	}
	r := response{status: status(b[1])}
	d := decoder{b: b[2:]}
	switch r.status {
	case stOK:
		r.pos, r.count, r.cid, r.epoch = d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
		if d.err == nil && r.count > MaxTokens {
			return response{}, fmt.Errorf("%w: a token of %d positions", ErrMalformed, r.count)
		}
	case stNotSeq:
		r.leader = d.string(maxAddr)
	case stUnavailable, stBadRequest:
		r.msg = d.string(maxErrMsg)
	default:
		return response{}, fmt.Errorf("%w: unknown status %d", ErrMalformed, b[1])
	}
	if err := d.end(); err != nil {
		return response{}, fmt.Errorf("response: %w", err)
	}
	return r, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads fields until the first error, which it keeps.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: truncated or overlong varint", ErrMalformed)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(max int) string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(max) || n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: a string of %d bytes (at most %d, %d left)", ErrMalformed, n, max, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return d.err
}
