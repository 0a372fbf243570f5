package wor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"strata/stack"
)

// Leader fallback (Pando §3.5): front-ends write directly, and a write
// whose Phase 2 meets a conflict (a nack: another capture came later) is
// handed, once, to a designated leader, which captures and writes the
// value itself, retrying with backoff. To the protocol the leader is one
// more proposer, so safety does not depend on there being one leader;
// what it buys is that duelling front-ends stop duelling and a conflict
// costs the front-end one round trip to the leader instead of its own
// retries. A front-end never forwards a write the leader already
// rejected, and the leader's own engine has no leader, so a request is
// forwarded at most once.
//
// Messages (RPC bodies): a request is 'L', addr(8), value; a reply is a
// status byte (leaderOK: the value was written; leaderWritten: another
// value was chosen, which follows; leaderFailed: the error's text
// follows).
const (
	leaderMagic   = 'L'
	leaderOK      = 0
	leaderWritten = 1
	leaderFailed  = 2
	// leaderTries bounds the captures the leader runs for one request.
	leaderTries = 8
)

type leaderReq struct {
	Addr  uint64
	Value []byte
}

func (r leaderReq) encode() []byte {
	b := make([]byte, 0, 9+len(r.Value))
	b = append(b, leaderMagic)
	b = binary.BigEndian.AppendUint64(b, r.Addr)
	return append(b, r.Value...)
}

func decodeLeaderReq(b []byte) (leaderReq, error) {
	if len(b) < 9 || b[0] != leaderMagic || len(b)-9 > MaxValue {
		return leaderReq{}, fmt.Errorf("%w: leader request of %d bytes", ErrMalformed, len(b))
	}
	return leaderReq{Addr: binary.BigEndian.Uint64(b[1:]), Value: b[9:]}, nil
}

type leaderResp struct {
	Status byte
	Value  []byte // leaderWritten: the value chosen; leaderFailed: the error's text
}

func (r leaderResp) encode() []byte { return append([]byte{r.Status}, r.Value...) }

func decodeLeaderResp(b []byte) (leaderResp, error) {
	if len(b) < 1 || b[0] > leaderFailed || len(b)-1 > MaxValue {
		return leaderResp{}, fmt.Errorf("%w: leader reply of %d bytes", ErrMalformed, len(b))
	}
	return leaderResp{Status: b[0], Value: b[1:]}, nil
}

// SetLeader makes e hand a write whose Phase 2 is preempted to the
// leader at addr (one that ServeECLeader serves), once, instead of
// failing with ErrPreempted. Call it before using e; "" turns it off.
func (e *EC) SetLeader(addr stack.Addr) {
	e.lmu.Lock()
	e.leader = addr
	e.lmu.Unlock()
}

func (e *EC) leaderAddr() stack.Addr {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	return e.leader
}

// ServeECLeader makes node a proposer for the ec engine e (its own
// engine on node, over the same servers and plan as the front-ends,
// with a client id of its own and no leader or delegate): the leader of
// the leader fallback, answering forwarded writes by capturing and
// writing them, retrying preempted attempts with growing backoff; and a
// delegate of partial delegation (ecdelegate.go) for the front ends
// that name it in SetDelegate.
func ServeECLeader(node *stack.Node, e *EC) { node.HandleAsync(serveLeader(e)) }

