package wormlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"strata/internal/segsearch"
	"strata/internal/wake"
	"strata/stack"
	"strata/wor"
)

// Defaults of a log server's configuration.
const (
	DefaultSegmentSize     = wor.MaxSegBatch // one capture covers a segment
	DefaultHeartbeat       = 50 * time.Millisecond
	DefaultElectionTimeout = 500 * time.Millisecond
	// MaxSegments is the log segments a log may use from its Base.
	MaxSegments = 1 << 24
	// fillAttempts bounds a new sequencer's tries to junk-fill a segment.
	fillAttempts = 8
)

// ServerConfig configures a log server.
type ServerConfig struct {
	// Node serves the clients' requests (its handler is taken) and
	// carries Client's traffic.
	Node   *stack.Node
	Client *wor.Client
	// ID names this server among the log's servers: nonzero, distinct.
	ID uint64
	// Addr is the address clients reach this server at (default: the
	// node's).
	Addr string
	// Base is the log's first WOR segment; SegmentSize its registers per
	// segment (default DefaultSegmentSize, at most wor.MaxSegBatch). The
	// same on every server and client of a log.
	Base, SegmentSize uint64
	// Heartbeat is how often a standby checks on the sequencer and the
	// sequencer checks that no newer one exists; a standby takes over
	// after ElectionTimeout (randomized up to twice) without an answer.
	Heartbeat, ElectionTimeout time.Duration
	Logger                     *slog.Logger
}

func (cfg *ServerConfig) fill() error {
	if cfg.Node == nil || cfg.Client == nil {
		return errors.New("wormlog: ServerConfig needs Node and Client")
	}
	if cfg.ID == 0 {
		return errors.New("wormlog: ServerConfig.ID must be nonzero")
	}
	if cfg.Addr == "" {
		cfg.Addr = string(cfg.Node.Local())
	}
	if cfg.SegmentSize == 0 {
		cfg.SegmentSize = DefaultSegmentSize
	}
	if cfg.SegmentSize > wor.MaxSegBatch {
		return fmt.Errorf("wormlog: segment size %d: at most %d", cfg.SegmentSize, wor.MaxSegBatch)
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = DefaultElectionTimeout
	}
	if cfg.Heartbeat <= 0 || cfg.ElectionTimeout < 2*cfg.Heartbeat {
		return fmt.Errorf("wormlog: heartbeat %v, election timeout %v: want a positive heartbeat and a timeout of at least two", cfg.Heartbeat, cfg.ElectionTimeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return nil
}

// ServerStats counts a server's work.
type ServerStats struct {
	Sequencer       bool   // it hands out tokens now
	Epoch           uint64 // its epoch as sequencer, or the newest it knows
	Tail            uint64 // next position it hands out (sequencer only)
	Tokens          uint64 // positions handed out
	Takeovers       uint64 // campaigns won
	FilledSegments  uint64 // old segments junk-filled on takeovers
	NotSequencer    uint64 // token requests refused as a standby
	MalformedOrBusy uint64 // requests refused as malformed or unavailable
}

// Server is one log server: the sequencer, or a standby ready to take
// over. The sequencer is soft state: everything a new one needs is in the
// WOR space (which segments exist and who allocated them).
type Server struct {
	cfg  ServerConfig
	c    *wor.Client
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup // the run loop, the preparer, request handlers
	kick chan struct{}  // wakes the preparer (capacity 1)

	mu sync.Mutex
	// Guarded by mu.
	leading   bool     // seq is ours to hand out
	seq       seqState // valid while leading
	epoch     uint64   // our epoch while leading
	newest    uint64   // newest log segment known allocated (+1; 0: none)
	newMeta   segMeta  // its metadata
	contact   time.Time
	st        ServerStats
	ready     chan struct{} // closed once a sequencer is known or leading
	readyOnce sync.Once

	closing atomic.Bool
}

// StartServer starts a log server; it serves at once, as a standby until
// it knows the log's sequencer, and takes over when there is none.
func StartServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, c: cfg.Client, log: cfg.Logger.With("wormlog", cfg.ID), kick: make(chan struct{}, 1), ready: make(chan struct{})}
	s.ctx, s.stop = context.WithCancel(context.Background())
	cfg.Node.HandleAsync(s.handle)
	s.wg.Add(1)
	go s.run()
	return s, nil
}

// Ready is closed once the server leads or knows a sequencer that
// answered it.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Close stops the server (a standby takes over if it led).
func (s *Server) Close() error {
	if s.closing.Swap(true) {
		return nil
	}
	s.stop()
	s.wg.Wait()
	return nil
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Sequencer = s.leading
	st.Epoch = max(s.epoch, s.newMeta.epoch)
	if s.leading {
		st.Tail = s.seq.tail()
	}
	return st
}

