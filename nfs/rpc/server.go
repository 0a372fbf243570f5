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

// DefaultDetachAfter is Server.DetachAfter's default.
const DefaultDetachAfter = time.Millisecond

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

	conn *tcpConn // the connection whose reader runs this call, if it does
	// deny, if not AuthOK, makes the server answer MSG_DENIED/AUTH_ERROR
	// with it instead of the accepted reply (see DenyAuth).
	deny AuthStat
}

// DenyAuth makes the server answer the call with MSG_DENIED, AUTH_ERROR and
// stat (for example AuthTooWeak for AUTH_NONE where the program needs
// AUTH_SYS) instead of an accepted reply: whatever the handler returns or
// wrote is discarded. Credentials are checked by the program because only
// it knows which flavors a call needs (NFS: the export the file handle
// belongs to). AuthOK cancels an earlier DenyAuth.
func (c *Call) DenyAuth(stat AuthStat) { c.deny = stat }

// Detach tells the server that the handler may now block for a while
// (waiting for a disk barrier, say). A call that arrives on an otherwise
// idle TCP connection runs on the goroutine that reads the connection,
// which saves handing it to another goroutine; Detach makes another
// goroutine take over the reading, so that later calls on the
// connection need not wait for this one. It does nothing for a call that
// already runs on its own goroutine. The server also detaches a call by
// itself once it has run for Server.DetachAfter; Detach only saves that
// wait.
func (c *Call) Detach() {
	if c.conn != nil {
		c.conn.detach()
	}
}

// Handler runs one procedure call. On Success it has written the
// procedure's results to res; for any other status the server discards
// whatever it wrote and sends that status with no results (ProgMismatch
// with the registered version range). Statuses outside the defined ones
// are sent as SystemErr. A panic is recovered, logged and answered with
// SystemErr.
//
// Handlers run concurrently. A call that arrives on a TCP connection with
// no other call in flight and nothing more received runs on the goroutine
// that reads the connection; the server hands the reading to another
// goroutine when the handler calls Call.Detach or has run for
// Server.DetachAfter,
// so a handler that blocks delays later calls of its connection by at most
// that. Every other call runs on a goroutine of its own. ctx is the context
// passed to ServeTCP or ServeUDP (cancelled when serving stops).
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
	// DetachAfter is how long a call may run on its connection's reader
	// before the server makes another goroutine read the connection (see
	// Handler); zero means DefaultDetachAfter. Set it before serving.
	DetachAfter time.Duration
	// WriteTimeout bounds the writing of one TCP reply; a connection whose
	// peer does not read for that long (at least 7/8 of it: the deadline
	// is moved at most every eighth of it) is closed. Zero means no limit.
	WriteTimeout time.Duration

	log   *slog.Logger
	warnL Limiter

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
	// inline is the connection whose reader runs this call, if it does.
	inline *tcpConn
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
	r.inline = nil
	r.args.Reset(nil)
	r.hdr.Reset()
	r.res.Reset()
	s.reqPool.Put(r)
}

// warn logs bad input at most a few times a second.
func (s *Server) warn(msg string, args ...any) {
	ok, suppressed := s.warnL.Allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	s.log.Warn(msg, args...)
}

// Limiter lets log lines through at most Rate a second (default 10) and
// counts the ones it holds back, so that a flood of bad requests cannot
// flood the log; the next line let through reports how many were held.
type Limiter struct {
	Rate       int
	mu         sync.Mutex
	window     time.Time // guarded by mu
	n          int       // guarded by mu
	suppressed int       // guarded by mu
}

const warnLimit = 10

// Allow says whether to log now, and how many lines were held back since
// the last one let through.
func (l *Limiter) Allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rate := l.Rate
	if rate <= 0 {
		rate = warnLimit
	}
	now := time.Now()
	if now.Sub(l.window) >= time.Second {
		l.window = now
		l.n = 0
	}
	if l.n >= rate {
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
			Net: netw, Peer: peer, conn: req.inline,
		}
		stat = s.invoke(ctx, p.vers[h.vers], &req.call, &req.res)
		if as := req.call.deny; as != AuthOK {
			s.st.denied.Add(1)
			req.res.Reset()
			if s.log.Enabled(ctx, slog.LevelDebug) {
				s.log.Debug("rpc: call denied by its program", "net", netw, "peer", peer, "xid", h.xid,
					"prog", h.prog, "vers", h.vers, "proc", h.proc, "auth", as)
			}
			appendDenied(&req.hdr, h.xid, AuthError, as)
			return true
		}
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
	ctx  context.Context
	conn net.Conn
	peer net.Addr
	wmu  sync.Mutex // serializes replies
	sem  chan struct{}
	wg   sync.WaitGroup

	// The reading state, owned by the goroutine that currently reads the
	// connection (the reader role moves between goroutines, see readLoop).
	br *bufio.Reader
	rr recordReader

	// inline is the state of a call run on the reader: inlineNone,
	// inlineRunning, or inlineDetached once another goroutine took over
	// the reading. The goroutine that moves it from inlineRunning decides
	// who reads next.
	inline      atomic.Int32
	watchdog    *time.Timer // detaches an inline call after detachAfter
	detachAfter time.Duration
	readDone    chan struct{}

	deadlineAt time.Time // when the write deadline was last set (under wmu)
}

