package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"strata/nfs/xdr"
)

// Defaults for the Server's tunables.
const (
	DefaultMaxInFlight    = 128
	DefaultMaxInFlightUDP = 256
	DefaultWriteTimeout   = 30 * time.Second
)

// MaxUDPMessage is the largest call or reply carried in one UDP datagram.
const MaxUDPMessage = 65507

// udpReadBuf is the receive buffer for one datagram: larger than any UDP
// payload, so nothing is ever truncated.
const udpReadBuf = 64 << 10

// smallResults is the size up to which results are copied after the reply
// header so that a reply goes out in one write; larger ones use writev.
const smallResults = 4 << 10

// Call is one RPC call as the server hands it to a Handler. It and
// everything it refers to (Args and the bytes it reads, Sys) belong to the
// server and are valid only until the Handler returns: a handler that needs
// argument bytes later (for example WRITE data it hands to another
// goroutine) must copy them.
type Call struct {
	XID, Prog, Vers, Proc uint32
	CredFlavor            uint32   // AuthNone or AuthSysFlavor
	Sys                   *AuthSys // non-nil for AUTH_SYS
	Args                  *xdr.Reader
	Net                   string // "tcp" or "udp"
	Peer                  net.Addr
}

// Handler runs one procedure call. On Success it has written the
// procedure's results to res; for any other status the server discards
// whatever it wrote and sends that status with no results (ProgMismatch
// with the registered version range). Statuses outside the defined ones
// are sent as SystemErr. A panic is recovered, logged and answered with
// SystemErr.
//
// Handlers run concurrently, each call on its own goroutine. ctx is the
// context passed to ServeTCP or ServeUDP (cancelled when serving stops).
type Handler func(ctx context.Context, c *Call, res *xdr.Writer) AcceptStat

// Stats are the Server's counters since NewServer.
type Stats struct {
	Conns   uint64 // TCP connections accepted
	Calls   uint64 // messages parsed as calls (including denied ones)
	Replies uint64 // replies sent
	Garbage uint64 // messages dropped: not a call, or header undecodable
	Denied  uint64 // MSG_DENIED replies (RPC_MISMATCH or AUTH_ERROR)
	// Accepted counts accepted replies by status (index = AcceptStat).
	Accepted    [SystemErr + 1]uint64
	Panics      uint64 // handler panics (answered with SYSTEM_ERR)
	BadRecords  uint64 // TCP records over MaxRecord or cut off by EOF (connection closed)
	WriteErrors uint64 // replies that could not be sent
}

type counters struct {
	conns, calls, replies, garbage, denied atomic.Uint64
	accepted                               [SystemErr + 1]atomic.Uint64
	panics, badRecords, writeErrors        atomic.Uint64
}

type program struct {
	vers      map[uint32]Handler
	low, high uint32
}

// Server is an ONC RPC v2 server over TCP and UDP. Create it with
// NewServer, register programs, then serve. Register may also be called
// while serving.
type Server struct {
	// MaxInFlight bounds the calls handled at once per TCP connection;
	// when it is reached the server stops reading that connection. Set it
	// before serving.
	MaxInFlight int
	// MaxInFlightUDP bounds the calls handled at once per ServeUDP.
	MaxInFlightUDP int
	// WriteTimeout bounds the writing of one TCP reply; a connection whose
	// peer does not read for that long is closed. Zero means no limit.
	WriteTimeout time.Duration

	log   *slog.Logger
	warnL limiter

	regMu sync.Mutex
	progs atomic.Pointer[map[uint32]*program] // copy on write

	st counters

	reqPool sync.Pool // *request
	pool    *workers
}

// NewServer returns a Server that logs to log (nil: discard).
func NewServer(log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		MaxInFlight:    DefaultMaxInFlight,
		MaxInFlightUDP: DefaultMaxInFlightUDP,
		WriteTimeout:   DefaultWriteTimeout,
		log:            log,
		pool:           newWorkers(),
	}
	m := map[uint32]*program{}
	s.progs.Store(&m)
	return s
}

