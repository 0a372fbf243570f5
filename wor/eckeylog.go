package wor

import (
	"errors"
	"fmt"
)

// The ec engine's side of keyed logs (keylog.go): Pando's one-round read
// of a key's latest version, with the Phase 1b fallback and write-back,
// and the collection of old versions.

var _ KeyedLog = (*EC)(nil)

// errNoLatest marks, in the answers a Latest round hands to the read
// rules, a server whose latest reply could not be used.
var errNoLatest = errors.New("wor: no usable latest reply")

// Latest implements KeyedLog. Every server reports its top register of
// seg; once a Phase 1a quorum answered, the highest top H is at least the
// latest chosen version (a Phase 2 quorum meets every Phase 1a quorum).
// If a server knows H chosen and K of its splits are at hand, that is
// the answer, in one round. Otherwise H is settled by a read of H (which
// takes a Phase 1b quorum and writes a recovered value back); if H holds
// no value that can have been chosen, the latest chosen version is H-1,
// since a version is proposed only once the one before it is chosen.
func (e *EC) Latest(seg uint64, cb func(off uint64, value []byte, err error)) {
	if seg > MaxSegment {
		cb(0, nil, fmt.Errorf("wor: segment %d out of range", seg))
		return
	}
	e.latest(seg, 4, cb)
}

func (e *EC) latest(seg uint64, tries int, cb func(uint64, []byte, error)) {
	body := e.stamp(request{Op: opLatest, Addr: seg}).encode()
	e.round(func(int) []byte { return body }, func(as []ecAnswer, outstanding int) (bool, func()) {
		ls := make([]latestReply, len(as))
		ok := make([]bool, len(as))
		valid, hi, any := 0, uint64(0), false
		for i, a := range as {
			if a.err != nil || a.resp.Status != stOK || !a.resp.Has {
				continue
			}
			l, err := decodeLatest(a.resp.Value)
			if err != nil {
				continue
			}
			ls[i], ok[i] = l, true
			valid++
			if l.Top && (!any || l.Off > hi) {
				hi, any = l.Off, true
			}
		}
		if valid < e.plan.Q1a {
			if valid+outstanding < e.plan.Q1a {
				return true, func() { cb(0, nil, e.unavailable("latest", as, e.plan.Q1a)) }
			}
			return false, nil
		}
		if !any {
			// No server of a Phase 1a quorum holds a version: none is chosen.
			return true, func() { cb(0, nil, ErrUnwritten) }
		}
		// The answers as a read of register hi would have had them: a
		// server whose top is below hi accepted nothing at hi.
		at := make([]ecAnswer, len(as))
		for i, a := range as {
			switch {
			case !ok[i]:
				at[i] = ecAnswer{from: a.from, err: errNoLatest}
			case ls[i].Top && ls[i].Off == hi:
				at[i] = ecAnswer{from: a.from, resp: ls[i].State}
			default:
				at[i] = ecAnswer{from: a.from, resp: response{Status: stOK}}
			}
		}
		switch out, v := e.plan.read(e.codec, at, outstanding); out {
		case readChosen:
			return true, func() { cb(hi, v, nil) }
		case readWait:
			return false, nil
		}
		return true, func() { e.settle(seg, hi, tries, cb) }
	}, func(err error) { cb(0, nil, err) })
}

// settle finds the latest chosen version when the top h is not known
// chosen: h itself if a read of it finds (or completes) a value, else
// h-1.
func (e *EC) settle(seg, h uint64, tries int, cb func(uint64, []byte, error)) {
	again := func(err error) {
		if errors.Is(err, ErrCollected) && tries > 1 {
			// A newer version was chosen and the old ones collected
			// meanwhile: look again.
			e.latest(seg, tries-1, cb)
			return
		}
		cb(0, nil, err)
	}
	e.read(Addr(seg, h), 5, func(v []byte, err error) {
		switch {
		case err == nil:
			cb(h, v, nil)
		case !errors.Is(err, ErrUnwritten):
			again(err)
		case h == 0:
			cb(0, nil, ErrUnwritten)
		default:
			e.read(Addr(seg, h-1), 5, func(v []byte, err error) {
				switch {
				case err == nil:
					cb(h-1, v, nil)
				case errors.Is(err, ErrUnwritten):
					cb(0, nil, fmt.Errorf("wor: keyed log of segment %d: version %d has a value but %d has none (a version was proposed before the one below it was chosen)", seg, h, h-1))
				default:
					again(err)
				}
			})
		}
	})
}

// TrimBelow implements KeyedLog: every server is told the new floor; it
// calls back once a majority recorded it (the others collect at their
// next TrimBelow, or never: they only keep old versions longer).
func (e *EC) TrimBelow(seg, off uint64, cb func(error)) {
	if seg > MaxSegment || off > MaxOffset {
		cb(fmt.Errorf("wor: floor %d of segment %d out of range", off, seg))
		return
	}
	trimAll(e.node, e.servers, e.timeout, e.stamp(request{Op: opTrimBelow, Addr: Addr(seg, off)}), cb)
}
