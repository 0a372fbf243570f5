package wor

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"strata/journal"
	"strata/stack"
)

// partState is a server's configuration state for one partition: the
// epoch it serves, and whether it serves it yet (a sealed epoch is
// inactive until the new configuration's state is installed).
type partState struct {
	epoch  uint32
	active bool
}

// Server is a wormserver: a map from address to acceptor state, in memory
// or persistent in a journal. In persistent mode a reply leaves only once
// the state it reports is durable; concurrent requests share barriers.
type Server struct {
	mu       sync.Mutex
	accs     map[uint64]*acceptor
	trimmed  map[uint64]bool   // segment ids
	trimPart map[uint64]uint32 // the partition of each trimmed segment
	parts    map[uint32]partState
	joining  bool // partitions not in parts are not served until installed
	// listeners: per segment, who wants notifications of accepts, until when.
	listeners map[uint64]map[stack.Addr]time.Time
	notifier  func(to stack.Addr, msg []byte)
	// notes: the notifications the request being handled produced; the
	// handler takes them and sends them once what they report is durable
	// (a listener may count them as acceptances: see Learner).
	notes    []note
	observer func(op string, d time.Duration)
	stepHook stepHook // tests: see stepHook
	log      *slog.Logger
	store    *journalStore // nil: memory mode
	// In persistent mode the values most recently stored stay in memory,
	// up to cacheBudget bytes; older registers are spilled (spill.go).
	cache       spillQueue
	cacheBudget int
	// segHi: per segment, one past the highest data offset that has
	// state (the trim and metadata registers are always looked at), so forgetting a segment visits its own
	// registers and not the whole map.
	segHi map[uint64]uint64
	// Keyed logs (keylog.go): per segment, one past the highest data
	// offset with an accepted value, and the floor below which registers
	// are collected (absent: 0).
	segTop map[uint64]uint64
	floors map[uint64]uint64

	// Replies waiting for the journal (persistent mode): one goroutine at a
	// time flushes and sends every reply queued before its flush, inside
	// batch (Node.Batch: one datagram per client where they fit).
	replyMu  sync.Mutex
	replies  []pendingReply
	flushing bool
	batch    func(func())

	Requests  [opMax + 1]uint64 // by operation (index 0: malformed)
	Conflicts uint64            // accepts of a different value at a new ballot after one was accepted (should stay 0 for chosen values)
	// SpillReads counts values read back from journal slots because they
	// had left the value cache (persistent mode).
	SpillReads uint64
}

type pendingReply struct {
	resp    []byte
	respond func([]byte)
	notes   []note
	op      string
	start   time.Time
}

// note is a notification to send.
type note struct {
	to  stack.Addr
	msg []byte
}

// NewServer returns an empty wormserver.
func NewServer(log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{accs: map[uint64]*acceptor{}, trimmed: map[uint64]bool{}, trimPart: map[uint64]uint32{}, parts: map[uint32]partState{}, log: log,
		segHi: map[uint64]uint64{}, segTop: map[uint64]uint64{}, floors: map[uint64]uint64{}, cacheBudget: DefaultValueCache}
}

// Join makes a server that is new to its partitions: it serves none of
// them until a reconfiguration installs their state on it. (A server of
// the initial configuration serves epoch 0 of every partition at once; a
// server that replaces another must not, or it would answer "unwritten"
// for registers it never saw.)
func (s *Server) Join() {
	s.mu.Lock()
	s.joining = true
	s.mu.Unlock()
}

// NewPersistentServer recovers a wormserver from a journal.
func NewPersistentServer(j *journal.Journal, log *slog.Logger) (*Server, error) {
	s := NewServer(log)
	s.store = &journalStore{j: j, slots: map[uint64]uint64{}, parts: map[uint32]uint64{}, floors: map[uint64]uint64{}}
	accs, parts, floors, err := s.store.load()
	if err != nil {
		return nil, fmt.Errorf("wor: recover acceptor state: %w", err)
	}
	s.accs, s.parts, s.floors = accs, parts, floors
	for addr, a := range accs {
		s.track(addr)
		if a.has {
			s.accepted(addr)
		}
		if addr&(1<<offsetBits-1) == trimOffset && a.promised == trimMark {
			s.trimmed[addr>>offsetBits] = true
		}
	}
	// The slots still holding registers of trimmed segments, or below
	// their segment's floor, are free.
	for seg := range s.trimmed {
		s.forget(seg)
	}
	for addr := range s.accs {
		if s.belowFloor(addr) {
			s.store.release(addr)
			delete(s.accs, addr)
		}
	}
	for seg, floor := range s.floors {
		if s.segTop[seg] <= floor {
			delete(s.segTop, seg)
		}
	}
	return s, nil
}

