package kv

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// What a history of the key-value service is checked against (the
// campaign in lin_test.go; docs/kv.md, "Linearizability campaign"):
//
//  1. Per key, porcupine: the operations on one key must be linearizable
//     against a single key of etcd's model (kvModel): a key is absent or
//     holds a value, a version (1 at creation, +1 per put), the revision
//     that created it and the one that last modified it. Gets check all
//     four; puts, deletes and CASes check what they returned (revision,
//     version, succeeded, existed) and change the state. A write whose
//     outcome the client does not know (its call ended in an error) may
//     take effect at any time after its call, or never: porcupine gets it
//     with an infinite return time and the model lets it apply or not.
//     Reads that failed are left out (they change nothing).
//  2. Scans, per key: a scan reads, at one moment within its interval,
//     every key of its range; each key of the test's key set that the scan
//     covered (the whole range, or up to the last key returned when the
//     scan stopped at its limit) becomes a get of that key with the scan's
//     interval — found with the returned value, version and revisions, or
//     not found if the scan skipped it — and goes through the per-key
//     check. So a scan may neither return a value no linearization allows
//     nor leave out a key that must be there (one a write that completed
//     before the scan began put there, unless a delete may have removed it
//     since).
//  3. Across keys, by revision (checkRevisions): the revision of a write
//     is its log index, so it orders all writes. Acknowledged writes have
//     distinct revisions, and a write that returned before another was
//     called has the smaller one. A scan reads the state at one revision
//     R (which its reply carries): every write acknowledged before the
//     scan was called has a revision <= R, every write called after it
//     returned one > R, and the scan shows each covered key as of R: no
//     entry modified after R, none older than an acknowledged write of
//     that key at or below R, none missing that such a write created
//     (unless a delete of unknown outcome may have removed it). A key's
//     modification revision, from a get or a scan, names the write that
//     made it: an acknowledged write with that revision must be a put or
//     successful CAS of the same key and value.
//  4. Shape of a scan's reply: keys in order, distinct, inside the range,
//     no more than the limit, and "more" only with at least one key.
//
// Not checked: watches; sequential reads (not linearizable by design);
// that the revisions of unacknowledged writes fit (they are unknown).

// linOp is one operation of a history as its client saw it. Times are
// nanoseconds since the run began; ret is math.MaxInt64 for a write
// whose outcome is unknown.
type linOp struct {
	client   int
	op       Op     // OpGet, OpPut, OpDelete, OpCAS or OpScan
	key, end string // a scan reads [key, end) ("": to the last key)
	value    string // put, CAS
	version  uint64 // CAS: the version the key must have
	limit    int    // scan (0: no limit)

	call, ret int64
	unknown   bool // a write that failed: it may or may not have been applied

	found bool     // get: the key exists
	kv    KeyValue // get: what it returned
	wr    WriteResult
	kvs   []KeyValue // scan: what it returned
	more  bool       // scan
	rev   uint64     // scan: the revision of the state it read
}

func (o *linOp) String() string {
	ret := fmt.Sprint(o.ret)
	if o.ret == math.MaxInt64 {
		ret = "∞"
	}
	var s string
	switch o.op {
	case OpGet:
		if o.found {
			s = fmt.Sprintf("get(%s) -> %s", o.key, kvString(o.kv))
		} else {
			s = fmt.Sprintf("get(%s) -> not found", o.key)
		}
	case OpPut:
		s = fmt.Sprintf("put(%s, %s)", o.key, o.value)
	case OpDelete:
		s = fmt.Sprintf("delete(%s)", o.key)
	case OpCAS:
		s = fmt.Sprintf("cas(%s, v%d, %s)", o.key, o.version, o.value)
	case OpScan:
		var kvs []string
		for _, kv := range o.kvs {
			kvs = append(kvs, kvString(kv))
		}
		s = fmt.Sprintf("scan[%s, %s) limit %d -> rev %d more %v [%s]", o.key, o.end, o.limit, o.rev, o.more, strings.Join(kvs, " "))
	}
	if o.op.IsWrite() {
		if o.unknown {
			s += " -> unknown"
		} else {
			s += fmt.Sprintf(" -> %+v", o.wr)
		}
	}
	return fmt.Sprintf("client %d [%d, %s] %s", o.client, o.call, ret, s)
}

