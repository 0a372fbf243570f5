package wor

// Segment batches of the ec engine: one message per server covers a run
// of registers, as with the other engines; a SegWrite's message to
// server i carries split i of each value.

// segView turns a segment prepare's answers into per-register answers
// that the single-register rules (phase1) understand: a server that
// nacked any register of the batch counts as nacking all of them (its
// promise cannot be used for the batch), and a server whose entries do
// not decode counts as failed.
func segView(as []ecAnswer, count int) [][]ecAnswer {
	per := make([][]ecAnswer, count)
	for _, a := range as {
		if a.err != nil || a.resp.Status != stOK {
			for j := range per {
				per[j] = append(per[j], a)
			}
			continue
		}
		es, err := decodeSegEntries(a.resp.Value)
		var nackHi uint64
		nack := false
		for _, e := range es {
			if e.nack {
				nack, nackHi = true, max(nackHi, e.promised)
			}
		}
		for j := range per {
			switch {
			case err != nil:
				per[j] = append(per[j], ecAnswer{from: a.from, err: err})
			case nack:
				per[j] = append(per[j], ecAnswer{from: a.from, resp: response{Status: stNack, Promised: nackHi}})
			default:
				per[j] = append(per[j], ecAnswer{from: a.from, resp: response{Status: stOK}})
			}
		}
		if err != nil || nack {
			continue
		}
		for _, e := range es {
			if int(e.off) < count && e.has {
				per[e.off][len(per[e.off])-1].resp = response{Status: stOK, Promised: e.promised, AccBallot: e.acc, Has: true, Value: e.value}
			}
		}
	}
	return per
}

// SegCapture runs Phase 1 on registers [start, end) of seg in one round
// trip: captured when every register is (the fast path needs a Phase 1a
// quorum that reports no split of any of them).
func (e *EC) SegCapture(seg, start, end uint64, cb func(CaptureID, error)) {
	if err := checkBatch(start, end); err != nil {
		cb(0, err)
		return
	}
	e.segCapture(seg, start, end, 3, cb)
}

func (e *EC) segCapture(seg, start, end uint64, tries int, cb func(CaptureID, error)) {
	b := e.next()
	count := int(end - start)
	body := e.stamp(request{Op: opSegPrepare, Addr: Addr(seg, start), Ballot: b, Value: countBytes(end - start)}).encode()
	e.round(func(int) []byte { return body }, func(as []ecAnswer, outstanding int) (bool, func()) {
		per := segView(as, count)
		// Every register must be captured by the same answers: the fast
		// path for all of them, or Phase 1b for all of them.
		priors := make([]prior, count)
		var hi uint64
		captured := true
		for j := range per {
			out, pr, h := e.plan.phase1(e.codec, per[j], outstanding)
			hi = max(hi, h)
			switch out {
			case p1Captured:
				priors[j] = pr
				continue
			case p1Preempted:
				return true, func() {
					e.observe(hi)
					if tries > 1 {
						e.segCapture(seg, start, end, tries-1, cb)
						return
					}
					cb(0, ErrPreempted)
				}
			case p1Unavailable:
				return true, func() { cb(0, e.unavailable("segment phase 1", per[j], e.plan.Q1b)) }
			}
			captured = false
		}
		if !captured {
			return false, nil
		}
		return true, func() {
			for j, pr := range priors {
				e.remember(Addr(seg, start+uint64(j)), CaptureID(b), pr)
			}
			cb(CaptureID(b), nil)
		}
	}, func(err error) { cb(0, err) })
}

// SegWrite writes values to consecutive registers from (seg, start) in
// one round trip, server i receiving split i of each; cb gets the values
// now held.
func (e *EC) SegWrite(seg, start uint64, values [][]byte, cid CaptureID, cb func([][]byte, error)) {
	b, vals, err := e.takeSeg(seg, start, values, cid)
	if err != nil {
		cb(nil, err)
		return
	}
	e.segWriteAt(seg, start, b, vals, func(err error) { cb(vals, err) })
}

// segWriteAt runs Phase 2 on the batch. Phase 3 is not sent for
// batches (it would be one message per register): their reads take the
// Phase 1b path, where a Phase 2 quorum's splits at one ballot show the
// value chosen.
func (e *EC) segWriteAt(seg, start, b uint64, vals [][]byte, cb func(error)) {
	per := make([][][]byte, len(e.servers)) // per server, its split of each value
	for i := range per {
		per[i] = make([][]byte, len(vals))
	}
	for j, v := range vals {
		splits, err := e.encode(v)
		if err != nil {
			cb(err)
			return
		}
		for i := range per {
			per[i][j] = splits[i]
		}
	}
	e.round(func(i int) []byte {
		return e.stamp(request{Op: opSegAccept, Addr: Addr(seg, start), Ballot: b, Value: encodeValues(per[i])}).encode()
	}, func(as []ecAnswer, outstanding int) (bool, func()) {
		// A server that nacked any register of the batch did not accept it.
		flat := make([]ecAnswer, len(as))
		for k, a := range as {
			flat[k] = a
			if a.err == nil && a.resp.Status == stOK {
				hi, nack, _, err := segPriors([]response{a.resp})
				switch {
				case err != nil:
					flat[k] = ecAnswer{from: a.from, err: err}
				case nack:
					flat[k].resp = response{Status: stNack, Promised: hi}
				}
			}
		}
		out, hi := e.plan.phase2(flat, outstanding)
		switch out {
		case p2Chosen:
			return true, func() { cb(nil) }
		case p2Preempted:
			return true, func() {
				e.observe(hi)
				cb(ErrPreempted)
			}
		case p2Unavailable:
			return true, func() { cb(e.unavailable("segment phase 2", flat, e.plan.Q2)) }
		}
		return false, nil
	}, cb)
}
