package stack

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
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
// processing, outside the node's lock, so callbacks may call back in, and
// in the order the stack emitted it, whichever goroutines injected the
// events (one goroutine at a time dispatches). Callbacks must not block
// waiting for the node (e.g. a blocking Call from inside a callback).
type Node struct {
	// Set when the node is made, never changed: read without the lock.
	run   Runner
	tr    Transport
	clock Clock
	// spinWait: how long Call polls for its reply before parking (only
	// with one processor)
	spinWait time.Duration
	oneProc  bool     // GOMAXPROCS was 1 when the node was made
	assist   Assister // the transport, if a caller can receive in its place
	log      *slog.Logger

	// Counters: atomics, read without the lock.
	calling      atomic.Int64  // Calls in progress
	sendErrs     atomic.Uint64 // transport sends that failed
	bundles      atomic.Uint64
	bundled      atomic.Uint64 // frames that travelled in bundles
	badBundles   atomic.Uint64
	selfReceived atomic.Uint64 // calls whose caller received the reply itself (Assister)

	// Owned by the one goroutine that is sending (sending, below, says
	// which): used outside the lock.
	txvec [][]byte
	txone [1][]byte

	// Everything below is guarded by mu. The stack runs under it (one
	// event at a time); the application's callbacks and the transport's
	// sends run outside it.
	mu  sync.Mutex
	out []Event // top events of the current injection
	// Events for the application, handed over by one goroutine at a time
	// in the order the stack produced them (see inject): the one that
	// set dispatching.
	pending     []Event
	spareEv     []Event
	dispatching bool
	timerAt     time.Duration
	timerGen    uint64
	stop        func() bool
	nextID      uint64
	calls       map[uint64]func([]byte, error)
	closed      bool
	// The send queue (see flush): frames the stack emitted, sent by one
	// goroutine at a time outside the lock (the one that set sending),
	// bundled per peer.
	sendq    []outFrame
	spareq   []outFrame
	sending  bool
	batching int // > 0: callers are mid-batch; the last one flushes
	// The application's callbacks (OnDeliver, Handle, HandleAsync, OnEvent).
	deliver func(from Addr, body []byte)
	handler Handler
	async   AsyncHandler
	other   func(Event)
}

// NodeOptions configure a Node.
type NodeOptions struct {
	// Imperative runs the Scheduler instead of the functional
	// composition (Compose). Both give the same results; the functional
	// one is faster here (docs/benchmarks.md, code latency).
	Imperative bool
	NoBypass   bool   // no fast paths: every event takes the full stack (compressed datagrams are still accepted)
	Trace      Tracer // observe every event at every layer boundary
	Logger     *slog.Logger
	// SpinWait: how long Call waits for its reply running before it
	// parks. A lone caller on a transport that can step aside for it
	// (stack.Assister: a busy-polling one) receives in the reader's place
	// for this long, so the reply reaches the caller's goroutine with no
	// hand-off, provided the node has no callbacks (OnDeliver, Handle,
	// HandleAsync, OnEvent) and no other call in flight, whose code would
	// then run on the caller's goroutine. Otherwise, with one processor
	// (GOMAXPROCS 1 when NewNode runs), Call checks for its reply,
	// yielding in between, so that the reader hands it to a running
	// caller instead of waking a parked one.
	// With more processors it then does not spin: a caller spinning
	// beside the transport's poller would hold a second CPU that the peer
	// may need (measured: longer tails unpinned). 0: park at once.
	SpinWait time.Duration
}

