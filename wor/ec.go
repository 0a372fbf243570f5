package wor

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"strata/stack"
)

// EC is the ec engine: Pando's erasure-coded Paxos (NSDI '23) per
// register. Each server accepts its own split of a value (split.go), not
// the value; the quorums are those of an ECPlan:
//
//   - Capture is Phase 1: a prepare to every server. Promises from a
//     Phase 1a quorum that report no split at all capture the register
//     with nothing to complete; otherwise, from a Phase 1b quorum, the
//     value of the highest ballot with K valid splits is rebuilt and
//     becomes what the capture's Write must write (a *WrittenError), as
//     in the paxos engine.
//   - Write is Phase 2: server i is sent split i at the capture's
//     ballot; the value is chosen once a Phase 2 quorum accepted. Phase 3
//     then tells every server, without waiting, that its split at that
//     ballot is chosen (opCommit), so that later reads take one round.
//   - Read asks every server; once a Phase 1a quorum answered, a value
//     some server knows chosen is returned as soon as K of its splits
//     are at hand; otherwise, once a Phase 1b quorum answered, the
//     recovered value is returned if it is known chosen and written back
//     (captured and written at a higher ballot) if not.
//
// A split that fails its checks counts as the server not answering, so a
// damaged reply can slow a round, never change its outcome. Like Paxos,
// it is safe for concurrent use; its methods never block and call back
// exactly once.
type EC struct {
	node    *stack.Node
	servers []stack.Addr
	timeout time.Duration
	plan    ECPlan
	codec   *splitCodec
	conf
	*ballots
	hub *notifyHub

	lmu      sync.Mutex
	leader   stack.Addr // guarded by lmu: where preempted writes go (SetLeader); "" for none
	delegate stack.Addr // guarded by lmu: who runs Propose's Phase 2 (SetDelegate); "" for none
}

var (
	_ Engine  = (*EC)(nil)
	_ Learner = (*EC)(nil)
)

// NewEC returns the ec engine for client id (as NewPaxos) over servers,
// server i holding split i, with plan, which must pass plan.Validate for
// len(servers).
func NewEC(node *stack.Node, servers []stack.Addr, id uint64, timeout time.Duration, plan ECPlan) (*EC, error) {
	if err := plan.Validate(len(servers)); err != nil {
		return nil, err
	}
	return newEC(node, servers, id, timeout, plan)
}

// newEC is NewEC without the plan's validation, for tests that show what
// a plan breaking a rule does. It still needs K ≤ n.
func newEC(node *stack.Node, servers []stack.Addr, id uint64, timeout time.Duration, plan ECPlan) (*EC, error) {
	b, err := newBallots(id)
	if err != nil {
		return nil, err
	}
	codec, err := newSplitCodec(len(servers), plan.K)
	if err != nil {
		return nil, err
	}
	return &EC{node: node, servers: servers, timeout: timeout, plan: plan, codec: codec, ballots: b, hub: &notifyHub{}}, nil
}

// Plan is the engine's plan.
func (e *EC) Plan() ECPlan { return e.plan }

// ecRun is one round: a request to every server, and the answers so far.
type ecRun struct {
	mu          sync.Mutex
	answers     []ecAnswer // guarded by mu
	outstanding int        // guarded by mu: servers not answered yet
	done        bool       // guarded by mu: decided; later answers are dropped
	// decide is called under mu after each answer with the answers so far;
	// it returns whether the round is decided and what to run then
	// (outside mu: it calls back into the caller).
	decide func(as []ecAnswer, outstanding int) (bool, func())
	// fatal is run instead, once, when a server reports the segment
	// trimmed, the register collected (below its segment's floor) or the
	// configuration sealed: any server saying so is enough (as in
	// quorumCall).
	fatal func(error)
}

// round sends body(i) to server i, for every server, and drives decide.
func (e *EC) round(body func(i int) []byte, decide func(as []ecAnswer, outstanding int) (bool, func()), fatal func(error)) {
	r := &ecRun{outstanding: len(e.servers), decide: decide, fatal: fatal}
	for i, s := range e.servers {
		_, err := e.node.CallAsync(s, body(i), e.timeout, func(b []byte, err error) {
			var resp response
			if err == nil {
				resp, err = decodeResponse(b)
				if err == nil && resp.Status != stNack {
					err = statusErr(nil, resp.Status)
				}
			}
			r.answer(ecAnswer{from: i, resp: resp, err: err})
		})
		if err != nil {
			r.answer(ecAnswer{from: i, err: fmt.Errorf("%w: %v", ErrUnavailable, err)})
		}
	}
}

