package raftkv

// This file (hand-written) runs the generated AServer archetype as one
// server of a cluster: it binds the archetype's resources (mailboxes over
// the stack between servers, Raft's persistent state on a journal file,
// election and heartbeat timers, and a client front end over TCP through
// an input and an output channel) and serves clients.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"strata/distsys"
	"strata/distsys/tla"
	"strata/journal"
	"strata/stack"
	"strata/stack/layers"
)

// Journal layout of a server's persistent state (4 KiB blocks): the
// journal file holds JournalBlocks data blocks; currentTerm is in block 0,
// votedFor in block 1, the log in LogBlocks blocks from block 2. The whole
// log is rewritten by every section that changes it (distsys has no
// persistent log resource yet), so a log is limited to LogBlocks blocks.
const (
	JournalBlocks = 8192
	LogBlocks     = 1024
)

// ServerConfig describes one server. Servers are numbered 1..len(Peers).
type ServerConfig struct {
	ID      int      // this server, 1..len(Peers)
	Peers   []string // every server's stack address (udp:host:port), in id order
	Clients []string // every server's client address (host:port), in id order
	Dir     string   // directory of the journal file (created if missing)

	// Election timeouts are drawn from [ElectionMin, ElectionMax] (default
	// 300–600 ms); a leader sends heartbeats every Heartbeat (default 50 ms).
	ElectionMin, ElectionMax, Heartbeat time.Duration
	// RequestTimeout is how long the front end waits for a request to be
	// applied before answering "timeout" (default 2 s).
	RequestTimeout time.Duration
}

// Server is a running Raft KV server.
type Server struct {
	cfg   ServerConfig
	node  *stack.Node
	j     *journal.Journal
	ln    net.Listener
	reqs  chan tla.Value
	resps chan tla.Value
	cctx  *distsys.Context

	nonce int64 // high bits of this incarnation's request ids
	mu    sync.Mutex
	next  int64                    // guarded by mu: the last request number
	wait  map[int64]chan tla.Value // guarded by mu: requests awaiting their answer

	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
}

// Request and Response are the client protocol: one JSON object per line
// each way over TCP.
type Request struct {
	Op    string `json:"op"` // "put" or "get"
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
}

// Response answers a Request. Status is "ok", "redirect" (Leader is the
// leader's id if known, else 0), "timeout" (the request may or may not
// take effect later), "unavailable" (the server is stopping) or "error"
// (a bad request).
type Response struct {
	Status string `json:"status"`
	Leader int    `json:"leader,omitempty"`
	Found  bool   `json:"found,omitempty"`
	Value  string `json:"value,omitempty"`
	Error  string `json:"error,omitempty"`
}

// selfOnly is the IndexedResource behind a `ref x[_]` that the archetype
// only ever indexes with self (its own term, vote, log, timers).
type selfOnly struct {
	self tla.Value
	r    distsys.Resource
	name string
}

func (s selfOnly) Index(i tla.Value) (distsys.Resource, error) {
	if !tla.Equal(i, s.self) {
		return nil, fmt.Errorf("raftkv: %s[%v]: only %s[%v] is local", s.name, i, s.name, s.self)
	}
	return s.r, nil
}

// anyIndex sends every resps[c] to one output channel; the request id in
// the answer says whom it is for.
type anyIndex struct{ r distsys.Resource }

func (a anyIndex) Index(tla.Value) (distsys.Resource, error) { return a.r, nil }

// Constants are the module constants a real server runs with: no bound on
// elections or the log (the journal region bounds it), up to 64 entries
// per AppendEntries; the model-only constants are empty.
func serverConstants(n int) Constants {
	return Constants{
		NumServers: tla.Int(int64(n)),
		NumClients: tla.Int(0),
		Candidates: tla.Set(),
		MaxLog:     tla.Int(1 << 40),
		MaxEntries: tla.Int(64),
		MaxRetries: tla.Int(0),
	}
}