// NewNode builds a node from layers (bottom first) and starts receiving.
func NewNode(tr Transport, clock Clock, layers []Layer, opt NodeOptions) *Node {
	// GOMAXPROCS is read once: reading it takes the scheduler's lock.
	n := &Node{tr: tr, clock: clock, calls: map[uint64]func([]byte, error){}, log: opt.Logger,
		spinWait: opt.SpinWait, oneProc: runtime.GOMAXPROCS(0) == 1}
	if n.log == nil {
		n.log = slog.Default()
	}
	var err error
	functional := !opt.Imperative
	n.run, err = NewRunner(layers, n, opt.Trace, functional, true)
	if err != nil {
		// Inconsistent fast-path declarations are a programming error in
		// a layer; the stack still works without them.
		n.log.Error("stack: no bypass", "err", err)
		n.run, _ = NewRunner(layers, n, opt.Trace, functional, false)
	} else if opt.NoBypass {
		n.run.Bypass().SetEnabled(false)
	}
	n.assist, _ = tr.(Assister)
	tr.SetReceiver(n.receive)
	if b, ok := tr.(interface{ SetBatcher(func(func())) }); ok {
		// Frames that arrive together are processed in one batch, so
		// what they cause leaves together (bundled) too.
		b.SetBatcher(n.Batch)
	}
	// A first timer event, so that layers that act on their own (a joiner
	// asking to join, heartbeats) arm their timers before any traffic.
	n.inject(Up, Event{Type: ETimer, Time: clock.Now()})
	return n
}

// receive handles one datagram from the transport: a frame, or a bundle
// of frames, each injected in turn; what they make the stack send leaves
// in one flush, bundled per peer.
func (n *Node) receive(from Addr, data []byte) {
	if len(data) == 0 || data[0] != bundleMagic {
		// One frame: inject already sends what it and the callbacks it
		// runs emit in one flush.
		n.inject(Up, Event{Type: EDeliver, Peer: from, Msg: Received(data)})
		return
	}
	n.Batch(func() {
		// The frames arrived together: they go through the stack under one
		// lock and one clock reading, and the application then gets what
		// they delivered, in order.
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return
		}
		now := n.clock.Now()
		err := splitBundle(data, func(frame []byte) {
			n.step(Up, Event{Type: EDeliver, Peer: from, Msg: Received(frame), Now: now})
		})
		n.deliverLocked()
		if err != nil {
			n.badBundles.Add(1)
			n.log.Debug("stack: malformed bundle", "peer", from, "err", err)
		}
	})
}

// Batch runs f, which may call the node (Send, CallAsync, responders of
// an AsyncHandler, ...) any number of times, and sends what those calls
// made the stack emit when f returns, bundled per peer, instead of call by
// call. Other goroutines' frames wait for the batch too, so f must not
// block.
func (n *Node) Batch(f func()) {
	n.mu.Lock()
	n.batching++
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.batching--
		n.flushLocked()
	}()
	f()
}

// Local is the node's transport address.
func (n *Node) Local() Addr { return n.tr.Local() }

// Layers returns the running layers, bottom first.
func (n *Node) Layers() []Layer { return n.run.Layers() }

// OnDeliver sets the callback for one-way messages and casts. body is
// valid after the callback returns but must not be modified: it may share
// memory with what the stack keeps (a member's own cast is delivered back
// from the bytes kept for retransmission).
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

// Cast multicasts a message to the group (a stack with group layers:
// Multicast, Total, ...). The payload buffers must not change until the
// stack is done with them.
func (n *Node) Cast(payload ...[]byte) error {
	return n.inject(Down, Event{Type: ECast, Msg: NewMsg(payload...)})
}

// Leave asks the group layers to take this member out of its group; the
// stack reports EExit once it is out.
func (n *Node) Leave() error { return n.inject(Down, Event{Type: ELeave}) }

// CallAsync sends an RPC request and calls cb exactly once with the reply
// or an error (ErrTimeout after timeout, ErrCanceled after Cancel). It
// returns the call's id.
func (n *Node) CallAsync(to Addr, req []byte, timeout time.Duration, cb func([]byte, error)) (uint64, error) {
	n.mu.Lock()
	return n.callLocked(to, req, timeout, cb, false)
}

