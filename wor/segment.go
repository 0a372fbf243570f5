package wor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Addresses: a segment id in the high 40 bits, an offset in the low 24.
// Offset 2^24-1 of every segment is its metadata register (written once by
// Alloc); data registers use the offsets below MaxOffset.
const (
	offsetBits = 24
	// MaxOffset bounds the data offsets of a segment.
	MaxOffset  = 1<<offsetBits - 2
	metaOffset = 1<<offsetBits - 1
	trimOffset = 1<<offsetBits - 2 // the segment's trim register
	// MaxSegment bounds segment ids.
	MaxSegment = 1<<(64-offsetBits) - 1
)

// Errors of the segment layer.
var (
	// ErrNotAllocated: the address's segment was never allocated.
	ErrNotAllocated = errors.New("wor: segment not allocated")
	// ErrAllocated matches an *AllocatedError.
	ErrAllocated = errors.New("wor: segment already allocated")
)

// AllocatedError reports that another caller allocated the segment first,
// with its metadata.
type AllocatedError struct{ Metadata []byte }

func (e *AllocatedError) Error() string { return "wor: segment already allocated by another caller" }

// Is makes errors.Is(err, ErrAllocated) true.
func (e *AllocatedError) Is(target error) bool { return target == ErrAllocated }

// Addr is the address of offset off in segment seg.
func Addr(seg, off uint64) uint64 { return seg<<offsetBits | off }

// Client is the application's view of the address space: segments that
// are allocated once, and registers in them. It runs over any Engine.
type Client struct {
	e Engine // set by NewClient, never changed; safe for concurrent use itself

	mu sync.Mutex
	// allocated caches segments known to be allocated (guarded by mu); a
	// segment stays allocated until trimmed, and a trimmed one is refused
	// by the servers whatever the cache says.
	allocated map[uint64]bool
}

// NewClient returns a client over an engine.
func NewClient(e Engine) *Client { return &Client{e: e, allocated: map[uint64]bool{}} }

// QuorumStats reports the engine's quorum counts, if it keeps them (the
// paxos engine and a cluster do; see QuorumCounts).
func (c *Client) QuorumStats() (QuorumStats, bool) {
	if q, ok := c.e.(interface{ QuorumStats() QuorumStats }); ok {
		return q.QuorumStats(), true
	}
	return QuorumStats{}, false
}

func wait[T any](ctx context.Context, start func(func(T, error))) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	start(func(v T, err error) { ch <- res{v, err} })
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func checkAddr(seg, off uint64) error {
	if seg > MaxDataSegment || off >= MaxOffset {
		return fmt.Errorf("wor: address (segment %d, offset %d) out of range", seg, off)
	}
	return nil
}

// Alloc allocates segment seg with metadata. Exactly one of racing callers
// succeeds; the others get an *AllocatedError with the winner's metadata.
func (c *Client) Alloc(ctx context.Context, seg uint64, metadata []byte) error {
	if seg > MaxDataSegment {
		return fmt.Errorf("wor: segment %d out of range (at most %d)", seg, uint64(MaxDataSegment))
	}
	// Stored as 1, a random token, then the metadata: never empty (written
	// means allocated), and a caller whose own earlier attempt was
	// completed by someone else recognises its token and knows it won.
	var token [16]byte
	for i := range token {
		token[i] = byte(rand.Uint32())
	}
	meta := append(append([]byte{1}, token[:]...), metadata...)
	addr := Addr(seg, metaOffset)
	for attempt := 0; ; attempt++ {
		cid, err := wait(ctx, func(cb func(CaptureID, error)) { c.e.Capture(addr, cb) })
		if err == nil {
			_, err = wait(ctx, func(cb func(struct{}, error)) {
				c.e.Write(addr, meta, cid, func(err error) { cb(struct{}{}, err) })
			})
		}
		var we *WrittenError
		switch {
		case err == nil:
			c.markAllocated(seg)
			return nil
		case errors.As(err, &we):
			c.markAllocated(seg)
			if len(we.Value) >= 1+len(token) && string(we.Value[1:1+len(token)]) == string(token[:]) {
				return nil // our own value, chosen through another client's completion
			}
			return &AllocatedError{Metadata: metaOf(we.Value)}
		case errors.Is(err, ErrPreempted) && ctx.Err() == nil:
			// Duelling proposers: back off for a random, growing time so
			// one of them gets through (Paxos has no progress guarantee
			// without it).
			d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 8)))
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		default:
			return err
		}
	}
}

// Metadata returns a segment's metadata, or ErrNotAllocated.
func (c *Client) Metadata(ctx context.Context, seg uint64) ([]byte, error) {
	v, err := wait(ctx, func(cb func([]byte, error)) { c.e.Read(Addr(seg, metaOffset), cb) })
	if errors.Is(err, ErrUnwritten) {
		return nil, fmt.Errorf("%w: segment %d", ErrNotAllocated, seg)
	}
	if err != nil {
		return nil, c.trimmed(ctx, seg, err)
	}
	c.markAllocated(seg)
	return metaOf(v), nil
}

