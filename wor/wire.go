package wor

import (
	"encoding/binary"
	"errors"
	"fmt"

	"strata/stack"
)

// Message kinds.
const (
	opPrepare = 1 // phase 1a: promise not to accept ballots below Ballot
	opAccept  = 2 // phase 2a: accept Value at Ballot
	opRead    = 3 // report the acceptor state without changing it
	opTrim    = 4 // forget segment Addr (a segment id) and refuse its registers from now on
	// Reconfiguration (Vertical Paxos style): seal the partition at Epoch,
	// page through its acceptor state, install merged state, activate.
	opSeal     = 5 // refuse requests of epochs below Epoch for partition Part
	opDump     = 6 // the partition's registers after Addr (a cursor), one page
	opInstall  = 7 // merge the records in Value into the partition's state at Epoch
	opActivate = 8 // serve partition Part at Epoch from now on
	// Segment batches (WormSpace's seg_capture / seg_write) and listening.
	opSegPrepare = 9  // prepare Ballot on Count registers from Addr on (Value: count, 4 bytes)
	opSegAccept  = 10 // accept Value's values at Ballot on consecutive registers from Addr
	opListen     = 11 // notify the sender of accepts in segment Addr for the next Ballot milliseconds
	opCommit     = 12 // the ec engine's Phase 3: the value accepted at Ballot is chosen
	// Pando's partial delegation (ecdelegate.go): a prepare or accept whose
	// reply also goes, as a forwarded message, to the address at the
	// head of Value (the delegate, or the front end).
	opPrepareFor = 13 // opPrepare; Value: forward address
	opAcceptFor  = 14 // opAccept; Value: forward address, then the value
	// Keyed logs (keylog.go): a segment whose offsets are one key's
	// versions, Pando's per-key log.
	opLatest    = 15 // the highest register of segment Addr (a segment id) with an accepted value, and the segment's floor
	opTrimBelow = 16 // forget the data registers of Addr's segment below Addr's offset, and refuse them from now on
	opMax       = opTrimBelow

	stOK       = 0
	stNack     = 1 // a higher ballot was promised: Promised says which
	stErr      = 2 // a malformed request
	stFull     = 3 // the server could not store the new state (full or too large)
	stTrim     = 4 // the register's segment was trimmed
	stSealed   = 5 // the request's epoch is sealed here: Promised is the server's epoch
	stNotReady = 6 // the server does not serve the request's epoch yet
	stFloor    = 7 // the register is below its segment's floor (opTrimBelow): an old version, collected
	stMax      = stFloor

	// MaxValue is the largest value a register holds.
	MaxValue = 1 << 20
	reqHdr   = 1 + 4 + 4 + 8 + 8 + 4
	respHdr  = 1 + 8 + 8 + 1 + 4
)

// ErrMalformed is returned by the decoders for bytes that are not a
// message of this protocol.
var ErrMalformed = errors.New("wor: malformed message")

// request is a client-to-wormserver message. Part and Epoch name the
// partition and the configuration the client sends under; a server
// refuses epochs it has sealed (stSealed) or not yet installed
// (stNotReady).
type request struct {
	Op     byte
	Part   uint32
	Epoch  uint32
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
	Chosen    bool // the value accepted at AccBallot is known chosen (opCommit); only with Has
	Value     []byte
}

// Flag bits of a response's, a record's and a segment entry's flag byte.
const (
	flagHas    = 1
	flagChosen = 2
)

func flags(has, chosen bool) byte {
	f := byte(0)
	if has {
		f |= flagHas
	}
	if chosen && has {
		f |= flagChosen
	}
	return f
}

// badFlags: a flag byte with unknown bits, or chosen without a value.
func badFlags(f byte) bool { return f > flagHas|flagChosen || f == flagChosen }

func (r request) encode() []byte {
	b := make([]byte, reqHdr+len(r.Value))
	b[0] = r.Op
	binary.BigEndian.PutUint32(b[1:], r.Part)
	binary.BigEndian.PutUint32(b[5:], r.Epoch)
	binary.BigEndian.PutUint64(b[9:], r.Addr)
	binary.BigEndian.PutUint64(b[17:], r.Ballot)
	binary.BigEndian.PutUint32(b[25:], uint32(len(r.Value)))
	copy(b[reqHdr:], r.Value)
	return b
}

func decodeRequest(b []byte) (request, error) {
	var r request
	if len(b) < reqHdr {
		return r, fmt.Errorf("%w: request of %d bytes", ErrMalformed, len(b))
	}
	r.Op = b[0]
	if r.Op < opPrepare || r.Op > opMax {
		return r, fmt.Errorf("%w: unknown operation %d", ErrMalformed, r.Op)
	}
	r.Part = binary.BigEndian.Uint32(b[1:])
	r.Epoch = binary.BigEndian.Uint32(b[5:])
	r.Addr = binary.BigEndian.Uint64(b[9:])
	r.Ballot = binary.BigEndian.Uint64(b[17:])
	n := binary.BigEndian.Uint32(b[25:])
	if n > MaxValue || int(n) != len(b)-reqHdr {
		return r, fmt.Errorf("%w: value length %d in a %d-byte request", ErrMalformed, n, len(b))
	}
	if (r.Op == opAccept || r.Op == opCommit || r.Op == opAcceptFor) && r.Ballot == 0 {
		return r, fmt.Errorf("%w: %s with ballot 0", ErrMalformed, OpName(r.Op))
	}
	r.Value = b[reqHdr:]
	if r.Op == opPrepareFor || r.Op == opAcceptFor {
		if _, _, err := splitForward(r.Value); err != nil {
			return r, err
		}
	}
	return r, nil
}

