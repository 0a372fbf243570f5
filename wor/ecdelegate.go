package wor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"strata/stack"
)

// Partial delegation (Pando §3.3.2): a write from a front end far from
// the data sites takes Phase 1 and Phase 2 as two wide-area round trips
// if the front end runs both. With a delegate (a proposer on a data
// site, chosen by the planner per front end) the front end instead
//
//   - sends Phase 1 (opPrepareFor) to every server, asking each to send
//     its promise to the delegate as well as to itself;
//   - sends the value and the ballot to the delegate (a 'D' request);
//   - the delegate, once it holds the value and a Phase 1 quorum of
//     promises for that ballot, runs Phase 2 at the front end's ballot
//     (opAcceptFor), asking each server to send its acceptance to the
//     front end as well;
//   - the front end learns the outcome from a Phase 2 quorum of
//     acceptances (or from the delegate's reply, whichever comes first).
//
// So a write costs front end → server → delegate → server → front end,
// which the planner's write latency for Pando assumes, instead of two
// round trips from the front end. The delegate proposes at the front
// end's ballot, so to Paxos it is that proposer: safety needs nothing
// of it. When the delegate fails (it answers a failure, or nothing within
// the timeout) the front end runs both phases itself under a ballot of
// its own, as Capture and Write do (with the leader fallback, if set).
//
// Messages: a delegate request is 'D', addr(8), ballot(8), the length of
// the front end's address (1 byte), the address, the value; the reply is
// a leaderResp (ecleader.go). Servers send forwarded replies (wire.go)
// as one-way messages after the state they report is durable.

// delegateMagic starts a delegate request.
const delegateMagic = 'D'

type delegateReq struct {
	Addr, Ballot uint64
	Front        stack.Addr // where the servers send their acceptances
	Value        []byte
}

func (r delegateReq) encode() []byte {
	b := make([]byte, 0, 18+len(r.Front)+len(r.Value))
	b = append(b, delegateMagic)
	b = binary.BigEndian.AppendUint64(b, r.Addr)
	b = binary.BigEndian.AppendUint64(b, r.Ballot)
	b = append(b, byte(len(r.Front)))
	b = append(b, r.Front...)
	return append(b, r.Value...)
}

func decodeDelegateReq(b []byte) (delegateReq, error) {
	if len(b) < 18 || b[0] != delegateMagic {
		return delegateReq{}, fmt.Errorf("%w: delegate request of %d bytes", ErrMalformed, len(b))
	}
	r := delegateReq{Addr: binary.BigEndian.Uint64(b[1:]), Ballot: binary.BigEndian.Uint64(b[9:])}
	n := int(b[17])
	if n == 0 || 18+n > len(b) || len(b)-18-n > MaxValue || r.Ballot == 0 {
		return delegateReq{}, fmt.Errorf("%w: delegate request: front end address of %d bytes, ballot %d, in %d bytes", ErrMalformed, n, r.Ballot, len(b))
	}
	r.Front = stack.Addr(b[18 : 18+n])
	r.Value = b[18+n:]
	return r, nil
}

// SetDelegate makes e's Propose delegate Phase 2 to the proposer at addr
// (one that ServeECLeader serves, on a data site); "" turns it off. Call
// it before using e.
func (e *EC) SetDelegate(addr stack.Addr) {
	e.lmu.Lock()
	e.delegate = addr
	e.lmu.Unlock()
}

func (e *EC) delegateAddr() stack.Addr {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	return e.delegate
}

// Proposer is an engine that captures and writes a register in one call.
type Proposer interface {
	// Propose makes value addr's value if nothing else was (possibly)
	// chosen first: cb gets nil once value is chosen, a *WrittenError
	// with the value chosen instead (the capture found it, and it was
	// written again to be sure), or another error (the outcome is then
	// unknown).
	Propose(addr uint64, value []byte, cb func(error))
}

var _ Proposer = (*EC)(nil)

// Propose implements Proposer: with a delegate (SetDelegate), by
// partial delegation; otherwise, and when the delegate fails, Capture
// then Write from here.
func (e *EC) Propose(addr uint64, value []byte, cb func(error)) {
	if len(value) > MaxValue {
		cb(fmt.Errorf("wor: value of %d bytes exceeds %d", len(value), MaxValue))
		return
	}
	d := e.delegateAddr()
	local := e.node.Local()
	if d == "" || len(local) > maxForwardAddr || len(d) > maxForwardAddr ||
		splitHdr+shardSize(len(value), e.plan.K)+1+len(local) > MaxValue {
		e.proposeHere(addr, value, cb)
		return
	}
	e.delegated(d, addr, value, cb)
}

// proposeHere runs both phases from here, reporting the value chosen as
// Propose does (a capture that completed our own value is a success).
func (e *EC) proposeHere(addr uint64, value []byte, cb func(error)) {
	e.Capture(addr, func(cid CaptureID, err error) {
		if err != nil {
			cb(err)
			return
		}
		e.Write(addr, value, cid, func(err error) { cb(ours(value, err)) })
	})
}

