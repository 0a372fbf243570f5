package distsys

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"strata/distsys/tla"
	"strata/stack"
)

// Mailboxes is the resource behind an archetype's `ref net[_]` when each
// archetype instance runs on its own stack node (stack.Node, over UDP or
// TCP through stack/layers): net[self] is this node's inbox, which only
// this archetype reads; net[j] for another j is a send to j's node.
//
// Delivery is reliable and FIFO per sender because the node's stack is
// (build it with the "Reliable,FIFO,RPC" properties, or without RPC when
// Relaxed). Sends are buffered in the section and leave at commit:
//
//   - two-phase (the default): at PreCommit each destination receives the
//     section's messages to it as one prepare RPC and holds them apart;
//     once every destination (and every other resource) has agreed,
//     Commit sends a one-way commit and the receiver appends the batch to
//     its inbox. A destination that does not answer within
//     PrepareTimeout aborts the section, which is retried; nothing it
//     sent has become visible.
//   - relaxed (MailboxOptions.Relaxed): Commit sends each destination's
//     batch as one one-way message; no round trip. Right when a section
//     sends at most one message, or when a receiver may see sends of a
//     section that a later resource's pre-commit refuses (none of the
//     built-in resources refuses).
//   - two-phase with LastAgent: as two-phase, except for a section whose
//     only send goes to one destination and whose other resources are all
//     private to the archetype (locals, LocalMap entries, its own inbox:
//     nothing that can refuse or that anyone else sees). Such a section's
//     outcome is the destination's to decide (the last-agent optimization
//     of two-phase commit): the batch goes as one "deliver" RPC, the
//     receiver appends it to its inbox at once and answers, and the
//     section commits when the answer comes; one round trip, and the
//     receiver sees the messages after one message instead of three. The
//     price is what an unanswered RPC means: the batch may have been
//     delivered, so the sender cannot abort; it repeats the same
//     transaction (the receiver delivers it once) until it is answered,
//     instead of aborting and retrying the section (which could have
//     taken another branch, say after its fd said the destination
//     failed). A Run cancelled meanwhile still waits up to PrepareTimeout
//     for the call in flight, then stops with an error saying the
//     delivery is in doubt. Other sections use the two-phase protocol.
//
// Either way one section's messages to one destination arrive together,
// in order. Received messages that do not decode are dropped and counted
// (Dropped); they never stop the receiver.
type Mailboxes struct {
	node  *stack.Node
	self  tla.Value
	opt   MailboxOptions
	addrs map[string]stack.Addr // by the encoding of the peer's id; read-only after NewMailboxes

	in   *inbox
	outs map[string]*outbox // by destination address; used by the archetype's goroutine
	tx   uint64             // last two-phase transaction id; archetype's goroutine
	// scratch is where the archetype's goroutine encodes outgoing values.
	scratch []byte
	last    *outbox // the outbox Index returned last; archetype's goroutine

	// arrived wakes the inbox's one reader when the queue grows: a
	// buffered signal (not a channel closed and replaced per delivery,
	// which cost two allocations per message). A stale signal only makes
	// the reader look at the queue once more.
	arrived chan struct{}

	mu        sync.Mutex              // guards queue, prepared, delivered
	queue     []tla.Value             // committed, unread messages
	prepared  map[prepKey][]tla.Value // prepared batches awaiting commit or abort
	delivered map[stack.Addr]uint64   // LastAgent: the last tx delivered from each sender

	dropped atomic.Uint64
}

type prepKey struct {
	from stack.Addr
	tx   uint64
}

// Peer names the node that holds the mailbox of an archetype instance.
type Peer struct {
	ID   tla.Value // the instance's self
	Addr stack.Addr
}

// MailboxOptions tune Mailboxes.
type MailboxOptions struct {
	Relaxed        bool          // no two-phase commit (see Mailboxes)
	LastAgent      bool          // two-phase: a section with one destination and only private resources besides commits in one round trip (see Mailboxes)
	Wait           time.Duration // how long a read of an empty inbox waits before aborting (default 50 ms)
	PrepareTimeout time.Duration // two-phase: how long a prepare may take (default 2 s)
}

// Wire message kinds (first byte).
const (
	msgBatch   = 1 // relaxed: count, values
	msgPrepare = 2 // RPC: tx, count, values
	msgCommit  = 3 // tx
	msgAbort   = 4 // tx
	msgDeliver = 5 // RPC, LastAgent: tx, count, values; delivered at once, once per tx
)

