package wormlog

// seqState is a sequencer's token counter: the protocol decision of which
// positions to hand out, without I/O (the server drives it). A sequencer
// owns the log segments it allocated; it hands out the positions of its
// current segment in order, each once, under the segment's capture, and
// moves to the next segment once that one is allocated and captured
// ahead of need.
type seqState struct {
	size uint64 // registers per segment
	// The current segment (log-relative index) and its capture; next is
	// the next offset to hand out.
	cur, curCID, next uint64
	// The next segment, once allocated and captured (ahead).
	ahead              bool
	aheadSeg, aheadCID uint64
}

// issue hands out up to n consecutive positions (within one segment),
// starting at pos, under capture cid; ok is false when the current
// segment is used up and the next is not ready yet.
func (s *seqState) issue(n uint64) (pos, count, cid uint64, ok bool) {
	if s.next >= s.size {
		if !s.ahead {
			return 0, 0, 0, false
		}
		s.cur, s.curCID, s.next = s.aheadSeg, s.aheadCID, 0
		s.ahead = false
	}
	count = min(n, s.size-s.next)
	pos = s.cur*s.size + s.next
	s.next += count
	return pos, count, s.curCID, true
}

// tail is the next position issue hands out.
func (s *seqState) tail() uint64 {
	if s.next >= s.size && s.ahead {
		return s.aheadSeg * s.size
	}
	return s.cur*s.size + s.next
}

// wantAhead: the next segment should be allocated and captured now (a
// quarter of the current one left), so that issue never waits for it.
func (s *seqState) wantAhead() bool {
	return !s.ahead && s.size-min(s.next, s.size) <= max(s.size/4, 1)
}

// setAhead records the next segment, allocated and captured.
func (s *seqState) setAhead(cid uint64) {
	s.ahead, s.aheadSeg, s.aheadCID = true, s.cur+1, cid
}

// newest is the newest segment this sequencer allocated.
func (s *seqState) newest() uint64 {
	if s.ahead {
		return s.aheadSeg
	}
	return s.cur
}