// ours turns a *WrittenError carrying value itself into success.
func ours(value []byte, err error) error {
	var we *WrittenError
	if errors.As(err, &we) && bytes.Equal(we.Value, value) {
		return nil
	}
	return err
}

// delegated runs one proposal with Phase 2 delegated to d. It ends at
// the first of: a Phase 2 quorum of acceptances forwarded here (the
// value is chosen); the delegate's reply; too many refusals for a
// quorum; the delegate's timeout. The last three, unless the delegate
// reported a value chosen, fall back to proposeHere.
func (e *EC) delegated(d stack.Addr, addr uint64, value []byte, cb func(error)) {
	b := e.next()
	vid := valueID(value)
	index := e.serverIndex()
	var mu sync.Mutex
	done := false              // guarded by mu
	heard := map[int]bool{}    // guarded by mu: servers whose acceptance (or refusal) arrived
	var accepted []ecState     // guarded by mu
	nacks := 0                 // guarded by mu
	var cancel func()          // set before any reply can arrive
	end := func(then func()) { // the first ending wins
		mu.Lock()
		if done {
			mu.Unlock()
			return
		}
		done = true
		mu.Unlock()
		cancel()
		then()
	}
	fallback := func() { end(func() { e.proposeHere(addr, value, cb) }) }
	cancel = e.hub.onForward(e.node, fwdKey{addr, b}, func(from stack.Addr, r response) {
		i, ok := index[from]
		if !ok {
			return
		}
		mu.Lock()
		if done || heard[i] {
			mu.Unlock()
			return
		}
		switch r.Status {
		case stOK:
			if r.AccBallot != b || !r.Has {
				// A reply to our prepare forwarded here by mistake, or
				// state we cannot use: not an acceptance.
				mu.Unlock()
				return
			}
			st, ok := e.codec.state(i, b, b, true, false, bytes.Clone(r.Value))
			if !ok {
				mu.Unlock()
				return // a damaged split: as if not heard
			}
			heard[i] = true
			accepted = append(accepted, st)
		case stNack:
			heard[i] = true
			nacks++
			e.observe(r.Promised)
		default:
			mu.Unlock()
			return
		}
		var out error
		decided, lost := false, nacks > len(e.servers)-e.plan.Q2
		if len(accepted) >= e.plan.Q2 {
			// Chosen: our value, or the one the delegate's Phase 1
			// recovered (the splits tell which by their value id).
			if accepted[0].split.vid == vid {
				decided = true
			} else if v, ok := e.codec.rebuild(accepted, accepted[0].split.vid); ok {
				decided, out = true, &WrittenError{Value: v}
			}
		}
		mu.Unlock()
		switch {
		case decided:
			end(func() { cb(out) })
		case lost:
			fallback()
		}
	})
	// Phase 1 goes from here to every server; the promises go to d.
	body := e.stamp(request{Op: opPrepareFor, Addr: addr, Ballot: b, Value: withForward(d, nil)}).encode()
	for _, s := range e.servers {
		_, _ = e.node.CallAsync(s, body, e.timeout, func([]byte, error) {})
	}
	req := delegateReq{Addr: addr, Ballot: b, Front: e.node.Local(), Value: value}.encode()
	_, err := e.node.CallAsync(d, req, 2*e.timeout, func(resp []byte, err error) {
		if err != nil {
			fallback()
			return
		}
		r, err := decodeLeaderResp(resp)
		switch {
		case err != nil || r.Status == leaderFailed:
			fallback()
		case r.Status == leaderOK:
			end(func() { cb(nil) })
		default:
			w := bytes.Clone(r.Value)
			end(func() { cb(ours(value, &WrittenError{Value: w})) })
		}
	})
	if err != nil {
		fallback()
	}
}

// serverIndex maps each server's address to its index (its split).
func (e *EC) serverIndex() map[stack.Addr]int {
	index := make(map[stack.Addr]int, len(e.servers))
	for i, s := range e.servers {
		index[s] = i
	}
	return index
}

// maxDelegations bounds the proposals a delegate tracks at once
// (promises may arrive before the request they belong to, or for
// requests that never come); beyond it, new ones are refused.
const maxDelegations = 1 << 16

// delegation is a delegate's state for one proposal.
type delegation struct {
	heard   map[int]bool // servers whose promise (or refusal) arrived
	answers []ecAnswer
	req     *delegateReq // nil until the front end's request arrives
	respond func([]byte)
	done    bool // answered (or expired)
}

// delegates is a delegate's table of proposals, keyed by register and
// ballot.
type delegates struct {
	e     *EC
	index map[stack.Addr]int
	mu    sync.Mutex
	m     map[fwdKey]*delegation // guarded by mu
}

func newDelegates(e *EC) *delegates {
	ds := &delegates{e: e, index: e.serverIndex(), m: map[fwdKey]*delegation{}}
	e.hub.onOtherForwards(e.node, ds.promise)
	return ds
}