// StartServer opens (or recovers) the server's journal, starts its stack
// node and client listener, and runs the archetype until Close.
func StartServer(cfg ServerConfig) (*Server, error) {
	n := len(cfg.Peers)
	if n == 0 || cfg.ID < 1 || cfg.ID > n {
		return nil, fmt.Errorf("raftkv: server id %d not in 1..%d", cfg.ID, n)
	}
	if len(cfg.Clients) != n {
		return nil, fmt.Errorf("raftkv: %d client addresses for %d servers", len(cfg.Clients), n)
	}
	if cfg.ElectionMin == 0 {
		cfg.ElectionMin, cfg.ElectionMax = 300*time.Millisecond, 600*time.Millisecond
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 50 * time.Millisecond
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	mod, err := New(serverConstants(n))
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, reqs: make(chan tla.Value, 256), resps: make(chan tla.Value, 256),
		wait: map[int64]chan tla.Value{}, done: make(chan struct{}),
		nonce: rand.Int64N(1<<30) << 32}
	ok := false
	defer func() {
		if !ok {
			s.closeAll()
		}
	}()
	self := tla.Int(int64(cfg.ID))
	if s.j, _, err = journal.OpenFile(filepath.Join(cfg.Dir, fmt.Sprintf("raftkv-%d.journal", cfg.ID)), JournalBlocks, journal.Options{}); err != nil {
		return nil, fmt.Errorf("raftkv: server %d: %w", cfg.ID, err)
	}
	term, err := distsys.OpenPersistent(s.j, 0, 1, tla.Int(0))
	if err != nil {
		return nil, err
	}
	vote, err := distsys.OpenPersistent(s.j, 1, 1, tla.Int(0))
	if err != nil {
		return nil, err
	}
	lg, err := distsys.OpenPersistent(s.j, 2, LogBlocks, tla.Tuple())
	if err != nil {
		return nil, err
	}
	if s.node, err = layers.Listen(cfg.Peers[cfg.ID-1], "Reliable,FIFO"); err != nil {
		return nil, fmt.Errorf("raftkv: server %d: %w", cfg.ID, err)
	}
	var peers []distsys.Peer
	for i, p := range cfg.Peers {
		a, err := stackAddr(p)
		if err != nil {
			return nil, err
		}
		peers = append(peers, distsys.Peer{ID: tla.Int(int64(i + 1)), Addr: a})
	}
	mb, err := distsys.NewMailboxes(s.node, self, peers, distsys.MailboxOptions{Relaxed: true, Wait: time.Millisecond})
	if err != nil {
		return nil, err
	}
	elect, err := distsys.NewTimer(cfg.ElectionMin, cfg.ElectionMax)
	if err != nil {
		return nil, err
	}
	beat, err := distsys.NewTimer(cfg.Heartbeat, cfg.Heartbeat)
	if err != nil {
		return nil, err
	}
	in := distsys.NewInput(s.reqs)
	in.Wait = time.Millisecond
	s.cctx, err = distsys.NewContext(mod.AServer(), self,
		distsys.BindIndexed("net", mb),
		distsys.BindIndexed("reqs", selfOnly{self, in, "reqs"}),
		distsys.BindIndexed("resps", anyIndex{distsys.NewOutput(s.resps)}),
		distsys.BindIndexed("timer", selfOnly{self, elect, "timer"}),
		distsys.BindIndexed("beat", selfOnly{self, beat, "beat"}),
		distsys.BindIndexed("currentTerm", selfOnly{self, term, "currentTerm"}),
		distsys.BindIndexed("votedFor", selfOnly{self, vote, "votedFor"}),
		distsys.BindIndexed("log", selfOnly{self, lg, "log"}),
		distsys.WithBackoff(50*time.Microsecond, time.Millisecond))
	if err != nil {
		return nil, err
	}
	if s.ln, err = net.Listen("tcp", cfg.Clients[cfg.ID-1]); err != nil {
		return nil, fmt.Errorf("raftkv: server %d: %w", cfg.ID, err)
	}
	ok = true
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.dispatch(ctx)
	go s.accept()
	go func() {
		s.err = s.cctx.Run(ctx)
		close(s.done)
	}()
	return s, nil
}