// maxForwardAddr bounds the forward address of an opPrepareFor or
// opAcceptFor (a transport address: "udp:host:port" and the like).
const maxForwardAddr = 255

// withForward is the Value of an opPrepareFor or opAcceptFor: the
// forward address's length (1 byte), the address, then v.
func withForward(to stack.Addr, v []byte) []byte {
	b := make([]byte, 0, 1+len(to)+len(v))
	b = append(b, byte(len(to)))
	b = append(b, to...)
	return append(b, v...)
}

// splitForward undoes withForward.
func splitForward(b []byte) (stack.Addr, []byte, error) {
	if len(b) < 1 || b[0] == 0 || int(b[0]) > len(b)-1 {
		return "", nil, fmt.Errorf("%w: forward address missing or truncated", ErrMalformed)
	}
	n := int(b[0])
	return stack.Addr(b[1 : 1+n]), b[1+n:], nil
}

// forwarded is a wormserver's copy of its reply to an opPrepareFor or
// opAcceptFor, sent to the request's forward address: 'F', addr(8), the
// request's ballot(8), the response. Addr and Ballot name the proposal
// the reply belongs to (a nack's Promised is another ballot).
type forwarded struct {
	Addr, Ballot uint64
	Resp         response
}

const forwardMagic = 'F'

func (f forwarded) encode() []byte {
	r := f.Resp.encode()
	b := make([]byte, 0, 17+len(r))
	b = append(b, forwardMagic)
	b = binary.BigEndian.AppendUint64(b, f.Addr)
	b = binary.BigEndian.AppendUint64(b, f.Ballot)
	return append(b, r...)
}

func decodeForwarded(b []byte) (forwarded, error) {
	if len(b) < 17 || b[0] != forwardMagic {
		return forwarded{}, fmt.Errorf("%w: forwarded reply of %d bytes", ErrMalformed, len(b))
	}
	r, err := decodeResponse(b[17:])
	if err != nil {
		return forwarded{}, err
	}
	return forwarded{Addr: binary.BigEndian.Uint64(b[1:]), Ballot: binary.BigEndian.Uint64(b[9:]), Resp: r}, nil
}

func (r response) encode() []byte {
	b := make([]byte, respHdr+len(r.Value))
	b[0] = r.Status
	binary.BigEndian.PutUint64(b[1:], r.Promised)
	binary.BigEndian.PutUint64(b[9:], r.AccBallot)
	b[17] = flags(r.Has, r.Chosen)
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
	if r.Status > stMax || badFlags(b[17]) {
		return r, fmt.Errorf("%w: bad status or flag", ErrMalformed)
	}
	r.Promised = binary.BigEndian.Uint64(b[1:])
	r.AccBallot = binary.BigEndian.Uint64(b[9:])
	r.Has, r.Chosen = b[17]&flagHas != 0, b[17]&flagChosen != 0
	n := binary.BigEndian.Uint32(b[18:])
	if n > MaxValue || int(n) != len(b)-respHdr || (!r.Has && n != 0) {
		return r, fmt.Errorf("%w: value length %d in a %d-byte response", ErrMalformed, n, len(b))
	}
	r.Value = b[respHdr:]
	return r, nil
}

// record is one register's acceptor state in a dump or install message:
// addr(8) part(4) promised(8) accBallot(8) flags(1) len(4) value, the
// flags those of a response (the chosen bit: chosen = accBallot).
type record struct {
	addr uint64
	a    acceptor
}

const recHdr = 8 + 4 + 8 + 8 + 1 + 4

func encodeRecords(rs []record) []byte {
	n := 0
	for _, r := range rs {
		n += recHdr + len(r.a.value)
	}
	b := make([]byte, 0, n)
	for _, r := range rs {
		b = binary.BigEndian.AppendUint64(b, r.addr)
		b = binary.BigEndian.AppendUint32(b, r.a.part)
		b = binary.BigEndian.AppendUint64(b, r.a.promised)
		b = binary.BigEndian.AppendUint64(b, r.a.accBallot)
		b = append(b, flags(r.a.has, r.a.chosen != 0))
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.a.value)))
		b = append(b, r.a.value...)
	}
	return b
}

