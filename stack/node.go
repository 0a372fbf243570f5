package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"
)

// ErrTimeout is the error of an RPC whose deadline passed.
var ErrTimeout = errors.New("stack: rpc deadline exceeded")

// ErrCanceled is the error of an RPC abandoned by its caller.
var ErrCanceled = errors.New("stack: rpc canceled")

// ErrClosed is returned after Node.Close.
var ErrClosed = errors.New("stack: node closed")

// Handler answers an RPC request; its result is the response body.
type Handler func(from Addr, req []byte) []byte

// Node runs one stack over a transport and a clock: it is the thin driver
// that does the I/O the layers describe. Everything the stack emits at the
// top is dispatched to the application after the stack has finished
// processing, outside the node's lock, so callbacks may call back in.
type Node struct {
	mu       sync.Mutex
	run      Runner
	tr       Transport
	clock    Clock
	vec      [][]byte
	out      []Event // top events of the current injection
	timerAt  time.Duration
	timerGen uint64
	stop     func() bool
	nextID   uint64
	calls    map[uint64]func([]byte, error)
	closed   bool
	sendErrs uint64 // transport sends that failed

	deliver func(from Addr, body []byte)
	handler Handler
	async   AsyncHandler
	other   func(Event)
	log     *slog.Logger
}

// NodeOptions configure a Node.
type NodeOptions struct {
	Functional bool   // use Compose instead of the Scheduler
	Trace      Tracer // observe every event at every layer boundary
	Logger     *slog.Logger
}

// NewNode builds a node from layers (bottom first) and starts receiving.
func NewNode(tr Transport, clock Clock, layers []Layer, opt NodeOptions) *Node {
	n := &Node{tr: tr, clock: clock, calls: map[uint64]func([]byte, error){}, log: opt.Logger}
	if n.log == nil {
		n.log = slog.Default()
	}
	if opt.Functional {
		n.run = Compose(layers, n, opt.Trace)
	} else {
		n.run = NewScheduler(layers, n, opt.Trace)
	}
	tr.SetReceiver(func(from Addr, data []byte) {
		n.inject(Up, Event{Type: EDeliver, Peer: from, Msg: Received(data)})
	})
	return n
}

// Local is the node's transport address.
func (n *Node) Local() Addr { return n.tr.Local() }

// Layers returns the running layers, bottom first.
func (n *Node) Layers() []Layer { return n.run.Layers() }

// OnDeliver sets the callback for one-way messages.
func (n *Node) OnDeliver(f func(from Addr, body []byte)) { n.mu.Lock(); n.deliver = f; n.mu.Unlock() }

// Handle sets the RPC request handler.
func (n *Node) Handle(h Handler) { n.mu.Lock(); n.handler = h; n.mu.Unlock() }

// AsyncHandler answers an RPC request by calling respond, exactly once, at
// any time from any goroutine; it must not block the caller, which is the
// node's receive path.
type AsyncHandler func(from Addr, req []byte, respond func(resp []byte))

// HandleAsync sets an RPC request handler that answers later (e.g. after
// a durable write, so that concurrent requests share one group commit). It
// takes precedence over Handle. req stays valid after the handler returns.
func (n *Node) HandleAsync(h AsyncHandler) { n.mu.Lock(); n.async = h; n.mu.Unlock() }

// OnEvent sets a callback for other events reaching the top (Suspect,
// View, ...).
func (n *Node) OnEvent(f func(Event)) { n.mu.Lock(); n.other = f; n.mu.Unlock() }

// Send sends a one-way message. The payload buffers must not change until
// the stack is done with them (reliable layers keep them until acked).
func (n *Node) Send(to Addr, payload ...[]byte) error {
	return n.inject(Down, Event{Type: ESend, Peer: to, Msg: NewMsg(payload...)})
}

// CallAsync sends an RPC request and calls cb exactly once with the reply
// or an error (ErrTimeout after timeout, ErrCanceled after Cancel). It
// returns the call's id.
func (n *Node) CallAsync(to Addr, req []byte, timeout time.Duration, cb func([]byte, error)) (uint64, error) {
	n.mu.Lock()
	n.nextID++
	id := n.nextID
	n.calls[id] = cb
	n.mu.Unlock()
	err := n.inject(Down, Event{Type: ECall, Peer: to, ID: id, Msg: NewMsg(req), Time: n.clock.Now() + timeout})
	if err != nil {
		n.mu.Lock()
		delete(n.calls, id)
		n.mu.Unlock()
	}
	return id, err
}

// Cancel abandons a call made with CallAsync.
func (n *Node) Cancel(id uint64) { n.inject(Down, Event{Type: ECancel, ID: id}) }

