package wormtx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Variant selects one of the protocol variants of §4.3.
type Variant int

// The variants, by their message delays.
const (
	A8 Variant = iota + 1
	B6
	C5
	D4
	E3
)

var variantNames = [...]string{A8: "A8", B6: "B6", C5: "C5", D4: "D4", E3: "E3"}

// Variants lists every variant, slowest first.
var Variants = []Variant{A8, B6, C5, D4, E3}

func (v Variant) String() string {
	if v < A8 || v > E3 {
		return fmt.Sprintf("Variant(%d)", int(v))
	}
	return variantNames[v]
}

// Delays is the variant's number of message delays from the initiator's
// start to its knowing the outcome.
func (v Variant) Delays() int {
	return [...]int{A8: 8, B6: 6, C5: 5, D4: 4, E3: 3}[v]
}

// usesTM reports whether a transaction manager coordinates.
func (v Variant) usesTM() bool { return v != E3 }

// ParseVariant reads a variant's name ("E3", case-insensitive).
func ParseVariant(s string) (Variant, error) {
	for _, v := range Variants {
		if strings.EqualFold(s, v.String()) {
			return v, nil
		}
	}
	return 0, fmt.Errorf("wormtx: unknown variant %q (want one of A8, B6, C5, D4, E3)", s)
}

// OpKind is what an operation does to its account.
type OpKind byte

// The operations.
const (
	Get OpKind = iota + 1 // read the balance
	Add                   // add Delta; the transaction aborts if the balance would go below zero
)

// Op is one operation of a transaction on one account.
type Op struct {
	Kind  OpKind
	Key   string
	Delta int64
}

// Outcome is how a transaction ended.
type Outcome byte

// The outcomes. A vote's status is one of them too (Committed: yes).
const (
	Committed    Outcome = iota + 1
	Conflict             // a lock was taken: retry (Immediate-Restart)
	Insufficient         // an Add would make a balance negative
	TimedOut             // a participant did not vote in time; another RM wrote no for it
)

func (o Outcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case Conflict:
		return "aborted: lock conflict"
	case Insufficient:
		return "aborted: insufficient balance"
	case TimedOut:
		return "aborted: a participant timed out"
	}
	return fmt.Sprintf("Outcome(%d)", byte(o))
}

// ErrMalformed: a message or register value that does not decode.
var ErrMalformed = errors.New("wormtx: malformed")

// vote is the value of a participant's register: its status (Committed
// for yes) and, with yes, the balances its Gets read.
type vote struct {
	tx     uint64
	status Outcome
	// by is the incarnation of the RM that voted (its vote segment), so
	// that an RM that prepares a transaction again after a restart can
	// tell its earlier life's vote from its own.
	by    uint64
	reads []read
}

type read struct {
	key string
	val int64
}

const voteMagic = 'V'

func (v vote) encode() []byte {
	b := []byte{voteMagic, byte(v.status)}
	b = binary.BigEndian.AppendUint64(b, v.tx)
	b = binary.AppendUvarint(b, v.by)
	b = binary.AppendUvarint(b, uint64(len(v.reads)))
	for _, r := range v.reads {
		b = appendString(b, r.key)
		b = binary.AppendVarint(b, r.val)
	}
	return b
}

func decodeVote(b []byte) (vote, error) {
	d := decoder{b: b}
	if d.byte() != voteMagic {
		return vote{}, fmt.Errorf("%w: not a vote", ErrMalformed)
	}
	v := vote{status: Outcome(d.byte()), tx: d.u64()}
	v.by = d.uvarint()
	if v.status < Committed || v.status > TimedOut {
		d.fail("vote status")
	}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("read count")
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		v.reads = append(v.reads, read{d.string(), d.varint()})
	}
	return v, d.done()
}

// Message kinds between RMs and the TM (one-way datagrams).
const (
	mBegin   = 'b' // initiator → TM: start a transaction
	mPrepare = 'p' // coordinator → participant: lock, check, log, vote
	mVote    = 'v' // participant → TM (A8, B6): the vote now chosen in its register
	mDecide  = 'd' // TM → participants and initiator (A8, B6, C5): the outcome
	mClient  = 'c' // client → RM (a request): run ops with this RM as initiator
	mResult  = 'r' // RM → client (the response): outcome and reads, or an error in vote
)