// callLocked is CallAsync under one lock and one clock reading; with force
// the request is sent even inside a batch (see flushLockedForce). Caller
// holds mu, which callLocked releases.
func (n *Node) callLocked(to Addr, req []byte, timeout time.Duration, cb func([]byte, error), force bool) (uint64, error) {
	if n.closed {
		n.mu.Unlock()
		return 0, ErrClosed
	}
	n.nextID++
	id := n.nextID
	n.calls[id] = cb
	now := n.clock.Now()
	n.step(Down, Event{Type: ECall, Peer: to, ID: id, Msg: NewMsg(req), Time: now + timeout, Now: now})
	n.deliverLockedForce(force)
	return id, nil
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
	w := waiters.Get().(*callWaiter)
	n.calling.Add(1)
	defer n.calling.Add(-1)
	// On one processor, callers woken by the same batch of replies
	// wait for this one: the request goes out in a batch (as Batch
	// does, without its closure), and yielding once lets them queue
	// their requests, which the flush below sends together (one system
	// call, bundled) instead of one each (bench stack --pin shared,
	// 8 blocking callers: 84-85 µs round trips without, 52 with).
	// With several processors they run meanwhile and join the flush
	// anyway, and a yield only moved this caller (measured slower).
	// A lone caller has no one to wait for: its request goes at once.
	//
	// Called from inside a batch (e.g. a handler), the request would wait
	// for the batch to end, which waits for this call: it is sent now
	// (forced).
	var id uint64
	var err error
	n.mu.Lock()
	// Receiving in the caller's place (below) runs whatever the datagrams
	// cause on this goroutine: only where that is nothing of the
	// application's but this call's own reply (no callbacks, no other
	// call in flight), so that no callback ever runs on a goroutine that
	// is inside Call (it might hold a lock the callback takes).
	quiet := n.deliver == nil && n.handler == nil && n.async == nil && n.other == nil && len(n.calls) == 0
	if n.oneProc && n.calling.Load() > 1 {
		n.batching++
		id, err = n.callLocked(to, req, timeout, w.cb, false)
		if err == nil {
			runtime.Gosched()
		}
		n.mu.Lock()
		n.batching--
		n.flushLockedForce(true)
	} else {
		id, err = n.callLocked(to, req, timeout, w.cb, true)
	}
	if err != nil {
		// w is not reused: Close may have answered the call already.
		return nil, err
	}
	// A lone caller receives its reply itself (Assister), as the event
	// API's callback runs on the goroutine that received the reply: no
	// hand-off from the transport's reader to this goroutine.
	if quiet && n.assist != nil && n.spinWait > 0 && n.calling.Load() == 1 {
		if n.assist.Assist(to, w.ready, n.spinWait) {
			n.selfReceived.Add(1)
			return w.answered(<-w.ch, to, hasDeadline)
		}
	} else if n.spinWait > 0 && n.oneProc {
		until := time.Now().Add(n.spinWait)
		for spin := true; spin && ctx.Err() == nil; spin = time.Now().Before(until) {
			select {
			case r := <-w.ch:
				return w.answered(r, to, hasDeadline)
			default:
			}
			runtime.Gosched()
		}
	}
	select {
	case r := <-w.ch:
		return w.answered(r, to, hasDeadline)
	case <-ctx.Done():
		n.Cancel(id) // w is not reused: the cancellation answers it later
		return nil, fmt.Errorf("call %s: %w", to, ctx.Err())
	}
}

// callWaiter is where a blocking Call waits for its answer. Waiters are
// pooled, each with its callback made once, so that a call allocates
// neither; one goes back to the pool only after its one answer was taken.
type callWaiter struct {
	ch    chan callRes
	cb    func([]byte, error)
	ready func() bool // the answer is in ch
}

type callRes struct {
	b   []byte
	err error
}

// answered gives w back to the pool, its one answer r taken (nothing
// sends to it again), and returns Call's result for r.
func (w *callWaiter) answered(r callRes, to Addr, hasDeadline bool) ([]byte, error) {
	waiters.Put(w)
	return callResult(to, r.b, r.err, hasDeadline)
}

var waiters = sync.Pool{New: func() any {
	w := &callWaiter{ch: make(chan callRes, 1)}
	w.cb = func(b []byte, err error) { w.ch <- callRes{b, err} }
	w.ready = func() bool { return len(w.ch) > 0 }
	return w
}}

