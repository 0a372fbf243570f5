package kv

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Op is a request's operation code on the wire.
type Op uint8

// Operations. Codes are never reused; unknown ones get ErrUnknownOp.
const (
	OpGet    Op = 1 // Key; linearizable unless Sequential
	OpPut    Op = 2 // Key, Value (a write: Client, Seq)
	OpDelete Op = 3 // Key (a write)
	OpCAS    Op = 4 // Key, Version (0: must not exist), Value (a write)
	OpScan   Op = 5 // [Key, End) ("" End: to the last key), Limit
	OpWatch  Op = 6 // Key (or prefix Key with Prefix), Rev (0: from now), Wait
	OpStatus Op = 7 // the server's view: leader, applied revision
)

var opNames = [...]string{OpGet: "get", OpPut: "put", OpDelete: "delete", OpCAS: "cas", OpScan: "scan", OpWatch: "watch", OpStatus: "status"}

func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// IsWrite reports whether o goes through the replicated log.
func (o Op) IsWrite() bool { return o == OpPut || o == OpDelete || o == OpCAS }

// Request is one client request. A write's bytes, re-encoded without the
// routing fields (Hops, Timeout, Sequential), are also its command in the
// replicated log.
type Request struct {
	Op Op
	// Sequential: a get or scan served from the receiving server's own
	// state (sequentially consistent) instead of a linearizable read.
	Sequential bool
	// Prefix: a watch of every key starting with Key.
	Prefix bool
	// Hops: how many servers forwarded the request already (bounded, so
	// two servers that each think the other leads cannot loop).
	Hops uint8
	// Client and Seq identify a write for deduplication: a random
	// session id and the session's sequence number (1, 2, ...).
	Client, Seq uint64
	Key, End    string
	Value       []byte
	Version     uint64        // CAS: the version the key must have (0: absent)
	Limit       uint64        // Scan: at most this many keys (0: MaxScanLimit)
	Rev         uint64        // Watch: first revision wanted (0: the next one)
	Wait        time.Duration // Watch: how long to wait for an event (ms on the wire)
	Timeout     time.Duration // how long the server may take (ms on the wire; 0: its default)
}

const (
	reqMagic  = 0x6b // 'k'
	respMagic = 0x4b // 'K'

	flagSequential = 1
	flagPrefix     = 2
	reqFlags       = flagSequential | flagPrefix

	flagSucceeded = 1
	flagExisted   = 2
	flagMore      = 4
	respFlags     = flagSucceeded | flagExisted | flagMore
)

// AppendRequest appends r's encoding to b:
//
//	magic op flags hops, then uvarints Client Seq Version Limit Rev
//	Wait(ms) Timeout(ms), then Key, End, Value each as a uvarint length
//	and bytes.
func AppendRequest(b []byte, r *Request) []byte {
	var flags byte
	if r.Sequential {
		flags |= flagSequential
	}
	if r.Prefix {
		flags |= flagPrefix
	}
	b = append(b, reqMagic, byte(r.Op), flags, r.Hops)
	for _, v := range [...]uint64{r.Client, r.Seq, r.Version, r.Limit, r.Rev, uint64(r.Wait / time.Millisecond), uint64(r.Timeout / time.Millisecond)} {
		b = binary.AppendUvarint(b, v)
	}
	b = appendBytes(b, r.Key)
	b = appendBytes(b, r.End)
	return appendBytes(b, r.Value)
}

// EncodeRequest returns r's encoding.
func EncodeRequest(r *Request) []byte {
	return AppendRequest(make([]byte, 0, 32+len(r.Key)+len(r.End)+len(r.Value)), r)
}

// encodeCommand is a write's log command: the request without its
// routing fields, so every replica applies the same bytes however the
// request reached the leader.
func encodeCommand(r *Request) []byte {
	c := Request{Op: r.Op, Client: r.Client, Seq: r.Seq, Key: r.Key, Value: r.Value, Version: r.Version}
	return EncodeRequest(&c)
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads a message; the first error sticks.
type decoder struct {
	b   []byte
	n   int // the message's length
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s at byte %d of %d", what, d.n-len(d.b), d.n)
	}
}