const (
	inlineNone = iota
	inlineRunning
	inlineDetached
)

func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	n := s.MaxInFlight
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	tc := &tcpConn{s: s, ctx: ctx, conn: conn, peer: conn.RemoteAddr(), sem: make(chan struct{}, n), readDone: make(chan struct{})}
	tc.br = bufio.NewReaderSize(conn, 32<<10)
	tc.rr = recordReader{r: tc.br, max: MaxRecord, chunk: 256 << 10}
	tc.detachAfter = s.DetachAfter
	if tc.detachAfter <= 0 {
		tc.detachAfter = DefaultDetachAfter
	}
	tc.watchdog = time.AfterFunc(time.Hour, tc.detach)
	tc.watchdog.Stop()
	tc.readLoop()
	<-tc.readDone
	tc.wg.Wait()
	tc.watchdog.Stop()
}

// readLoop reads calls until the connection ends (it then closes
// readDone) or another goroutine takes over the reading (it then just
// returns). A call that finds the connection idle (no other call in
// flight, nothing more received) runs here, on the reader, which saves a
// goroutine switch on the path of every call of a client that waits for
// each reply; other calls go to workers.
func (tc *tcpConn) readLoop() {
	s := tc.s
	for {
		tc.sem <- struct{}{}
		req := s.getRequest()
		msg, err := tc.rr.next(req.buf)
		req.buf = msg
		if err != nil {
			<-tc.sem
			s.putRequest(req)
			switch {
			case errors.Is(err, ErrRecordTooLarge):
				s.st.badRecords.Add(1)
				s.warn("rpc: record over MaxRecord; closing connection", "peer", tc.peer, "max", MaxRecord)
				tc.conn.Close()
			case errors.Is(err, io.ErrUnexpectedEOF):
				s.st.badRecords.Add(1)
				s.warn("rpc: connection closed inside a record", "peer", tc.peer)
			case err == io.EOF || errors.Is(err, net.ErrClosed):
				s.log.Debug("rpc: connection closed", "peer", tc.peer)
			default:
				s.log.Debug("rpc: connection read failed", "peer", tc.peer, "err", err)
			}
			close(tc.readDone)
			return
		}
		tc.wg.Add(1)
		if len(tc.sem) > 1 || tc.br.Buffered() > 0 {
			s.pool.run(func() {
				tc.serve(req, msg)
				tc.release(req)
			})
			continue
		}
		tc.inline.Store(inlineRunning)
		req.inline = tc
		tc.watchdog.Reset(tc.detachAfter)
		tc.serve(req, msg)
		tc.watchdog.Stop()
		// Decide before the call's slot is released: a new reader cannot
		// run a call inline (and set inline) while this one holds it.
		reader := tc.inline.CompareAndSwap(inlineRunning, inlineNone)
		tc.release(req)
		if !reader {
			return // detached: another goroutine reads now
		}
	}
}

// detach hands the reading to another goroutine if the reader is running
// a call.
func (tc *tcpConn) detach() {
	if tc.inline.CompareAndSwap(inlineRunning, inlineDetached) {
		tc.s.pool.run(tc.readLoop)
	}
}

// release ends a call: its request goes back to the pool, its slot to the
// connection.
func (tc *tcpConn) release(req *request) {
	tc.s.putRequest(req)
	<-tc.sem
	tc.wg.Done()
}

// serve handles one call and writes its reply.
func (tc *tcpConn) serve(req *request, msg []byte) {
	s := tc.s
	req.hdr.Uint32(0) // record mark, filled in below
	if !s.handle(tc.ctx, req, msg, "tcp", tc.peer, maxFragment-4) {
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
		// Moving the deadline costs a timer update; refreshing it at most
		// every eighth of the timeout still gives every reply at least
		// 7/8 of it.
		if now := time.Now(); now.Sub(tc.deadlineAt) >= s.WriteTimeout/8 {
			tc.conn.SetWriteDeadline(now.Add(s.WriteTimeout))
			tc.deadlineAt = now
		}
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