// metaOf strips the marker and token Alloc stores in front of metadata.
func metaOf(v []byte) []byte {
	if len(v) < 17 {
		return nil
	}
	return v[17:]
}

func (c *Client) markAllocated(seg uint64) {
	c.mu.Lock()
	c.allocated[seg] = true
	c.mu.Unlock()
}

func (c *Client) requireAllocated(ctx context.Context, seg, off uint64) error {
	if err := checkAddr(seg, off); err != nil {
		return err
	}
	c.mu.Lock()
	ok := c.allocated[seg]
	c.mu.Unlock()
	if ok {
		return nil
	}
	_, err := c.Metadata(ctx, seg)
	return err
}

// Trim garbage-collects segment seg (WormSpace §3.1): it writes the
// segment's trim register, so that the trim is agreed on, then has every
// server forget the segment. Every later call on its registers fails with
// ErrTrimmed.
func (c *Client) Trim(ctx context.Context, seg uint64) error {
	if err := c.requireAllocated(ctx, seg, 0); err != nil {
		return err
	}
	addr := Addr(seg, trimOffset)
	for attempt := 0; ; attempt++ {
		cid, err := wait(ctx, func(cb func(CaptureID, error)) { c.e.Capture(addr, cb) })
		if err == nil {
			err = c.do(ctx, func(cb func(error)) { c.e.Write(addr, []byte("trim"), cid, cb) })
		}
		switch {
		case err == nil, errors.Is(err, ErrWritten), errors.Is(err, ErrTrimmed):
			return c.do(ctx, func(cb func(error)) { c.e.Trim(seg, cb) })
		case errors.Is(err, ErrPreempted) && attempt < 8:
			continue
		default:
			return err
		}
	}
}

func (c *Client) do(ctx context.Context, start func(func(error))) error {
	_, err := wait(ctx, func(cb func(struct{}, error)) { start(func(err error) { cb(struct{}{}, err) }) })
	return err
}

// trimmed completes a trim some servers reported, then returns ErrTrimmed.
func (c *Client) trimmed(ctx context.Context, seg uint64, err error) error {
	if !errors.Is(err, ErrTrimmed) {
		return err
	}
	if terr := c.do(ctx, func(cb func(error)) { c.e.Trim(seg, cb) }); terr != nil {
		return fmt.Errorf("%w (completing the trim failed: %v)", ErrTrimmed, terr)
	}
	return fmt.Errorf("%w: segment %d", ErrTrimmed, seg)
}

// Capture captures register (seg, off) for a following Write.
func (c *Client) Capture(ctx context.Context, seg, off uint64) (CaptureID, error) {
	if err := c.requireAllocated(ctx, seg, off); err != nil {
		return 0, err
	}
	cid, err := wait(ctx, func(cb func(CaptureID, error)) { c.e.Capture(Addr(seg, off), cb) })
	return cid, c.trimmed(ctx, seg, err)
}

// Write writes value with a capture from Capture (0: unsafe write). If the
// register already held a value, the result is a *WrittenError with it.
func (c *Client) Write(ctx context.Context, seg, off uint64, value []byte, cid CaptureID) error {
	if err := c.requireAllocated(ctx, seg, off); err != nil {
		return err
	}
	err := c.do(ctx, func(cb func(error)) { c.e.Write(Addr(seg, off), value, cid, cb) })
	return c.trimmed(ctx, seg, err)
}

// Propose captures and writes value in one call: nil once value is
// chosen, a *WrittenError with the value chosen instead. An engine that
// is a Proposer (the ec engine, which delegates Phase 2 with a delegate
// set) does it its own way; others Capture then Write.
func (c *Client) Propose(ctx context.Context, seg, off uint64, value []byte) error {
	if err := c.requireAllocated(ctx, seg, off); err != nil {
		return err
	}
	p, ok := c.e.(Proposer)
	if !ok {
		cid, err := c.Capture(ctx, seg, off)
		if err != nil {
			return err
		}
		return ours(value, c.Write(ctx, seg, off, value, cid))
	}
	err := c.do(ctx, func(cb func(error)) { p.Propose(Addr(seg, off), value, cb) })
	return c.trimmed(ctx, seg, err)
}

// WriteWithToken writes value to register (seg, off) under a capture
// that another client made and that found the register unwritten: a
// token, as WormLog's sequencer hands out (it pre-captures a segment and
// gives each appender a position with the capture's id, so that an
// append is one round trip to the sequencer and one write). A capture id
// is a Paxos ballot, valid for every register the capture covered. The
// token's issuer vouches that the capture found the register unwritten
// and hands each position to one writer only: two values written under
// one ballot would break consensus. Otherwise it is Write.
func (c *Client) WriteWithToken(ctx context.Context, seg, off uint64, value []byte, token CaptureID) error {
	if err := checkAddr(seg, off); err != nil {
		return err
	}
	if err := Adopt(c.e, Addr(seg, off), token); err != nil {
		return err
	}
	return c.Write(ctx, seg, off, value, token)
}