func stackAddr(p string) (stack.Addr, error) {
	if _, _, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(p, "udp:"), "tcp:")); err != nil {
		return "", fmt.Errorf("raftkv: peer address %q: %w", p, err)
	}
	return stack.Addr(p), nil
}

// ClientAddr is the address clients connect to.
func (s *Server) ClientAddr() string { return s.ln.Addr().String() }

// Done is closed when the archetype stops (Err says why).
func (s *Server) Done() <-chan struct{} { return s.done }

// Err is why the archetype stopped (after Done).
func (s *Server) Err() error { return s.err }

// Close stops the server and closes its journal.
func (s *Server) Close() error {
	s.cancel()
	<-s.done
	s.closeAll()
	if s.err != nil && !errors.Is(s.err, context.Canceled) {
		return s.err
	}
	return nil
}

func (s *Server) closeAll() {
	if s.ln != nil {
		s.ln.Close()
	}
	if s.node != nil {
		s.node.Close()
	}
	if s.j != nil {
		s.j.Close()
	}
}

// dispatch hands each answer the archetype writes to resps to the
// request waiting for it (answers for requests another server or an
// earlier incarnation took in find nobody and are dropped).
func (s *Server) dispatch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case v := <-s.resps:
			id, err := tla.Field(v, "id")
			if err != nil {
				continue
			}
			n, err := id.AsInt64()
			if err != nil {
				continue
			}
			s.mu.Lock()
			ch := s.wait[n]
			delete(s.wait, n)
			s.mu.Unlock()
			if ch != nil {
				ch <- v
			}
		}
	}
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serveConn(c)
	}
}

func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		var req Request
		var resp Response
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp = Response{Status: "error", Error: "bad request: " + err.Error()}
		} else {
			resp = s.do(req)
		}
		if err := enc.Encode(resp); err != nil {
			return
		}
	}
}

// do passes one request to the archetype and waits for its answer.
func (s *Server) do(req Request) Response {
	if req.Op != "put" && req.Op != "get" {
		return Response{Status: "error", Error: fmt.Sprintf("unknown op %q (want put or get)", req.Op)}
	}
	ch := make(chan tla.Value, 1)
	s.mu.Lock()
	s.next++
	id := s.nonce | s.next
	s.wait[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.wait, id)
		s.mu.Unlock()
	}()
	v := tla.Record(tla.F("client", tla.Int(id)), tla.F("id", tla.Int(id)), tla.F("key", tla.String(req.Key)),
		tla.F("op", tla.String(req.Op)), tla.F("value", tla.String(req.Value)))
	t := time.NewTimer(s.cfg.RequestTimeout)
	defer t.Stop()
	select {
	case s.reqs <- v:
	case <-t.C:
		return Response{Status: "timeout"}
	case <-s.done:
		return Response{Status: "unavailable", Error: "server stopped"}
	}
	select {
	case a := <-ch:
		return decodeAnswer(a)
	case <-t.C:
		return Response{Status: "timeout"}
	case <-s.done:
		return Response{Status: "unavailable", Error: "server stopped"}
	}
}

func decodeAnswer(a tla.Value) Response {
	var r Response
	if st, err := tla.Field(a, "status"); err == nil {
		r.Status, _ = st.AsString()
	}
	if l, err := tla.Field(a, "leader"); err == nil {
		n, _ := l.AsInt64()
		r.Leader = int(n)
	}
	if f, err := tla.Field(a, "found"); err == nil {
		r.Found, _ = f.AsBool()
	}
	if r.Found {
		if v, err := tla.Field(a, "value"); err == nil {
			r.Value, _ = v.AsString()
		}
	}
	return r
}
