package kv

import (
	"container/list"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"
	"sync"

	"github.com/google/btree"
)

// MachineOptions bound what a Machine keeps besides the keys. Every
// replica of a group must use the same values: they decide which
// sessions are forgotten, which is part of the replicated state.
type MachineOptions struct {
	// MaxSessions: client sessions kept for deduplication (default
	// 100,000). The least recently used one is forgotten beyond it; a
	// retry of that session's last write would then be applied again, so
	// it must exceed the number of clients active within a retry period
	// by far.
	MaxSessions int
	// HistoryEvents and HistoryBytes bound the recent events kept for
	// watches (defaults 10,000 and 32 MiB); a watch from an older
	// revision gets ErrCompacted.
	HistoryEvents int
	HistoryBytes  int
}

func (o MachineOptions) withDefaults() MachineOptions {
	if o.MaxSessions <= 0 {
		o.MaxSessions = 100_000
	}
	if o.HistoryEvents <= 0 {
		o.HistoryEvents = 10_000
	}
	if o.HistoryBytes <= 0 {
		o.HistoryBytes = 32 << 20
	}
	return o
}

// Machine is the key-value state machine (an smr.StateMachine): an
// ordered map of keys to values with etcd's revisions and versions,
// client sessions for deduplication and a bounded history of events.
//
// Apply is deterministic: replicas that apply the same commands from the
// same snapshot hold the same keys and sessions and return the same
// results (the event history is not in snapshots: a restored replica's
// history starts at the snapshot). Reads (Get, Range, Events) may run
// concurrently with each other and with Apply: the lock orders them.
type Machine struct {
	opts MachineOptions

	mu sync.RWMutex // guards everything below
	// tree holds the keys, ordered; entries are replaced, never changed
	// in place, once a reader may hold them (see put).
	tree    *btree.BTreeG[*entry]
	applied uint64 // index of the last command applied (the state's revision)
	// sessions by client id, and the same sessions least recently used
	// first (lru's values are *session).
	sessions map[uint64]*session
	lru      list.List
	// hist holds the newest events in revision order (at most one per
	// revision); events at or below floor were dropped, or predate the
	// snapshot the machine was restored from.
	hist      []Event
	histBytes int
	floor     uint64
	// changed is closed by the next Apply or Restore (made on demand by
	// a waiting watch; nil when none waits).
	changed chan struct{}
}

type entry struct {
	key                  string
	value                []byte
	create, mod, version uint64
}

func (e *entry) kv() KeyValue {
	return KeyValue{Key: e.key, Value: e.value, Create: e.create, Mod: e.mod, Version: e.version}
}

// session is what a client's last write left: its sequence number, the
// log index it was applied at and the reply, returned again to a retry.
type session struct {
	id, seq, index uint64
	result         []byte
	elem           *list.Element
}

func lessEntry(a, b *entry) bool { return a.key < b.key }

// NewMachine returns an empty state machine.
func NewMachine(opts MachineOptions) *Machine {
	return &Machine{opts: opts.withDefaults(), tree: btree.NewG(32, lessEntry), sessions: map[uint64]*session{}}
}

// Apply applies a log command: a write request (EncodeRequest) carrying
// a client id and sequence number, and returns the encoded Response. A
// command whose session already applied it returns the first result
// again; one older than the session's last returns ErrStaleSequence. An
// empty command is a no-op (returns nil); a malformed one returns its
// error and changes nothing but the revision. The result must not be
// modified (it may be kept for a retry).
func (m *Machine) Apply(index uint64, cmd []byte) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applied = index
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
	if len(cmd) == 0 {
		return nil
	}
	req, err := DecodeRequest(cmd)
	if err == nil {
		err = req.Validate()
	}
	if err == nil && !req.Op.IsWrite() {
		err = fmt.Errorf("%w: %s is not a write", ErrMalformed, req.Op)
	}
	if err != nil {
		r := errorResponse(fmt.Errorf("command at %d: %w", index, err))
		r.Rev = index
		return EncodeResponse(r)
	}
	s := m.sessions[req.Client]
	if s != nil {
		switch {
		case req.Seq == s.seq:
			return s.result
		case req.Seq < s.seq:
			r := errorResponse(fmt.Errorf("%w: client %x sequence %d, its session applied %d", ErrStaleSequence, req.Client, req.Seq, s.seq))
			r.Rev = index
			return EncodeResponse(r)
		}
		m.lru.MoveToBack(s.elem)
	} else {
		s = &session{id: req.Client}
		s.elem = m.lru.PushBack(s)
		m.sessions[s.id] = s
		for len(m.sessions) > m.opts.MaxSessions {
			old := m.lru.Remove(m.lru.Front()).(*session)
			delete(m.sessions, old.id)
		}
	}
	s.seq, s.index = req.Seq, index
	s.result = EncodeResponse(m.write(index, req))
	return s.result
}

