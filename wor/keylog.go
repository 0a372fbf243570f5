package wor

import (
	"context"
	"encoding/binary"
	"fmt"
)

// Keyed logs: Pando's per-key log of versions (NSDI '23, §4 and
// appendix A, "Mutating values") on the address space. A keyed log is a
// segment whose offsets are one key's versions, 0, 1, 2, ...; a writer
// proposes version i only once version i-1 is chosen, so the log has no
// holes and every version but possibly the highest is chosen. Two
// server operations serve it:
//
//   - opLatest reports a server's highest register of the segment with
//     an accepted value (its "top"), so that a reader finds the latest
//     version in one round instead of probing offsets: a version chosen
//     before the read began was accepted by a Phase 2 quorum, which meets
//     every Phase 1a quorum, so the highest top a Phase 1a quorum reports
//     is at least that version.
//   - opTrimBelow sets the segment's floor: the server forgets the
//     registers below it and refuses them from now on (stFloor). A writer
//     raises the floor to a version once that version is chosen, which
//     is Pando's garbage collection of old versions; nothing below the
//     latest chosen version is ever the answer to a read of the latest.
//
// The server keeps, per segment, one past the highest data offset with
// an accepted value (segTop, rebuilt at recovery) and the floor (floors,
// durable in persistent mode in a floor slot of the journal).

// latestReply is the Value of an opLatest reply: the segment's floor
// here, and its top register (if any) with the acceptor state a read
// of it would report.
type latestReply struct {
	Floor uint64
	Top   bool   // the segment has a register at or above Floor with an accepted value
	Off   uint64 // with Top: its offset
	State response
}

// latestHdr: floor(8) flags(1) off(8) promised(8) accBallot(8) len(4).
const latestHdr = 8 + 1 + 8 + 8 + 8 + 4

// Flag bits of a latestReply.
const (
	latestTop    = 1
	latestChosen = 2
)

func (l latestReply) encode() []byte {
	b := make([]byte, 0, latestHdr+len(l.State.Value))
	b = binary.BigEndian.AppendUint64(b, l.Floor)
	f := byte(0)
	if l.Top {
		f |= latestTop
		if l.State.Chosen {
			f |= latestChosen
		}
	}
	b = append(b, f)
	b = binary.BigEndian.AppendUint64(b, l.Off)
	b = binary.BigEndian.AppendUint64(b, l.State.Promised)
	b = binary.BigEndian.AppendUint64(b, l.State.AccBallot)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.State.Value)))
	return append(b, l.State.Value...)
}

func decodeLatest(b []byte) (latestReply, error) {
	var l latestReply
	if len(b) < latestHdr {
		return l, fmt.Errorf("%w: latest reply of %d bytes", ErrMalformed, len(b))
	}
	l.Floor = binary.BigEndian.Uint64(b)
	f := b[8]
	if f > latestTop|latestChosen || f == latestChosen {
		return l, fmt.Errorf("%w: latest reply flags %#x", ErrMalformed, f)
	}
	l.Top = f&latestTop != 0
	l.Off = binary.BigEndian.Uint64(b[9:])
	n := binary.BigEndian.Uint32(b[33:])
	if n > MaxValue || int(n) != len(b)-latestHdr {
		return l, fmt.Errorf("%w: value length %d in a %d-byte latest reply", ErrMalformed, n, len(b))
	}
	if !l.Top && (n != 0 || l.Off != 0) {
		return l, fmt.Errorf("%w: latest reply without a top register carries one", ErrMalformed)
	}
	if l.Top && (l.Off >= trimOffset || l.Off < l.Floor) {
		return l, fmt.Errorf("%w: latest reply's top offset %d outside the data offsets at floor %d", ErrMalformed, l.Off, l.Floor)
	}
	l.State = response{Status: stOK, Promised: binary.BigEndian.Uint64(b[17:]), AccBallot: binary.BigEndian.Uint64(b[25:]),
		Has: l.Top, Chosen: f&latestChosen != 0, Value: b[latestHdr:]}
	return l, nil
}

// latest answers opLatest for segment seg. Called with the lock held.
func (s *Server) latest(seg uint64) []byte {
	if seg > MaxSegment {
		s.Requests[0]++
		return response{Status: stErr}.encode()
	}
	if s.trimmed[seg] {
		return response{Status: stTrim}.encode()
	}
	l := latestReply{Floor: s.floors[seg]}
	if top := s.segTop[seg]; top > l.Floor {
		addr := Addr(seg, top-1)
		if cur := s.accs[addr]; cur != nil && cur.has {
			a, err := s.loaded(addr, *cur)
			if err != nil {
				s.log.Warn("wor: cannot read a register for latest", "addr", addr, "err", err)
				return response{Status: stFull}.encode()
			}
			l.Top, l.Off, l.State = true, top-1, a.reply(stOK)
		}
	}
	return response{Status: stOK, Has: true, Value: l.encode()}.encode()
}