// Stats is a snapshot of a server's counters.
type Stats struct {
	Malformed, Prepares, Accepts, Reads uint64
	Registers                           int
	SpillReads                          uint64 // values read back from journal slots (persistent mode)
	CachedValueBytes                    int    // bytes of values queued in memory (persistent mode)
	FreeSlots                           int    // reclaimed journal slots awaiting reuse (persistent mode)
	Barriers                            uint64 // journal barriers (persistent mode)
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	st := Stats{Malformed: s.Requests[0], Prepares: s.Requests[opPrepare] + s.Requests[opPrepareFor], Accepts: s.Requests[opAccept] + s.Requests[opAcceptFor], Reads: s.Requests[opRead], Registers: len(s.accs),
		SpillReads: s.SpillReads, CachedValueBytes: s.cache.bytes}
	if s.store != nil {
		st.FreeSlots = len(s.store.free)
	}
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
	start := time.Now()
	resp, notes := s.handle(from, req)
	op := OpName(0)
	if len(req) > 0 {
		op = OpName(req[0])
	}
	if s.store == nil || !s.store.j.Pending() {
		// Memory mode, or nothing committed is waiting for durability
		// (e.g. a read in a read-only phase): the state reported is
		// already on disk.
		respond(resp)
		s.send(notes)
		s.observe(op, start)
		return
	}
	// Even a read waits: it may report state an earlier request appended
	// and that is not yet durable.
	s.replyMu.Lock()
	s.replies = append(s.replies, pendingReply{resp, respond, notes, op, start})
	if !s.flushing {
		s.flushing = true
		go s.flushReplies()
	}
	s.replyMu.Unlock()
}

// flushReplies answers queued replies once what they report is durable,
// until none are left. One goroutine per busy period rather than one per
// request: a fresh goroutine grew its stack by copying on every request
// (about 9 % of a server's CPU), and the replies of one flush leave
// together.
func (s *Server) flushReplies() {
	var batch []pendingReply
	for {
		s.replyMu.Lock()
		batch, s.replies = s.replies, batch[:0]
		inBatch := s.batch
		if len(batch) == 0 {
			s.flushing = false
			s.replyMu.Unlock()
			return
		}
		s.replyMu.Unlock()
		// Every queued reply's state was appended before it was queued, so
		// this flush covers them all.
		if err := s.store.j.Flush(); err != nil {
			s.log.Error("wor: journal flush failed; not answering", "err", err, "replies", len(batch))
			clear(batch) // the clients time out; nothing unsafe was promised
			continue
		}
		send := func() {
			for _, r := range batch {
				r.respond(r.resp)
				s.send(r.notes)
			}
		}
		if inBatch != nil {
			inBatch(send)
		} else {
			send()
		}
		for i, r := range batch {
			s.observe(r.op, r.start)
			batch[i] = pendingReply{}
		}
	}
}

// SetBatch makes the replies of one journal flush go out through batch
// (a Node's Batch, so that replies to one client share a datagram).
func (s *Server) SetBatch(batch func(func())) {
	s.replyMu.Lock()
	defer s.replyMu.Unlock()
	s.batch = batch
}

// OpName names a request type for metrics ("prepare", "accept", ...;
// "malformed" for anything else).
func OpName(op byte) string {
	names := [...]string{"malformed", "prepare", "accept", "read", "trim", "seal", "dump", "install", "activate", "seg_prepare", "seg_accept", "listen", "commit", "prepare_for", "accept_for", "latest", "trim_below"}
	if int(op) < len(names) {
		return names[op]
	}
	return "malformed"
}

// SetObserver sets a function told, for every request HandleAsync
// answers, its type and how long the server took from receipt to reply
// (including the wait for durability): this server's share of a quorum
// round's latency.
func (s *Server) SetObserver(f func(op string, d time.Duration)) {
	s.mu.Lock()
	s.observer = f
	s.mu.Unlock()
}

func (s *Server) observe(op string, start time.Time) {
	s.mu.Lock()
	f := s.observer
	s.mu.Unlock()
	if f != nil {
		f(op, time.Since(start))
	}
}