// write applies a valid write at revision index.
func (m *Machine) write(index uint64, req *Request) *Response {
	old, _ := m.tree.Get(&entry{key: req.Key})
	r := &Response{Rev: index, Existed: old != nil}
	switch req.Op {
	case OpPut:
		r.Version, r.Succeeded = m.put(index, req, old), true
	case OpCAS:
		var cur uint64
		if old != nil {
			cur = old.version
		}
		if cur != req.Version {
			r.Version = cur
			return r
		}
		r.Version, r.Succeeded = m.put(index, req, old), true
	case OpDelete:
		if old != nil {
			m.tree.Delete(old)
			m.record(Event{Type: EventDelete, KV: KeyValue{Key: old.key, Mod: index}})
			r.Succeeded = true
		}
	}
	return r
}

// put stores req's value at revision index and returns the new version.
// It makes a new entry (readers may hold the old one's fields) and owns
// a copy of the value (the command's memory belongs to the log).
func (m *Machine) put(index uint64, req *Request, old *entry) uint64 {
	e := &entry{key: req.Key, value: append([]byte(nil), req.Value...), create: index, mod: index, version: 1}
	if old != nil {
		e.create, e.version = old.create, old.version+1
	}
	m.tree.ReplaceOrInsert(e)
	m.record(Event{Type: EventPut, KV: e.kv()})
	return e.version
}

func eventSize(ev *Event) int { return 64 + len(ev.KV.Key) + len(ev.KV.Value) }

// record appends an event to the history, dropping the oldest beyond the
// bounds.
func (m *Machine) record(ev Event) {
	m.hist = append(m.hist, ev)
	m.histBytes += eventSize(&ev)
	drop := 0
	for len(m.hist)-drop > m.opts.HistoryEvents || (m.histBytes > m.opts.HistoryBytes && len(m.hist)-drop > 1) {
		m.histBytes -= eventSize(&m.hist[drop])
		m.floor = m.hist[drop].KV.Mod
		drop++
	}
	if drop > 0 {
		clear(m.hist[:drop]) // let the values go
		m.hist = m.hist[drop:]
	}
	if cap(m.hist) > 2*m.opts.HistoryEvents+64 {
		// Re-slicing from the front leaves the array's head unused:
		// move the events down now and then.
		m.hist = append(make([]Event, 0, len(m.hist)+m.opts.HistoryEvents/2+1), m.hist...)
	}
}

// Revision is the index of the last command applied.
func (m *Machine) Revision() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.applied
}

// Len is the number of keys.
func (m *Machine) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.tree.Len()
}

// Sessions is the number of client sessions kept.
func (m *Machine) Sessions() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.sessions)
}

// Get returns key's state and the revision of the state read.
func (m *Machine) Get(key string) (kv KeyValue, ok bool, rev uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if e, found := m.tree.Get(&entry{key: key}); found {
		return e.kv(), true, m.applied
	}
	return KeyValue{}, false, m.applied
}