// NewMailboxes makes the mailboxes of the instance self, whose node is
// node, with the other instances at peers. It takes over the node's
// OnDeliver and (unless Relaxed) HandleAsync callbacks.
func NewMailboxes(node *stack.Node, self tla.Value, peers []Peer, opt MailboxOptions) (*Mailboxes, error) {
	if node == nil {
		return nil, errors.New("distsys: mailboxes need a stack node")
	}
	if opt.Wait <= 0 {
		opt.Wait = 50 * time.Millisecond
	}
	if opt.PrepareTimeout <= 0 {
		opt.PrepareTimeout = 2 * time.Second
	}
	m := &Mailboxes{node: node, self: self, opt: opt, addrs: map[string]stack.Addr{},
		outs: map[string]*outbox{}, arrived: make(chan struct{}, 1), prepared: map[prepKey][]tla.Value{},
		delivered: map[stack.Addr]uint64{},
		// Transaction ids start from the clock, so that those of a
		// restarted sender (same address) exceed the ones a receiver
		// remembers from before the restart.
		tx: uint64(time.Now().UnixNano())}
	m.in = &inbox{m: m}
	for _, p := range peers {
		k, err := p.ID.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("distsys: mailbox id %v: %w", p.ID, err)
		}
		if _, dup := m.addrs[string(k)]; dup {
			return nil, fmt.Errorf("distsys: mailbox %v listed twice", p.ID)
		}
		m.addrs[string(k)] = p.Addr
	}
	node.OnDeliver(m.deliver)
	if !opt.Relaxed {
		node.HandleAsync(m.handlePrepare)
	}
	return m, nil
}

// Dropped is the number of received messages that did not decode.
func (m *Mailboxes) Dropped() uint64 { return m.dropped.Load() }

// Index returns the inbox for self, a sender to another listed peer.
func (m *Mailboxes) Index(idx tla.Value) (Resource, error) {
	if tla.Equal(idx, m.self) {
		return m.in, nil
	}
	if m.last != nil && tla.Equal(idx, m.last.id) {
		return m.last, nil // most sections send to the peer of the last one
	}
	k, err := idx.MarshalBinary()
	if err != nil {
		return nil, err
	}
	addr, ok := m.addrs[string(k)]
	if !ok {
		return nil, fmt.Errorf("no mailbox %v among the peers", idx)
	}
	o, ok := m.outs[string(addr)]
	if !ok {
		o = &outbox{m: m, to: addr, id: idx}
		m.outs[string(addr)] = o
	}
	m.last = o
	return o, nil
}

// inbox is net[self]: reads take messages from the front of the queue.
type inbox struct {
	m     *Mailboxes
	used  int         // messages this section has read (archetype's goroutine)
	self  []tla.Value // messages this section sent to itself
	timer *time.Timer // the wait of an empty read, reused (one reader)
}

func (in *inbox) Read(ctx context.Context) (tla.Value, error) {
	m := in.m
	armed := false
	for {
		m.mu.Lock()
		if in.used < len(m.queue) {
			v := m.queue[in.used]
			m.mu.Unlock()
			in.used++
			if armed {
				in.timer.Stop()
			}
			return v, nil
		}
		m.mu.Unlock()
		if !armed {
			// Since Go 1.23 a stopped or fired timer can be Reset
			// without draining its channel.
			if in.timer == nil {
				in.timer = time.NewTimer(m.opt.Wait)
			} else {
				in.timer.Reset(m.opt.Wait)
			}
			armed = true
		}
		select {
		case <-m.arrived:
		case <-in.timer.C:
			return tla.Value{}, &AbortError{Reason: fmt.Sprintf("mailbox %v is empty", m.self)}
		case <-ctx.Done():
			in.timer.Stop()
			return tla.Value{}, ctx.Err()
		}
	}
}

func (in *inbox) Write(_ context.Context, v tla.Value) error {
	in.self = append(in.self, v)
	return nil
}

func (in *inbox) PreCommit(context.Context) error { return nil }

func (in *inbox) Commit(context.Context) error {
	m := in.m
	m.mu.Lock()
	if in.used == len(m.queue) {
		// All read: keep the array from its start, so that the next
		// deliveries append without reallocating (slicing the read
		// prefix off shrinks the capacity every section).
		clear(m.queue)
		m.queue = m.queue[:0]
	} else {
		m.queue = m.queue[in.used:]
	}
	if len(in.self) > 0 {
		m.appendLocked(in.self)
	}
	m.mu.Unlock()
	in.used, in.self = 0, in.self[:0]
	return nil
}

func (in *inbox) Abort() { in.used, in.self = 0, in.self[:0] }

// appendLocked adds committed messages to the queue and wakes a reader.
// Caller holds m.mu.
func (m *Mailboxes) appendLocked(vs []tla.Value) {
	m.queue = append(m.queue, vs...)
	m.signal()
}

// signal wakes the reader if it waits (or makes its next wait return).
func (m *Mailboxes) signal() {
	select {
	case m.arrived <- struct{}{}:
	default:
	}
}

