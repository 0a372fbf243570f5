package wor

import (
	"bytes"
	"log/slog"
	"sync"

	"strata/stack"
)

// acceptor is single-shot Paxos acceptor state for one register.
type acceptor struct {
	promised  uint64
	accBallot uint64
	has       bool
	value     []byte
}

// Server is a wormserver in memory mode: a map from address to acceptor
// state. Its Handle method is a stack.Handler.
type Server struct {
	mu   sync.Mutex
	accs map[uint64]*acceptor
	log  *slog.Logger

	Requests  [4]uint64 // by operation (index 0: malformed)
	Conflicts uint64    // accepts of a different value at a new ballot after one was accepted (should stay 0 for chosen values)
}

// NewServer returns an empty wormserver.
func NewServer(log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{accs: map[uint64]*acceptor{}, log: log}
}

// Handle answers one request (a stack.Handler).
func (s *Server) Handle(from stack.Addr, req []byte) []byte {
	r, err := decodeRequest(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.Requests[0]++
		s.log.Warn("wor: malformed request", "from", from, "err", err)
		return response{Status: stErr}.encode()
	}
	s.Requests[r.Op]++
	a := s.accs[r.Addr]
	if a == nil {
		a = &acceptor{}
		if r.Op != opRead {
			s.accs[r.Addr] = a
		}
	}
	status := byte(stOK)
	switch r.Op {
	case opPrepare:
		if r.Ballot > a.promised {
			a.promised = r.Ballot
		} else {
			status = stNack
		}
	case opAccept:
		if r.Ballot >= a.promised {
			if a.has && !bytes.Equal(a.value, r.Value) && r.Ballot == a.accBallot {
				s.Conflicts++ // two values at one ballot: a client bug
			}
			a.promised, a.accBallot, a.has = r.Ballot, r.Ballot, true
			a.value = append(a.value[:0:0], r.Value...)
		} else {
			status = stNack
		}
	}
	return response{Status: status, Promised: a.promised, AccBallot: a.accBallot, Has: a.has, Value: a.value}.encode()
}