// Register makes h serve version vers of program prog, replacing any
// handler registered for that pair. It panics if h is nil.
func (s *Server) Register(prog, vers uint32, h Handler) {
	if h == nil {
		panic("rpc: Register with a nil Handler")
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	old := *s.progs.Load()
	m := maps.Clone(old)
	p := &program{vers: map[uint32]Handler{}}
	if o := old[prog]; o != nil {
		p.vers = maps.Clone(o.vers)
	}
	p.vers[vers] = h
	first := true
	for v := range p.vers {
		if first || v < p.low {
			p.low = v
		}
		if first || v > p.high {
			p.high = v
		}
		first = false
	}
	m[prog] = p
	s.progs.Store(&m)
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Conns:       s.st.conns.Load(),
		Calls:       s.st.calls.Load(),
		Replies:     s.st.replies.Load(),
		Garbage:     s.st.garbage.Load(),
		Denied:      s.st.denied.Load(),
		Panics:      s.st.panics.Load(),
		BadRecords:  s.st.badRecords.Load(),
		WriteErrors: s.st.writeErrors.Load(),
	}
	for i := range st.Accepted {
		st.Accepted[i] = s.st.accepted[i].Load()
	}
	return st
}

// request is the per-call state, pooled.
type request struct {
	buf  []byte // the call message
	call Call
	args xdr.Reader
	hdr  xdr.Writer // record mark (TCP) and reply header
	res  xdr.Writer // results
	h    callHeader // parsed call header (and AUTH_SYS storage)
}

func (s *Server) getRequest() *request {
	if r, ok := s.reqPool.Get().(*request); ok {
		return r
	}
	return &request{}
}

func (s *Server) putRequest(r *request) {
	if cap(r.buf) > MaxRecord+udpReadBuf || cap(r.res.Bytes()) > 2*MaxRecord {
		return // let an unusually large one go
	}
	r.call = Call{}
	r.args.Reset(nil)
	r.hdr.Reset()
	r.res.Reset()
	s.reqPool.Put(r)
}

// warn logs bad input at most a few times a second.
func (s *Server) warn(msg string, args ...any) {
	ok, suppressed := s.warnL.allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	s.log.Warn(msg, args...)
}

// limiter lets through warnLimit events per second and counts the rest.
type limiter struct {
	mu         sync.Mutex
	window     time.Time
	n          int
	suppressed int
}

const warnLimit = 10

func (l *limiter) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Sub(l.window) >= time.Second {
		l.window = now
		l.n = 0
	}
	if l.n >= warnLimit {
		l.suppressed++
		return false, 0
	}
	l.n++
	sup := l.suppressed
	l.suppressed = 0
	return true, sup
}