// Handle answers one request (a stack.Handler). In persistent mode it
// waits for durability on the caller's goroutine, so requests do not share
// barriers: it is for the deterministic simulator, where the wait takes no
// simulated time; servers on real networks use HandleAsync.
func (s *Server) Handle(from stack.Addr, req []byte) []byte {
	resp, notes := s.handle(from, req)
	if s.store != nil {
		if err := s.store.j.Flush(); err != nil {
			s.log.Error("wor: journal flush failed", "err", err)
			return response{Status: stFull}.encode()
		}
	}
	s.send(notes)
	return resp
}

// send sends notifications (outside the lock: the notifier may block
// briefly on its transport).
func (s *Server) send(notes []note) {
	if len(notes) == 0 {
		return
	}
	s.mu.Lock()
	f := s.notifier
	s.mu.Unlock()
	for _, n := range notes {
		f(n.to, n.msg)
	}
}

// handle answers one request and returns the notifications it produced,
// to be sent once the state they report is durable.
func (s *Server) handle(from stack.Addr, req []byte) ([]byte, []note) {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp, _ := s.handleLocked(from, req)
	notes := s.notes
	s.notes = nil
	return resp, notes
}

func (s *Server) handleLocked(from stack.Addr, req []byte) ([]byte, bool) {
	r, err := decodeRequest(req)
	if err != nil {
		s.Requests[0]++
		s.log.Warn("wor: malformed request", "from", from, "err", err)
		return response{Status: stErr}.encode(), false
	}
	s.Requests[r.Op]++
	switch r.Op {
	case opSeal:
		return s.seal(r), false
	case opDump:
		return s.dump(r), false
	case opInstall:
		return s.install(from, r), false
	case opActivate:
		return s.activate(r), false
	}
	ps := s.partState(r.Part)
	if st, ok := admit(ps, r.Epoch); !ok {
		return response{Status: st, Promised: uint64(ps.epoch)}.encode(), false
	}
	if r.Op == opTrim {
		return s.trim(r.Addr, r.Part), false
	}
	if r.Op == opListen {
		return s.listen(from, r), false
	}
	if r.Op == opLatest {
		return s.latest(r.Addr), false
	}
	if s.trimmed[r.Addr>>offsetBits] {
		return response{Status: stTrim}.encode(), false
	}
	if r.Op == opTrimBelow {
		return s.trimBelow(r.Addr), false
	}
	if s.belowFloor(r.Addr) {
		return response{Status: stFloor}.encode(), false
	}
	if r.Op == opSegPrepare || r.Op == opSegAccept {
		return s.segBatch(from, r)
	}
	op, value, fwd := r.Op, r.Value, stack.Addr("")
	switch op {
	case opPrepareFor:
		op = opPrepare
		fwd, value, _ = splitForward(r.Value) // decodeRequest checked it
	case opAcceptFor:
		op = opAccept
		fwd, value, _ = splitForward(r.Value)
	}
	a, status, changed, err := s.apply(r.Addr, r.Part, op, r.Ballot, value)
	if err != nil {
		s.log.Warn("wor: cannot store acceptor state", "addr", r.Addr, "err", err)
		return response{Status: stFull}.encode(), false
	}
	resp := a.reply(status)
	if fwd != "" && s.notifier != nil {
		// Partial delegation: the reply goes to the proposer that acts on
		// it too, once durable (sent with the notes, after the flush).
		s.notes = append(s.notes, note{fwd, forwarded{Addr: r.Addr, Ballot: r.Ballot, Resp: resp}.encode()})
	}
	return resp.encode(), changed
}

// apply runs the acceptor rule (acceptor.step) on the register at addr
// and carries out what it decides: a changed state is stored (in
// persistent mode appended to the journal, under the lock, so the journal
// holds each register's states in the order they were decided; the reply
// waits for it to be durable) and kept, and an accept is reported to the
// segment's listeners. Every prepare, accept and read, single or in a
// segment batch, in memory or persistent mode, goes through here. It
// returns the state after the request; on a storage error nothing
// changed. Called with the lock held.
func (s *Server) apply(addr uint64, part uint32, op byte, ballot uint64, value []byte) (a acceptor, status byte, changed bool, err error) {
	cur := s.accs[addr]
	if cur == nil {
		a = acceptor{part: part} // a register never written: not kept unless changed
	} else if a, err = s.loaded(addr, *cur); err != nil {
		return a, 0, false, err
	}
	st := a.step(op, part, ballot, value)
	if s.stepHook != nil {
		st = s.stepHook(addr, op, ballot, value, a, st)
	}
	if st.conflict {
		s.Conflicts++
	}
	if !st.changed {
		return st.next, st.status, false, nil
	}
	if s.store != nil {
		if err := s.store.save(addr, &st.next); err != nil {
			return a, st.status, false, err
		}
	}
	if cur == nil {
		cur = new(acceptor)
		s.accs[addr] = cur
		s.track(addr)
	}
	*cur = st.next
	if cur.has {
		s.accepted(addr)
	}
	s.cached(addr, cur)
	if op == opAccept {
		s.notify(addr, cur)
	}
	return st.next, st.status, true, nil
}

