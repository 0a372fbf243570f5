package kv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"strata/internal/testseed"
)

// model is the obvious implementation the machine is checked against: a
// map, a list of every event, sessions in a slice kept in LRU order.
type model struct {
	keys     map[string]KeyValue
	events   []Event // every event ever
	floor    uint64  // watches must start above it
	kept     int     // the newest kept events (HistoryEvents)
	sessions []modelSession
	max      int // MaxSessions
	applied  uint64
}

type modelSession struct {
	id, seq uint64
	result  []byte
}

func newModel(opts MachineOptions) *model {
	return &model{keys: map[string]KeyValue{}, kept: opts.HistoryEvents, max: opts.MaxSessions}
}

func (m *model) session(id uint64) int {
	return slices.IndexFunc(m.sessions, func(s modelSession) bool { return s.id == id })
}

// apply is what the machine must do with a valid write; the result is
// decoded (byte equality is checked for retries only).
func (m *model) apply(index uint64, r *Request) (*Response, bool) {
	m.applied = index
	if i := m.session(r.Client); i >= 0 {
		s := m.sessions[i]
		if r.Seq == s.seq {
			resp, _ := DecodeResponse(s.result)
			return resp, true
		}
		if r.Seq < s.seq {
			return &Response{Status: StatusStaleSequence, Rev: index}, false
		}
		m.sessions = append(slices.Delete(m.sessions, i, i+1), s)
	} else {
		m.sessions = append(m.sessions, modelSession{id: r.Client})
		if len(m.sessions) > m.max {
			m.sessions = m.sessions[1:]
		}
	}
	old, existed := m.keys[r.Key]
	resp := &Response{Rev: index, Existed: existed}
	put := func() {
		kv := KeyValue{Key: r.Key, Value: slices.Clone(r.Value), Create: index, Mod: index, Version: 1}
		if existed {
			kv.Create, kv.Version = old.Create, old.Version+1
		}
		m.keys[r.Key] = kv
		m.event(Event{Type: EventPut, KV: kv})
		resp.Version, resp.Succeeded = kv.Version, true
	}
	switch r.Op {
	case OpPut:
		put()
	case OpCAS:
		if old.Version == r.Version {
			put()
		} else {
			resp.Version = old.Version
		}
	case OpDelete:
		if existed {
			delete(m.keys, r.Key)
			m.event(Event{Type: EventDelete, KV: KeyValue{Key: r.Key, Mod: index}})
			resp.Succeeded = true
		}
	}
	m.sessions[len(m.sessions)-1].seq = r.Seq
	m.sessions[len(m.sessions)-1].result = EncodeResponse(resp)
	return resp, false
}

func (m *model) event(ev Event) {
	m.events = append(m.events, ev)
	if n := len(m.events); n > m.kept {
		m.floor = max(m.floor, m.events[n-m.kept-1].KV.Mod)
	}
}

func (m *model) sorted() []KeyValue {
	var kvs []KeyValue
	for _, kv := range m.keys {
		kvs = append(kvs, kv)
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].Key < kvs[j].Key })
	return kvs
}

func sameKV(a, b KeyValue) bool {
	return a.Key == b.Key && bytes.Equal(a.Value, b.Value) && a.Create == b.Create && a.Mod == b.Mod && a.Version == b.Version
}

func sameResult(a, b *Response) bool {
	return a.Status == b.Status && a.Rev == b.Rev && a.Version == b.Version && a.Succeeded == b.Succeeded && a.Existed == b.Existed
}

// TestMachineModel applies random writes (several clients, retries of a
// client's last command, stale duplicates, malformed and oversize
// commands, no-ops) to the machine and to the model, checks every result,
// and now and then every read (Get of each key, random ranges with
// limits, watches from random revisions of keys and prefixes) and a
// snapshot round trip: a machine restored from the snapshot snapshots to
// the same bytes and continues in place of the original. Small session
// and history bounds make eviction and compaction happen.
func TestMachineModel(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Fresh(10)...) {
		machineRun(t, seed, 2000)
	}
}

