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
// votes. Prepare, Finish and Forget come from one RM, never concurrently,
// and are logged in call order; they need not be durable on return: a
// record is durable once a Sync issued after it reports. Only a prepare
// must be durable before anything depends on it (its vote); a finish or
// forget lost in a crash is redone on recovery (the outcome is in the
// vote registers), and the log's order means a lost record takes every
// later one with it, never an earlier one.
type Store interface {
	// Balances is the committed state as of opening.
	Balances() map[string]int64
	// Votes lists the vote records kept, in transaction order.
	Votes() []Prepared
	// Vote returns the record of tx, if kept.
	Vote(tx uint64) (Prepared, bool)
	// Prepare logs p.
	Prepare(p Prepared) error
	// Finish ends a yes vote's transaction: on commit its writes become
	// the balances. The record stays (Done) until Forget.
	Finish(tx uint64, commit bool) error
	// Forget drops a record.
	Forget(tx uint64) error
	// Sync calls done, perhaps from another goroutine, once every record
	// logged before the call is durable (or with the error that stopped
	// it). Concurrent Syncs may share one flush to disk (group commit).
	Sync(done func(error))
}

// MemStore is a Store in memory that models a disk: what a Sync made
// durable survives Crash, records logged after the last Sync are lost,
// as in a JournalStore whose process dies before its next flush. A
// restarted RM opened on it recovers.
type MemStore struct {
	mu      sync.Mutex
	bal     map[string]int64    // the state the RM sees
	votes   map[uint64]Prepared //
	dbal    map[string]int64    // the durable state
	dvotes  map[uint64]Prepared //
	pending []memRecord         // logged since the last Sync
}

// memRecord is one logged call.
type memRecord struct {
	op     byte // 'p'repare, 'f'inish, 'F'orget
	p      Prepared
	tx     uint64
	commit bool
}

func (r memRecord) apply(bal map[string]int64, votes map[uint64]Prepared) {
	switch r.op {
	case 'p':
		votes[r.p.Tx] = r.p
	case 'f':
		p, ok := votes[r.tx]
		if !ok || p.Done {
			return
		}
		if r.commit {
			maps.Copy(bal, p.Writes)
		}
		p.Done = true
		votes[r.tx] = p
	case 'F':
		delete(votes, r.tx)
	}
}

// NewMemStore returns a store holding balances.
func NewMemStore(balances map[string]int64) *MemStore {
	s := &MemStore{bal: map[string]int64{}, votes: map[uint64]Prepared{}, dbal: map[string]int64{}, dvotes: map[uint64]Prepared{}}
	maps.Copy(s.bal, balances)
	maps.Copy(s.dbal, balances)
	return s
}

func (s *MemStore) log(r memRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.apply(s.bal, s.votes)
	s.pending = append(s.pending, r)
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
	p.Writes = maps.Clone(p.Writes)
	p.Reads = slices.Clone(p.Reads)
	p.Vote = slices.Clone(p.Vote)
	s.log(memRecord{op: 'p', p: p})
	return nil
}

// Finish implements Store.
func (s *MemStore) Finish(tx uint64, commit bool) error {
	s.log(memRecord{op: 'f', tx: tx, commit: commit})
	return nil
}

// Forget implements Store.
func (s *MemStore) Forget(tx uint64) error {
	s.log(memRecord{op: 'F', tx: tx})
	return nil
}

// Sync implements Store: the records logged so far become durable; done
// runs before Sync returns.
func (s *MemStore) Sync(done func(error)) {
	s.mu.Lock()
	for _, r := range s.pending {
		r.apply(s.dbal, s.dvotes)
	}
	s.pending = nil
	s.mu.Unlock()
	done(nil)
}

// Crash drops what was logged since the last Sync, as a process crash
// before its next flush would, and returns the transactions whose
// applied commit was lost with it (their RM applies them again when it
// recovers).
func (s *MemStore) Crash() (lostCommits []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.pending {
		if d, ok := s.dvotes[r.tx]; r.op == 'f' && r.commit && ok && d.Yes && !d.Done && !slices.Contains(lostCommits, r.tx) {
			lostCommits = append(lostCommits, r.tx)
		}
	}
	s.pending = nil
	s.bal, s.votes = maps.Clone(s.dbal), maps.Clone(s.dvotes)
	return lostCommits
}