// outbox is net[j] for another instance j: writes are sends.
type outbox struct {
	m        *Mailboxes
	to       stack.Addr
	id       tla.Value
	buf      []tla.Value // this section's messages (archetype's goroutine)
	prepared uint64      // the tx of a successful prepare, 0 if none
}

func (o *outbox) Read(context.Context) (tla.Value, error) {
	return tla.Value{}, fmt.Errorf("only the mailbox of self (%v) can be read, not %v's", o.m.self, o.id)
}

func (o *outbox) Write(_ context.Context, v tla.Value) error {
	o.buf = append(o.buf, v)
	return nil
}

// encodeBatch returns a new message: head, then the count and each
// value's length and encoding. The values are encoded into *scratch
// (reused across calls) first, so that the message is allocated once at
// its exact size: the stack keeps a sent message until it is
// acknowledged, so messages themselves cannot be reused.
func encodeBatch(head []byte, vs []tla.Value, scratch *[]byte) ([]byte, error) {
	sc := (*scratch)[:0]
	ends := make([]int, 0, 4)
	for _, v := range vs {
		var err error
		if sc, err = v.AppendBinary(sc); err != nil {
			*scratch = sc[:0]
			return nil, err
		}
		ends = append(ends, len(sc))
	}
	*scratch = sc[:0]
	size := len(head) + binary.MaxVarintLen64*(1+len(vs)) + len(sc)
	b := make([]byte, 0, size)
	b = append(b, head...)
	b = binary.AppendUvarint(b, uint64(len(vs)))
	start := 0
	for _, end := range ends {
		b = binary.AppendUvarint(b, uint64(end-start))
		b = append(b, sc[start:end]...)
		start = end
	}
	return b, nil
}

// decodeBatch appends the batch's values to vs; on an error vs is
// returned as it came.
func decodeBatch(vs []tla.Value, b []byte) ([]tla.Value, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return vs, errors.New("bad message count")
	}
	b = b[k:]
	out := vs
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return vs, errors.New("bad value length")
		}
		v, err := tla.Decode(b[k : k+int(l)])
		if err != nil {
			return vs, err
		}
		out = append(out, v)
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return vs, errors.New("trailing bytes")
	}
	return out, nil
}

func (o *outbox) PreCommit(ctx context.Context) error {
	if o.m.opt.Relaxed || len(o.buf) == 0 {
		return nil
	}
	o.m.tx++
	tx := o.m.tx
	var head [1 + binary.MaxVarintLen64]byte
	head[0] = msgPrepare
	req := binary.AppendUvarint(head[:1], tx)
	req, err := encodeBatch(req, o.buf, &o.m.scratch)
	if err != nil {
		return err
	}
	type result struct {
		resp []byte
		err  error
	}
	done := make(chan result, 1)
	id, err := o.m.node.CallAsync(o.to, req, o.m.opt.PrepareTimeout, func(resp []byte, err error) {
		done <- result{resp, err}
	})
	if err != nil {
		return fmt.Errorf("prepare to %v: %w", o.id, err)
	}
	select {
	case r := <-done:
		if r.err != nil || len(r.resp) != 1 || r.resp[0] != 1 {
			o.sendAbort(tx)
			return &AbortError{Reason: fmt.Sprintf("prepare to mailbox %v failed: %v", o.id, r.err)}
		}
	case <-ctx.Done():
		o.m.node.Cancel(id)
		o.sendAbort(tx)
		return ctx.Err()
	}
	o.prepared = tx
	return nil
}

func (o *outbox) sendAbort(tx uint64) {
	// Best effort: a receiver that never hears it keeps a batch it will
	// drop when a later commit from this sender arrives.
	_ = o.m.node.Send(o.to, binary.AppendUvarint([]byte{msgAbort}, tx))
}

func (o *outbox) Commit(context.Context) error {
	defer func() { o.buf, o.prepared = o.buf[:0], 0 }()
	if len(o.buf) == 0 {
		return nil
	}
	if !o.m.opt.Relaxed {
		return o.m.node.Send(o.to, binary.AppendUvarint([]byte{msgCommit}, o.prepared))
	}
	msg, err := encodeBatch([]byte{msgBatch}, o.buf, &o.m.scratch)
	if err != nil {
		return err
	}
	return o.m.node.Send(o.to, msg)
}

func (o *outbox) Abort() {
	if o.prepared != 0 {
		o.sendAbort(o.prepared)
	}
	o.buf, o.prepared = o.buf[:0], 0
}