// segBatch handles a segment prepare or accept on consecutive registers
// of one segment (one message, one round trip, one group commit).
func (s *Server) segBatch(from stack.Addr, r request) ([]byte, bool) {
	seg, first := r.Addr>>offsetBits, r.Addr&(1<<offsetBits-1)
	var values [][]byte
	count := uint64(0)
	if r.Op == opSegPrepare {
		if len(r.Value) != 4 {
			s.Requests[0]++
			return response{Status: stErr}.encode(), false
		}
		count = uint64(binary.BigEndian.Uint32(r.Value))
	} else {
		var err error
		if values, err = decodeValues(r.Value); err != nil || r.Ballot == 0 {
			s.Requests[0]++
			s.log.Warn("wor: malformed segment write", "from", from, "err", err)
			return response{Status: stErr}.encode(), false
		}
		count = uint64(len(values))
	}
	if count == 0 || count > MaxSegBatch || first+count > MaxOffset {
		s.Requests[0]++
		return response{Status: stErr}.encode(), false
	}
	var entries []segEntry
	var hi uint64
	changed := false
	for i := uint64(0); i < count; i++ {
		addr := Addr(seg, first+i)
		var v []byte
		if values != nil {
			v = values[i]
		}
		op := byte(opPrepare)
		if values != nil {
			op = opAccept
		}
		a, status, ch, err := s.apply(addr, r.Part, op, r.Ballot, v)
		if err != nil {
			s.log.Warn("wor: cannot store acceptor state", "addr", addr, "err", err)
			return response{Status: stFull}.encode(), changed
		}
		changed = changed || ch
		nack := status == stNack
		switch {
		case nack:
			hi = max(hi, a.promised)
			entries = append(entries, segEntry{off: uint32(i), nack: true, promised: a.promised})
		case values == nil && a.has:
			entries = append(entries, segEntry{off: uint32(i), promised: a.promised, acc: a.accBallot, has: true, value: a.value})
		}
	}
	return response{Status: stOK, Promised: hi, Has: len(entries) > 0, Value: encodeSegEntries(entries)}.encode(), changed
}

// listenTTL bounds how long a listener registration lasts without renewal.
const maxListenTTL = time.Minute

// listen registers the sender for notifications of accepts in segment
// r.Addr for r.Ballot milliseconds (at most a minute).
func (s *Server) listen(from stack.Addr, r request) []byte {
	ttl := time.Duration(r.Ballot) * time.Millisecond
	if r.Addr > MaxSegment || ttl <= 0 || ttl > maxListenTTL {
		s.Requests[0]++
		return response{Status: stErr}.encode()
	}
	if s.listeners == nil {
		s.listeners = map[uint64]map[stack.Addr]time.Time{}
	}
	if s.listeners[r.Addr] == nil {
		s.listeners[r.Addr] = map[stack.Addr]time.Time{}
	}
	s.listeners[r.Addr][from] = time.Now().Add(ttl)
	return response{Status: stOK}.encode()
}

// notify queues a report of an accepted value to the listeners of its
// segment (called with the lock held; handle returns the reports).
func (s *Server) notify(addr uint64, a *acceptor) {
	ls := s.listeners[addr>>offsetBits]
	if len(ls) == 0 || s.notifier == nil {
		return
	}
	now := time.Now()
	msg := notification{Addr: addr, Ballot: a.accBallot, Value: a.value}.encode()
	for to, until := range ls {
		if now.After(until) {
			delete(ls, to)
			continue
		}
		s.notes = append(s.notes, note{to, msg})
	}
}

// SetNotifier sets how the server sends notifications to listeners
// (typically the node's Send). Without one, SegListen gets nothing.
func (s *Server) SetNotifier(f func(to stack.Addr, msg []byte)) {
	s.mu.Lock()
	s.notifier = f
	s.mu.Unlock()
}

