package wor

import "bytes"

// acceptor is single-shot Paxos acceptor state for one register.
type acceptor struct {
	promised  uint64
	accBallot uint64
	has       bool
	value     []byte
	// chosen is accBallot once a proposer reported the value accepted at
	// it chosen (the ec engine's Phase 3), else 0: always 0 or accBallot.
	// Only the ec engine sends the report; the others leave it 0.
	chosen uint64
	part   uint32 // the partition it belongs to (from the requests that made it)
	// spilled: the accepted value is not in memory but in the register's
	// journal slot (persistent mode; see Server.spill). Only the server's
	// map holds spilled states: Server.loaded restores the value before
	// step, reply or a record sees the state.
	spilled bool
}

// stepped is what one request does to a register's acceptor state.
type stepped struct {
	next     acceptor // the state after the request (the same as before if !changed)
	status   byte     // stOK, stNack (a higher ballot is promised) or stErr (not a register request)
	changed  bool     // next must be stored (durably before the reply) and kept
	conflict bool     // an accept of another value at the ballot already accepted: a client bug
}

// step is the acceptor rule of single-shot Paxos, without I/O: the state
// a prepare, accept or read (op) at ballot leaves the register in, and
// the status to answer; the reply reports the state after (see reply),
// so a nack tells the proposer the promise that beat it, and a prepare
// tells it what was accepted. The server (Server.apply) stores and keeps
// next when it changed, in memory or in the journal.
//
//   - prepare: promise ballot if it is higher than any promised before
//     (a prepare at the ballot already promised is refused: each ballot
//     has one proposer, and its own retry gets the nack's promise).
//   - accept: accept (ballot, value) if ballot is at least the promise,
//     promising ballot too; a value accepted earlier is replaced. The
//     register is write-once not because the acceptor refuses a second
//     value but because a proposer whose prepare found one writes that
//     one (ballots.take): so every accept at a ballot above the one that
//     chose a value carries that value.
//   - commit (the ec engine's Phase 3): the value accepted at ballot is
//     chosen; recorded (chosen = ballot) only if ballot is the accepted
//     ballot here, so chosen always names the split this server holds.
//     It needs no promise: it reports a fact, it does not vote.
//   - read: the state unchanged.
//
// value is copied: the request's buffer is not kept.
func (a acceptor) step(op byte, part uint32, ballot uint64, value []byte) stepped {
	switch op {
	case opRead:
		return stepped{next: a, status: stOK}
	case opPrepare:
		if ballot <= a.promised {
			return stepped{next: a, status: stNack}
		}
		next := a
		next.promised, next.part = ballot, part
		return stepped{next: next, status: stOK, changed: true}
	case opAccept:
		if ballot < a.promised {
			return stepped{next: a, status: stNack}
		}
		same := a.has && ballot == a.accBallot
		next := acceptor{promised: ballot, accBallot: ballot, has: true, value: append([]byte(nil), value...), part: part}
		if same && bytes.Equal(a.value, value) {
			next.chosen = a.chosen // a duplicate accept does not unlearn
		}
		return stepped{
			next:     next,
			status:   stOK,
			changed:  true,
			conflict: same && !bytes.Equal(a.value, value),
		}
	case opCommit:
		if !a.has || ballot != a.accBallot || a.chosen == ballot {
			return stepped{next: a, status: stOK}
		}
		next := a
		next.chosen = ballot
		return stepped{next: next, status: stOK, changed: true}
	}
	return stepped{next: a, status: stErr}
}

// stepHook, when a Server has one (tests only: nil otherwise), sees
// every acceptor step the server takes, on the register at addr in state
// before, and returns the step to carry out: st itself to observe (trace
// validation records each step against models/wor), or another to
// inject a mistake (a mutated acceptor that the trace check must catch).
// Called with the server's lock held.
type stepHook func(addr uint64, op byte, ballot uint64, value []byte, before acceptor, st stepped) stepped

// reply is the answer to a register request: its status and the state
// after it.
func (a *acceptor) reply(status byte) response {
	return response{Status: status, Promised: a.promised, AccBallot: a.accBallot, Has: a.has, Chosen: a.chosen != 0, Value: a.value}
}

// admit is the configuration check every request on a partition's
// registers passes first, given the partition's state here: a request of
// an older epoch is refused as sealed (its client fetches the new
// configuration), one of a newer epoch, or of an epoch not yet active
// here, as not ready (its client retries). The reply's Promised carries
// the epoch served here.
func admit(ps partState, epoch uint32) (status byte, ok bool) {
	switch {
	case epoch < ps.epoch:
		return stSealed, false
	case epoch > ps.epoch || !ps.active:
		return stNotReady, false
	}
	return stOK, true
}
