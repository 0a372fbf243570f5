package wor

import (
	"errors"
	"fmt"
	"sync"
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
	id      uint64
	timeout time.Duration

	mu       sync.Mutex
	round    uint64
	captured map[captureKey]prior
}

var _ Engine = (*Chain)(nil)

// NewChain returns the chain engine for client id over servers, head first.
func NewChain(node *stack.Node, chain []stack.Addr, id uint64, timeout time.Duration) (*Chain, error) {
	if id == 0 || id >= 1<<clientBits {
		return nil, fmt.Errorf("wor: client id %d out of range [1, %d)", id, 1<<clientBits)
	}
	if len(chain) == 0 {
		return nil, errors.New("wor: empty chain")
	}
	return &Chain{node: node, chain: chain, id: id, timeout: timeout, captured: map[captureKey]prior{}}, nil
}

// one sends req to a single server.
func (c *Chain) one(to stack.Addr, req request, cb func(response, error)) {
	_, err := c.node.CallAsync(to, req.encode(), c.timeout, func(b []byte, err error) {
		var r response
		if err == nil {
			r, err = decodeResponse(b)
			if err == nil && r.Status == stErr {
				err = fmt.Errorf("%w: server rejected the request", ErrMalformed)
			}
		}
		if err != nil {
			err = fmt.Errorf("%w: %s: %v", ErrUnavailable, to, err)
		}
		cb(r, err)
	})
	if err != nil {
		cb(response{}, fmt.Errorf("%w: %v", ErrUnavailable, err))
	}
}

func (c *Chain) ballot() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.round++
	return c.round<<clientBits | c.id
}

func (c *Chain) observe(b uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.round = max(c.round, b>>clientBits)
}

// Capture runs phase 1 at the head.
func (c *Chain) Capture(addr uint64, cb func(CaptureID, error)) { c.capture(addr, 3, cb) }

func (c *Chain) capture(addr uint64, tries int, cb func(CaptureID, error)) {
	b := c.ballot()
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
			c.mu.Lock()
			c.captured[captureKey{addr, CaptureID(b)}] = prior{has: r.Has, value: r.Value}
			c.mu.Unlock()
			cb(CaptureID(b), nil)
		}
	})
}

// Write sends the value (or the one the capture found) down the chain.
func (c *Chain) Write(addr uint64, value []byte, cid CaptureID, cb func(error)) {
	if len(value) > MaxValue {
		cb(fmt.Errorf("wor: value of %d bytes exceeds %d", len(value), MaxValue))
		return
	}
	b, v, written := uint64(cid), value, false
	if cid == 0 {
		b = 1
	} else {
		c.mu.Lock()
		p, ok := c.captured[captureKey{addr, cid}]
		delete(c.captured, captureKey{addr, cid})
		c.mu.Unlock()
		if !ok {
			cb(fmt.Errorf("wor: capture %d of address %d is unknown or already used", cid, addr))
			return
		}
		if p.has {
			v, written = p.value, true
		}
	}
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
				c.Capture(addr, func(cid CaptureID, err error) {
					if err != nil {
						if errors.Is(err, ErrPreempted) && tries > 1 {
							c.read(addr, tries-1, cb)
							return
						}
						cb(nil, err)
						return
					}
					c.Write(addr, h.Value, cid, func(err error) {
						var we *WrittenError
						switch {
						case err == nil:
							cb(h.Value, nil)
						case errors.As(err, &we):
							cb(we.Value, nil)
						case errors.Is(err, ErrPreempted) && tries > 1:
							c.read(addr, tries-1, cb)
						default:
							cb(nil, err)
						}
					})
				})
			}
		})
	})
}
