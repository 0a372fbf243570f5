package wor

import "slices"

// The ec engine's decisions, without I/O: given the answers a round has
// so far, what it has learned. Its driver (EC.round) calls them after
// every answer; they are pure so that tests can feed them answers.

// ecAnswer is one server's answer in a round: resp if err is nil.
type ecAnswer struct {
	from int // the server's index in the plan (its split's index)
	resp response
	err  error
}

// ecState is a server's acceptor state as one answer reported it, its
// split checked.
type ecState struct {
	from     int
	promised uint64
	acc      uint64
	chosen   bool
	split    *split // nil: nothing accepted
}

// ecView sorts a round's answers: the states of the servers that
// answered stOK with a valid split or none (usable), how many refused
// (nacked, and the highest promise among them), and how many failed (no
// answer, an error status, or a split that is not valid for the server:
// a server whose state cannot be read counts as not answering, never as
// answering "nothing accepted").
type ecView struct {
	states []ecState
	nacks  int
	hi     uint64 // the highest promise of a nack
	failed int
}

func (c *splitCodec) view(as []ecAnswer) ecView {
	var v ecView
	for _, a := range as {
		switch {
		case a.err != nil:
			v.failed++
		case a.resp.Status == stNack:
			v.nacks++
			v.hi = max(v.hi, a.resp.Promised)
		case a.resp.Status != stOK:
			v.failed++
		default:
			st, ok := c.state(a.from, a.resp.Promised, a.resp.AccBallot, a.resp.Has, a.resp.Chosen, a.resp.Value)
			if !ok {
				v.failed++
				continue
			}
			v.states = append(v.states, st)
		}
	}
	return v
}

// state checks one server's reported state.
func (c *splitCodec) state(from int, promised, acc uint64, has, chosen bool, value []byte) (ecState, bool) {
	st := ecState{from: from, promised: promised, acc: acc, chosen: chosen && has}
	if !has {
		return st, true
	}
	s, err := c.decodeSplit(value, from)
	if err != nil {
		return st, false
	}
	st.split = &s
	return st, true
}

// anyAccepted reports whether some state holds a split.
func anyAccepted(sts []ecState) bool {
	for _, s := range sts {
		if s.split != nil {
			return true
		}
	}
	return false
}

// rebuild decodes the value with identity vid from the states' splits,
// whatever ballot each was accepted at (splits of one value are the same
// at every ballot).
func (c *splitCodec) rebuild(sts []ecState, vid uint64) ([]byte, bool) {
	splits := make([]*split, c.n)
	for _, s := range sts {
		if s.split != nil && s.split.vid == vid && s.from < c.n {
			splits[s.from] = s.split
		}
	}
	v, err := c.decode(splits)
	return v, err == nil
}

// recovered is what Phase 1b recovery found.
type recovered struct {
	ok    bool
	vid   uint64
	value []byte
	acc   uint64 // the highest ballot at which a split of it was reported
}

// recoverValue is Phase 1b's recovery (Pando's pseudo-code, lines 6-7):
// going down the accepted ballots reported, the first value with at
// least K valid splits among the states, counted by value identity over
// all ballots, is rebuilt. A value accepted at a higher ballot with
// fewer splits here could not have been chosen: a Phase 2 quorum that
// chose it shares K servers with these (Phase 1b ∩ Phase 2 ≥ K), and
// each of them holds that value or a later ballot's, which by Paxos's
// invariant is the same value.
func (c *splitCodec) recoverValue(sts []ecState) recovered {
	order := slices.Clone(sts)
	slices.SortFunc(order, func(a, b ecState) int {
		switch {
		case a.acc > b.acc:
			return -1
		case a.acc < b.acc:
			return 1
		}
		return 0
	})
	tried := map[uint64]bool{}
	for _, s := range order {
		if s.split == nil || tried[s.split.vid] {
			continue
		}
		tried[s.split.vid] = true
		if v, ok := c.rebuild(sts, s.split.vid); ok {
			return recovered{ok: true, vid: s.split.vid, value: v, acc: s.acc}
		}
	}
	return recovered{}
}

// p1Outcome is the state of a Phase 1 round.
type p1Outcome int