func kvString(kv KeyValue) string {
	return fmt.Sprintf("%s=%s(v%d c%d m%d)", kv.Key, kv.Value, kv.Version, kv.Create, kv.Mod)
}

// The per-key model's input, output and state.
type kvIn struct {
	op      Op // OpGet for gets and the keys of scans
	key     string
	value   string
	version uint64 // CAS
	scan    bool   // a key of a scan
}

type kvOut struct {
	unknown            bool // a write of unknown outcome
	found              bool // get
	value              string
	version            uint64 // get: the key's; write: as WriteResult
	create, mod        uint64 // get
	rev                uint64 // write
	succeeded, existed bool   // write
}

// kvState is one key: absent, or a value with its version and revisions
// (create and mod 0: not known, when a write of unknown outcome made
// them; a get that reads them fills them in).
type kvState struct {
	exists               bool
	value                string
	version, create, mod uint64
}

// applyPut is the state after a put (or successful CAS) of value at
// revision rev (0: unknown).
func applyPut(s kvState, value string, rev uint64) kvState {
	if !s.exists {
		return kvState{exists: true, value: value, version: 1, create: rev, mod: rev}
	}
	return kvState{exists: true, value: value, version: s.version + 1, create: s.create, mod: rev}
}

// known reports whether a revision of the model (0: unknown) allows the
// one observed.
func known(model, seen uint64) bool { return model == 0 || model == seen }

var kvModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(kvIn).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(kvState), input.(kvIn), output.(kvOut)
		switch in.op {
		case OpGet:
			if !out.found {
				if !s.exists {
					return []any{s}
				}
				return nil
			}
			if s.exists && s.value == out.value && s.version == out.version && known(s.create, out.create) && known(s.mod, out.mod) {
				s.create, s.mod = out.create, out.mod
				return []any{s}
			}
			return nil
		case OpPut:
			if out.unknown {
				return []any{s, applyPut(s, in.value, 0)}
			}
			next := applyPut(s, in.value, out.rev)
			if out.succeeded && out.existed == s.exists && out.version == next.version {
				return []any{next}
			}
			return nil
		case OpDelete:
			if out.unknown {
				return []any{s, kvState{}}
			}
			if out.existed == s.exists && out.succeeded == s.exists && out.version == 0 {
				return []any{kvState{}}
			}
			return nil
		case OpCAS:
			cur := uint64(0)
			if s.exists {
				cur = s.version
			}
			if out.unknown {
				if in.version == cur {
					return []any{s, applyPut(s, in.value, 0)}
				}
				return []any{s}
			}
			if out.existed != s.exists {
				return nil
			}
			if in.version == cur {
				next := applyPut(s, in.value, out.rev)
				if out.succeeded && out.version == next.version {
					return []any{next}
				}
				return nil
			}
			if !out.succeeded && out.version == cur {
				return []any{s}
			}
			return nil
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvIn), output.(kvOut)
		var s string
		switch in.op {
		case OpGet:
			s = "get"
			if in.scan {
				s = "scan"
			}
			if !out.found {
				return fmt.Sprintf("%s(%s) -> not found", s, in.key)
			}
			return fmt.Sprintf("%s(%s) -> %s v%d c%d m%d", s, in.key, out.value, out.version, out.create, out.mod)
		case OpPut:
			s = fmt.Sprintf("put(%s, %s)", in.key, in.value)
		case OpDelete:
			s = fmt.Sprintf("delete(%s)", in.key)
		case OpCAS:
			s = fmt.Sprintf("cas(%s, v%d, %s)", in.key, in.version, in.value)
		}
		if out.unknown {
			return s + " -> unknown"
		}
		return fmt.Sprintf("%s -> rev %d v%d succeeded %v existed %v", s, out.rev, out.version, out.succeeded, out.existed)
	},
	DescribeState: func(state any) string {
		s := state.(kvState)
		if !s.exists {
			return "absent"
		}
		return fmt.Sprintf("%s v%d c%d m%d", s.value, s.version, s.create, s.mod)
	},
}

// covered reports whether scan o read key k: k is in its range and,
// if the scan stopped at its limit, not after the last key returned.
func (o *linOp) covered(k string) bool {
	if k < o.key || (o.end != "" && k >= o.end) {
		return false
	}
	if o.more {
		return len(o.kvs) > 0 && k <= o.kvs[len(o.kvs)-1].Key
	}
	return true
}