// handle processes one call message in req.buf[:n] == msg and appends the
// reply to req.hdr (after whatever it already holds) and req.res. It
// returns false if no reply is to be sent. maxReply bounds the reply
// (header plus results); a larger one is replaced by SYSTEM_ERR.
func (s *Server) handle(ctx context.Context, req *request, msg []byte, netw string, peer net.Addr, maxReply int) bool {
	h := &req.h
	outcome, err := parseCall(msg, h)
	switch outcome {
	case parseDrop:
		s.st.garbage.Add(1)
		s.warn("rpc: dropping undecodable message", "net", netw, "peer", peer, "len", len(msg), "err", err)
		return false
	case parseRPCMismatch:
		s.st.calls.Add(1)
		s.st.denied.Add(1)
		s.warn("rpc: denying call: RPC_MISMATCH", "net", netw, "peer", peer, "xid", h.xid, "err", err)
		appendDenied(&req.hdr, h.xid, RPCMismatch, 0)
		return true
	case parseBadCred:
		s.st.calls.Add(1)
		s.st.denied.Add(1)
		s.warn("rpc: denying call: AUTH_BADCRED", "net", netw, "peer", peer, "xid", h.xid,
			"prog", h.prog, "vers", h.vers, "proc", h.proc, "err", err)
		appendDenied(&req.hdr, h.xid, AuthError, AuthBadCred)
		return true
	}
	s.st.calls.Add(1)

	var stat AcceptStat
	var low, high uint32
	p := (*s.progs.Load())[h.prog]
	switch {
	case p == nil:
		stat = ProgUnavail
	case p.vers[h.vers] == nil:
		stat = ProgMismatch
	default:
		req.args.Reset(h.args)
		req.call = Call{
			XID: h.xid, Prog: h.prog, Vers: h.vers, Proc: h.proc,
			CredFlavor: h.credFlavor, Sys: h.sys, Args: &req.args,
			Net: netw, Peer: peer,
		}
		stat = s.invoke(ctx, p.vers[h.vers], &req.call, &req.res)
	}
	if stat > SystemErr {
		s.warn("rpc: handler returned an undefined accept status; sending SYSTEM_ERR",
			"prog", h.prog, "vers", h.vers, "proc", h.proc, "stat", uint32(stat))
		stat = SystemErr
	}
	if stat != Success {
		req.res.Reset()
	}
	if stat == ProgMismatch && p != nil {
		low, high = p.low, p.high
	}
	start := req.hdr.Len()
	appendAcceptedHeader(&req.hdr, h.xid, stat, low, high)
	if req.hdr.Len()-start+req.res.Len() > maxReply {
		s.log.Error("rpc: reply too large; sending SYSTEM_ERR", "net", netw,
			"prog", h.prog, "vers", h.vers, "proc", h.proc, "len", req.res.Len(), "max", maxReply)
		stat = SystemErr
		req.res.Reset()
		req.hdr.Truncate(start)
		appendAcceptedHeader(&req.hdr, h.xid, stat, 0, 0)
	}
	s.st.accepted[stat].Add(1)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("rpc call", "net", netw, "peer", peer, "xid", h.xid, "prog", h.prog,
			"vers", h.vers, "proc", h.proc, "stat", stat, "results", req.res.Len())
	}
	return true
}

// invoke runs a handler, turning a panic into SystemErr.
func (s *Server) invoke(ctx context.Context, h Handler, c *Call, res *xdr.Writer) (stat AcceptStat) {
	defer func() {
		if v := recover(); v != nil {
			s.st.panics.Add(1)
			s.log.Error("rpc: handler panicked; sending SYSTEM_ERR", "prog", c.Prog, "vers", c.Vers,
				"proc", c.Proc, "xid", c.XID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			stat = SystemErr
		}
	}()
	return h(ctx, c, res)
}

// ServeTCP accepts connections on ln and serves them until ctx ends or ln
// is closed (it closes ln when ctx ends). It then closes every connection,
// waits for running handlers to return and returns nil. It returns an
// error only for an Accept failure that is not transient.
func (s *Server) ServeTCP(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  = map[net.Conn]struct{}{}
		retErr error
		delay  time.Duration
	)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			if !transientAcceptError(err) {
				retErr = fmt.Errorf("rpc: accept: %w", err)
				break
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("rpc: accept failed; retrying", "err", err, "delay", delay)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			continue
		}
		delay = 0
		s.st.conns.Add(1)
		mu.Lock()
		conns[conn] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(ctx, conn)
			mu.Lock()
			delete(conns, conn)
			mu.Unlock()
		}()
	}
	cancel()
	mu.Lock()
	for c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return retErr
}

func transientAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.EPROTO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// tcpConn is one served TCP connection.
type tcpConn struct {
	s    *Server
	conn net.Conn
	peer net.Addr
	wmu  sync.Mutex // serializes replies
	sem  chan struct{}
	wg   sync.WaitGroup
}