// Call sends an RPC request and waits for the reply, the context's
// deadline (defaultTimeout if it has none) or its cancellation. Do not
// call it from the simulation loop: use CallAsync there.
func (n *Node) Call(ctx context.Context, to Addr, req []byte, defaultTimeout time.Duration) ([]byte, error) {
	timeout := defaultTimeout
	dl, hasDeadline := ctx.Deadline()
	if hasDeadline {
		timeout = time.Until(dl)
	}
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	id, err := n.CallAsync(to, req, timeout, func(b []byte, err error) { ch <- res{b, err} })
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if errors.Is(r.err, ErrTimeout) && hasDeadline {
			// The stack's timer and the context's may fire in either order.
			return nil, fmt.Errorf("call %s: %w (%w)", to, context.DeadlineExceeded, ErrTimeout)
		}
		return r.b, r.err
	case <-ctx.Done():
		n.Cancel(id)
		return nil, fmt.Errorf("call %s: %w", to, ctx.Err())
	}
}

// AfterFunc runs f once, d from now, on the node's clock (the simulator's
// virtual clock in tests); stop cancels it. f runs outside the node's lock.
func (n *Node) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return n.clock.AfterFunc(d, f)
}

// Close stops the node: pending calls fail with ErrClosed, timers stop,
// the transport closes.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.closed = true
	if n.stop != nil {
		n.stop()
	}
	calls := n.calls
	n.calls = map[uint64]func([]byte, error){}
	n.mu.Unlock()
	for _, cb := range calls {
		cb(nil, ErrClosed)
	}
	return n.tr.Close()
}

func (n *Node) inject(dir Dir, ev Event) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	ev.Now = n.clock.Now()
	n.run.Inject(dir, ev)
	out := n.out
	n.out = nil
	n.mu.Unlock()
	for _, e := range out {
		n.dispatch(e)
	}
	return nil
}

// Bottom implements Boundary: the transport and the clock.
func (n *Node) Bottom(ev Event) {
	switch ev.Type {
	case ESend:
		n.vec = ev.Msg.Vec(n.vec[:0])
		if err := n.tr.Send(ev.Peer, n.vec); err != nil {
			n.sendErrs++
			n.log.Debug("stack: transport send failed", "peer", ev.Peer, "err", err)
		}
		clear(n.vec)
		// Layers never keep a message they passed down (pt2pt copies what
		// it retransmits), and the transport copied the bytes out.
		ev.Msg.Free()
	case ETimerReq:
		n.schedule(ev.Time)
	}
}

// schedule arms the single node timer for the earliest requested time;
// layers re-request after every ETimer, so later requests can wait.
func (n *Node) schedule(at time.Duration) {
	if n.stop != nil && n.timerAt <= at {
		return
	}
	if n.stop != nil {
		n.stop()
	}
	n.timerAt = at
	n.timerGen++
	gen := n.timerGen
	d := max(at-n.clock.Now(), 0)
	n.stop = n.clock.AfterFunc(d, func() {
		n.mu.Lock()
		if n.timerGen == gen { // a newer timer may have replaced this one
			n.stop = nil
		}
		n.mu.Unlock()
		n.inject(Up, Event{Type: ETimer, Time: n.clock.Now()})
	})
}

// Top implements Boundary: events for the application, dispatched after
// the stack finishes.
func (n *Node) Top(ev Event) { n.out = append(n.out, ev) }

func (n *Node) dispatch(ev Event) {
	n.mu.Lock()
	deliver, handler, async, other := n.deliver, n.handler, n.async, n.other
	var cb func([]byte, error)
	if ev.Type == EReply {
		cb = n.calls[ev.ID]
		delete(n.calls, ev.ID)
	}
	n.mu.Unlock()
	switch ev.Type {
	case EDeliver:
		if deliver != nil {
			deliver(ev.Peer, ev.Msg.Body())
		}
	case EReply:
		if cb != nil {
			var body []byte
			if ev.Msg != nil {
				body = ev.Msg.Body()
			}
			cb(body, ev.Err)
		}
	case ERequest:
		if async != nil {
			peer, id := ev.Peer, ev.ID
			var once sync.Once
			async(peer, ev.Msg.Body(), func(resp []byte) {
				once.Do(func() { n.inject(Down, Event{Type: EResponse, Peer: peer, ID: id, Msg: NewMsg(resp)}) })
			})
			break
		}
		var resp []byte
		if handler != nil {
			resp = handler(ev.Peer, ev.Msg.Body())
		}
		n.inject(Down, Event{Type: EResponse, Peer: ev.Peer, ID: ev.ID, Msg: NewMsg(resp)})
	case ETimer:
	default:
		if other != nil {
			other(ev)
		}
		return // the callback may keep the event
	}
	if ev.Msg != nil {
		ev.Msg.Free() // the application got copies or the datagram's own bytes
	}
}

// LayerCounters is a snapshot of one layer's counters.
type LayerCounters struct {
	Layer    string // lower-case type name, e.g. "pt2pt"
	Counters []Counter
}

// Counters snapshots every layer's counters, bottom first, taken under the
// node's lock so they are consistent with each other.
func (n *Node) Counters() []LayerCounters {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []LayerCounters{{Layer: "node", Counters: []Counter{C("transport_send_errors", n.sendErrs)}}}
	for _, l := range n.run.Layers() {
		if c, ok := l.(Counted); ok {
			name := strings.ToLower(reflect.TypeOf(l).Elem().Name())
			out = append(out, LayerCounters{Layer: name, Counters: c.Counters()})
		}
	}
	return out
}
