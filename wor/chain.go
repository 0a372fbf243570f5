package wor

import (
	"errors"
	"fmt"
	"time"

	"strata/stack"
)

// Chain is the chain engine: client-driven chain replication as in CORFU.
// The head arbitrates: Capture runs phase 1 at the head only, Write sends
// the value down the chain in order (head first), and Read asks the tail,
// falling back to the head to complete a half-written register. f+1
// servers tolerate f failures for durability, but any failure blocks
// writes until a reconfiguration replaces the server.
//
// Why it is safe: after the head accepts a value, every later capture at
// the head sees it and Write adopts it, and a writer whose capture the
// head superseded is refused at the head; so the head only ever accepts
// one value, and the others only receive values the head accepted first.
type Chain struct {
	node    *stack.Node
	chain   []stack.Addr
	timeout time.Duration
	conf
	*ballots
	hub *notifyHub
}

var _ Engine = (*Chain)(nil)

// NewChain returns the chain engine for client id over servers, head first.
func NewChain(node *stack.Node, chain []stack.Addr, id uint64, timeout time.Duration) (*Chain, error) {
	if len(chain) == 0 {
		return nil, errors.New("wor: empty chain")
	}
	b, err := newBallots(id)
	if err != nil {
		return nil, err
	}
	return &Chain{node: node, chain: chain, timeout: timeout, ballots: b, hub: &notifyHub{}}, nil
}

// one sends req to a single server.
func (c *Chain) one(to stack.Addr, req request, cb func(response, error)) {
	_, err := c.node.CallAsync(to, c.stamp(req).encode(), c.timeout, func(b []byte, err error) {
		var r response
		if err != nil {
			cb(r, fmt.Errorf("%w: %s: %v", ErrUnavailable, to, err))
			return
		}
		r, err = decodeResponse(b)
		cb(r, statusErr(err, r.Status))
	})
	if err != nil {
		cb(response{}, fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
}

// Capture runs phase 1 at the head.
func (c *Chain) Capture(addr uint64, cb func(CaptureID, error)) { c.capture(addr, 3, cb) }

func (c *Chain) capture(addr uint64, tries int, cb func(CaptureID, error)) {
	b := c.next()
	c.one(c.chain[0], request{Op: opPrepare, Addr: addr, Ballot: b}, func(r response, err error) {
		switch {
		case err != nil:
			cb(0, err)
		case r.Status == stNack:
			c.observe(r.Promised)
			if tries > 1 {
				c.capture(addr, tries-1, cb)
				return
			}
			cb(0, ErrPreempted)
		default:
			c.remember(addr, CaptureID(b), prior{has: r.Has, value: r.Value})
			cb(CaptureID(b), nil)
		}
	})
}

// Write sends the value (or the one the capture found) down the chain.
func (c *Chain) Write(addr uint64, value []byte, cid CaptureID, cb func(error)) {
	b, v, written, err := c.take(addr, value, cid)
	if err != nil {
		cb(err)
		return
	}
	c.writeAt(addr, b, v, written, cb)
}

// writeAt sends v at ballot b down the chain (written: report v as a
// *WrittenError).
func (c *Chain) writeAt(addr, b uint64, v []byte, written bool, cb func(error)) {
	var step func(i int)
	step = func(i int) {
		if i == len(c.chain) {
			if written {
				cb(&WrittenError{Value: v})
			} else {
				cb(nil)
			}
			return
		}
		c.one(c.chain[i], request{Op: opAccept, Addr: addr, Ballot: b, Value: v}, func(r response, err error) {
			switch {
			case err != nil:
				cb(err)
			case r.Status == stNack:
				c.observe(r.Promised)
				cb(ErrPreempted)
			default:
				step(i + 1)
			}
		})
	}
	step(0)
}

// Read asks the tail; if the tail has nothing, the head decides whether a
// write is under way (and it is completed) or nothing was written.
func (c *Chain) Read(addr uint64, cb func([]byte, error)) { c.read(addr, 5, cb) }

func (c *Chain) read(addr uint64, tries int, cb func([]byte, error)) {
	tail := c.chain[len(c.chain)-1]
	c.one(tail, request{Op: opRead, Addr: addr}, func(r response, err error) {
		if err != nil {
			cb(nil, err)
			return
		}
		if r.Has {
			cb(r.Value, nil)
			return
		}
		c.one(c.chain[0], request{Op: opRead, Addr: addr}, func(h response, err error) {
			switch {
			case err != nil:
				cb(nil, err)
			case !h.Has:
				cb(nil, ErrUnwritten)
			default:
				complete(c, addr, h.Value, tries, func() { c.read(addr, tries-1, cb) }, cb)
			}
		})
	})
}

// Trim tells every server of the chain to forget segment seg.
func (c *Chain) Trim(seg uint64, cb func(error)) {
	trimAll(c.node, c.chain, c.timeout, c.stamp(request{Op: opTrim, Addr: seg}), cb)
}