func (d *decoder) byte1(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("truncated " + what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad " + what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a length-prefixed field of at most max bytes, sharing the
// message's memory.
func (d *decoder) bytes(what string, max int) []byte {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) || n > uint64(max) {
		d.fail(fmt.Sprintf("%s of %d bytes (at most %d, %d left)", what, n, max, len(d.b)))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// durationMS reads a millisecond count, bounded so it fits a Duration.
func (d *decoder) durationMS(what string) time.Duration {
	v := d.uvarint(what)
	if v > uint64(24*time.Hour/time.Millisecond) {
		d.fail(fmt.Sprintf("%s of %d ms (at most a day)", what, v))
		return 0
	}
	return time.Duration(v) * time.Millisecond
}

func (d *decoder) done(kind string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("%s: %w", kind, d.err)
	}
	return nil
}

// Field bounds for decoding: a field a little over the service's limits
// still decodes, so that Validate can name the limit it breaks; anything
// larger is malformed.
const (
	wireMaxKey   = MaxKey + 1
	wireMaxValue = MaxValue + 1
)

// DecodeRequest decodes a request. Errors wrap ErrMalformed. The
// request's Value shares b's memory. It checks the encoding only; see
// Validate for the operation's requirements and the limits.
func DecodeRequest(b []byte) (*Request, error) {
	d := decoder{b: b, n: len(b)}
	if m := d.byte1("magic"); m != reqMagic && d.err == nil {
		return nil, fmt.Errorf("%w: not a kv request (magic %#x)", ErrMalformed, m)
	}
	r := &Request{Op: Op(d.byte1("op"))}
	flags := d.byte1("flags")
	r.Hops = d.byte1("hops")
	if flags&^reqFlags != 0 && d.err == nil {
		d.err = fmt.Errorf("unknown flags %#x", flags&^reqFlags)
	}
	r.Sequential, r.Prefix = flags&flagSequential != 0, flags&flagPrefix != 0
	r.Client = d.uvarint("client")
	r.Seq = d.uvarint("seq")
	r.Version = d.uvarint("version")
	r.Limit = d.uvarint("limit")
	r.Rev = d.uvarint("rev")
	r.Wait = d.durationMS("wait")
	r.Timeout = d.durationMS("timeout")
	r.Key = string(d.bytes("key", wireMaxKey))
	r.End = string(d.bytes("end", wireMaxKey))
	if v := d.bytes("value", wireMaxValue); len(v) > 0 {
		r.Value = v
	}
	if err := d.done("request"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return r, nil
}

// Validate checks r against its operation's needs and the limits, with
// errors that name what is wrong (ErrUnknownOp, ErrEmptyKey,
// ErrKeyTooLarge, ErrValueTooLarge, ErrMalformed).
func (r *Request) Validate() error {
	key := func(what, k string, empty bool) error {
		if k == "" && !empty {
			return fmt.Errorf("%w: %s needs a key", ErrEmptyKey, r.Op)
		}
		if len(k) > MaxKey {
			return fmt.Errorf("%w: %s of %d bytes (at most %d)", ErrKeyTooLarge, what, len(k), MaxKey)
		}
		return nil
	}
	switch r.Op {
	case OpGet:
		return key("key", r.Key, false)
	case OpPut, OpDelete, OpCAS:
		if err := key("key", r.Key, false); err != nil {
			return err
		}
		if len(r.Value) > MaxValue {
			return fmt.Errorf("%w: value of %d bytes (at most %d)", ErrValueTooLarge, len(r.Value), MaxValue)
		}
		if r.Client == 0 || r.Seq == 0 {
			return fmt.Errorf("%w: %s without a client id and sequence number", ErrMalformed, r.Op)
		}
		return nil
	case OpScan:
		if err := key("start key", r.Key, true); err != nil {
			return err
		}
		return key("end key", r.End, true)
	case OpWatch:
		return key("key", r.Key, r.Prefix)
	case OpStatus:
		return nil
	}
	return fmt.Errorf("%w: code %d", ErrUnknownOp, uint8(r.Op))
}

// KeyValue is a key's state: etcd's model, with revisions the log
// indexes of the commands that created and last modified the key, and
// Version the number of puts since it was created (1 after the first).
type KeyValue struct {
	Key         string
	Value       []byte
	Create, Mod uint64
	Version     uint64
}

// EventType says what an Event did.
type EventType uint8

// Event types.
const (
	EventPut    EventType = 1
	EventDelete EventType = 2
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "put"
	case EventDelete:
		return "delete"
	}
	return fmt.Sprintf("event(%d)", uint8(t))
}

// Event is one change a watch reports: a put (KV the key's new state) or
// a delete (KV.Key, KV.Mod the deleting command's revision, Version 0).
type Event struct {
	Type EventType
	KV   KeyValue
}

// Response is a server's reply.
type Response struct {
	Status Status
	Msg    string // the error's text, for a status other than OK
	// Rev: the revision the reply reflects (a write: its command's
	// revision; a read: the state's revision).
	Rev uint64
	// Next: a watch continues from this revision.
	Next uint64
	// Floor: with StatusCompacted, watches must start above it.
	Floor uint64
	// Version: a write's result: the key's version after it (0 after a
	// delete); a failed CAS: the key's current version (0: absent).
	Version   uint64
	Succeeded bool // CAS: the version matched and the value was written
	Existed   bool // put, delete: the key existed before
	More      bool // scan: more keys in the range after the last one returned
	// Status: the server's view of the leader.
	LeaderID, Epoch uint64
	Leader          string
	KVs             []KeyValue
	Events          []Event
}

// Err is the reply's error (nil for StatusOK).
func (r *Response) Err() error { return r.Status.Err(r.Msg) }

// errorResponse is the reply for err.
func errorResponse(err error) *Response {
	return &Response{Status: StatusOf(err), Msg: err.Error()}
}

// AppendResponse appends r's encoding to b:
//
//	magic status flags, uvarints Rev Next Floor Version LeaderID Epoch,
//	Leader and Msg (length and bytes), the count of KVs and each KV (Key,
//	Value, uvarints Create Mod Version), the count of events and each
//	event (type byte and KV).
func AppendResponse(b []byte, r *Response) []byte {
	var flags byte
	if r.Succeeded {
		flags |= flagSucceeded
	}
	if r.Existed {
		flags |= flagExisted
	}
	if r.More {
		flags |= flagMore
	}
	b = append(b, respMagic, byte(r.Status), flags)
	for _, v := range [...]uint64{r.Rev, r.Next, r.Floor, r.Version, r.LeaderID, r.Epoch} {
		b = binary.AppendUvarint(b, v)
	}
	b = appendBytes(b, r.Leader)
	b = appendBytes(b, r.Msg)
	b = binary.AppendUvarint(b, uint64(len(r.KVs)))
	for i := range r.KVs {
		b = appendKV(b, &r.KVs[i])
	}
	b = binary.AppendUvarint(b, uint64(len(r.Events)))
	for i := range r.Events {
		b = append(b, byte(r.Events[i].Type))
		b = appendKV(b, &r.Events[i].KV)
	}
	return b
}

// EncodeResponse returns r's encoding.
func EncodeResponse(r *Response) []byte {
	n := 64 + len(r.Msg) + len(r.Leader)
	for i := range r.KVs {
		n += kvSize(&r.KVs[i])
	}
	for i := range r.Events {
		n += 1 + kvSize(&r.Events[i].KV)
	}
	return AppendResponse(make([]byte, 0, n), r)
}

func kvSize(kv *KeyValue) int { return 40 + len(kv.Key) + len(kv.Value) }

func appendKV(b []byte, kv *KeyValue) []byte {
	b = appendBytes(b, kv.Key)
	b = appendBytes(b, kv.Value)
	b = binary.AppendUvarint(b, kv.Create)
	b = binary.AppendUvarint(b, kv.Mod)
	return binary.AppendUvarint(b, kv.Version)
}

// minKV is the fewest bytes an encoded KeyValue takes (five one-byte
// fields): counts are checked against it before anything is allocated.
const minKV = 5

func (d *decoder) kv() KeyValue {
	var kv KeyValue
	kv.Key = string(d.bytes("key", wireMaxKey))
	if v := d.bytes("value", wireMaxValue); len(v) > 0 {
		kv.Value = v
	}
	kv.Create = d.uvarint("create revision")
	kv.Mod = d.uvarint("mod revision")
	kv.Version = d.uvarint("version")
	return kv
}

// DecodeResponse decodes a reply; errors wrap ErrBadReply. Values share
// b's memory.
func DecodeResponse(b []byte) (*Response, error) {
	d := decoder{b: b, n: len(b)}
	if m := d.byte1("magic"); m != respMagic && d.err == nil {
		return nil, fmt.Errorf("%w: not a kv reply (magic %#x)", ErrBadReply, m)
	}
	r := &Response{Status: Status(d.byte1("status"))}
	flags := d.byte1("flags")
	if flags&^respFlags != 0 && d.err == nil {
		d.err = fmt.Errorf("unknown flags %#x", flags&^respFlags)
	}
	r.Succeeded, r.Existed, r.More = flags&flagSucceeded != 0, flags&flagExisted != 0, flags&flagMore != 0
	r.Rev = d.uvarint("rev")
	r.Next = d.uvarint("next")
	r.Floor = d.uvarint("floor")
	r.Version = d.uvarint("version")
	r.LeaderID = d.uvarint("leader id")
	r.Epoch = d.uvarint("epoch")
	r.Leader = string(d.bytes("leader", 1024))
	r.Msg = string(d.bytes("message", 64<<10))
	if n := d.uvarint("key count"); d.err == nil {
		if n > uint64(len(d.b)/minKV) {
			d.fail(fmt.Sprintf("key count %d", n))
		} else if n > 0 {
			r.KVs = make([]KeyValue, n)
			for i := range r.KVs {
				r.KVs[i] = d.kv()
			}
		}
	}
	if n := d.uvarint("event count"); d.err == nil {
		if n > uint64(len(d.b)/(1+minKV)) {
			d.fail(fmt.Sprintf("event count %d", n))
		} else if n > 0 {
			r.Events = make([]Event, n)
			for i := range r.Events {
				r.Events[i].Type = EventType(d.byte1("event type"))
				r.Events[i].KV = d.kv()
			}
		}
	}
	if err := d.done("reply"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadReply, err)
	}
	return r, nil
}
