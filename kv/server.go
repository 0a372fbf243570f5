package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"strata/smr"
	"strata/stack"
)

// Props is the protocol stack kv servers and clients run: the one the
// wormservers run, since a kv server's node also speaks to them.
const Props = "Reliable,Fragment,RPC"

// Server defaults.
const (
	// DefaultRequestTimeout is how long a server works on a request that
	// names no timeout.
	DefaultRequestTimeout = 5 * time.Second
	// maxHops bounds forwarding: a request forwarded this often is not
	// forwarded again (the first server retries instead).
	maxHops = 2
	// forwardTimeout bounds one forwarded attempt, so that a dead leader
	// costs a server this long before it looks for the new one.
	forwardTimeout = 2 * time.Second
)

// replica is what a Server needs of an smr.Replica (an interface so that
// tests can drive the server over a fake log).
type replica interface {
	Propose(ctx context.Context, cmd []byte) ([]byte, error)
	Read(ctx context.Context, c smr.Consistency, fn func()) error
	Leader() (id uint64, addr string, epoch uint64, ok bool)
	Applied() uint64
	Close() error
}

// ServerConfig configures a Server.
type ServerConfig struct {
	// Node is the server's RPC endpoint: it serves clients there and
	// forwards to other servers from it. It may be the node the replica's
	// wor.Client uses. The caller closes it after the server.
	Node *stack.Node
	// Replica configures the WormPaxos replica. Replica.Addr, the address
	// other servers forward to, defaults to Node.Local().
	Replica smr.Config
	// Machine bounds sessions and the watch history (every server of a
	// group must use the same).
	Machine MachineOptions
	// RequestTimeout is how long the server works on a request that
	// names no timeout (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	Logger         *slog.Logger
}

// Server serves the key-value service on a node: writes go through the
// replica's log at the leader (a server that does not lead forwards to
// the one that does), gets and scans are linearizable reads of the
// replica or, on request, reads of its local state, and watches wait on
// the local state's events.
type Server struct {
	node    *stack.Node
	rep     replica
	m       *Machine
	addr    string
	timeout time.Duration
	log     *slog.Logger

	ctx    context.Context // canceled by Close: requests in flight give up
	cancel context.CancelFunc
	wg     sync.WaitGroup // requests in flight

	closing   atomic.Bool
	forwarded atomic.Uint64 // requests this server forwarded
	malformed atomic.Uint64 // requests that did not decode or validate
	inflight  atomic.Int64

	obsMu    sync.Mutex // guards observer
	observer func(op Op, st Status, d time.Duration)
}

// StartServer catches the replica up (snapshot, then the log) and serves
// the key-value service on cfg.Node until Close.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Node == nil {
		return nil, errors.New("kv: ServerConfig.Node is nil")
	}
	if cfg.Replica.Addr == "" {
		cfg.Replica.Addr = string(cfg.Node.Local())
	}
	if cfg.Replica.Logger == nil {
		cfg.Replica.Logger = cfg.Logger
	}
	m := NewMachine(cfg.Machine)
	rep, err := smr.Start(ctx, cfg.Replica, m)
	if err != nil {
		return nil, fmt.Errorf("kv: starting replica %d: %w", cfg.Replica.ID, err)
	}
	return newServer(cfg, rep, m), nil
}