// deliver is the node's OnDeliver: relaxed batches, commits and aborts.
func (m *Mailboxes) deliver(from stack.Addr, body []byte) {
	if len(body) == 0 {
		m.dropped.Add(1)
		return
	}
	switch body[0] {
	case msgBatch:
		// Decoded straight onto the queue: no batch slice per message.
		m.mu.Lock()
		q, err := decodeBatch(m.queue, body[1:])
		m.queue = q
		m.mu.Unlock()
		if err != nil {
			m.dropped.Add(1)
			return
		}
		m.signal()
	case msgCommit, msgAbort:
		tx, k := binary.Uvarint(body[1:])
		if k <= 0 {
			m.dropped.Add(1)
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		key := prepKey{from, tx}
		vs, ok := m.prepared[key]
		delete(m.prepared, key)
		if body[0] == msgAbort {
			return
		}
		if !ok {
			m.dropped.Add(1)
			return
		}
		// Commits from one sender arrive in order, so a batch it
		// prepared earlier and never committed was aborted.
		for p := range m.prepared {
			if p.from == from && p.tx < tx {
				delete(m.prepared, p)
			}
		}
		m.appendLocked(vs)
	default:
		m.dropped.Add(1)
	}
}

// handlePrepare answers a prepare RPC: the batch is held until its commit.
func (m *Mailboxes) handlePrepare(from stack.Addr, req []byte, respond func([]byte)) {
	if len(req) > 0 && req[0] == msgDeliver {
		m.handleDeliver(from, req, respond)
		return
	}
	if len(req) == 0 || req[0] != msgPrepare {
		m.dropped.Add(1)
		respond([]byte{0})
		return
	}
	tx, k := binary.Uvarint(req[1:])
	if k <= 0 {
		m.dropped.Add(1)
		respond([]byte{0})
		return
	}
	vs, err := decodeBatch(nil, req[1+k:])
	if err != nil {
		m.dropped.Add(1)
		respond([]byte{0})
		return
	}
	m.mu.Lock()
	m.prepared[prepKey{from, tx}] = vs
	m.mu.Unlock()
	respond([]byte{1})
}

// handleDeliver answers a LastAgent deliver RPC: the batch joins the
// inbox now, once per transaction (a repeat, sent because the answer was
// late or lost, is answered again and not delivered twice).
func (m *Mailboxes) handleDeliver(from stack.Addr, req []byte, respond func([]byte)) {
	tx, k := binary.Uvarint(req[1:])
	if k <= 0 {
		m.dropped.Add(1)
		respond([]byte{0})
		return
	}
	m.mu.Lock()
	if tx <= m.delivered[from] {
		m.mu.Unlock()
		respond([]byte{1})
		return
	}
	q, err := decodeBatch(m.queue, req[1+k:])
	if err != nil {
		m.mu.Unlock()
		m.dropped.Add(1)
		respond([]byte{0})
		return
	}
	m.queue = q
	m.delivered[from] = tx
	m.mu.Unlock()
	m.signal()
	respond([]byte{1})
}

// soleAgent implements lastAgent: this outbox can decide its section
// alone when LastAgent is on and it has something to send.
func (o *outbox) soleAgent() bool {
	return o.m.opt.LastAgent && !o.m.opt.Relaxed && len(o.buf) > 0
}

// commitAlone delivers the section's batch as one deliver RPC, repeated
// (same tx) until it is answered or ctx ends. A refusal (the receiver
// could not decode it, so it delivered nothing) aborts the section.
func (o *outbox) commitAlone(ctx context.Context) error {
	o.m.tx++
	var head [1 + binary.MaxVarintLen64]byte
	head[0] = msgDeliver
	req, err := encodeBatch(binary.AppendUvarint(head[:1], o.m.tx), o.buf, &o.m.scratch)
	if err != nil {
		return err
	}
	for {
		// The call outlives a cancelled ctx by up to PrepareTimeout: once
		// the batch may have been delivered, the section must learn the
		// answer to commit with it (a Run cancelled just after the
		// receiver took its message would otherwise drop the section's
		// other effects while its message stays delivered).
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.m.opt.PrepareTimeout)
		resp, err := o.m.node.Call(callCtx, o.to, req, o.m.opt.PrepareTimeout)
		cancel()
		if err == nil {
			o.buf = o.buf[:0]
			if len(resp) != 1 || resp[0] != 1 {
				return &AbortError{Reason: fmt.Sprintf("mailbox %v refused a delivery", o.id)}
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("delivery to mailbox %v in doubt (unanswered: %v): %w", o.id, err, ctx.Err())
		}
		// In doubt: the batch may have been delivered. Ask again after
		// a pause (a closed node fails at once).
		t := time.NewTimer(min(o.m.opt.PrepareTimeout/10, 100*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("delivery to mailbox %v in doubt (unanswered: %v): %w", o.id, err, ctx.Err())
		case <-t.C:
		}
	}
}

// private marks the mailbox resource only this archetype sees.
func (*inbox) private() {}
