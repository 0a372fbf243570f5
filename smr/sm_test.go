package smr

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
)

// testSM is the tests' state machine: a counter and a string map.
// Commands are text: "add <id>" (the counter's new value), "put <k> <v>
// <id>" (the old value), "get <k> <id>" (the value). It records every
// command it applies (and a hash of the whole sequence, carried in its
// snapshots), so tests can compare what replicas applied.
type testSM struct {
	mu      sync.Mutex
	index   uint64
	counter int64
	kv      map[string]string
	hash    uint64   // FNV-1a chained over every (index, cmd) applied, snapshots included
	applied []string // "index cmd" applied here since the start or the last restore
	from    uint64   // index the applied list starts after (a restore)
	errs    []string // broken promises of the Apply contract
	snaps   int      // snapshots taken
	restore int      // snapshots restored
}

func newTestSM() *testSM { return &testSM{kv: map[string]string{}} }

func (s *testSM) Apply(index uint64, cmd []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index != s.index+1 {
		s.errs = append(s.errs, fmt.Sprintf("Apply(%d) after index %d", index, s.index))
	}
	s.index = index
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %d %s", s.hash, index, cmd)
	s.hash = h.Sum64()
	s.applied = append(s.applied, fmt.Sprintf("%d %s", index, cmd))
	f := strings.Fields(string(cmd))
	switch {
	case len(f) == 2 && f[0] == "add":
		s.counter++
		return []byte(strconv.FormatInt(s.counter, 10))
	case len(f) == 4 && f[0] == "put":
		old := s.kv[f[1]]
		s.kv[f[1]] = f[2]
		return []byte(old)
	case len(f) == 3 && f[0] == "get":
		return []byte(s.kv[f[1]])
	}
	return []byte("?")
}

type testSnap struct {
	Index   uint64
	Counter int64
	KV      map[string]string
	Hash    uint64
	Pad     string // makes snapshots span several chunks
}

func (s *testSM) Snapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps++
	return json.Marshal(testSnap{Index: s.index, Counter: s.counter, KV: s.kv, Hash: s.hash, Pad: strings.Repeat("p", 3000)})
}

func (s *testSM) Restore(index uint64, b []byte) error {
	var t testSnap
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.Index != index {
		s.errs = append(s.errs, fmt.Sprintf("Restore(%d) of a snapshot taken at %d", index, t.Index))
	}
	s.index, s.counter, s.kv, s.hash = t.Index, t.Counter, t.KV, t.Hash
	if s.kv == nil {
		s.kv = map[string]string{}
	}
	s.applied, s.from = nil, index
	s.restore++
	return nil
}

// state returns a summary for comparisons.
func (s *testSM) state() (index uint64, counter int64, hash uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index, s.counter, s.hash
}

func (s *testSM) get(k string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kv[k]
}

func (s *testSM) log() (from uint64, applied []string, errs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.from, append([]string(nil), s.applied...), append([]string(nil), s.errs...)
}

func (s *testSM) snapshots() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snaps
}

func (s *testSM) restores() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restore
}
