package wor

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"strata/stack"
)

// Engine is how registers are made durable and agreed on: the paxos engine
// (majority quorums), chain replication and Pando's erasure-coded Paxos
// (EC). Applications use Client, never an engine directly, so they do not
// change when the engine does.
//
// Every method returns at once and calls its callback exactly once, from
// any goroutine (or from the simulator's loop). The contract per address:
//
//   - Capture obtains a CaptureID that orders this client's next Write
//     against every other capture of the address; a later capture by
//     anyone preempts it (ErrPreempted at Write).
//   - Write with a CaptureID either writes value, or finds that another
//     value may already be chosen and completes that one instead
//     (*WrittenError with it). CaptureID 0 is an unsafe write.
//   - Read returns the chosen value, or ErrUnwritten; a value returned is
//     chosen for good.
//
// An engine that stores coded fragments instead of whole values fits, as
// EC shows: Capture and Write carry the quorum logic and Read reassembles;
// the contract above is about values, not about what each server keeps.
type Engine interface {
	Capture(addr uint64, cb func(CaptureID, error))
	Write(addr uint64, value []byte, cid CaptureID, cb func(error))
	Read(addr uint64, cb func([]byte, error))
	// Trim tells every server to forget segment seg and refuse its
	// registers (called once the segment's trim register is written, and
	// again to complete a trim some servers missed).
	Trim(seg uint64, cb func(error))
	// SegCapture captures registers [start, end) of seg in one round trip
	// (at most MaxSegBatch); the CaptureID serves a Write or SegWrite of
	// any of them.
	SegCapture(seg, start, end uint64, cb func(CaptureID, error))
	// SegWrite writes values to consecutive registers from (seg, start)
	// in one round trip; cb gets the values now held (a register whose
	// capture found an earlier value holds that one).
	SegWrite(seg, start uint64, values [][]byte, cid CaptureID, cb func([][]byte, error))
	// Subscribe asks the servers to report accepts in seg for ttl, calling
	// notify (if not nil) with each register address reported. A report
	// is a hint: the value is known chosen only once read. Call it again
	// with notify nil to renew; cancel stops calling notify.
	Subscribe(seg uint64, ttl time.Duration, notify func(addr uint64), cb func(error)) (cancel func())
}

// trimAll sends a trim to every server and reports success once a
// majority has it (the others learn it when a client meets them).
func trimAll(node *stack.Node, servers []stack.Addr, timeout time.Duration, req request, cb func(error)) {
	var mu sync.Mutex
	ok, failed, done := 0, 0, false
	maj := len(servers)/2 + 1
	body := req.encode()
	for _, s := range servers {
		_, err := node.CallAsync(s, body, timeout, func(b []byte, err error) {
			if err == nil {
				var r response
				r, err = decodeResponse(b)
				err = statusErr(err, r.Status)
			}
			mu.Lock()
			if err == nil {
				ok++
			} else {
				failed++
			}
			var out error
			fire := false
			switch {
			case done:
			case errors.Is(err, ErrSealed):
				done, fire, out = true, true, err
			case ok == maj:
				done, fire = true, true
			case failed > len(servers)-maj:
				done, fire, out = true, true, fmt.Errorf("%w: trim: %v", ErrUnavailable, err)
			}
			mu.Unlock()
			if fire {
				cb(out)
			}
		})
		if err != nil {
			mu.Lock()
			failed++
			fire := !done && failed > len(servers)-maj
			done = done || fire
			mu.Unlock()
			if fire {
				cb(fmt.Errorf("%w: trim: %v", ErrUnavailable, err))
			}
		}
	}
}

var _ Engine = (*Paxos)(nil)

// ballots hands out a client's capture ids: round << 32 | client id, with
// rounds moving past any higher ballot a server reports.
type ballots struct {
	mu    sync.Mutex
	id    uint64
	round uint64
	// captured holds, per capture, the highest value its quorum (or the
	// head) had accepted: Write must complete that value instead.
	captured map[captureKey]prior
}

func newBallots(id uint64) (*ballots, error) {
	if id == 0 || id >= 1<<clientBits {
		return nil, fmt.Errorf("wor: client id %d out of range [1, %d)", id, 1<<clientBits)
	}
	return &ballots{id: id, captured: map[captureKey]prior{}}, nil
}

func (b *ballots) next() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.round++
	return b.round<<clientBits | b.id
}

func (b *ballots) observe(ballot uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.round = max(b.round, ballot>>clientBits)
}

func (b *ballots) remember(addr uint64, cid CaptureID, p prior) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.captured[captureKey{addr, cid}] = p
}

// adopt records a capture made elsewhere that found addr unwritten
// (Client.WriteWithToken).
func (b *ballots) adopt(addr uint64, cid CaptureID) {
	b.remember(addr, cid, prior{})
	b.observe(uint64(cid))
}

// take resolves the ballot and value a Write sends: cid 0 is an unsafe
// write at ballot 1; otherwise the capture's prior value, if any, replaces
// value (written reports that).
func (b *ballots) take(addr uint64, value []byte, cid CaptureID) (ballot uint64, v []byte, written bool, err error) {
	if len(value) > MaxValue {
		return 0, nil, false, fmt.Errorf("wor: value of %d bytes exceeds %d", len(value), MaxValue)
	}
	if cid == 0 {
		return 1, value, false, nil // the lowest ballot: loses to any capture
	}
	b.mu.Lock()
	p, ok := b.captured[captureKey{addr, cid}]
	delete(b.captured, captureKey{addr, cid})
	b.mu.Unlock()
	if !ok {
		return 0, nil, false, fmt.Errorf("wor: capture %d of address %d is unknown or already used", cid, addr)
	}
	if p.has {
		return uint64(cid), p.value, true, nil
	}
	return uint64(cid), value, false, nil
}

// complete finishes a half-written register for a read: capture, then
// write v (or whatever the capture finds), and report the value that is
// now chosen. retry is called instead when a capture or write is
// preempted and tries remain.
func complete(e Engine, addr uint64, v []byte, tries int, retry func(), cb func([]byte, error)) {
	e.Capture(addr, func(cid CaptureID, err error) {
		if err != nil {
			if errors.Is(err, ErrPreempted) && tries > 1 {
				retry()
				return
			}
			cb(nil, err)
			return
		}
		e.Write(addr, v, cid, func(err error) {
			var we *WrittenError
			switch {
			case err == nil:
				cb(v, nil)
			case errors.As(err, &we):
				cb(we.Value, nil)
			case errors.Is(err, ErrPreempted) && tries > 1:
				retry()
			default:
				cb(nil, err)
			}
		})
	})
}

// NewEngine returns the engine named kind ("paxos", "chain" or "ec") for
// client id over servers, on node: the one reading of an engine's name
// for the command line and the benchmarks. The ec engine gets
// DefaultECPlan for len(servers) servers tolerating one failure (none
// below three servers): on five servers K=3, R=2, Q1a=3, Q1b=Q2=4; on
// three, replication with majority quorums. NewEC takes any other plan.
func NewEngine(kind string, node *stack.Node, servers []stack.Addr, id uint64, timeout time.Duration) (interface {
	Engine
	Learner
}, error) {
	switch kind {
	case "paxos":
		return NewPaxos(node, servers, id, timeout)
	case "chain":
		return NewChain(node, servers, id, timeout)
	case "ec":
		plan, err := EngineECPlan(len(servers))
		if err != nil {
			return nil, err
		}
		return NewEC(node, servers, id, timeout, plan)
	}
	return nil, fmt.Errorf("wor: unknown engine %q (want paxos, chain or ec)", kind)
}