func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	n := s.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	tc := &tcpConn{s: s, conn: conn, peer: conn.RemoteAddr(), sem: make(chan struct{}, n)}
	rr := recordReader{r: bufio.NewReaderSize(conn, 32<<10), max: MaxRecord, chunk: 256 << 10}
	for {
		tc.sem <- struct{}{}
		req := s.getRequest()
		msg, err := rr.next(req.buf)
		req.buf = msg
		if err != nil {
			<-tc.sem
			s.putRequest(req)
			switch {
			case errors.Is(err, ErrRecordTooLarge):
				s.st.badRecords.Add(1)
				s.warn("rpc: record over MaxRecord; closing connection", "peer", tc.peer, "max", MaxRecord)
				conn.Close()
			case errors.Is(err, io.ErrUnexpectedEOF):
				s.st.badRecords.Add(1)
				s.warn("rpc: connection closed inside a record", "peer", tc.peer)
			case err == io.EOF || errors.Is(err, net.ErrClosed):
				s.log.Debug("rpc: connection closed", "peer", tc.peer)
			default:
				s.log.Debug("rpc: connection read failed", "peer", tc.peer, "err", err)
			}
			break
		}
		tc.wg.Add(1)
		s.pool.run(func() { tc.serve(ctx, req, msg) })
	}
	tc.wg.Wait()
}

func (tc *tcpConn) serve(ctx context.Context, req *request, msg []byte) {
	s := tc.s
	defer func() {
		s.putRequest(req)
		<-tc.sem
		tc.wg.Done()
	}()
	req.hdr.Uint32(0) // record mark, filled in below
	if !s.handle(ctx, req, msg, "tcp", tc.peer, maxFragment-4) {
		return
	}
	res := req.res.Bytes()
	if len(res) <= smallResults {
		req.hdr.Write(res)
		res = nil
	}
	hdr := req.hdr.Bytes()
	putRecordMark(hdr, len(hdr)-4+len(res))

	tc.wmu.Lock()
	defer tc.wmu.Unlock()
	if s.WriteTimeout > 0 {
		tc.conn.SetWriteDeadline(time.Now().Add(s.WriteTimeout))
	}
	var err error
	if len(res) == 0 {
		_, err = tc.conn.Write(hdr)
	} else {
		bufs := net.Buffers{hdr, res}
		_, err = bufs.WriteTo(tc.conn)
	}
	if err != nil {
		s.st.writeErrors.Add(1)
		s.log.Debug("rpc: reply write failed; closing connection", "peer", tc.peer, "err", err)
		tc.conn.Close()
		return
	}
	s.st.replies.Add(1)
}

// ServeUDP serves calls arriving on pc, one call per datagram, until ctx
// ends (it then closes pc) or pc is closed. It waits for running handlers
// to return, then returns nil.
func (s *Server) ServeUDP(ctx context.Context, pc net.PacketConn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()

	limit := s.MaxInFlightUDP
	if limit <= 0 {
		limit = DefaultMaxInFlightUDP
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var delay time.Duration
	for {
		sem <- struct{}{}
		req := s.getRequest()
		if cap(req.buf) < udpReadBuf {
			req.buf = make([]byte, udpReadBuf)
		}
		n, addr, err := pc.ReadFrom(req.buf[:udpReadBuf])
		if err != nil {
			<-sem
			s.putRequest(req)
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			// ICMP errors and the like: keep serving, but do not spin.
			delay = min(max(2*delay, time.Millisecond), 100*time.Millisecond)
			s.log.Debug("rpc: UDP read failed", "err", err)
			time.Sleep(delay)
			continue
		}
		delay = 0
		msg := req.buf[:n]
		wg.Add(1)
		s.pool.run(func() {
			defer func() {
				s.putRequest(req)
				<-sem
				wg.Done()
			}()
			if !s.handle(ctx, req, msg, "udp", addr, MaxUDPMessage) {
				return
			}
			req.hdr.Write(req.res.Bytes())
			if _, err := pc.WriteTo(req.hdr.Bytes(), addr); err != nil {
				s.st.writeErrors.Add(1)
				s.log.Debug("rpc: UDP reply failed", "peer", addr, "err", err)
				return
			}
			s.st.replies.Add(1)
		})
	}
	wg.Wait()
	return nil
}