// msg is every message; fields unused by a kind stay zero.
type msg struct {
	kind    byte
	variant Variant
	tx      uint64
	origin  uint32   // the initiator RM
	seg     uint64   // the coordinator's vote segment
	base    uint64   // the transaction's first register in seg (participant i at base+i)
	token   uint64   // capture id of the registers (0: capture them, A8)
	parts   []uint32 // participant RMs, ascending
	ops     []Op     // mBegin: all; mPrepare: the participant's own
	rm      uint32   // mVote: the voter
	vote    []byte   // mVote: the register's value
	outcome Outcome  // mDecide
	reads   []read   // mDecide: every Get's balance, on commit
}

const maxParts = 1024

func (m msg) encode() []byte {
	b := []byte{'X', m.kind, byte(m.variant)}
	b = binary.BigEndian.AppendUint64(b, m.tx)
	b = binary.AppendUvarint(b, uint64(m.origin))
	b = binary.AppendUvarint(b, m.seg)
	b = binary.AppendUvarint(b, m.base)
	b = binary.AppendUvarint(b, m.token)
	b = binary.AppendUvarint(b, uint64(len(m.parts)))
	for _, p := range m.parts {
		b = binary.AppendUvarint(b, uint64(p))
	}
	b = binary.AppendUvarint(b, uint64(len(m.ops)))
	for _, o := range m.ops {
		b = append(b, byte(o.Kind))
		b = appendString(b, o.Key)
		b = binary.AppendVarint(b, o.Delta)
	}
	b = binary.AppendUvarint(b, uint64(m.rm))
	b = appendString(b, string(m.vote))
	b = append(b, byte(m.outcome))
	b = binary.AppendUvarint(b, uint64(len(m.reads)))
	for _, r := range m.reads {
		b = appendString(b, r.key)
		b = binary.AppendVarint(b, r.val)
	}
	return b
}

func decodeMsg(b []byte) (msg, error) {
	d := decoder{b: b}
	if d.byte() != 'X' {
		return msg{}, fmt.Errorf("%w: not a wormtx message", ErrMalformed)
	}
	m := msg{kind: d.byte(), variant: Variant(d.byte()), tx: d.u64()}
	if !slices.Contains([]byte{mBegin, mPrepare, mVote, mDecide, mClient, mResult}, m.kind) {
		d.fail("kind")
	}
	if m.variant < A8 || m.variant > E3 {
		d.fail("variant")
	}
	m.origin = uint32(d.bounded(maxParts))
	m.seg, m.base, m.token = d.uvarint(), d.uvarint(), d.uvarint()
	n := d.bounded(maxParts)
	for i := uint64(0); i < n && d.err == nil; i++ {
		p := uint32(d.bounded(maxParts))
		if len(m.parts) > 0 && p <= m.parts[len(m.parts)-1] {
			d.fail("participants out of order")
		}
		m.parts = append(m.parts, p)
	}
	n = d.bounded(uint64(len(d.b)))
	for i := uint64(0); i < n && d.err == nil; i++ {
		o := Op{Kind: OpKind(d.byte()), Key: d.string(), Delta: d.varint()}
		if o.Kind != Get && o.Kind != Add {
			d.fail("op kind")
		}
		m.ops = append(m.ops, o)
	}
	m.rm = uint32(d.bounded(maxParts))
	if v := d.string(); v != "" {
		m.vote = []byte(v)
	}
	m.outcome = Outcome(d.byte())
	if m.outcome > TimedOut {
		d.fail("outcome")
	}
	n = d.bounded(uint64(len(d.b)))
	for i := uint64(0); i < n && d.err == nil; i++ {
		m.reads = append(m.reads, read{d.string(), d.varint()})
	}
	return m, d.done()
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads a message; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrMalformed, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("length")
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

func (d *decoder) u64() uint64 {
	if len(d.b) < 8 {
		d.fail("length")
		return 0
	}
	x := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return x
}

func (d *decoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) bounded(max uint64) uint64 {
	x := d.uvarint()
	if x > max {
		d.fail("count")
		return 0
	}
	return x
}

func (d *decoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string length")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}
