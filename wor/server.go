package wor

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"

	"strata/journal"
	"strata/stack"
)

// acceptor is single-shot Paxos acceptor state for one register.
type acceptor struct {
	promised  uint64
	accBallot uint64
	has       bool
	value     []byte
}

// Server is a wormserver: a map from address to acceptor state, in memory
// or persistent in a journal. In persistent mode a reply leaves only once
// the state it reports is durable; concurrent requests share barriers.
type Server struct {
	mu      sync.Mutex
	accs    map[uint64]*acceptor
	trimmed map[uint64]bool // segment ids
	log     *slog.Logger
	store   *journalStore // nil: memory mode

	Requests  [4]uint64 // by operation (index 0: malformed)
	Conflicts uint64    // accepts of a different value at a new ballot after one was accepted (should stay 0 for chosen values)
}

// NewServer returns an empty wormserver.
func NewServer(log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{accs: map[uint64]*acceptor{}, trimmed: map[uint64]bool{}, log: log}
}

// NewPersistentServer recovers a wormserver from a journal.
func NewPersistentServer(j *journal.Journal, log *slog.Logger) (*Server, error) {
	s := NewServer(log)
	s.store = &journalStore{j: j, slots: map[uint64]uint64{}}
	accs, err := s.store.load()
	if err != nil {
		return nil, fmt.Errorf("wor: recover acceptor state: %w", err)
	}
	s.accs = accs
	for addr, a := range accs {
		if addr&(1<<offsetBits-1) == trimOffset && a.promised == trimMark {
			s.trimmed[addr>>offsetBits] = true
			s.forget(addr >> offsetBits)
		}
	}
	return s, nil
}

// Stats is a snapshot of a server's counters.
type Stats struct {
	Malformed, Prepares, Accepts, Reads uint64
	Registers                           int
	Barriers                            uint64 // journal barriers (persistent mode)
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st := Stats{Malformed: s.Requests[0], Prepares: s.Requests[opPrepare], Accepts: s.Requests[opAccept], Reads: s.Requests[opRead], Registers: len(s.accs)}
	s.mu.Unlock()
	if s.store != nil {
		st.Barriers = s.store.j.Stats().Barriers
	}
	return st
}

// Registers is the number of registers with state.
func (s *Server) Registers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accs)
}

// HandleAsync answers a request once its effect is durable (a
// stack.AsyncHandler); in memory mode it answers at once.
func (s *Server) HandleAsync(from stack.Addr, req []byte, respond func([]byte)) {
	resp, _ := s.handle(from, req)
	if s.store == nil {
		respond(resp)
		return
	}
	// Even a read waits: it may report state an earlier request appended
	// and that is not yet durable.
	go func() {
		if err := s.store.j.Flush(); err != nil {
			s.log.Error("wor: journal flush failed; not answering", "err", err)
			return // the client times out; nothing unsafe was promised
		}
		respond(resp)
	}()
}

// Handle answers one request (a stack.Handler) in memory mode.
func (s *Server) Handle(from stack.Addr, req []byte) []byte {
	resp, _ := s.handle(from, req)
	return resp
}

func (s *Server) handle(from stack.Addr, req []byte) ([]byte, bool) {
	r, err := decodeRequest(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.Requests[0]++
		s.log.Warn("wor: malformed request", "from", from, "err", err)
		return response{Status: stErr}.encode(), false
	}
	if r.Op < opTrim {
		s.Requests[r.Op]++
	}
	if r.Op == opTrim {
		return s.trim(r.Addr), false
	}
	if s.trimmed[r.Addr>>offsetBits] {
		return response{Status: stTrim}.encode(), false
	}
	a := s.accs[r.Addr]
	if a == nil {
		a = &acceptor{}
		if r.Op != opRead {
			s.accs[r.Addr] = a
		}
	}
	status := byte(stOK)
	next := *a
	switch r.Op {
	case opPrepare:
		if r.Ballot > a.promised {
			next.promised = r.Ballot
		} else {
			status = stNack
		}
	case opAccept:
		if r.Ballot >= a.promised {
			if a.has && !bytes.Equal(a.value, r.Value) && r.Ballot == a.accBallot {
				s.Conflicts++ // two values at one ballot: a client bug
			}
			next.promised, next.accBallot, next.has = r.Ballot, r.Ballot, true
			next.value = append([]byte(nil), r.Value...)
		} else {
			status = stNack
		}
	}
	changed := status == stOK && r.Op != opRead
	if changed && s.store != nil {
		// Append under the lock so the journal holds this register's
		// states in the order they were decided.
		if err := s.store.save(r.Addr, &next); err != nil {
			s.log.Warn("wor: cannot store acceptor state", "addr", r.Addr, "err", err)
			return response{Status: stFull}.encode(), false
		}
	}
	*a = next
	return response{Status: status, Promised: a.promised, AccBallot: a.accBallot, Has: a.has, Value: a.value}.encode(), changed
}

// trimMark in the promised ballot of a segment's trim slot records, in
// persistent mode, that the segment was trimmed here.
const trimMark = ^uint64(0)

// trim forgets segment seg and refuses its registers from now on. In
// persistent mode the trim is recorded (durably, before the reply) in the
// segment's trim slot; the slots of its registers are not reclaimed yet.
func (s *Server) trim(seg uint64) []byte {
	if seg > MaxSegment {
		return response{Status: stErr}.encode()
	}
	if !s.trimmed[seg] && s.store != nil {
		mark := acceptor{promised: trimMark, accBallot: trimMark, has: true}
		if err := s.store.save(Addr(seg, trimOffset), &mark); err != nil {
			s.log.Warn("wor: cannot record a trim", "segment", seg, "err", err)
			return response{Status: stFull}.encode()
		}
	}
	s.trimmed[seg] = true
	s.forget(seg)
	return response{Status: stOK}.encode()
}

// forget drops the in-memory state of every register of seg.
func (s *Server) forget(seg uint64) {
	for addr := range s.accs {
		if addr>>offsetBits == seg {
			delete(s.accs, addr)
		}
	}
}