// porcupineOps turns a history into porcupine operations on single keys:
// gets and writes as they are, each scan as a get of every key of keys
// that it covered (found or not), and of any other key it returned, with
// the scan's interval.
func porcupineOps(keys []string, h []linOp) []porcupine.Operation {
	var out []porcupine.Operation
	for i := range h {
		o := &h[i]
		add := func(in kvIn, res kvOut) {
			out = append(out, porcupine.Operation{ClientId: o.client, Input: in, Call: o.call, Output: res, Return: o.ret})
		}
		switch o.op {
		case OpGet:
			add(kvIn{op: OpGet, key: o.key}, kvOut{found: o.found, value: string(o.kv.Value), version: o.kv.Version, create: o.kv.Create, mod: o.kv.Mod})
		case OpScan:
			got := map[string]KeyValue{}
			read := slices.Clone(keys)
			for _, kv := range o.kvs {
				got[kv.Key] = kv
				if !slices.Contains(keys, kv.Key) {
					read = append(read, kv.Key) // a key nobody wrote: the model flags it
				}
			}
			for _, k := range read {
				if !o.covered(k) {
					continue
				}
				kv, found := got[k]
				add(kvIn{op: OpGet, key: k, scan: true}, kvOut{found: found, value: string(kv.Value), version: kv.Version, create: kv.Create, mod: kv.Mod})
			}
		default:
			add(kvIn{op: o.op, key: o.key, value: o.value, version: o.version},
				kvOut{unknown: o.unknown, rev: o.wr.Rev, version: o.wr.Version, succeeded: o.wr.Succeeded, existed: o.wr.Existed})
		}
	}
	return out
}

// checkHistory runs every check above on h, a history over keys (every
// key any operation touched; scans are projected onto them), with
// porcupine bounded by timeout per key. It returns the number of
// porcupine operations checked and, for a violation, an error describing
// it; with vizDir set, a violation of the per-key model also writes
// porcupine's visualization of that key's history to a file there, which
// the error names.
func checkHistory(keys []string, h []linOp, timeout time.Duration, vizDir string, crossKey bool) (int, error) {
	for i := range h {
		if err := checkScanShape(&h[i]); err != nil {
			return 0, err
		}
	}
	ops := porcupineOps(keys, h)
	model := kvModel
	model.Partition = nil // partitioned here, to report the failing key alone
	m := model.ToModel()
	for _, part := range kvModel.Partition(ops) {
		key := part[0].Input.(kvIn).key
		res, info := porcupine.CheckOperationsVerbose(m, part, timeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			return len(ops), fmt.Errorf("key %s: porcupine gave up after %v on %d operations", key, timeout, len(part))
		}
		msg := fmt.Sprintf("key %s: history of %d operations is not linearizable:%s", key, len(part), describeOps(part))
		if vizDir != "" {
			f := filepath.Join(vizDir, fmt.Sprintf("kv-lin-%s-%d.html", key, time.Now().UnixNano()))
			if err := porcupine.VisualizePath(m, info, f); err == nil {
				msg += "\nvisualization: " + f
			}
		}
		return len(ops), fmt.Errorf("%s", msg)
	}
	if !crossKey {
		return len(ops), nil
	}
	return len(ops), checkRevisions(h)
}