// callResult is Call's result for a reply or error from the stack.
func callResult(to Addr, b []byte, err error, hasDeadline bool) ([]byte, error) {
	if errors.Is(err, ErrTimeout) && hasDeadline {
		// The stack's timer and the context's may fire in either order.
		return nil, fmt.Errorf("call %s: %w (%w)", to, context.DeadlineExceeded, ErrTimeout)
	}
	return b, err
}

// Now is the time on the node's clock (the simulator's virtual clock in
// tests) since the clock's start.
func (n *Node) Now() time.Duration { return n.clock.Now() }

// AfterFunc runs f once, d from now, on the node's clock (the simulator's
// virtual clock in tests); stop cancels it. f runs outside the node's lock.
func (n *Node) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	return n.clock.AfterFunc(d, f)
}

// Close stops the node: the stack sends what it owes (EFlush: delayed
// acknowledgements), pending calls fail with ErrClosed, timers stop, the
// transport closes.
func (n *Node) Close() error {
	// What the stack owes its peers goes first (best effort: frames another
	// goroutine is sending at this moment may leave after the transport
	// closes, and are lost).
	n.inject(Down, Event{Type: EFlush})
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
	for _, f := range n.sendq {
		f.m.Free()
	}
	n.sendq = nil
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
	n.step(dir, ev)
	n.deliverLocked()
	return nil
}

// step runs ev through the stack and queues what reaches the top for the
// application. Caller holds mu.
//
// A layer that panics has a bug, and leaves the stack in a state nothing
// should run on: the node closes itself and releases mu, so that the
// panic reaches whoever recovers or the runtime, which prints it and
// exits, instead of the deferred calls on its way (a Close, a batch's
// flush) waiting forever for the lock.
func (n *Node) step(dir Dir, ev Event) {
	done := false
	defer func() {
		if !done {
			n.closed = true
			n.mu.Unlock()
		}
	}()
	n.run.Inject(dir, ev)
	n.pending = append(n.pending, n.out...)
	clear(n.out)
	n.out = n.out[:0]
	done = true
}

// deliverLocked hands the queued top events to the application, unless
// another goroutine is doing so, then flushes what is to be sent. Caller
// holds mu, which deliverLocked releases.
func (n *Node) deliverLocked() { n.deliverLockedForce(false) }

// deliverLockedForce is deliverLocked; with force its flush sends even
// inside a batch (flushLockedForce).
func (n *Node) deliverLockedForce(force bool) {
	if n.dispatching || len(n.pending) == 0 {
		// Another goroutine is handing events to the application; it
		// takes these too, after the ones before them.
		n.flushLockedForce(force)
		return
	}
	// This goroutine hands what reaches the top to the application, in
	// the order the stack produced it, outside the lock (callbacks may
	// call back in); what they send is flushed once, bundled.
	n.dispatching = true
	n.batching++
	for len(n.pending) > 0 {
		evs := n.pending
		n.pending = n.spareEv[:0]
		n.mu.Unlock()
		for _, e := range evs {
			n.dispatch(e)
		}
		n.mu.Lock()
		clear(evs)
		n.spareEv = evs[:0]
	}
	n.dispatching = false
	n.batching--
	n.flushLockedForce(force)
}

// flushLocked sends the queued frames unless a batch is open or another
// goroutine is sending (it will send these too). The sender releases the
// lock around the transport's sends, so other goroutines keep running the
// stack meanwhile and their frames join the next round: under load many
// frames share one system call (flat combining, like JGroups' bundler),
// while a lone frame goes out at once. Called with n.mu held; returns with
// it released.
func (n *Node) flushLocked() { n.flushLockedForce(false) }

// flushLockedForce is flushLocked; with force it sends even while a batch
// is open (a caller about to block on what it queued must not wait for a
// batch that may be waiting for it).
func (n *Node) flushLockedForce(force bool) {
	if n.sending || (n.batching > 0 && !force) {
		n.mu.Unlock()
		return
	}
	n.sending = true
	for len(n.sendq) > 0 && !n.closed {
		q := n.sendq
		n.sendq = n.spareq[:0]
		n.mu.Unlock()
		n.transmit(q)
		n.mu.Lock()
		clear(q)
		n.spareq = q[:0]
	}
	n.sending = false
	n.mu.Unlock()
}