func (s *Server) segID(seg uint64) uint64 { return s.cfg.Base + seg }

func (s *Server) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// run is the server's loop: as a standby it watches the sequencer and
// takes over when it is silent; as the sequencer it checks each heartbeat
// that no newer sequencer exists, and keeps the next segment ready.
func (s *Server) run() {
	defer s.wg.Done()
	s.mu.Lock()
	s.contact = time.Now()
	s.mu.Unlock()
	wait := s.cfg.ElectionTimeout + rand.N(s.cfg.ElectionTimeout)
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	for {
		s.mu.Lock()
		leading := s.leading
		s.mu.Unlock()
		if leading {
			s.lead()
		} else if s.watch(wait) {
			if err := s.campaign(s.ctx); err != nil && s.ctx.Err() == nil {
				s.log.Info("wormlog: takeover failed", "err", err)
			}
			wait = s.cfg.ElectionTimeout + rand.N(s.cfg.ElectionTimeout)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watch is a standby's heartbeat: it refreshes the newest segment and
// asks its sequencer for the tail. It reports whether to take over: the
// log has no sequencer that answered for wait, or the newest segment
// names this server (a restarted sequencer: its old incarnation is gone).
func (s *Server) watch(wait time.Duration) bool {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ElectionTimeout)
	defer cancel()
	_, m, any, err := s.findNewest(ctx)
	if err != nil {
		s.log.Debug("wormlog: reading the log's segments", "err", err)
		return false
	}
	s.mu.Lock()
	since := time.Since(s.contact)
	s.mu.Unlock()
	if !any {
		// An empty log: the first server to allocate segment 0 leads.
		return since >= wait/2
	}
	if m.sequencer == s.cfg.ID {
		return true
	}
	pctx, pcancel := context.WithTimeout(s.ctx, 2*s.cfg.Heartbeat)
	defer pcancel()
	out, err := s.cfg.Node.Call(pctx, stack.Addr(m.addr), encodeRequest(request{op: opTail}), 2*s.cfg.Heartbeat)
	if err == nil {
		if r, derr := decodeResponse(out); derr == nil && r.status == stOK {
			s.mu.Lock()
			s.contact = time.Now()
			s.mu.Unlock()
			s.markReady()
			return false
		}
	}
	return since >= wait
}

// findNewest finds the newest allocated log segment (from the one known)
// and records it; any is false for a log with no segment yet.
func (s *Server) findNewest(ctx context.Context) (seg uint64, m segMeta, any bool, err error) {
	s.mu.Lock()
	from := s.newest
	s.mu.Unlock()
	// Segments run trimmed*, allocated*, free*: the first free one at or
	// after the newest known (usually one probe).
	free, err := segsearch.First(ctx, MaxSegments-from, func(ctx context.Context, i uint64) (bool, error) {
		st, _, err := s.probe(ctx, from+i)
		return st != segFree, err
	})
	if err != nil {
		return 0, segMeta{}, false, err
	}
	free += from
	if free == 0 {
		return 0, segMeta{}, false, nil
	}
	st, m, err := s.probe(ctx, free-1)
	if err != nil {
		return 0, segMeta{}, false, err
	}
	if st == segTrimmed {
		return 0, segMeta{}, false, fmt.Errorf("wormlog: the newest log segment %d is trimmed", s.segID(free-1))
	}
	s.note(free-1, m)
	return free - 1, m, true, nil
}

// note records that log segment seg is allocated with metadata m.
func (s *Server) note(seg uint64, m segMeta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seg+1 > s.newest {
		// A segment newer than any we knew: a sequencer allocated it
		// just now, so it is alive (it may still be junk-filling before
		// it answers); a standby gives it an election timeout.
		s.contact = time.Now()
	}
	if seg+1 >= s.newest {
		s.newest, s.newMeta = seg+1, m
	}
	if s.leading && m.epoch > s.epoch {
		s.stepDownLocked(fmt.Sprintf("sequencer %d (epoch %d) allocated log segment %d", m.sequencer, m.epoch, s.segID(seg)))
	}
}

type segState int

const (
	segFree segState = iota
	segAllocated
	segTrimmed
)

// probe reads log segment seg's metadata.
func (s *Server) probe(ctx context.Context, seg uint64) (segState, segMeta, error) {
	md, err := s.c.Metadata(ctx, s.segID(seg))
	switch {
	case errors.Is(err, wor.ErrNotAllocated):
		return segFree, segMeta{}, nil
	case errors.Is(err, wor.ErrTrimmed):
		return segTrimmed, segMeta{}, nil
	case err != nil:
		return 0, segMeta{}, err
	}
	m, err := decodeSegMeta(md)
	if err != nil {
		return 0, segMeta{}, fmt.Errorf("log segment %d: %w", s.segID(seg), err)
	}
	if m.size != s.cfg.SegmentSize {
		return 0, segMeta{}, fmt.Errorf("wormlog: log segment %d has %d registers, this server uses %d: servers of one log need the same segment size", s.segID(seg), m.size, s.cfg.SegmentSize)
	}
	return segAllocated, m, nil
}

// campaign takes over as sequencer: allocate the segment after the newest
// (Alloc arbitrates between racing servers), junk-fill the two segments
// before it (what an old sequencer may have handed out and nobody wrote;
// values written are completed, not lost), capture the new one, lead.
func (s *Server) campaign(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*s.cfg.ElectionTimeout)
	defer cancel()
	last, lastMeta, any, err := s.findNewest(ctx)
	if err != nil {
		return err
	}
	seg := uint64(0)
	if any {
		seg = last + 1
	}
	if seg >= MaxSegments {
		return errors.New("wormlog: the log's segments are used up")
	}
	s.mu.Lock()
	epoch := max(lastMeta.epoch, s.newMeta.epoch, s.epoch) + 1
	s.mu.Unlock()
	m := segMeta{sequencer: s.cfg.ID, epoch: epoch, size: s.cfg.SegmentSize, addr: s.cfg.Addr}
	err = s.c.Alloc(ctx, s.segID(seg), encodeSegMeta(m))
	var ae *wor.AllocatedError
	if errors.As(err, &ae) {
		if om, derr := decodeSegMeta(ae.Metadata); derr == nil {
			s.note(seg, om)
		}
		return fmt.Errorf("log segment %d went to another server", s.segID(seg))
	}
	if err != nil {
		return fmt.Errorf("allocating log segment %d: %w", s.segID(seg), err)
	}
	s.note(seg, m)
	s.log.Info("wormlog: took log segment, junk-filling the segments before it", "segment", s.segID(seg), "epoch", epoch)
	for old := seg - min(seg, 2); old < seg; old++ {
		if err := s.fillSegment(ctx, old, epoch); err != nil {
			return err
		}
	}
	cid, err := s.c.SegCapture(ctx, s.segID(seg), 0, s.cfg.SegmentSize)
	if err != nil {
		return fmt.Errorf("capturing log segment %d: %w", s.segID(seg), err)
	}
	s.mu.Lock()
	if s.newMeta.epoch > epoch {
		s.mu.Unlock()
		return fmt.Errorf("a newer sequencer (epoch %d) took over meanwhile", s.newMeta.epoch)
	}
	s.leading, s.epoch = true, epoch
	s.seq = seqState{size: s.cfg.SegmentSize, cur: seg, curCID: uint64(cid)}
	s.st.Takeovers++
	s.contact = time.Now()
	s.mu.Unlock()
	s.markReady()
	s.log.Info("wormlog: sequencer", "segment", s.segID(seg), "epoch", epoch)
	s.wg.Add(1)
	go s.prepare(epoch)
	return nil
}

// fillSegment junk-fills every unwritten register of log segment seg: a
// capture preempts the tokens an old sequencer handed out there, and the
// write completes whatever value a capture found (a half-done append) and
// writes junk elsewhere. A trimmed segment needs nothing.
func (s *Server) fillSegment(ctx context.Context, seg, epoch uint64) error {
	junk := make([][]byte, s.cfg.SegmentSize)
	for i := range junk {
		junk[i] = junkValue
	}
	var err error
	for attempt := range fillAttempts {
		var cid wor.CaptureID
		cid, err = s.c.SegCapture(ctx, s.segID(seg), 0, s.cfg.SegmentSize)
		if err == nil {
			_, err = s.c.SegWrite(ctx, s.segID(seg), 0, junk, cid)
		}
		if err == nil || errors.Is(err, wor.ErrTrimmed) {
			s.mu.Lock()
			s.st.FilledSegments++
			s.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		s.mu.Lock()
		newer := s.newMeta.epoch > epoch
		s.mu.Unlock()
		if newer {
			return fmt.Errorf("a newer sequencer took over while this one filled segment %d", s.segID(seg))
		}
		if !sleep(ctx, time.Duration(1+attempt)*s.cfg.Heartbeat) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("junk-filling log segment %d: %w", s.segID(seg), err)
}

// lead is the sequencer's heartbeat: a newer segment than ours means a
// newer sequencer (note steps down).
func (s *Server) lead() {
	s.mu.Lock()
	next := s.seq.newest() + 1
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ElectionTimeout)
	defer cancel()
	st, m, err := s.probe(ctx, next)
	if err == nil && st == segAllocated {
		s.note(next, m)
	}
	s.mu.Lock()
	s.contact = time.Now()
	s.mu.Unlock()
}

// prepare keeps the next segment allocated and captured ahead of need
// while this server leads in epoch.
func (s *Server) prepare(epoch uint64) {
	defer s.wg.Done()
	for attempt := 0; ; {
		s.mu.Lock()
		if !s.leading || s.epoch != epoch {
			s.mu.Unlock()
			return
		}
		want, seg := s.seq.wantAhead(), s.seq.cur+1
		s.mu.Unlock()
		if !want {
			select {
			case <-s.kick:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		err := s.ahead(seg, epoch)
		if err == nil {
			attempt = 0
			continue
		}
		if s.ctx.Err() != nil {
			return
		}
		s.log.Debug("wormlog: preparing the next segment", "segment", s.segID(seg), "err", err)
		attempt++
		sleep(s.ctx, min(time.Duration(attempt)*s.cfg.Heartbeat/2, s.cfg.ElectionTimeout))
	}
}

// ahead allocates and captures log segment seg for epoch.
func (s *Server) ahead(seg, epoch uint64) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ElectionTimeout)
	defer cancel()
	m := segMeta{sequencer: s.cfg.ID, epoch: epoch, size: s.cfg.SegmentSize, addr: s.cfg.Addr}
	st, cur, err := s.probe(ctx, seg)
	if err != nil {
		return err
	}
	switch {
	case st == segAllocated && (cur.sequencer != s.cfg.ID || cur.epoch != epoch):
		s.note(seg, cur) // a newer sequencer's: we step down
		return fmt.Errorf("log segment %d is another sequencer's", s.segID(seg))
	case st == segFree:
		err := s.c.Alloc(ctx, s.segID(seg), encodeSegMeta(m))
		var ae *wor.AllocatedError
		if errors.As(err, &ae) {
			if om, derr := decodeSegMeta(ae.Metadata); derr == nil {
				s.note(seg, om)
			}
			if om, derr := decodeSegMeta(ae.Metadata); derr != nil || om.sequencer != s.cfg.ID || om.epoch != epoch {
				return fmt.Errorf("log segment %d went to another sequencer", s.segID(seg))
			}
		} else if err != nil {
			return err
		}
		s.note(seg, m)
	case st == segTrimmed:
		return fmt.Errorf("log segment %d is trimmed before use", s.segID(seg))
	}
	cid, err := s.c.SegCapture(ctx, s.segID(seg), 0, s.cfg.SegmentSize)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leading && s.epoch == epoch && s.seq.cur+1 == seg && !s.seq.ahead {
		s.seq.setAhead(uint64(cid))
	}
	return nil
}

func (s *Server) stepDownLocked(why string) {
	if !s.leading {
		return
	}
	s.leading = false
	s.log.Info("wormlog: no longer the sequencer", "epoch", s.epoch, "why", why)
	kickCh(s.kick)
}

// handle answers one request.
func (s *Server) handle(_ stack.Addr, b []byte, respond func([]byte)) {
	if s.closing.Load() {
		respond(encodeResponse(response{status: stUnavailable, msg: "the log server is closing"}))
		return
	}
	r, err := decodeRequest(b)
	if err != nil {
		s.mu.Lock()
		s.st.MalformedOrBusy++
		s.mu.Unlock()
		respond(encodeResponse(response{status: stBadRequest, msg: err.Error()}))
		return
	}
	s.mu.Lock()
	leading, epoch := s.leading, s.epoch
	s.mu.Unlock()
	if r.op == opToken && leading && r.stale == epoch {
		// A client could not use one of our tokens: make sure no newer
		// sequencer exists before handing out more.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.lead()
			respond(encodeResponse(s.answer(r)))
		}()
		return
	}
	respond(encodeResponse(s.answer(r)))
}

// answer computes the response to a valid request.
func (s *Server) answer(r request) response {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.leading {
		if r.op == opToken {
			s.st.NotSequencer++
		}
		leader := ""
		if s.newest > 0 && s.newMeta.sequencer != s.cfg.ID {
			leader = s.newMeta.addr
		}
		return response{status: stNotSeq, leader: leader}
	}
	switch r.op {
	case opTail:
		return response{status: stOK, pos: s.seq.tail(), epoch: s.epoch}
	default:
		pos, count, cid, ok := s.seq.issue(r.count)
		if s.seq.wantAhead() {
			kickCh(s.kick)
		}
		if !ok {
			s.st.MalformedOrBusy++
			return response{status: stUnavailable, msg: "the next log segment is not ready yet"}
		}
		s.st.Tokens += count
		return response{status: stOK, pos: pos, count: count, cid: cid, epoch: s.epoch}
	}
}

// kickCh and sleep: see internal/wake.
var (
	kickCh = wake.Kick
	sleep  = wake.Sleep
)