// partState is the partition's state here; a partition never heard of is
// served at epoch 0, unless this server joined by reconfiguration.
func (s *Server) partState(part uint32) partState {
	if ps, ok := s.parts[part]; ok {
		return ps
	}
	return partState{epoch: 0, active: !s.joining}
}

func (s *Server) setPart(part uint32, ps partState) []byte {
	if s.store != nil {
		if err := s.store.savePart(part, ps); err != nil {
			s.log.Warn("wor: cannot record a partition's epoch", "part", part, "err", err)
			return response{Status: stFull}.encode()
		}
	}
	s.parts[part] = ps
	return nil
}

// seal stops serving epochs below r.Epoch: from now on clients of the old
// configuration are told to look for the new one.
func (s *Server) seal(r request) []byte {
	ps := s.partState(r.Part)
	if r.Epoch > ps.epoch {
		if resp := s.setPart(r.Part, partState{epoch: r.Epoch}); resp != nil {
			return resp
		}
		s.log.Info("wor: partition sealed", "part", r.Part, "epoch", r.Epoch)
		ps = s.parts[r.Part]
	}
	return response{Status: stOK, Promised: uint64(ps.epoch)}.encode()
}

// activate serves r.Epoch once its state is installed here.
func (s *Server) activate(r request) []byte {
	ps := s.partState(r.Part)
	switch {
	case r.Epoch < ps.epoch:
		return response{Status: stSealed, Promised: uint64(ps.epoch)}.encode()
	case r.Epoch > ps.epoch:
		return response{Status: stNotReady, Promised: uint64(ps.epoch)}.encode()
	}
	if !ps.active {
		if resp := s.setPart(r.Part, partState{epoch: r.Epoch, active: true}); resp != nil {
			return resp
		}
		s.log.Info("wor: partition active", "part", r.Part, "epoch", r.Epoch)
	}
	return response{Status: stOK, Promised: uint64(r.Epoch)}.encode()
}

// dumpPage bounds the records of one dump reply.
const dumpPage = 256

// dump returns, in address order, up to dumpPage of the partition's
// registers (trim marks included) with addresses above r.Addr, or from the
// start if r.Ballot is 0. The reply's value is a record list; Promised is
// 1 if more follow.
func (s *Server) dump(r request) []byte {
	addrs := make([]uint64, 0, len(s.accs))
	for addr, a := range s.accs {
		if a.part == r.Part && (r.Ballot == 0 || addr > r.Addr) {
			addrs = append(addrs, addr)
		}
	}
	for seg := range s.trimmed {
		addr := Addr(seg, trimOffset)
		if _, ok := s.accs[addr]; !ok && s.trimPart[seg] == r.Part && (r.Ballot == 0 || addr > r.Addr) {
			addrs = append(addrs, addr)
		}
	}
	slices.Sort(addrs)
	more := len(addrs) > dumpPage
	if more {
		addrs = addrs[:dumpPage]
	}
	var recs []record
	for _, addr := range addrs {
		if a := s.accs[addr]; a != nil {
			got, err := s.loaded(addr, *a)
			if err != nil {
				s.log.Warn("wor: cannot read a register for a dump", "addr", addr, "err", err)
				return response{Status: stFull}.encode()
			}
			recs = append(recs, record{addr: addr, a: got})
		} else {
			recs = append(recs, record{addr: addr, a: acceptor{promised: trimMark, accBallot: trimMark, has: true, part: r.Part}})
		}
	}
	resp := response{Status: stOK, Has: true, Value: encodeRecords(recs)}
	if more {
		resp.Promised = 1
	}
	return resp.encode()
}

