package wor

// Values of a persistent server live in their journal slots; memory keeps
// every register's ballots but only the most recently stored values, up
// to a byte budget. The registers read most are the ones written last
// (followers and subscribers read what a leader has just written), so a
// first-in first-out queue of stored values is the cache: when the bytes
// queued pass the budget, the oldest entry's register drops its value
// (it is spilled) and a later read takes it from the slot. Without this a
// wormserver needed its whole live register space in memory.

// DefaultValueCache is the bytes of accepted values a persistent server
// keeps in memory by default (Server.SetValueCache).
const DefaultValueCache = 64 << 20

// spillEntryCost is what a queued value costs beside its bytes (the
// queue entry and the acceptor it keeps in memory), roughly.
const spillEntryCost = 64

// spillQueue is the first-in first-out queue of stored values, by
// register address and size. An address stored twice is queued twice:
// the older entry, when it leaves, spills the newer value early, which
// costs a slot read and nothing else.
type spillQueue struct {
	addrs []uint64
	sizes []int
	head  int // entries below head have left
	bytes int // sum of sizes[head:]
}

func (q *spillQueue) push(addr uint64, n int) {
	q.addrs = append(q.addrs, addr)
	q.sizes = append(q.sizes, n)
	q.bytes += n
}

func (q *spillQueue) pop() (addr uint64, ok bool) {
	if q.head == len(q.addrs) {
		return 0, false
	}
	addr, n := q.addrs[q.head], q.sizes[q.head]
	q.head++
	q.bytes -= n
	if q.head > 1024 && q.head*2 > len(q.addrs) {
		// Reuse the front of the arrays rather than grow them forever.
		k := copy(q.addrs, q.addrs[q.head:])
		copy(q.sizes, q.sizes[q.head:])
		q.addrs, q.sizes, q.head = q.addrs[:k], q.sizes[:k], 0
	}
	return addr, true
}

// SetValueCache sets how many bytes of accepted values a persistent
// server keeps in memory (default DefaultValueCache; 0 keeps none: every
// read of a value goes to its slot). Memory mode keeps every value.
func (s *Server) SetValueCache(bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cacheBudget = max(0, bytes)
	s.trimCache()
}

// cached queues a register's newly stored value, spilling the oldest
// values past the budget. Called with the lock held.
func (s *Server) cached(addr uint64, a *acceptor) {
	if s.store == nil || !a.has || a.spilled {
		return
	}
	// The entry counts its bookkeeping too, so that tiny values do not
	// queue without bound.
	s.cache.push(addr, len(a.value)+spillEntryCost)
	s.trimCache()
}

func (s *Server) trimCache() {
	for s.cache.bytes > s.cacheBudget {
		addr, ok := s.cache.pop()
		if !ok {
			return
		}
		if a := s.accs[addr]; a != nil && a.has && !a.spilled {
			a.value, a.spilled = nil, true
		}
	}
}

// loaded returns a with its value in memory, read back from the
// register's slot if it was spilled (the server's copy stays spilled).
// Called with the lock held.
func (s *Server) loaded(addr uint64, a acceptor) (acceptor, error) {
	if !a.spilled {
		return a, nil
	}
	v, err := s.store.value(addr)
	if err != nil {
		return a, err
	}
	s.SpillReads++
	a.value, a.spilled = v, false
	return a, nil
}