func machineRun(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	opts := MachineOptions{MaxSessions: 2 + rng.IntN(5), HistoryEvents: 5 + rng.IntN(60)}
	m := NewMachine(opts)
	mod := newModel(opts.withDefaults())
	keys := []string{"a", "ab", "abc", "b", "ba", "c", "k1", "k2", "k10", "z", "\x00", "\xff\xff"}
	nclients := opts.MaxSessions + 2
	seqs := make([]uint64, nclients+1)       // seqs[c]: client c's last sequence number
	last := make([][]byte, nclients+1)       // client c's last command
	lastResult := make([][]byte, nclients+1) // and the machine's result for it
	var index uint64
	step := func(cmd []byte) []byte {
		index++
		return m.Apply(index, cmd)
	}
	for i := 0; i < steps; i++ {
		c := 1 + rng.IntN(nclients)
		switch p := rng.IntN(100); {
		case p < 8 && last[c] != nil: // a retry: the same result, applied once
			got := step(last[c])
			want, dup := mod.apply(index, mustDecode(t, last[c]))
			if !dup {
				// The session was evicted (or superseded): the retry
				// counts as new, as MaxSessions documents.
				if mod.session(uint64(c)) < 0 {
					t.Fatalf("seed %d step %d: model lost the session it just used", seed, i)
				}
			}
			checkResult(t, seed, i, got, want)
			if dup && !bytes.Equal(got, lastResult[c]) {
				t.Fatalf("seed %d step %d: a retry's result differs from the first", seed, i)
			}
			lastResult[c] = got
		case p < 11 && seqs[c] > 1: // a late duplicate of an older command
			r := Request{Op: OpPut, Client: uint64(c), Seq: seqs[c] - 1, Key: "stale", Value: []byte("x")}
			newer := false
			if j := mod.session(uint64(c)); j >= 0 {
				newer = mod.sessions[j].seq > r.Seq
			}
			got := step(EncodeRequest(&r))
			want, _ := mod.apply(index, &r)
			if newer && want.Status != StatusStaleSequence {
				t.Fatalf("seed %d step %d: model: want stale, got %+v", seed, i, want)
			}
			checkResult(t, seed, i, got, want)
		case p < 14: // malformed, oversize, not a write, or a no-op: nothing changes but the revision
			var cmd []byte
			var wantErr error
			switch rng.IntN(5) {
			case 0:
				cmd = []byte{reqMagic, 2, 0}
				wantErr = ErrMalformed
			case 1:
				cmd = EncodeRequest(&Request{Op: OpPut, Client: 99, Seq: 1, Key: strings.Repeat("k", MaxKey+1)})
				wantErr = ErrKeyTooLarge
			case 2:
				cmd = EncodeRequest(&Request{Op: OpPut, Client: 99, Seq: 1, Key: "k", Value: make([]byte, MaxValue+1)})
				wantErr = ErrValueTooLarge
			case 3:
				cmd = EncodeRequest(&Request{Op: OpGet, Client: 99, Seq: 1, Key: "k"})
				wantErr = ErrMalformed
			case 4:
				cmd = nil
			}
			got := step(cmd)
			mod.applied = index
			if wantErr == nil {
				if got != nil {
					t.Fatalf("seed %d step %d: no-op returned %q", seed, i, got)
				}
				continue
			}
			r, err := DecodeResponse(got)
			if err != nil || !errors.Is(r.Err(), wantErr) || r.Rev != index {
				t.Fatalf("seed %d step %d: bad command: %+v %v, want %v", seed, i, r, err, wantErr)
			}
		default: // a new write
			seqs[c]++
			r := Request{Client: uint64(c), Seq: seqs[c], Key: keys[rng.IntN(len(keys))]}
			switch rng.IntN(4) {
			case 0, 1:
				r.Op, r.Value = OpPut, []byte(fmt.Sprintf("v%d-%d", i, rng.IntN(1000)))
			case 2:
				r.Op = OpDelete
			case 3:
				r.Op, r.Value = OpCAS, []byte(fmt.Sprintf("cas%d", i))
				r.Version = mod.keys[r.Key].Version
				if rng.IntN(3) == 0 {
					r.Version = uint64(rng.IntN(3))
				}
			}
			cmd := EncodeRequest(&r)
			last[c] = cmd
			got := step(cmd)
			lastResult[c] = got
			want, dup := mod.apply(index, &r)
			if dup {
				t.Fatalf("seed %d step %d: model took a new command as a retry", seed, i)
			}
			checkResult(t, seed, i, got, want)
		}
		if rng.IntN(50) == 0 || i == steps-1 {
			checkReads(t, seed, i, rng, m, mod)
		}
		if rng.IntN(200) == 0 {
			m = snapshotRoundTrip(t, seed, i, m, opts, index)
			// The restored machine's history starts at the snapshot.
			mod.floor = index
			mod.events = nil
		}
	}
}