// Range returns the keys in [start, end) in order (end "": to the last
// key), at most limit of them (0 or above MaxScanLimit: MaxScanLimit) and
// at most about maxReplyBytes of keys and values but at least one; more
// reports that the range holds further keys.
func (m *Machine) Range(start, end string, limit int) (kvs []KeyValue, more bool, rev uint64) {
	if limit <= 0 || limit > MaxScanLimit {
		limit = MaxScanLimit
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	bytes := 0
	m.tree.AscendGreaterOrEqual(&entry{key: start}, func(e *entry) bool {
		if end != "" && e.key >= end {
			return false
		}
		size := kvSize(&KeyValue{Key: e.key, Value: e.value})
		if len(kvs) == limit || (len(kvs) > 0 && bytes+size > maxReplyBytes) {
			more = true
			return false
		}
		bytes += size
		kvs = append(kvs, e.kv())
		return true
	})
	return kvs, more, m.applied
}

// CompactedError is ErrCompacted with the revision above which a watch
// may start.
type CompactedError struct{ Floor, Rev uint64 }

func (e *CompactedError) Error() string {
	return fmt.Sprintf("kv: watch from revision %d: compacted (history starts after revision %d)", e.Rev, e.Floor)
}

// Is makes errors.Is(err, ErrCompacted) true.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// Events returns the events of key (of every key starting with key, with
// prefix) from revision from on (0: from the next revision), at most
// maxEvents (0: no bound but the reply size) and about maxReplyBytes, and
// the revision to continue from. A from at or below the history's floor
// gets a *CompactedError. changed is closed once the state moves past
// what was read (a watch with no events waits on it).
func (m *Machine) Events(key string, prefix bool, from uint64, maxEvents int) (evs []Event, next uint64, changed <-chan struct{}, err error) {
	m.mu.Lock() // Lock, not RLock: it may make the changed channel
	defer m.mu.Unlock()
	if from == 0 {
		from = m.applied + 1
	}
	if from <= m.floor {
		return nil, 0, nil, &CompactedError{Floor: m.floor, Rev: from}
	}
	next = max(from, m.applied+1)
	i := sort.Search(len(m.hist), func(i int) bool { return m.hist[i].KV.Mod >= from })
	bytes := 0
	for ; i < len(m.hist); i++ {
		ev := &m.hist[i]
		if ev.KV.Key != key && !(prefix && strings.HasPrefix(ev.KV.Key, key)) {
			continue
		}
		size := eventSize(ev)
		if (maxEvents > 0 && len(evs) == maxEvents) || (len(evs) > 0 && bytes+size > maxReplyBytes) {
			next = ev.KV.Mod
			break
		}
		bytes += size
		evs = append(evs, *ev)
	}
	if len(evs) == 0 {
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		changed = m.changed
	}
	return evs, next, changed, nil
}

const snapMagic = 0x4b565331 // "KVS1"

// Snapshot encodes the keys and sessions (not the event history):
//
//	magic, uvarint key count, each key (Key, Value, uvarints Create Mod
//	Version) in key order, uvarint session count, each session (uvarints
//	id seq index, result) least recently used first, CRC-32C of all
//	before it.
//
// Equal states encode to equal bytes.
func (m *Machine) Snapshot() ([]byte, error) { return m.CaptureSnapshot()() }

// CaptureSnapshot captures the state as of now and returns the function
// that encodes it (smr.Capturer): the capture is a copy-on-write clone
// of the tree (entries are never changed in place: a write makes a new
// one) and a copy of the session table, so it takes little time however
// large the state; the encoding may run on another goroutine while later
// writes change the machine.
func (m *Machine) CaptureSnapshot() func() ([]byte, error) {
	m.mu.Lock() // Clone changes the tree's copy-on-write context
	tree := m.tree.Clone()
	sessions := make([]session, 0, len(m.sessions))
	for el := m.lru.Front(); el != nil; el = el.Next() {
		s := el.Value.(*session)
		sessions = append(sessions, session{id: s.id, seq: s.seq, index: s.index, result: s.result})
	}
	m.mu.Unlock()
	return func() ([]byte, error) {
		// Sized first, so that a state of a gigabyte is encoded into one
		// allocation of its size rather than a doubling series of them.
		size := 4 + uvarintLen(uint64(tree.Len())) + uvarintLen(uint64(len(sessions))) + 4
		tree.Ascend(func(e *entry) bool {
			size += uvarintLen(uint64(len(e.key))) + len(e.key) + uvarintLen(uint64(len(e.value))) + len(e.value) +
				uvarintLen(e.create) + uvarintLen(e.mod) + uvarintLen(e.version)
			return true
		})
		for _, s := range sessions {
			size += uvarintLen(s.id) + uvarintLen(s.seq) + uvarintLen(s.index) + uvarintLen(uint64(len(s.result))) + len(s.result)
		}
		b := binary.BigEndian.AppendUint32(make([]byte, 0, size), snapMagic)
		b = binary.AppendUvarint(b, uint64(tree.Len()))
		tree.Ascend(func(e *entry) bool {
			kv := e.kv()
			b = appendKV(b, &kv)
			return true
		})
		b = binary.AppendUvarint(b, uint64(len(sessions)))
		for _, s := range sessions {
			b = binary.AppendUvarint(b, s.id)
			b = binary.AppendUvarint(b, s.seq)
			b = binary.AppendUvarint(b, s.index)
			b = appendBytes(b, s.result)
		}
		return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// uvarintLen is the bytes binary.AppendUvarint takes for x.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// Restore replaces the state with a snapshot taken at log index index.
// The values keep snap's memory (a restored state of a gigabyte does not
// need a second gigabyte): snap must not change afterwards.
// A snapshot that does not decode (ErrMalformed) leaves the state as it
// was. The event history restarts empty: watches from at or below index
// get ErrCompacted.
func (m *Machine) Restore(index uint64, snap []byte) error {
	tree, sessions, lru, err := m.decodeSnapshot(snap)
	if err != nil {
		return fmt.Errorf("%w: snapshot at %d: %w", ErrMalformed, index, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tree, m.sessions, m.applied = tree, sessions, index
	m.lru.Init()
	for _, s := range lru {
		s.elem = m.lru.PushBack(s)
	}
	clear(m.hist)
	m.hist, m.histBytes, m.floor = m.hist[:0], 0, index
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
	return nil
}

func (m *Machine) decodeSnapshot(snap []byte) (*btree.BTreeG[*entry], map[uint64]*session, []*session, error) {
	if len(snap) < 8 || binary.BigEndian.Uint32(snap) != snapMagic {
		return nil, nil, nil, fmt.Errorf("not a kv snapshot (%d bytes)", len(snap))
	}
	body := snap[:len(snap)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(snap[len(body):]) {
		return nil, nil, nil, fmt.Errorf("checksum mismatch")
	}
	d := decoder{b: body[4:], n: len(body) - 4}
	tree := btree.NewG(32, lessEntry)
	n := d.uvarint("key count")
	if n > uint64(len(d.b)/minKV) {
		d.fail(fmt.Sprintf("key count %d", n))
	}
	var last string
	for i := uint64(0); i < n && d.err == nil; i++ {
		kv := d.kv()
		switch {
		case d.err != nil:
		case kv.Key == "" || len(kv.Key) > MaxKey || len(kv.Value) > MaxValue:
			d.fail(fmt.Sprintf("key %d out of bounds", i))
		case i > 0 && kv.Key <= last:
			d.fail(fmt.Sprintf("key %d out of order", i))
		default:
			last = kv.Key
			// The value shares the snapshot's memory: entries are never
			// changed in place.
			tree.ReplaceOrInsert(&entry{key: kv.Key, value: kv.Value[:len(kv.Value):len(kv.Value)], create: kv.Create, mod: kv.Mod, version: kv.Version})
		}
	}
	sessions := map[uint64]*session{}
	var lru []*session
	n = d.uvarint("session count")
	if n > uint64(len(d.b)/4) {
		d.fail(fmt.Sprintf("session count %d", n))
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		s := &session{id: d.uvarint("client"), seq: d.uvarint("seq"), index: d.uvarint("index")}
		s.result = append([]byte(nil), d.bytes("result", 1<<20)...)
		if d.err == nil && sessions[s.id] != nil {
			d.fail(fmt.Sprintf("client %x twice", s.id))
		}
		sessions[s.id] = s
		lru = append(lru, s)
	}
	if err := d.done("snapshot"); err != nil {
		return nil, nil, nil, err
	}
	return tree, sessions, lru, nil
}
