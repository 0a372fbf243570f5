package wor

import (
	"errors"
	"fmt"
	"time"
)

// quorumCall is one request of the paxos engine to its replica set, as a
// state machine without I/O: no goroutines, timers, locks or node. Its
// driver (Paxos.broadcast) feeds it events under a lock and carries out
// what it answers: sends the request to the replicas it names, arms and
// stops the hedge timer, updates the replicas' health and the counts, and
// calls the caller back with the decision.
//
// Events and what they answer:
//
//   - start(now): ask order[:maj], the first majority of the send order
//     (thrifty Paxos), and arm the hedge timer if there are others.
//   - answer(i, resp, err, now): replica i answered (err: it did not, or
//     its status is an error). Decided with resp of maj replicas once maj
//     answered without error; with ErrTrimmed or ErrSealed as soon as one
//     replica reports it (the caller completes the trim, or fetches the
//     new configuration: any server of the quorum saying so is enough);
//     with ErrUnavailable once more than n-maj failed, as a majority can
//     no longer answer. A failure that decides nothing widens the call:
//     every replica not yet asked is asked (Widened).
//   - hedgeDue(): the first majority is slow; unless decided or
//     widened already, every replica not yet asked is asked (Hedged), and
//     those of the first majority that have not answered are reported
//     missed (the driver asks them last for a while).
//
// Guarantees (checked by TestQuorumCallModel): it decides exactly once,
// given that every replica it asks answers eventually; it decides success
// if and only if maj replicas answered without error before more than
// n-maj failed or one reported a trim or seal; it asks each replica at
// most once; events after the decision change nothing. Which replicas are
// asked never matters for safety (any majority is a quorum), only for
// load and latency.
type quorumCall struct {
	order  []int          // replica indices in the order they are asked
	state  []replicaState // by replica index
	maj    int
	sent   int        // order[:sent] were asked: maj or n (widening asks the rest at once)
	got    []response // answers without error, in arrival order
	failed int
	done   bool
	began  time.Duration // when start was called
}

type replicaState uint8

const (
	notAsked replicaState = iota
	asked
	answered
)

// quorumStep is what one event asks of the driver.
type quorumStep struct {
	send    []int // replicas to ask now (a part of the order: do not modify)
	decided bool  // the call is decided: stop the hedge timer, call back with rs, err
	rs      []response
	err     error
	latency time.Duration // decided with rs: the time since start
	missed  []int         // hedgeDue: replicas of the first majority that had not answered
	hedged  bool          // hedgeDue asked the rest
	widened bool          // a failure asked the rest
}

// init makes a call over the replicas in order, a permutation of 0..n-1
// (n ≥ 1), whose per-replica state lives in state (len n) and whose
// answers are appended to got (cap maj avoids reallocation): the driver
// passes buffers it owns, so a call costs no allocation of its own.
func (q *quorumCall) init(order []int, state []replicaState, got []response) {
	clear(state)
	*q = quorumCall{order: order, state: state, maj: len(order)/2 + 1, got: got[:0]}
}

// start begins the call at now: it returns the first majority to ask, and
// whether to arm the hedge timer (there are replicas outside it).
func (q *quorumCall) start(now time.Duration) (send []int, hedge bool) {
	q.began = now
	return q.ask(q.maj), q.maj < len(q.order)
}

// ask claims order[sent:upto] and marks them asked.
func (q *quorumCall) ask(upto int) []int {
	out := q.order[q.sent:upto]
	for _, i := range out {
		q.state[i] = asked
	}
	q.sent = upto
	return out
}

// answer records replica i's answer: resp, or err if it failed to give
// one (no reply, an undecodable one, or an error status). Answers from a
// replica not asked, or a second answer, are ignored.
func (q *quorumCall) answer(i int, resp response, err error, now time.Duration) quorumStep {
	if i < 0 || i >= len(q.state) || q.state[i] != asked {
		return quorumStep{}
	}
	q.state[i] = answered
	if q.done {
		return quorumStep{}
	}
	n := len(q.order)
	if err != nil {
		q.failed++
	} else {
		q.got = append(q.got, resp)
	}
	switch {
	case errors.Is(err, ErrTrimmed), errors.Is(err, ErrSealed):
		return q.decide(nil, err)
	case len(q.got) == q.maj:
		st := q.decide(q.got, nil)
		st.latency = now - q.began
		return st
	case q.failed > n-q.maj:
		return q.decide(nil, fmt.Errorf("%w (%d of %d failed: %v)", ErrUnavailable, q.failed, n, err))
	case err != nil && q.sent < n:
		return quorumStep{send: q.ask(n), widened: true}
	}
	return quorumStep{}
}

func (q *quorumCall) decide(rs []response, err error) quorumStep {
	q.done = true
	return quorumStep{decided: true, rs: rs, err: err}
}

// hedgeDue is the hedge timer firing: if the call is neither
// decided nor widened, the rest of the replicas are asked and the first
// majority's silent replicas reported missed.
func (q *quorumCall) hedgeDue() quorumStep {
	n := len(q.order)
	if q.done || q.sent == n {
		return quorumStep{}
	}
	st := quorumStep{hedged: true}
	for _, i := range q.order[:q.sent] {
		if q.state[i] != answered {
			st.missed = append(st.missed, i)
		}
	}
	st.send = q.ask(n)
	return st
}