const (
	p1Wait        p1Outcome = iota // more answers are needed
	p1Captured                     // promised by a quorum; prior says what Write must write
	p1Preempted                    // a quorum can no longer promise, and some server nacked
	p1Unavailable                  // a quorum can no longer promise: too many failed
)

// phase1 decides a capture (Pando's lines 5-7) from the answers so far,
// outstanding more to come. Fast path: a Phase 1a quorum promised and
// none of them holds a split, so no value was chosen (every Phase 2
// quorum meets it). Otherwise, once a Phase 1b quorum promised, the
// recovered value (if any) is the prior. hi is the highest promise a
// nack reported.
func (p ECPlan) phase1(c *splitCodec, as []ecAnswer, outstanding int) (out p1Outcome, pr prior, hi uint64) {
	v := c.view(as)
	promised := len(v.states)
	clean := !anyAccepted(v.states)
	switch {
	case clean && promised >= p.Q1a:
		return p1Captured, prior{}, v.hi
	case promised >= p.Q1b:
		if r := c.recoverValue(v.states); r.ok {
			return p1Captured, prior{has: true, value: r.value}, v.hi
		}
		return p1Captured, prior{}, v.hi
	}
	need := p.Q1b
	if clean {
		need = min(p.Q1a, p.Q1b)
	}
	if promised+outstanding >= need {
		return p1Wait, prior{}, v.hi
	}
	if v.nacks > 0 {
		return p1Preempted, prior{}, v.hi
	}
	return p1Unavailable, prior{}, v.hi
}

// p2Outcome is the state of a Phase 2 round.
type p2Outcome int

const (
	p2Wait p2Outcome = iota
	p2Chosen
	p2Preempted
	p2Unavailable
)

// phase2 decides a write: chosen once a Phase 2 quorum accepted.
func (p ECPlan) phase2(as []ecAnswer, outstanding int) (p2Outcome, uint64) {
	ok, nacks := 0, 0
	var hi uint64
	for _, a := range as {
		switch {
		case a.err != nil:
		case a.resp.Status == stOK:
			ok++
		case a.resp.Status == stNack:
			nacks++
			hi = max(hi, a.resp.Promised)
		}
	}
	switch {
	case ok >= p.Q2:
		return p2Chosen, hi
	case ok+outstanding >= p.Q2:
		return p2Wait, hi
	case nacks > 0:
		return p2Preempted, hi
	}
	return p2Unavailable, hi
}

// readOutcome is the state of a read round.
type readOutcome int

const (
	readWait        readOutcome = iota
	readChosen                  // value is chosen: return it
	readUnwritten               // nothing was chosen before the read began
	readComplete                // value may be chosen: write it back, then return what is chosen
	readUnavailable             // too few servers answered
)

// read decides a read (Pando's FastRead): once a Phase 1a quorum
// answered, a value some server knows chosen (Phase 3) is returned if K
// of its splits are at hand; once a Phase 1b quorum answered, the
// recovered value is returned if it is known chosen (a server's marker,
// or a Phase 2 quorum among the answers accepted it at one ballot),
// written back otherwise; nothing recoverable means nothing was chosen
// (a chosen value has K splits in every Phase 1b quorum).
func (p ECPlan) read(c *splitCodec, as []ecAnswer, outstanding int) (readOutcome, []byte) {
	v := c.view(as)
	if len(v.states) >= p.Q1a {
		tried := map[uint64]bool{}
		for _, s := range v.states {
			if !s.chosen || s.split == nil || tried[s.split.vid] {
				continue
			}
			tried[s.split.vid] = true
			if val, ok := c.rebuild(v.states, s.split.vid); ok {
				return readChosen, val
			}
		}
	}
	if len(v.states) >= p.Q1b {
		r := c.recoverValue(v.states)
		if !r.ok {
			return readUnwritten, nil
		}
		atAcc := 0
		for _, s := range v.states {
			if s.split == nil || s.split.vid != r.vid {
				continue
			}
			if s.chosen {
				return readChosen, r.value
			}
			if s.acc == r.acc {
				atAcc++
			}
		}
		if atAcc >= p.Q2 {
			return readChosen, r.value
		}
		return readComplete, r.value
	}
	if outstanding == 0 {
		return readUnavailable, nil
	}
	return readWait, nil
}