// Adopt makes a capture another client made of addr, and that found it
// unwritten, usable by engine e's next Write of addr with that capture
// id as cid: Client.WriteWithToken's engine-level step, for callers that
// drive an Engine with callbacks (WormTX). The same conditions apply.
func Adopt(e Engine, addr uint64, token CaptureID) error {
	if token == 0 {
		return errors.New("wor: a token is a capture id, not 0")
	}
	a, ok := e.(interface {
		adopt(addr uint64, cid CaptureID)
	})
	if !ok {
		return fmt.Errorf("wor: engine %T cannot write with another client's capture", e)
	}
	a.adopt(addr, token)
	return nil
}

// Read returns the register's value, or ErrUnwritten.
func (c *Client) Read(ctx context.Context, seg, off uint64) ([]byte, error) {
	if err := c.requireAllocated(ctx, seg, off); err != nil {
		return nil, err
	}
	v, err := wait(ctx, func(cb func([]byte, error)) { c.e.Read(Addr(seg, off), cb) })
	return v, c.trimmed(ctx, seg, err)
}

// SegCapture captures registers [start, end) of segment seg (at most
// MaxSegBatch) in one round trip; the CaptureID serves Write or SegWrite
// on any of them.
func (c *Client) SegCapture(ctx context.Context, seg, start, end uint64) (CaptureID, error) {
	if err := checkBatch(start, end); err != nil {
		return 0, err
	}
	if err := c.requireAllocated(ctx, seg, end-1); err != nil {
		return 0, err
	}
	cid, err := wait(ctx, func(cb func(CaptureID, error)) { c.e.SegCapture(seg, start, end, cb) })
	return cid, c.trimmed(ctx, seg, err)
}

// SegWrite writes values[i] to register (seg, start+i), all in one round
// trip, with a capture from SegCapture (0: unsafe write). It returns the
// values the registers now hold: where the capture found an earlier value,
// that value was completed instead of the caller's (as Write reports with
// a *WrittenError).
func (c *Client) SegWrite(ctx context.Context, seg, start uint64, values [][]byte, cid CaptureID) ([][]byte, error) {
	if err := checkBatch(start, start+uint64(len(values))); err != nil {
		return nil, err
	}
	if err := c.requireAllocated(ctx, seg, start+uint64(len(values))-1); err != nil {
		return nil, err
	}
	held, err := wait(ctx, func(cb func([][]byte, error)) { c.e.SegWrite(seg, start, values, cid, cb) })
	return held, c.trimmed(ctx, seg, err)
}

// Written reports a register of a listened segment that now holds a value.
type Written struct {
	Seg, Off uint64
	Value    []byte
}

// listenTTL is how long the servers keep a SegListen registration; the
// client renews it at a third of that.
const listenTTL = 30 * time.Second

// listenSettle is how long SegListen waits after a report before reading
// the register.
const listenSettle = 20 * time.Millisecond

// SegListen reports writes to segment seg made after it returns, each
// register once, until ctx ends (then the channel is closed). The servers
// report accepts; each report is confirmed by a linearizable Read, so a
// Written value is chosen for good. Reports are best-effort: a register
// written while every server that accepted it was unreachable, or while
// this client's renewals failed, may go unreported; read the segment to
// be sure.
func (c *Client) SegListen(ctx context.Context, seg uint64) (<-chan Written, error) {
	if err := c.requireAllocated(ctx, seg, 0); err != nil {
		return nil, err
	}
	type hint struct {
		addr uint64
		due  time.Time
	}
	hints := make(chan hint, 4096)
	notify := func(addr uint64) {
		select {
		case hints <- hint{addr, time.Now().Add(listenSettle)}:
		default: // the confirmer is far behind; this register may be reported by a later accept
		}
	}
	var cancel func()
	err := c.do(ctx, func(cb func(error)) { cancel = c.e.Subscribe(seg, listenTTL, notify, cb) })
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return nil, c.trimmed(ctx, seg, err)
	}
	out := make(chan Written, 64)
	go func() {
		defer close(out)
		defer cancel()
		renew := time.NewTicker(listenTTL / 3)
		defer renew.Stop()
		seen := map[uint64]bool{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-renew.C:
				c.e.Subscribe(seg, listenTTL, nil, func(error) {}) // a failure is retried at the next tick
			case h := <-hints:
				addr := h.addr
				if seen[addr] || addr&(1<<offsetBits-1) >= MaxOffset {
					continue // reported already, or the metadata or trim register
				}
				// Let the write finish first: a read of a half-written
				// register completes it, which would preempt its writer.
				if d := time.Until(h.due); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return
					}
				}
				v, err := c.Read(ctx, seg, addr&(1<<offsetBits-1))
				if err != nil {
					continue // not chosen after all, or unreachable: a later report may come
				}
				seen[addr] = true
				select {
				case out <- Written{Seg: seg, Off: addr & (1<<offsetBits - 1), Value: v}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}