func describeOps(ops []porcupine.Operation) string {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var b strings.Builder
	for _, op := range ops {
		ret := fmt.Sprint(op.Return)
		if op.Return == math.MaxInt64 {
			ret = "∞"
		}
		fmt.Fprintf(&b, "\n  client %d [%d, %s] %s", op.ClientId, op.Call, ret, kvModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

// checkScanShape checks a scan's reply on its own: keys in order,
// distinct, in the range, within the limit; more only with keys.
func checkScanShape(o *linOp) error {
	if o.op != OpScan {
		return nil
	}
	for i, kv := range o.kvs {
		if kv.Key < o.key || (o.end != "" && kv.Key >= o.end) {
			return fmt.Errorf("%v: key %q outside the range", o, kv.Key)
		}
		if i > 0 && kv.Key <= o.kvs[i-1].Key {
			return fmt.Errorf("%v: keys out of order or repeated", o)
		}
	}
	if o.limit > 0 && len(o.kvs) > o.limit {
		return fmt.Errorf("%v: %d keys over the limit", o, len(o.kvs))
	}
	if o.more && len(o.kvs) == 0 {
		return fmt.Errorf("%v: more without keys", o)
	}
	return nil
}

// changes reports whether acknowledged write o changed its key: a put, a
// CAS that succeeded, a delete of a key that existed.
func (o *linOp) changes() bool {
	return o.op.IsWrite() && !o.unknown && (o.op == OpPut || o.wr.Succeeded)
}

// checkRevisions is check 3: revisions against real time and scans as
// snapshots at one revision.
func checkRevisions(h []linOp) error {
	var acked []*linOp
	byRev := map[uint64]*linOp{}
	for i := range h {
		o := &h[i]
		if !o.op.IsWrite() || o.unknown {
			continue
		}
		if o.wr.Rev == 0 {
			return fmt.Errorf("%v: acknowledged with revision 0", o)
		}
		if p := byRev[o.wr.Rev]; p != nil {
			return fmt.Errorf("two acknowledged writes with revision %d:\n  %v\n  %v", o.wr.Rev, p, o)
		}
		byRev[o.wr.Rev] = o
		acked = append(acked, o)
	}
	// Real-time order: sorted by return, a write's revision must exceed
	// that of every write that returned before it was called.
	slices.SortFunc(acked, func(a, b *linOp) int { return cmp.Compare(a.ret, b.ret) })
	for _, b := range acked {
		for _, a := range acked {
			if a.ret >= b.call {
				break
			}
			if a.wr.Rev >= b.wr.Rev {
				return fmt.Errorf("revisions against real time: %v returned before %v was called, yet has revision %d >= %d", a, b, a.wr.Rev, b.wr.Rev)
			}
		}
	}
	// A key's modification revision names the write that made it.
	modOK := func(o *linOp, kv KeyValue) error {
		if w := byRev[kv.Mod]; w != nil && (w.key != kv.Key || !w.changes() || w.op == OpDelete || w.value != string(kv.Value)) {
			return fmt.Errorf("%v: %s was modified at revision %d, but that revision is %v", o, kvString(kv), kv.Mod, w)
		}
		return nil
	}
	for i := range h {
		o := &h[i]
		switch {
		case o.op == OpGet && o.found:
			if err := modOK(o, o.kv); err != nil {
				return err
			}
		case o.op == OpScan:
			if err := checkScanRevision(o, h, acked, modOK); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkScanRevision checks scan s against the acknowledged writes (sorted
// by return) as the state at its revision s.rev.
func checkScanRevision(s *linOp, h []linOp, acked []*linOp, modOK func(*linOp, KeyValue) error) error {
	R := s.rev
	for _, w := range acked {
		if w.ret < s.call && w.wr.Rev > R {
			return fmt.Errorf("%v read revision %d, but %v returned before it was called", s, R, w)
		}
		if s.ret < w.call && w.wr.Rev <= R {
			return fmt.Errorf("%v read revision %d, but %v was called after it returned", s, R, w)
		}
	}
	got := map[string]KeyValue{}
	for _, kv := range s.kvs {
		got[kv.Key] = kv
		if kv.Mod > R || kv.Create > kv.Mod || kv.Version == 0 {
			return fmt.Errorf("%v: %s does not fit revision %d", s, kvString(kv), R)
		}
		if err := modOK(s, kv); err != nil {
			return err
		}
	}
	// The last acknowledged change of each covered key at or below R.
	last := map[string]*linOp{}
	for _, w := range acked {
		if w.changes() && w.wr.Rev <= R && s.covered(w.key) {
			if p := last[w.key]; p == nil || p.wr.Rev < w.wr.Rev {
				last[w.key] = w
			}
		}
	}
	for k, w := range last {
		kv, present := got[k]
		switch {
		case present && kv.Mod < w.wr.Rev:
			return fmt.Errorf("%v at revision %d shows %s, older than %v", s, R, kvString(kv), w)
		case !present && w.op != OpDelete && !mayDelete(h, k, s.ret):
			return fmt.Errorf("%v at revision %d leaves out %s, which %v wrote (and no delete of it is of unknown outcome)", s, R, k, w)
		}
	}
	return nil
}

// mayDelete reports whether a delete of key of unknown outcome was called
// before time t (it may have been applied before a read then).
func mayDelete(h []linOp, key string, t int64) bool {
	for i := range h {
		if o := &h[i]; o.op == OpDelete && o.unknown && o.key == key && o.call < t {
			return true
		}
	}
	return false
}