func (r *ecRun) answer(a ecAnswer) {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	r.outstanding--
	if errors.Is(a.err, ErrTrimmed) || errors.Is(a.err, ErrSealed) || errors.Is(a.err, ErrCollected) {
		r.done = true
		r.mu.Unlock()
		r.fatal(a.err)
		return
	}
	r.answers = append(r.answers, a)
	done, then := r.decide(r.answers, r.outstanding)
	r.done = done
	r.mu.Unlock()
	if done && then != nil {
		then()
	}
}

// unavailable describes a round that could not gather its quorum: how
// many servers did not answer, and how many answered with a split that
// failed its checks (damaged, or of another plan: data written under
// one plan is not readable under another).
func (e *EC) unavailable(what string, as []ecAnswer, need int) error {
	var last error
	down, refused := 0, 0
	for _, a := range as {
		switch {
		case a.err != nil:
			down++
			last = a.err
		case a.resp.Status == stOK && a.resp.Has:
			if _, ok := e.codec.state(a.from, 0, 0, true, false, a.resp.Value); !ok {
				refused++
			}
		}
	}
	return fmt.Errorf("%w: %s needed %d of %d servers: %d did not answer (last error: %v), %d splits refused as damaged or of another plan",
		ErrUnavailable, what, need, len(e.servers), down+len(e.servers)-len(as), last, refused)
}

// Capture runs Phase 1 for addr with a new ballot; a ballot below one a
// server already promised is retried (a few times) above it.
func (e *EC) Capture(addr uint64, cb func(CaptureID, error)) { e.capture(addr, 3, cb) }

func (e *EC) capture(addr uint64, tries int, cb func(CaptureID, error)) {
	b := e.next()
	body := e.stamp(request{Op: opPrepare, Addr: addr, Ballot: b}).encode()
	e.round(func(int) []byte { return body }, func(as []ecAnswer, outstanding int) (bool, func()) {
		out, pr, hi := e.plan.phase1(e.codec, as, outstanding)
		switch out {
		case p1Captured:
			return true, func() {
				e.remember(addr, CaptureID(b), pr)
				cb(CaptureID(b), nil)
			}
		case p1Preempted:
			return true, func() {
				e.observe(hi)
				if tries > 1 {
					e.capture(addr, tries-1, cb)
					return
				}
				cb(0, ErrPreempted)
			}
		case p1Unavailable:
			return true, func() { cb(0, e.unavailable("phase 1", as, e.plan.Q1b)) }
		}
		return false, nil
	}, func(err error) { cb(0, err) })
}

// Write runs Phase 2 for addr with cid from Capture (0: an unsafe write,
// as with Paxos); a value the capture recovered is written instead and
// reported as a *WrittenError.
func (e *EC) Write(addr uint64, value []byte, cid CaptureID, cb func(error)) {
	b, v, written, err := e.take(addr, value, cid)
	if err != nil {
		cb(err)
		return
	}
	e.writeAt(addr, b, v, written, cb)
}

// encode cuts v into the servers' splits, refusing a value whose splits
// do not fit in a request.
func (e *EC) encode(v []byte) ([][]byte, error) {
	if splitHdr+shardSize(len(v), e.plan.K) > MaxValue {
		return nil, fmt.Errorf("wor: value of %d bytes: its splits exceed %d bytes", len(v), MaxValue)
	}
	return e.codec.encode(v)
}

// writeAt runs Phase 2 for v at ballot b, then Phase 3; if Phase 2 is
// preempted and e has a leader, the write goes to the leader instead.
func (e *EC) writeAt(addr, b uint64, v []byte, written bool, cb func(error)) {
	leader := e.leaderAddr()
	if leader == "" {
		e.phase2(addr, b, v, written, cb)
		return
	}
	e.phase2(addr, b, v, written, func(err error) {
		if errors.Is(err, ErrPreempted) {
			e.viaLeader(leader, addr, v, written, cb)
			return
		}
		cb(err)
	})
}

// phase2 runs Phase 2 for v at ballot b, then Phase 3.
func (e *EC) phase2(addr, b uint64, v []byte, written bool, cb func(error)) {
	splits, err := e.encode(v)
	if err != nil {
		cb(err)
		return
	}
	e.round(func(i int) []byte {
		return e.stamp(request{Op: opAccept, Addr: addr, Ballot: b, Value: splits[i]}).encode()
	}, func(as []ecAnswer, outstanding int) (bool, func()) {
		out, hi := e.plan.phase2(as, outstanding)
		switch out {
		case p2Chosen:
			return true, func() {
				e.commit(addr, b)
				if written {
					cb(&WrittenError{Value: v})
					return
				}
				cb(nil)
			}
		case p2Preempted:
			return true, func() {
				e.observe(hi)
				cb(ErrPreempted)
			}
		case p2Unavailable:
			return true, func() { cb(e.unavailable("phase 2", as, e.plan.Q2)) }
		}
		return false, nil
	}, cb)
}