func decodeRecords(b []byte) ([]record, error) {
	var rs []record
	for len(b) > 0 {
		if len(b) < recHdr {
			return nil, fmt.Errorf("%w: record of %d bytes", ErrMalformed, len(b))
		}
		var r record
		r.addr = binary.BigEndian.Uint64(b)
		r.a.part = binary.BigEndian.Uint32(b[8:])
		r.a.promised = binary.BigEndian.Uint64(b[12:])
		r.a.accBallot = binary.BigEndian.Uint64(b[20:])
		if badFlags(b[28]) {
			return nil, fmt.Errorf("%w: record flag %d", ErrMalformed, b[28])
		}
		r.a.has = b[28]&flagHas != 0
		if b[28]&flagChosen != 0 {
			if r.a.accBallot == 0 {
				return nil, fmt.Errorf("%w: record chosen at ballot 0", ErrMalformed)
			}
			r.a.chosen = r.a.accBallot
		}
		n := binary.BigEndian.Uint32(b[29:])
		if n > MaxValue || uint64(n) > uint64(len(b)-recHdr) || (!r.a.has && n != 0) {
			return nil, fmt.Errorf("%w: record value of %d bytes", ErrMalformed, n)
		}
		r.a.value = append([]byte(nil), b[recHdr:recHdr+int(n)]...)
		rs = append(rs, r)
		b = b[recHdr+int(n):]
	}
	return rs, nil
}

// MaxSegBatch bounds the registers of one SegCapture or SegWrite message.
const MaxSegBatch = 1024

// segEntry is one register's answer in a segment batch reply: nacked
// (Promised says by what), or a prepare's report of an accepted value.
type segEntry struct {
	off      uint32 // offset from the batch's first register
	nack     bool
	promised uint64
	acc      uint64
	has      bool
	value    []byte
}

const segEntryHdr = 4 + 1 + 8 + 8 + 1 + 4

func encodeSegEntries(es []segEntry) []byte {
	var b []byte
	for _, e := range es {
		b = binary.BigEndian.AppendUint32(b, e.off)
		b = append(b, boolByte(e.nack))
		b = binary.BigEndian.AppendUint64(b, e.promised)
		b = binary.BigEndian.AppendUint64(b, e.acc)
		b = append(b, boolByte(e.has))
		b = binary.BigEndian.AppendUint32(b, uint32(len(e.value)))
		b = append(b, e.value...)
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func decodeSegEntries(b []byte) ([]segEntry, error) {
	var es []segEntry
	for len(b) > 0 {
		if len(b) < segEntryHdr || b[4] > 1 || b[21] > 1 {
			return nil, fmt.Errorf("%w: segment batch entry", ErrMalformed)
		}
		e := segEntry{off: binary.BigEndian.Uint32(b), nack: b[4] == 1, promised: binary.BigEndian.Uint64(b[5:]), acc: binary.BigEndian.Uint64(b[13:]), has: b[21] == 1}
		n := binary.BigEndian.Uint32(b[22:])
		if e.off >= MaxSegBatch || n > MaxValue || uint64(n) > uint64(len(b)-segEntryHdr) || (!e.has && n != 0) {
			return nil, fmt.Errorf("%w: segment batch entry", ErrMalformed)
		}
		e.value = append([]byte(nil), b[segEntryHdr:segEntryHdr+int(n)]...)
		es = append(es, e)
		b = b[segEntryHdr+int(n):]
	}
	return es, nil
}

// encodeValues and decodeValues carry a SegWrite's values: each a 4-byte
// length and the bytes.
func encodeValues(vs [][]byte) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

func decodeValues(b []byte) ([][]byte, error) {
	var vs [][]byte
	for len(b) > 0 {
		if len(b) < 4 || len(vs) == MaxSegBatch {
			return nil, fmt.Errorf("%w: segment write values", ErrMalformed)
		}
		n := binary.BigEndian.Uint32(b)
		if n > MaxValue || uint64(n) > uint64(len(b)-4) {
			return nil, fmt.Errorf("%w: segment write value of %d bytes", ErrMalformed, n)
		}
		vs = append(vs, b[4:4+n])
		b = b[4+n:]
	}
	return vs, nil
}

// notification is a wormserver's one-way report to a listener that it
// accepted Value at Ballot for register Addr: 'N', addr(8), ballot(8),
// value.
type notification struct {
	Addr, Ballot uint64
	Value        []byte
}

const notifyMagic = 'N'

func (n notification) encode() []byte {
	b := make([]byte, 0, 17+len(n.Value))
	b = append(b, notifyMagic)
	b = binary.BigEndian.AppendUint64(b, n.Addr)
	b = binary.BigEndian.AppendUint64(b, n.Ballot)
	return append(b, n.Value...)
}

func decodeNotification(b []byte) (notification, error) {
	if len(b) < 17 || b[0] != notifyMagic || len(b)-17 > MaxValue {
		return notification{}, fmt.Errorf("%w: notification of %d bytes", ErrMalformed, len(b))
	}
	return notification{Addr: binary.BigEndian.Uint64(b[1:]), Ballot: binary.BigEndian.Uint64(b[9:]), Value: b[17:]}, nil
}
