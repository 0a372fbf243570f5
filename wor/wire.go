package wor

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Message kinds.
const (
	opPrepare = 1 // phase 1a: promise not to accept ballots below Ballot
	opAccept  = 2 // phase 2a: accept Value at Ballot
	opRead    = 3 // report the acceptor state without changing it
	opTrim    = 4 // forget segment Addr (a segment id) and refuse its registers from now on

	stOK   = 0
	stNack = 1 // a higher ballot was promised: Promised says which
	stErr  = 2 // a malformed request
	stFull = 3 // the server could not store the new state (full or too large)
	stTrim = 4 // the register's segment was trimmed

	// MaxValue is the largest value a register holds.
	MaxValue = 1 << 20
	reqHdr   = 1 + 8 + 8 + 4
	respHdr  = 1 + 8 + 8 + 1 + 4
)

// ErrMalformed is returned by the decoders for bytes that are not a
// message of this protocol.
var ErrMalformed = errors.New("wor: malformed message")

// request is a client-to-wormserver message.
type request struct {
	Op     byte
	Addr   uint64
	Ballot uint64
	Value  []byte
}

// response is a wormserver's reply: its acceptor state for Addr after
// handling the request.
type response struct {
	Status    byte
	Promised  uint64
	AccBallot uint64
	Has       bool // a value was accepted
	Value     []byte
}

func (r request) encode() []byte {
	b := make([]byte, reqHdr+len(r.Value))
	b[0] = r.Op
	binary.BigEndian.PutUint64(b[1:], r.Addr)
	binary.BigEndian.PutUint64(b[9:], r.Ballot)
	binary.BigEndian.PutUint32(b[17:], uint32(len(r.Value)))
	copy(b[reqHdr:], r.Value)
	return b
}

func decodeRequest(b []byte) (request, error) {
	var r request
	if len(b) < reqHdr {
		return r, fmt.Errorf("%w: request of %d bytes", ErrMalformed, len(b))
	}
	r.Op = b[0]
	if r.Op < opPrepare || r.Op > opTrim {
		return r, fmt.Errorf("%w: unknown operation %d", ErrMalformed, r.Op)
	}
	r.Addr = binary.BigEndian.Uint64(b[1:])
	r.Ballot = binary.BigEndian.Uint64(b[9:])
	n := binary.BigEndian.Uint32(b[17:])
	if n > MaxValue || int(n) != len(b)-reqHdr {
		return r, fmt.Errorf("%w: value length %d in a %d-byte request", ErrMalformed, n, len(b))
	}
	if r.Op == opAccept && r.Ballot == 0 {
		return r, fmt.Errorf("%w: accept with ballot 0", ErrMalformed)
	}
	r.Value = b[reqHdr:]
	return r, nil
}

func (r response) encode() []byte {
	b := make([]byte, respHdr+len(r.Value))
	b[0] = r.Status
	binary.BigEndian.PutUint64(b[1:], r.Promised)
	binary.BigEndian.PutUint64(b[9:], r.AccBallot)
	if r.Has {
		b[17] = 1
	}
	binary.BigEndian.PutUint32(b[18:], uint32(len(r.Value)))
	copy(b[respHdr:], r.Value)
	return b
}

func decodeResponse(b []byte) (response, error) {
	var r response
	if len(b) < respHdr {
		return r, fmt.Errorf("%w: response of %d bytes", ErrMalformed, len(b))
	}
	r.Status = b[0]
	if r.Status > stTrim || b[17] > 1 {
		return r, fmt.Errorf("%w: bad status or flag", ErrMalformed)
	}
	r.Promised = binary.BigEndian.Uint64(b[1:])
	r.AccBallot = binary.BigEndian.Uint64(b[9:])
	r.Has = b[17] == 1
	n := binary.BigEndian.Uint32(b[18:])
	if n > MaxValue || int(n) != len(b)-respHdr || (!r.Has && n != 0) {
		return r, fmt.Errorf("%w: value length %d in a %d-byte response", ErrMalformed, n, len(b))
	}
	r.Value = b[respHdr:]
	return r, nil
}