// install merges records (from a sealed majority of the old
// configuration) into the partition's state for epoch r.Epoch: the higher
// promise, and the accepted value of the higher ballot, win.
func (s *Server) install(from stack.Addr, r request) []byte {
	recs, err := decodeRecords(r.Value)
	if err != nil {
		s.Requests[0]++
		s.log.Warn("wor: malformed install", "from", from, "err", err)
		return response{Status: stErr}.encode()
	}
	ps := s.partState(r.Part)
	switch {
	case r.Epoch < ps.epoch || (r.Epoch == ps.epoch && ps.active):
		return response{Status: stSealed, Promised: uint64(ps.epoch)}.encode()
	case r.Epoch > ps.epoch:
		if resp := s.setPart(r.Part, partState{epoch: r.Epoch}); resp != nil {
			return resp
		}
	}
	for _, rec := range recs {
		seg := rec.addr >> offsetBits
		if rec.a.promised == trimMark {
			if resp := s.trimFor(seg, r.Part); resp != nil {
				return resp
			}
			continue
		}
		if s.trimmed[seg] {
			continue
		}
		cur := s.accs[rec.addr]
		next := acceptor{part: r.Part}
		if cur != nil {
			// Loaded: the slot is rewritten whole, value included.
			if next, err = s.loaded(rec.addr, *cur); err != nil {
				s.log.Warn("wor: cannot read a register to install over it", "addr", rec.addr, "err", err)
				return response{Status: stFull}.encode()
			}
		}
		changed := false
		if rec.a.promised > next.promised {
			next.promised, changed = rec.a.promised, true
		}
		if rec.a.has && (!next.has || rec.a.accBallot > next.accBallot) {
			next.has, next.accBallot, next.value, next.chosen, changed = true, rec.a.accBallot, rec.a.value, rec.a.chosen, true
			next.promised = max(next.promised, next.accBallot)
		}
		if !changed {
			continue
		}
		if s.store != nil {
			if err := s.store.save(rec.addr, &next); err != nil {
				s.log.Warn("wor: cannot install acceptor state", "addr", rec.addr, "err", err)
				return response{Status: stFull}.encode()
			}
		}
		if cur == nil {
			s.track(rec.addr)
		}
		if next.has {
			s.accepted(rec.addr)
		}
		s.accs[rec.addr] = &next
		s.cached(rec.addr, &next)
	}
	return response{Status: stOK, Promised: uint64(r.Epoch)}.encode()
}

// trimMark in the promised ballot of a segment's trim slot records, in
// persistent mode, that the segment was trimmed here.
const trimMark = ^uint64(0)

// trim forgets segment seg and refuses its registers from now on. In
// persistent mode the trim is recorded (durably, before the reply) in the
// segment's trim slot; the slots of its registers are not reclaimed yet.
func (s *Server) trim(seg uint64, part uint32) []byte {
	if seg > MaxSegment {
		return response{Status: stErr}.encode()
	}
	if resp := s.trimFor(seg, part); resp != nil {
		return resp
	}
	return response{Status: stOK}.encode()
}

// trimFor records that seg (of partition part) is trimmed and forgets its
// registers; it returns an error reply if the trim cannot be recorded.
func (s *Server) trimFor(seg uint64, part uint32) []byte {
	if !s.trimmed[seg] && s.store != nil {
		mark := acceptor{promised: trimMark, accBallot: trimMark, has: true, part: part}
		if err := s.store.save(Addr(seg, trimOffset), &mark); err != nil {
			s.log.Warn("wor: cannot record a trim", "segment", seg, "err", err)
			return response{Status: stFull}.encode()
		}
	}
	s.trimmed[seg] = true
	s.trimPart[seg] = part
	s.forget(seg)
	return nil
}

// forget drops the state of every register of seg but its trim mark, and
// in persistent mode reclaims their journal slots (no disk write: see
// journalStore.release).
func (s *Server) forget(seg uint64) {
	hi := s.segHi[seg]
	delete(s.segHi, seg)
	delete(s.segTop, seg)
	if _, ok := s.floors[seg]; ok {
		delete(s.floors, seg)
		if s.store != nil {
			s.store.releaseFloor(seg)
		}
	}
	offs := func(yield func(uint64) bool) {
		for off := range hi {
			if !yield(off) {
				return
			}
		}
		_ = yield(trimOffset) && yield(metaOffset)
	}
	for off := range offs {
		addr := Addr(seg, off)
		a := s.accs[addr]
		if a == nil {
			continue
		}
		if s.store != nil && addr == Addr(seg, trimOffset) {
			// Its slot holds (or, during a trim, was just overwritten
			// with) the trim mark, which must never be reclaimed.
			if _, ok := s.trimPart[seg]; !ok {
				s.trimPart[seg] = a.part
			}
			delete(s.accs, addr) // its slot keeps the trim mark
			continue
		}
		if s.store != nil {
			s.store.release(addr)
		}
		delete(s.accs, addr)
	}
}

// track notes that the register at addr has state (see segHi). Called
// with the lock held.
func (s *Server) track(addr uint64) {
	seg, off := addr>>offsetBits, addr&(1<<offsetBits-1)
	if off < trimOffset && off+1 > s.segHi[seg] {
		s.segHi[seg] = off + 1
	}
}