// serveLeader is the leader's RPC handler. It runs one request per
// register at a time: requests for a register already being led wait,
// and once a value is chosen they are answered with it at once (the
// register is written once) instead of each running captures that
// would preempt the others' at every round, for as long as their backoff
// is shorter than a round trip.
func serveLeader(e *EC) stack.AsyncHandler {
	type pending struct {
		v       []byte
		respond func([]byte)
	}
	var mu sync.Mutex
	busy := map[uint64][]pending{} // guarded by mu: registers being led, and the requests waiting for them
	answer := func(err error, respond func([]byte)) {
		var we *WrittenError
		switch {
		case err == nil:
			respond(leaderResp{Status: leaderOK}.encode())
		case errors.As(err, &we):
			respond(leaderResp{Status: leaderWritten, Value: we.Value}.encode())
		default:
			respond(leaderResp{Status: leaderFailed, Value: []byte(err.Error())}.encode())
		}
	}
	var run func(addr uint64, p pending)
	run = func(addr uint64, p pending) {
		e.lead(addr, p.v, 0, func(held []byte, err error) {
			answer(err, p.respond)
			chosen, ok := held, err == nil
			var we *WrittenError
			if errors.As(err, &we) {
				chosen, ok = we.Value, true
			}
			mu.Lock()
			q := busy[addr]
			if len(q) == 0 || !ok {
				if len(q) == 0 {
					delete(busy, addr)
					mu.Unlock()
					return
				}
				// This attempt failed: the next request leads.
				next := q[0]
				busy[addr] = q[1:]
				mu.Unlock()
				run(addr, next)
				return
			}
			delete(busy, addr)
			mu.Unlock()
			for _, w := range q {
				if bytes.Equal(w.v, chosen) {
					answer(nil, w.respond)
				} else {
					answer(&WrittenError{Value: chosen}, w.respond)
				}
			}
		})
	}
	ds := newDelegates(e)
	return func(from stack.Addr, body []byte, respond func([]byte)) {
		if len(body) > 0 && body[0] == delegateMagic {
			r, err := decodeDelegateReq(body)
			if err != nil {
				respond(leaderResp{Status: leaderFailed, Value: []byte(err.Error())}.encode())
				return
			}
			ds.request(r, respond)
			return
		}
		r, err := decodeLeaderReq(body)
		if err != nil {
			respond(leaderResp{Status: leaderFailed, Value: []byte(err.Error())}.encode())
			return
		}
		p := pending{v: bytes.Clone(r.Value), respond: respond} // the request's buffer is not ours to keep
		mu.Lock()
		if q, ok := busy[r.Addr]; ok {
			busy[r.Addr] = append(q, p)
			mu.Unlock()
			return
		}
		busy[r.Addr] = nil
		mu.Unlock()
		run(r.Addr, p)
	}
}

// lead captures addr and writes v, as many as leaderTries times while
// preempted, backing off 1, 2, 4 ... ms between attempts; cb gets nil
// (v written), a *WrittenError (another value chosen) or the last error.
func (e *EC) lead(addr uint64, v []byte, attempt int, cb func([]byte, error)) {
	retry := func(err error) bool {
		if !errors.Is(err, ErrPreempted) || attempt+1 >= leaderTries {
			return false
		}
		e.node.AfterFunc(time.Millisecond<<attempt, func() { e.lead(addr, v, attempt+1, cb) })
		return true
	}
	e.Capture(addr, func(cid CaptureID, err error) {
		if err != nil {
			if !retry(err) {
				cb(nil, err)
			}
			return
		}
		b, val, written, err := e.take(addr, v, cid)
		if err != nil {
			cb(nil, err)
			return
		}
		e.phase2(addr, b, val, written, func(err error) {
			if err != nil && retry(err) {
				return
			}
			cb(val, err)
		})
	})
}

// viaLeader hands the write of v (at a ballot that was preempted) to the
// leader, and reports its outcome as Write does.
func (e *EC) viaLeader(leader stack.Addr, addr uint64, v []byte, written bool, cb func(error)) {
	done := func(w []byte, err error) {
		switch {
		case err != nil:
			cb(fmt.Errorf("%w (and the leader %s: %v)", ErrPreempted, leader, err))
		case w == nil || (!written && bytes.Equal(w, v)):
			// The leader wrote v, or found v already chosen (our own
			// Phase 2's splits, completed): the value written is ours.
			if written {
				cb(&WrittenError{Value: v})
				return
			}
			cb(nil)
		default:
			cb(&WrittenError{Value: w})
		}
	}
	_, err := e.node.CallAsync(leader, leaderReq{Addr: addr, Value: v}.encode(), e.leaderTimeout(), func(b []byte, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		r, err := decodeLeaderResp(b)
		switch {
		case err != nil:
			done(nil, err)
		case r.Status == leaderOK:
			done(nil, nil)
		case r.Status == leaderWritten:
			done(bytes.Clone(r.Value), nil)
		default:
			done(nil, fmt.Errorf("%s", r.Value))
		}
	})
	if err != nil {
		done(nil, err)
	}
}

// leaderTimeout bounds the wait for the leader: its retries (backoff of
// up to 2^leaderTries ms in all) and two rounds per attempt.
func (e *EC) leaderTimeout() time.Duration {
	return time.Duration(leaderTries)*2*e.timeout + time.Millisecond<<leaderTries
}
