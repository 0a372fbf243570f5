package wormtx

import (
	"maps"
	"slices"
	"sync"
)

// Prepared is an RM's log record of a transaction it voted yes on: where
// the votes are and the balances it will write if the transaction
// commits. It is durable before the yes vote is written.
type Prepared struct {
	Tx     uint64
	Seg    uint64
	Base   uint64
	Parts  []uint32
	Writes map[string]int64 // new balances
}

// Store is an RM's durable state: committed balances and the log of
// prepared transactions. Calls come from one RM, never concurrently.
type Store interface {
	// Balances is the committed state as of opening.
	Balances() map[string]int64
	// InDoubt lists the prepared transactions not yet finished.
	InDoubt() []Prepared
	// Prepare logs p durably.
	Prepare(p Prepared) error
	// Finish ends a prepared transaction durably: on commit its writes
	// become the balances.
	Finish(tx uint64, commit bool) error
}

// MemStore is a Store in memory. It survives the RM that used it, as a
// disk survives a crash: a restarted RM opened on it recovers.
type MemStore struct {
	mu      sync.Mutex
	bal     map[string]int64
	inDoubt map[uint64]Prepared
}

// NewMemStore returns a store holding balances.
func NewMemStore(balances map[string]int64) *MemStore {
	return &MemStore{bal: maps.Clone(balances), inDoubt: map[uint64]Prepared{}}
}

// Balances implements Store.
func (s *MemStore) Balances() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.bal)
}

// InDoubt implements Store.
func (s *MemStore) InDoubt() []Prepared {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []Prepared
	for _, tx := range slices.Sorted(maps.Keys(s.inDoubt)) {
		ps = append(ps, s.inDoubt[tx])
	}
	return ps
}

// Prepare implements Store.
func (s *MemStore) Prepare(p Prepared) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Writes = maps.Clone(p.Writes)
	s.inDoubt[p.Tx] = p
	return nil
}

// Finish implements Store.
func (s *MemStore) Finish(tx uint64, commit bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.inDoubt[tx]
	if !ok {
		return nil
	}
	if commit {
		maps.Copy(s.bal, p.Writes)
	}
	delete(s.inDoubt, tx)
	return nil
}
