package wormtx

import (
	"maps"
	"slices"
	"sync"
)

// Prepared is an RM's log record of its vote on a transaction, made
// durable before the vote is written into its register: where the votes
// are, the vote itself and, for a yes, the balances it writes if the
// transaction commits and the accounts it read.
//
// The record outlives the transaction's outcome for a while (until
// Forget) so that a prepare delivered again, even to the RM's next
// incarnation, is answered with the same vote: a register written under
// the coordinator's capture must get one value only.
type Prepared struct {
	Tx     uint64
	Seg    uint64
	Base   uint64
	Parts  []uint32
	Vote   []byte           // the register value (an encoded vote)
	Yes    bool             // a yes vote: locks, writes
	Writes map[string]int64 // new balances
	// Reads are the accounts it read: their shared locks are held to the
	// end too, across a restart (strict two-phase locking).
	Reads []string
	// By is the incarnation that prepared it (its vote carries the same).
	By uint64
	// Done: the outcome is applied (or the vote was no).
	Done bool
}

// Store is an RM's durable state: committed balances and the log of its
// votes. Calls come from one RM, never concurrently.
type Store interface {
	// Balances is the committed state as of opening.
	Balances() map[string]int64
	// Votes lists the vote records kept, in transaction order.
	Votes() []Prepared
	// Vote returns the record of tx, if kept.
	Vote(tx uint64) (Prepared, bool)
	// Prepare logs p durably.
	Prepare(p Prepared) error
	// Finish ends a yes vote's transaction durably: on commit its writes
	// become the balances. The record stays (Done) until Forget.
	Finish(tx uint64, commit bool) error
	// Forget drops a record.
	Forget(tx uint64) error
}

// MemStore is a Store in memory. It survives the RM that used it, as a
// disk survives a crash: a restarted RM opened on it recovers.
type MemStore struct {
	mu    sync.Mutex
	bal   map[string]int64
	votes map[uint64]Prepared
}

// NewMemStore returns a store holding balances.
func NewMemStore(balances map[string]int64) *MemStore {
	return &MemStore{bal: maps.Clone(balances), votes: map[uint64]Prepared{}}
}

// Balances implements Store.
func (s *MemStore) Balances() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.bal)
}

// Votes implements Store.
func (s *MemStore) Votes() []Prepared {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []Prepared
	for _, tx := range slices.Sorted(maps.Keys(s.votes)) {
		ps = append(ps, s.votes[tx])
	}
	return ps
}

// InDoubt lists the yes votes whose outcome is not applied yet.
func (s *MemStore) InDoubt() []Prepared {
	var out []Prepared
	for _, p := range s.Votes() {
		if !p.Done {
			out = append(out, p)
		}
	}
	return out
}

// Vote implements Store.
func (s *MemStore) Vote(tx uint64) (Prepared, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.votes[tx]
	return p, ok
}

// Prepare implements Store.
func (s *MemStore) Prepare(p Prepared) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Writes = maps.Clone(p.Writes)
	p.Reads = slices.Clone(p.Reads)
	p.Vote = slices.Clone(p.Vote)
	s.votes[p.Tx] = p
	return nil
}

// Finish implements Store.
func (s *MemStore) Finish(tx uint64, commit bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.votes[tx]
	if !ok || p.Done {
		return nil
	}
	if commit {
		maps.Copy(s.bal, p.Writes)
	}
	p.Done = true
	s.votes[tx] = p
	return nil
}

// Forget implements Store.
func (s *MemStore) Forget(tx uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.votes, tx)
	return nil
}