// newServer serves rep, which applies to m, on cfg.Node.
func newServer(cfg ServerConfig, rep replica, m *Machine) *Server {
	s := &Server{node: cfg.Node, rep: rep, m: m, addr: cfg.Replica.Addr, timeout: cfg.RequestTimeout, log: cfg.Logger}
	if s.addr == "" {
		s.addr = string(cfg.Node.Local())
	}
	if s.timeout <= 0 {
		s.timeout = DefaultRequestTimeout
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("kv", cfg.Replica.ID)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	cfg.Node.HandleAsync(s.handleAsync)
	return s
}

// Machine is the server's state machine (read it for metrics; never
// apply to it).
func (s *Server) Machine() *Machine { return s.m }

// Addr is the address the server advertises to the others.
func (s *Server) Addr() string { return s.addr }

// Close stops serving: requests in flight end with ErrUnavailable (so
// their clients retry elsewhere), new ones get it at once; then the
// replica closes.
func (s *Server) Close() error {
	if s.closing.Swap(true) {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	return s.rep.Close()
}

// ServerStats are a server's counters.
type ServerStats struct {
	Forwarded, Malformed uint64
	InFlight             int64
	Keys, Sessions       int
	Revision             uint64 // the last index applied
	Leader               bool   // this server's replica leads
	LeaderID, Epoch      uint64
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	st := ServerStats{Forwarded: s.forwarded.Load(), Malformed: s.malformed.Load(), InFlight: s.inflight.Load(),
		Keys: s.m.Len(), Sessions: s.m.Sessions(), Revision: s.m.Revision()}
	id, addr, epoch, ok := s.rep.Leader()
	if ok {
		st.LeaderID, st.Epoch, st.Leader = id, epoch, addr == s.addr
	}
	return st
}

// SetObserver sets a function told, for every request the server
// answers, its operation, outcome and how long the server took.
func (s *Server) SetObserver(f func(op Op, st Status, d time.Duration)) {
	s.obsMu.Lock()
	s.observer = f
	s.obsMu.Unlock()
}

// handleAsync is the node's request handler: it must not block, so each
// request is served on a goroutine of its own (writes wait for the log).
func (s *Server) handleAsync(_ stack.Addr, req []byte, respond func([]byte)) {
	if s.closing.Load() {
		respond(EncodeResponse(errorResponse(fmt.Errorf("%w: server %s is closing", ErrUnavailable, s.addr))))
		return
	}
	s.wg.Add(1)
	s.inflight.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.inflight.Add(-1)
		respond(s.Serve(req))
	}()
}

// Serve answers one encoded request with an encoded reply (what the
// node's handler does; exported for tests and other transports).
func (s *Server) Serve(b []byte) []byte {
	s.obsMu.Lock()
	f := s.observer
	s.obsMu.Unlock()
	return serveRequest(s.ctx, b, s.timeout, &s.malformed, s.serve, f)
}

// serveRequest is a server's Serve: it decodes and validates b (a bad
// request counts in malformed), runs serve under the request's timeout
// (at most a minute; def if it names none) within parent, and tells
// observe, if set, the operation, status and time taken.
func serveRequest(parent context.Context, b []byte, def time.Duration, malformed *atomic.Uint64,
	serve func(context.Context, *Request) ([]byte, Status), observe func(Op, Status, time.Duration)) []byte {
	start := time.Now()
	r, err := DecodeRequest(b)
	if err == nil {
		err = r.Validate()
	}
	var out []byte
	var st Status
	op := Op(0)
	if r != nil {
		op = r.Op
	}
	if err != nil {
		malformed.Add(1)
		st = StatusOf(err)
		out = EncodeResponse(errorResponse(err))
	} else {
		timeout := def
		if r.Timeout > 0 {
			timeout = min(r.Timeout, time.Minute)
		}
		ctx, cancel := context.WithTimeout(parent, timeout)
		out, st = serve(ctx, r)
		cancel()
	}
	if observe != nil {
		observe(op, st, time.Since(start))
	}
	return out
}

func (s *Server) serve(ctx context.Context, r *Request) ([]byte, Status) {
	switch r.Op {
	case OpPut, OpDelete, OpCAS:
		cmd := encodeCommand(r)
		return s.replicated(ctx, r, func() ([]byte, error) { return s.rep.Propose(ctx, cmd) })
	case OpGet, OpScan:
		c := smr.Linearizable
		if r.Sequential {
			c = smr.Sequential
		}
		return s.replicated(ctx, r, func() ([]byte, error) {
			var resp *Response
			if err := s.rep.Read(ctx, c, func() { resp = s.m.read(r) }); err != nil {
				return nil, err
			}
			return EncodeResponse(resp), nil
		})
	case OpWatch:
		return s.reply(s.watch(ctx, r))
	case OpStatus:
		resp := &Response{Rev: s.m.Revision()}
		resp.LeaderID, resp.Leader, resp.Epoch, _ = s.rep.Leader()
		return s.reply(resp)
	}
	return s.reply(errorResponse(fmt.Errorf("%w: code %d", ErrUnknownOp, uint8(r.Op))))
}

func (s *Server) reply(r *Response) ([]byte, Status) { return EncodeResponse(r), r.Status }

// replicated runs attempt (a Propose or a Read of the replica) until it
// succeeds, forwarding to the leader while this replica does not lead.
// A request that came from a client (Hops 0) is retried here until its
// deadline: leadership may be moving, the leader may be dead. A forwarded
// one gets one try, so that the first server stays in charge.
func (s *Server) replicated(ctx context.Context, r *Request, attempt func() ([]byte, error)) ([]byte, Status) {
	var last error
	for try := 0; ; try++ {
		out, err := attempt()
		if err == nil {
			if out == nil {
				return s.reply(errorResponse(fmt.Errorf("%w: %s applied without a result", ErrInternal, r.Op)))
			}
			return out, Status(out[1])
		}
		last = err
		var nl *smr.NotLeaderError
		switch {
		case errors.As(err, &nl):
			if nl.LeaderAddr != "" && nl.LeaderAddr != s.addr && r.Hops < maxHops {
				out, err := s.forward(ctx, nl.LeaderAddr, r)
				if err == nil {
					return withLeader(out, nl), Status(out[1])
				}
				last = err
			}
		case errors.Is(err, smr.ErrTooLarge):
			return s.reply(errorResponse(fmt.Errorf("%w: the %s command of %d bytes is larger than the replicated log takes (%v)", ErrValueTooLarge, r.Op, len(r.Key)+len(r.Value), err)))
		case errors.Is(err, smr.ErrClosed):
			return s.unavailable(r, err)
		}
		// No leader known, the leader did not answer, or the outcome is
		// unknown (smr.ErrUnknown, a deadline inside the replica): try
		// again (a write is deduplicated) after a pause, while there is
		// time.
		if r.Hops > 0 {
			return s.unavailable(r, last)
		}
		pause := min(5*time.Millisecond<<min(try, 6), 200*time.Millisecond)
		select {
		case <-ctx.Done():
			return s.unavailable(r, last)
		case <-time.After(pause):
		}
	}
}

// withLeader names the leader in a reply forwarded from it, so that the
// client sends its next requests there and saves the forwarding hop (a
// reply that already names a leader, or does not decode, goes as it is).
func withLeader(out []byte, nl *smr.NotLeaderError) []byte {
	resp, err := DecodeResponse(out)
	if err != nil || resp.Leader != "" {
		return out
	}
	resp.LeaderID, resp.Leader, resp.Epoch = nl.LeaderID, nl.LeaderAddr, nl.Epoch
	return EncodeResponse(resp)
}

// unavailable is the reply to a request the server could not get served,
// with its view of the leader so the client can go there.
func (s *Server) unavailable(r *Request, err error) ([]byte, Status) {
	resp := errorResponse(fmt.Errorf("%w: %s at %s: %v", ErrUnavailable, r.Op, s.addr, err))
	if id, addr, epoch, ok := s.rep.Leader(); ok {
		resp.LeaderID, resp.Leader, resp.Epoch = id, addr, epoch
	}
	return s.reply(resp)
}

// forward sends r to the leader's server and returns its reply, or an
// error if that server did not answer or could not serve it either.
func (s *Server) forward(ctx context.Context, leader string, r *Request) ([]byte, error) {
	s.forwarded.Add(1)
	fr := *r
	fr.Hops++
	timeout := forwardTimeout
	if dl, ok := ctx.Deadline(); ok {
		// Leave time for a retry should this leader not answer.
		timeout = min(timeout, time.Until(dl)*3/4)
	}
	fr.Timeout = timeout
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A dead leader does not answer; once this replica learns of another
	// leader, waiting on the old one is pointless: give up on it then
	// (the retry is deduplicated if the old one applied the write).
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if _, addr, _, ok := s.rep.Leader(); ok && addr != leader {
					cancel()
					return
				}
			}
		}
	}()
	out, err := s.node.Call(fctx, stack.Addr(leader), EncodeRequest(&fr), timeout)
	if err != nil {
		s.log.Debug("kv: forward failed", "to", leader, "op", r.Op, "err", err)
		return nil, fmt.Errorf("forwarding to %s: %w", leader, err)
	}
	if len(out) < 2 || out[0] != respMagic {
		return nil, fmt.Errorf("%w: from %s", ErrBadReply, leader)
	}
	if Status(out[1]) == StatusUnavailable {
		resp, err := DecodeResponse(out)
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("forwarded to %s: %w", leader, resp.Err())
	}
	return out, nil
}