// transmit sends frames in order per peer: several to one peer travel in
// bundles of at most the transport's MTU and maxBundle; a frame alone goes
// as itself.
func (n *Node) transmit(q []outFrame) {
	limit := min(n.tr.MTU(), maxBundle) // a bundle's size
	for i := range q {
		if q[i].m == nil {
			continue // sent in an earlier peer's pass
		}
		to := q[i].to
		count, total := 0, 0
		for j := i; j < len(q); j++ {
			if q[j].m != nil && q[j].to == to {
				count++
				total += bundleFrameOverhead + q[j].n
			}
		}
		if count == 1 {
			n.txvec = q[i].m.Vec(n.txvec[:0])
			n.sendVec(to, n.txvec)
			clear(n.txvec)
			q[i].m.Free()
			q[i].m = nil
			continue
		}
		bundle := getFrame(min(total+2, limit))[:0]
		frames := 0
		for j := i; j < len(q); j++ {
			f := q[j]
			if f.m == nil || f.to != to {
				continue
			}
			if frames > 0 && len(bundle)+bundleFrameOverhead+f.n > limit {
				n.sendBundle(to, bundle, frames)
				bundle, frames = bundle[:0], 0
			}
			bundle = appendMsgToBundle(bundle, f.m, f.n)
			frames++
			f.m.Free()
			q[j].m = nil
		}
		if frames > 0 {
			n.sendBundle(to, bundle, frames)
		}
		putFrame(bundle)
	}
}

func (n *Node) sendBundle(to Addr, bundle []byte, frames int) {
	if frames == 1 {
		// A frame that did not fit with others goes as itself.
		_, k := binary.Uvarint(bundle[2:])
		n.send(to, bundle[2+k:])
		return
	}
	n.bundles.Add(1)
	n.bundled.Add(uint64(frames))
	n.send(to, bundle)
}

func (n *Node) send(to Addr, b []byte) {
	n.txone[0] = b
	n.sendVec(to, n.txone[:])
	n.txone[0] = nil
}

func (n *Node) sendVec(to Addr, vec [][]byte) {
	if err := n.tr.Send(to, vec); err != nil {
		n.sendErrs.Add(1)
		n.log.Debug("stack: transport send failed", "peer", to, "err", err)
	}
}

// Bottom implements Boundary: the transport and the clock.
func (n *Node) Bottom(ev Event) { n.BottomRef(&ev) }

// BottomRef implements RefBoundary.
func (n *Node) BottomRef(ev *Event) {
	switch ev.Type {
	case ESend:
		// Queued for flushLocked as it is: layers never keep a message
		// they passed down (pt2pt keeps copies of headers and references
		// to payloads, which do not change), so the frame is copied once,
		// into the datagram or the bundle, outside the lock.
		n.sendq = append(n.sendq, outFrame{to: ev.Peer, m: ev.Msg, n: ev.Msg.Len()})
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

// TopRef implements RefBoundary.
func (n *Node) TopRef(ev *Event) { n.out = append(n.out, *ev) }

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
	out := []LayerCounters{{Layer: "node", Counters: []Counter{C("transport_send_errors", n.sendErrs.Load()),
		C("bundles_sent", n.bundles.Load()), C("bundled_frames", n.bundled.Load()), C("bundles_malformed", n.badBundles.Load()),
		C("calls_self_received", n.selfReceived.Load())}}}
	for _, l := range n.run.Layers() {
		if c, ok := l.(Counted); ok {
			out = append(out, LayerCounters{Layer: layerName(l), Counters: c.Counters()})
		}
	}
	if bp := n.run.Bypass(); bp != nil {
		out = append(out, LayerCounters{Layer: "bypass", Counters: bp.Counters()})
	}
	return out
}