// trimBelow answers opTrimBelow: segment seg's floor rises to off (it
// never falls), durably in persistent mode before the reply, and the
// registers below it are forgotten. Called with the lock held.
func (s *Server) trimBelow(addr uint64) []byte {
	seg, off := addr>>offsetBits, addr&(1<<offsetBits-1)
	if off > MaxOffset {
		s.Requests[0]++
		return response{Status: stErr}.encode()
	}
	if s.trimmed[seg] {
		return response{Status: stTrim}.encode()
	}
	old := s.floors[seg]
	if off <= old {
		return response{Status: stOK}.encode()
	}
	if s.store != nil {
		if err := s.store.saveFloor(seg, off); err != nil {
			s.log.Warn("wor: cannot record a floor", "segment", seg, "err", err)
			return response{Status: stFull}.encode()
		}
	}
	s.floors[seg] = off
	s.collect(seg, old, off)
	return response{Status: stOK}.encode()
}

// collect forgets the registers of seg in [from, to) (below its new
// floor) and reclaims their journal slots, as forget does for a trimmed
// segment: a slot not yet reused still holds its register, and recovery
// frees it again because the floor, committed before, says it is below.
func (s *Server) collect(seg, from, to uint64) {
	to = min(to, s.segHi[seg])
	for off := from; off < to; off++ {
		addr := Addr(seg, off)
		if _, ok := s.accs[addr]; !ok {
			continue
		}
		if s.store != nil {
			s.store.release(addr)
		}
		delete(s.accs, addr)
	}
	if s.segTop[seg] <= s.floors[seg] {
		delete(s.segTop, seg)
	}
}

// belowFloor: addr is a data register under its segment's floor.
func (s *Server) belowFloor(addr uint64) bool {
	off := addr & (1<<offsetBits - 1)
	return off < trimOffset && off < s.floors[addr>>offsetBits]
}

// accepted notes that the register at addr has an accepted value (see
// segTop). Called with the lock held.
func (s *Server) accepted(addr uint64) {
	seg, off := addr>>offsetBits, addr&(1<<offsetBits-1)
	if off < trimOffset && off+1 > s.segTop[seg] {
		s.segTop[seg] = off + 1
	}
}

// KeyedLog is an engine that serves keyed logs: the ec engine.
type KeyedLog interface {
	// Latest calls back with the highest chosen version of segment seg's
	// keyed log and its value, or ErrUnwritten if none is chosen. It is
	// linearizable provided every version was proposed only once the one
	// below it was chosen (as Client.ProposeVersion's callers do).
	Latest(seg uint64, cb func(off uint64, value []byte, err error))
	// TrimBelow raises seg's floor to off: the versions below it are
	// forgotten and refused (ErrCollected) from now on. Call it only once
	// version off is chosen.
	TrimBelow(seg, off uint64, cb func(error))
}

// keyed returns the client's engine as a KeyedLog.
func (c *Client) keyed() (KeyedLog, error) {
	k, ok := c.e.(KeyedLog)
	if !ok {
		return nil, fmt.Errorf("wor: engine %T has no keyed logs (the ec engine has)", c.e)
	}
	return k, nil
}

// Latest returns the highest chosen version of keyed log seg and its
// value (ErrUnwritten: none yet). Keyed logs are segments that are never
// allocated (Alloc): their registers are the key's versions from offset
// 0, each proposed with ProposeVersion once the one below is chosen.
func (c *Client) Latest(ctx context.Context, seg uint64) (off uint64, value []byte, err error) {
	k, err := c.keyed()
	if err != nil {
		return 0, nil, err
	}
	type result struct {
		off uint64
		v   []byte
	}
	r, err := wait(ctx, func(cb func(result, error)) {
		k.Latest(seg, func(off uint64, v []byte, err error) { cb(result{off, v}, err) })
	})
	return r.off, r.v, err
}

// ProposeVersion proposes value as version off of keyed log seg: nil
// once it is chosen, a *WrittenError with the value chosen instead, or
// another error (the outcome is then unknown). The caller must know
// version off-1 chosen (from Latest, or its own ProposeVersion).
func (c *Client) ProposeVersion(ctx context.Context, seg, off uint64, value []byte) error {
	if err := checkAddr(seg, off); err != nil {
		return err
	}
	if _, err := c.keyed(); err != nil {
		return err
	}
	p, ok := c.e.(Proposer)
	if !ok {
		return fmt.Errorf("wor: engine %T cannot propose", c.e)
	}
	return c.do(ctx, func(cb func(error)) { p.Propose(Addr(seg, off), value, cb) })
}

// TrimBelow collects the versions of keyed log seg below off (Pando's
// garbage collection of old versions): call it once version off is
// chosen. The servers that recorded the new floor refuse the versions
// below it with ErrCollected.
func (c *Client) TrimBelow(ctx context.Context, seg, off uint64) error {
	k, err := c.keyed()
	if err != nil {
		return err
	}
	return c.do(ctx, func(cb func(error)) { k.TrimBelow(seg, off, cb) })
}