// read serves a get or scan from the machine's state.
func (m *Machine) read(r *Request) *Response {
	if r.Op == OpGet {
		kv, ok, rev := m.Get(r.Key)
		if !ok {
			return &Response{Status: StatusNotFound, Rev: rev}
		}
		return &Response{Rev: rev, KVs: []KeyValue{kv}}
	}
	limit := int(min(r.Limit, MaxScanLimit))
	kvs, more, rev := m.Range(r.Key, r.End, limit)
	return &Response{Rev: rev, KVs: kvs, More: more}
}

// watch answers a watch poll from the local state: the events from r.Rev
// on, waiting up to r.Wait for the first.
func (s *Server) watch(ctx context.Context, r *Request) *Response {
	wait := min(r.Wait, MaxWatchWait)
	if dl, ok := ctx.Deadline(); ok {
		// Answer before the requester gives up.
		wait = min(wait, time.Until(dl)*9/10)
	}
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	from := r.Rev
	for {
		evs, next, changed, err := s.m.Events(r.Key, r.Prefix, from, 0)
		var ce *CompactedError
		if errors.As(err, &ce) {
			resp := errorResponse(err)
			resp.Floor = ce.Floor
			return resp
		}
		if len(evs) > 0 {
			return &Response{Rev: s.m.Revision(), Next: next, Events: evs}
		}
		from = next // "from now" (0) is fixed at the first look
		select {
		case <-changed:
		case <-timer.C:
			return &Response{Rev: s.m.Revision(), Next: next}
		case <-ctx.Done():
			return &Response{Rev: s.m.Revision(), Next: next}
		}
	}
}