// commit is Phase 3: every server learns that its split of addr at
// ballot b is chosen. Nobody waits for it; a server that misses it only
// makes reads that meet it take the Phase 1b path.
func (e *EC) commit(addr, b uint64) {
	body := e.stamp(request{Op: opCommit, Addr: addr, Ballot: b}).encode()
	for _, s := range e.servers {
		_, _ = e.node.CallAsync(s, body, e.timeout, func([]byte, error) {})
	}
}

// Read returns addr's chosen value, or ErrUnwritten.
func (e *EC) Read(addr uint64, cb func([]byte, error)) { e.read(addr, 5, cb) }

func (e *EC) read(addr uint64, tries int, cb func([]byte, error)) {
	body := e.stamp(request{Op: opRead, Addr: addr}).encode()
	e.round(func(int) []byte { return body }, func(as []ecAnswer, outstanding int) (bool, func()) {
		out, v := e.plan.read(e.codec, as, outstanding)
		switch out {
		case readChosen:
			return true, func() { cb(v, nil) }
		case readUnwritten:
			return true, func() { cb(nil, ErrUnwritten) }
		case readComplete:
			return true, func() {
				complete(e, addr, v, tries, func() { e.read(addr, tries-1, cb) }, cb)
			}
		case readUnavailable:
			return true, func() { cb(nil, e.unavailable("read", as, e.plan.Q1b)) }
		}
		return false, nil
	}, func(err error) { cb(nil, err) })
}

// Trim tells every server to forget segment seg.
func (e *EC) Trim(seg uint64, cb func(error)) {
	trimAll(e.node, e.servers, e.timeout, e.stamp(request{Op: opTrim, Addr: seg}), cb)
}

// Subscribe implements Engine.
func (e *EC) Subscribe(seg uint64, ttl time.Duration, notify func(addr uint64), cb func(error)) (cancel func()) {
	return subscribe(e.hub, e.node, e.servers, e.timeout, e.stamp(listenReq(seg, ttl)), seg, addrOnly(notify), cb)
}

// Learn implements Learner: a Phase 2 quorum of servers reports
// accepting splits of one value at one ballot, and the value is rebuilt
// from them.
func (e *EC) Learn(seg uint64, ttl time.Duration, learned func(addr uint64, value []byte), cb func(error)) (cancel func()) {
	return subscribe(e.hub, e.node, e.servers, e.timeout, e.stamp(listenReq(seg, ttl)), seg, e.learnSplits(learned), cb)
}

// learnSplits counts reports per register and ballot, keeping each
// reporter's split (a damaged one is not counted), and calls learned
// once Q2 servers reported one ballot. Its state is the registers
// reported but not yet learned, and those learned.
func (e *EC) learnSplits(learned func(uint64, []byte)) noteFunc {
	index := map[stack.Addr]int{}
	for i, s := range e.servers {
		index[s] = i
	}
	var mu sync.Mutex
	seen := map[uint64]map[uint64][]ecState{} // guarded by mu: addr -> ballot -> reported states
	done := map[uint64]bool{}                 // guarded by mu
	return func(from stack.Addr, n notification) {
		i, ok := index[from]
		if !ok {
			return
		}
		st, ok := e.codec.state(i, n.Ballot, n.Ballot, true, false, append([]byte(nil), n.Value...))
		if !ok {
			return
		}
		mu.Lock()
		if done[n.Addr] {
			mu.Unlock()
			return
		}
		if seen[n.Addr] == nil {
			seen[n.Addr] = map[uint64][]ecState{}
		}
		sts := seen[n.Addr][n.Ballot]
		for _, s := range sts {
			if s.from == i {
				mu.Unlock()
				return // a duplicate report
			}
		}
		sts = append(sts, st)
		seen[n.Addr][n.Ballot] = sts
		if len(sts) < e.plan.Q2 {
			mu.Unlock()
			return
		}
		v, ok := e.codec.rebuild(sts, st.split.vid)
		if !ok {
			mu.Unlock()
			return
		}
		done[n.Addr] = true
		delete(seen, n.Addr)
		mu.Unlock()
		learned(n.Addr, v)
	}
}