// get returns k's delegation, creating it (with its expiry) if new; nil
// when the table is full. Called with mu held.
func (ds *delegates) get(k fwdKey) *delegation {
	if d := ds.m[k]; d != nil {
		return d
	}
	if len(ds.m) >= maxDelegations {
		return nil
	}
	d := &delegation{heard: map[int]bool{}}
	ds.m[k] = d
	ds.e.node.AfterFunc(2*ds.e.timeout, func() { ds.expire(k, d) })
	return d
}

// expire forgets d, answering its front end if it is still waiting.
func (ds *delegates) expire(k fwdKey, d *delegation) {
	ds.mu.Lock()
	if ds.m[k] == d {
		delete(ds.m, k)
	}
	respond, n := d.respond, len(d.answers)
	pending := !d.done && respond != nil
	d.done = true
	ds.mu.Unlock()
	if pending {
		respond(leaderResp{Status: leaderFailed, Value: fmt.Appendf(nil, "delegate: %d promises of %d servers in time", n, len(ds.e.servers))}.encode())
	}
}

// promise takes a forwarded promise.
func (ds *delegates) promise(from stack.Addr, fw forwarded) {
	i, ok := ds.index[from]
	if !ok {
		return
	}
	ds.mu.Lock()
	d := ds.get(fwdKey{fw.Addr, fw.Ballot})
	if d == nil || d.done || d.heard[i] {
		ds.mu.Unlock()
		return
	}
	d.heard[i] = true
	r := fw.Resp
	r.Value = bytes.Clone(r.Value) // the message's buffer is not ours to keep
	var err error
	if r.Status != stOK && r.Status != stNack {
		err = statusErr(nil, r.Status)
	}
	d.answers = append(d.answers, ecAnswer{from: i, resp: r, err: err})
	then := ds.step(d)
	ds.mu.Unlock()
	then()
}

// request takes a front end's delegate request.
func (ds *delegates) request(r delegateReq, respond func([]byte)) {
	r.Value = bytes.Clone(r.Value)
	ds.mu.Lock()
	d := ds.get(fwdKey{r.Addr, r.Ballot})
	if d == nil || d.req != nil || d.done {
		ds.mu.Unlock()
		respond(leaderResp{Status: leaderFailed, Value: []byte("delegate: busy, or a duplicate request")}.encode())
		return
	}
	d.req, d.respond = &r, respond
	then := ds.step(d)
	ds.mu.Unlock()
	then()
}

// step decides d's Phase 1 once it has the request, and returns what to
// run outside the lock. Called with mu held.
func (ds *delegates) step(d *delegation) func() {
	e := ds.e
	if d.req == nil || d.done {
		return func() {}
	}
	out, pr, hi := e.plan.phase1(e.codec, d.answers, len(e.servers)-len(d.answers))
	r, respond := *d.req, d.respond
	switch out {
	case p1Captured:
		d.done = true
		v, written := r.Value, false
		if pr.has && !bytes.Equal(pr.value, r.Value) {
			v, written = pr.value, true
		}
		return func() { ds.phase2(r, v, written, respond) }
	case p1Preempted:
		d.done = true
		return func() {
			e.observe(hi)
			respond(leaderResp{Status: leaderFailed, Value: []byte(ErrPreempted.Error())}.encode())
		}
	case p1Unavailable:
		d.done = true
		return func() {
			respond(leaderResp{Status: leaderFailed, Value: []byte(e.unavailable("delegated phase 1", d.answers, e.plan.Q1b).Error())}.encode())
		}
	}
	return func() {}
}

// phase2 runs Phase 2 of v at the front end's ballot, the acceptances
// forwarded to the front end, then Phase 3, and answers the front end.
func (ds *delegates) phase2(r delegateReq, v []byte, written bool, respond func([]byte)) {
	e := ds.e
	fail := func(err error) {
		respond(leaderResp{Status: leaderFailed, Value: []byte(err.Error())}.encode())
	}
	splits, err := e.encode(v)
	if err != nil {
		fail(err)
		return
	}
	e.round(func(i int) []byte {
		return e.stamp(request{Op: opAcceptFor, Addr: r.Addr, Ballot: r.Ballot, Value: withForward(r.Front, splits[i])}).encode()
	}, func(as []ecAnswer, outstanding int) (bool, func()) {
		out, hi := e.plan.phase2(as, outstanding)
		switch out {
		case p2Chosen:
			return true, func() {
				e.commit(r.Addr, r.Ballot)
				if written {
					respond(leaderResp{Status: leaderWritten, Value: v}.encode())
					return
				}
				respond(leaderResp{Status: leaderOK}.encode())
			}
		case p2Preempted:
			return true, func() {
				e.observe(hi)
				fail(ErrPreempted)
			}
		case p2Unavailable:
			return true, func() { fail(e.unavailable("delegated phase 2", as, e.plan.Q2)) }
		}
		return false, nil
	}, fail)
}