func mustDecode(t *testing.T, cmd []byte) *Request {
	r, err := DecodeRequest(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func checkResult(t *testing.T, seed uint64, i int, got []byte, want *Response) {
	t.Helper()
	r, err := DecodeResponse(got)
	if err != nil {
		t.Fatalf("seed %d step %d: result does not decode: %v", seed, i, err)
	}
	if !sameResult(r, want) {
		t.Fatalf("seed %d step %d: result %+v, model %+v", seed, i, r, want)
	}
}

func checkReads(t *testing.T, seed uint64, i int, rng *rand.Rand, m *Machine, mod *model) {
	t.Helper()
	if m.Revision() != mod.applied {
		t.Fatalf("seed %d step %d: revision %d, model %d", seed, i, m.Revision(), mod.applied)
	}
	all := mod.sorted()
	if m.Len() != len(all) {
		t.Fatalf("seed %d step %d: %d keys, model %d", seed, i, m.Len(), len(all))
	}
	if m.Sessions() != len(mod.sessions) {
		t.Fatalf("seed %d step %d: %d sessions, model %d", seed, i, m.Sessions(), len(mod.sessions))
	}
	for _, want := range all {
		got, ok, rev := m.Get(want.Key)
		if !ok || !sameKV(got, want) || rev != mod.applied {
			t.Fatalf("seed %d step %d: get %q = %+v %v, model %+v", seed, i, want.Key, got, ok, want)
		}
	}
	if _, ok, _ := m.Get("never"); ok {
		t.Fatalf("seed %d step %d: get of a key never written found it", seed, i)
	}
	bounds := []string{"", "a", "ab", "b", "bz", "k", "k2", "z", "\xff"}
	for range 5 {
		start, end := bounds[rng.IntN(len(bounds))], bounds[rng.IntN(len(bounds))]
		limit := rng.IntN(5)
		got, more, _ := m.Range(start, end, limit)
		var want []KeyValue
		for _, kv := range all {
			if kv.Key >= start && (end == "" || kv.Key < end) {
				want = append(want, kv)
			}
		}
		wantMore := false
		if limit > 0 && len(want) > limit {
			want, wantMore = want[:limit], true
		}
		if len(got) != len(want) || more != wantMore || !slices.EqualFunc(got, want, sameKV) {
			t.Fatalf("seed %d step %d: range [%q,%q) limit %d = %v more %v, model %v more %v", seed, i, start, end, limit, got, more, want, wantMore)
		}
	}
	for range 5 {
		key, prefix := []string{"a", "k1", "z", "", "b"}[rng.IntN(5)], rng.IntN(2) == 0
		if key == "" {
			prefix = true
		}
		from := uint64(rng.IntN(int(mod.applied) + 3))
		got, next, changed, err := m.Events(key, prefix, from, 0)
		if from == 0 {
			from = mod.applied + 1
		}
		if from <= mod.floor {
			var ce *CompactedError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCompacted) || ce.Floor != mod.floor {
				t.Fatalf("seed %d step %d: watch from %d (floor %d): %v, want compacted", seed, i, from, mod.floor, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("seed %d step %d: watch from %d (floor %d): %v", seed, i, from, mod.floor, err)
		}
		var want []Event
		for _, ev := range mod.events {
			if ev.KV.Mod >= from && (ev.KV.Key == key || prefix && strings.HasPrefix(ev.KV.Key, key)) {
				want = append(want, ev)
			}
		}
		if !slices.EqualFunc(got, want, func(a, b Event) bool { return a.Type == b.Type && sameKV(a.KV, b.KV) }) {
			t.Fatalf("seed %d step %d: watch %q prefix %v from %d = %v, model %v", seed, i, key, prefix, from, got, want)
		}
		if next != max(from, mod.applied+1) || (len(got) == 0) != (changed != nil) {
			t.Fatalf("seed %d step %d: watch next %d (model %d), changed %v with %d events", seed, i, next, max(from, mod.applied+1), changed, len(got))
		}
	}
}

// snapshotRoundTrip restores a new machine from m's snapshot, checks it
// snapshots to the same bytes, and returns it to continue with.
func snapshotRoundTrip(t *testing.T, seed uint64, i int, m *Machine, opts MachineOptions, index uint64) *Machine {
	t.Helper()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	m2 := NewMachine(opts)
	m2.Apply(1, EncodeRequest(&Request{Op: OpPut, Client: 1 << 60, Seq: 1, Key: "junk", Value: []byte("replaced by the restore")}))
	if err := m2.Restore(index, snap); err != nil {
		t.Fatalf("seed %d step %d: restore: %v", seed, i, err)
	}
	snap2, _ := m2.Snapshot()
	if !bytes.Equal(snap, snap2) {
		t.Fatalf("seed %d step %d: restored machine snapshots differently (%d vs %d bytes)", seed, i, len(snap), len(snap2))
	}
	if m2.Revision() != index {
		t.Fatalf("seed %d step %d: restored revision %d, want %d", seed, i, m2.Revision(), index)
	}
	return m2
}

// TestMachineDeterministic: two machines applying the same commands (one
// of them restored from a snapshot of the other half-way) end with equal
// snapshots and equal results.
func TestMachineDeterministic(t *testing.T) {
	for seed := range testseed.Each(t, testseed.Fresh(5)...) {
		rng := rand.New(rand.NewPCG(seed, 9))
		opts := MachineOptions{MaxSessions: 8}
		a, b := NewMachine(opts), NewMachine(opts)
		var seq [20]uint64
		for i := uint64(1); i <= 2000; i++ {
			c := rng.IntN(len(seq))
			if rng.IntN(10) > 0 {
				seq[c]++
			}
			r := Request{Op: Op(2 + rng.IntN(3)), Client: uint64(c + 1), Seq: max(seq[c], 1), Key: fmt.Sprint(rng.IntN(50)), Value: []byte(fmt.Sprint(i)), Version: uint64(rng.IntN(3))}
			cmd := EncodeRequest(&r)
			ra, rb := a.Apply(i, cmd), b.Apply(i, cmd)
			if !bytes.Equal(ra, rb) {
				t.Fatalf("seed %d index %d: results differ", seed, i)
			}
			if i == 1000 {
				snap, _ := a.Snapshot()
				b = NewMachine(opts)
				if err := b.Restore(i, snap); err != nil {
					t.Fatal(err)
				}
			}
		}
		sa, _ := a.Snapshot()
		sb, _ := b.Snapshot()
		if !bytes.Equal(sa, sb) {
			t.Fatalf("seed %d: snapshots differ", seed)
		}
	}
}

// TestRestoreRejectsBadSnapshots: a corrupted or truncated snapshot is
// refused with ErrMalformed and the state stays as it was.
func TestRestoreRejectsBadSnapshots(t *testing.T) {
	m := NewMachine(MachineOptions{})
	for i := uint64(1); i <= 50; i++ {
		m.Apply(i, EncodeRequest(&Request{Op: OpPut, Client: i%3 + 1, Seq: i, Key: fmt.Sprint(i), Value: []byte("v")}))
	}
	snap, _ := m.Snapshot()
	for _, bad := range [][]byte{nil, snap[:7], snap[:len(snap)-1], append(slices.Clone(snap[:20]), 0xff), flip(snap, 10), flip(snap, len(snap)-2)} {
		if err := m.Restore(99, bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("restore of a bad snapshot (%d bytes): %v, want ErrMalformed", len(bad), err)
		}
		if m.Revision() != 50 || m.Len() != 50 {
			t.Fatalf("a refused restore changed the state: revision %d, %d keys", m.Revision(), m.Len())
		}
	}
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x40
	return c
}

// TestWatchWakes: a watch with no events gets a channel that the next
// Apply closes.
func TestWatchWakes(t *testing.T) {
	m := NewMachine(MachineOptions{})
	evs, next, changed, err := m.Events("k", false, 0, 0)
	if err != nil || len(evs) != 0 || next != 1 || changed == nil {
		t.Fatalf("empty watch: %v %d %v %v", evs, next, changed, err)
	}
	select {
	case <-changed:
		t.Fatal("closed before any change")
	default:
	}
	m.Apply(1, EncodeRequest(&Request{Op: OpPut, Client: 1, Seq: 1, Key: "k", Value: []byte("v")}))
	<-changed
	evs, next, _, err = m.Events("k", false, next, 0)
	if err != nil || len(evs) != 1 || evs[0].Type != EventPut || string(evs[0].KV.Value) != "v" || next != 2 {
		t.Fatalf("after put: %v %d %v", evs, next, err)
	}
}

// TestCaptureSnapshot: a captured snapshot encodes the state as of the
// capture, while later writes (to the same keys, deletes included) are
// applied concurrently with its encoding; under -race this also checks
// that the two share nothing they both change.
func TestCaptureSnapshot(t *testing.T) {
	put := func(i int, key, val string) []byte {
		return EncodeRequest(&Request{Op: OpPut, Client: 7, Seq: uint64(i), Key: key, Value: []byte(val)})
	}
	del := func(i int, key string) []byte {
		return EncodeRequest(&Request{Op: OpDelete, Client: 7, Seq: uint64(i), Key: key})
	}
	m, ref := NewMachine(MachineOptions{}), NewMachine(MachineOptions{})
	idx := uint64(0)
	for i := range 2000 {
		idx++
		cmd := put(i+1, fmt.Sprintf("k%04d", i%700), fmt.Sprintf("v%d", i))
		m.Apply(idx, cmd)
		ref.Apply(idx, cmd)
	}
	want, err := ref.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	encode := m.CaptureSnapshot()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 2000; i < 6000; i++ {
			idx++
			if i%3 == 0 {
				m.Apply(idx, del(i+1, fmt.Sprintf("k%04d", i%700)))
			} else {
				m.Apply(idx, put(i+1, fmt.Sprintf("k%04d", i%900), fmt.Sprintf("w%d", i)))
			}
		}
	}()
	got, err := encode()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the captured snapshot (%d bytes) is not the state at its capture (%d bytes)", len(got), len(want))
	}
	// And encoded only after more writes have been applied.
	want2, _ := m.Snapshot()
	encode2 := m.CaptureSnapshot()
	for i := 6000; i < 7000; i++ {
		idx++
		m.Apply(idx, put(i+1, fmt.Sprintf("k%04d", i%800), fmt.Sprintf("x%d", i)))
		if i%2 == 0 {
			idx++
			m.Apply(idx, del(i+1, fmt.Sprintf("k%04d", i%500)))
		}
	}
	got2, _ := encode2()
	if !bytes.Equal(got2, want2) {
		t.Fatalf("a snapshot encoded after later writes (%d bytes) is not the state at its capture (%d bytes)", len(got2), len(want2))
	}
	if now, _ := m.Snapshot(); bytes.Equal(now, want2) {
		t.Fatal("the later writes changed nothing: the test shows nothing")
	}
}
