package stack

import (
	"errors"
	"sync"
	"sync/atomic"
)

// headroom is the header space a new Msg reserves; enough for every
// layer's header in the stacks this package builds.
const headroom = 128

// ErrShortHeader is returned by Pop when a message is shorter than the
// header a layer expects: a malformed or truncated datagram.
var ErrShortHeader = errors.New("stack: message shorter than its header")

// Msg is a message: headers stacked in front (pushed by layers on the way
// down, popped on the way up) and a payload kept as a scatter-gather list.
// Received messages keep everything in one buffer; Body returns what is
// left after the headers were popped.
type Msg struct {
	buf     []byte // buf[head:] holds the headers (and, received, the body)
	head    int
	Payload [][]byte
	room    []byte // the pooled header buffer, kept while buf holds a datagram
	// refs counts the holders besides the first (share): each Frees it,
	// and the last one's Free returns it to the pool. Read and changed
	// atomically once shared; share sets it with a plain store (an atomic
	// add costs a locked instruction on every cast) before any other
	// holder has it.
	refs int32
	// loop: from loopPool, and back there when freed.
	loop bool
}

func newPooledMsg() any {
	b := make([]byte, headroom)
	return &Msg{buf: b, room: b}
}

var msgPool = sync.Pool{New: newPooledMsg}

// loopPool holds the messages that carry casts delivered to their own
// sender (Bypass.loopUp). They are freed later and elsewhere than the
// rest (when the cast is delivered, after its order is known), so in a
// pool of their own the one a cast takes is, more often than not, the
// previous cast's, still in the pool's cheapest slot; drawn from msgPool
// they come after the application's message, which took that slot.
var loopPool = sync.Pool{New: func() any { m := newPooledMsg().(*Msg); m.loop = true; return m }}

// NewMsg returns a message carrying payload (not copied). Free it when done
// (optional: an unfreed Msg is collected).
func NewMsg(payload ...[]byte) *Msg {
	m := msgPool.Get().(*Msg)
	if len(m.room) < headroom {
		m.room = make([]byte, headroom) // Push grew it past reuse
	}
	m.buf, m.head = m.room, len(m.room)
	m.Payload = append(m.Payload[:0], payload...)
	return m
}

// Received wraps a datagram as a message whose headers will be popped. The
// message refers to data; data is not copied.
func Received(data []byte) *Msg { return receivedFrom(&msgPool, data) }

func receivedFrom(pool *sync.Pool, data []byte) *Msg {
	m := pool.Get().(*Msg)
	m.buf, m.head, m.Payload = data, 0, m.Payload[:0]
	return m
}

// Free returns m to the pool. Neither m nor slices it returned may be used
// afterwards (a received datagram's bytes stay with whoever owns them).
func (m *Msg) Free() {
	if atomic.LoadInt32(&m.refs) != 0 {
		// Shared: only the last holder's Free counts. (Zero means this
		// is the last one: the others' Frees brought it down.)
		if atomic.AddInt32(&m.refs, -1) >= 0 {
			return
		}
		atomic.StoreInt32(&m.refs, 0)
	}
	clear(m.Payload)
	m.Payload = m.Payload[:0]
	m.buf = nil
	if m.loop {
		loopPool.Put(m)
		return
	}
	msgPool.Put(m)
}

// receivedLoop is Received for a cast delivered to its sender.
func receivedLoop(data []byte) *Msg { return receivedFrom(&loopPool, data) }

// share gives m to k more holders, each of which will Free it; none may
// change it (Push, Pop) from then on. The bypass shares a cast's copies
// that are the same datagram. m must not be shared yet, nor held by
// anyone else: share is called before m is handed on.
func (m *Msg) share(k int) {
	if k > 0 {
		m.refs = int32(k)
	}
}

// Push reserves n header bytes in front of the message and returns them
// for the caller to fill.
func (m *Msg) Push(n int) []byte {
	if m.head < n {
		// Grow the headroom: copy existing headers behind new space.
		nb := make([]byte, len(m.buf)-m.head+n+headroom)
		copy(nb[n+headroom:], m.buf[m.head:])
		m.buf, m.head = nb, n+headroom
		if len(nb) <= 4*headroom {
			m.room = nb
		}
	}
	m.head -= n
	return m.buf[m.head : m.head+n]
}

// Pop removes and returns the first n header bytes (valid until the Msg is
// freed or pushed to).
func (m *Msg) Pop(n int) ([]byte, error) {
	if n < 0 || len(m.buf)-m.head < n {
		return nil, ErrShortHeader
	}
	h := m.buf[m.head : m.head+n]
	m.head += n
	return h, nil
}

// Peek returns the first n header bytes without removing them.
func (m *Msg) Peek(n int) ([]byte, error) {
	if n < 0 || len(m.buf)-m.head < n {
		return nil, ErrShortHeader
	}
	return m.buf[m.head : m.head+n], nil
}

// rest is what is left of a received message (nil for one being sent).
func (m *Msg) rest() []byte {
	if len(m.Payload) > 0 {
		return nil
	}
	return m.buf[m.head:]
}

// Headers returns the header bytes of a message being sent (everything in
// front of the payload). The slice aliases the message.
func (m *Msg) Headers() []byte { return m.buf[m.head:] }

// Len is the total length: headers plus payload.
func (m *Msg) Len() int {
	n := len(m.buf) - m.head
	for _, p := range m.Payload {
		n += len(p)
	}
	return n
}

// Vec returns the message as a list of buffers (headers first), for a
// vectored write. The slices alias the message.
func (m *Msg) Vec(dst [][]byte) [][]byte {
	if m.head < len(m.buf) {
		dst = append(dst, m.buf[m.head:])
	}
	for _, p := range m.Payload {
		if len(p) > 0 {
			dst = append(dst, p)
		}
	}
	return dst
}

// Body returns what follows the popped headers as one slice, copying only
// if the payload is scattered.
func (m *Msg) Body() []byte {
	if len(m.Payload) == 0 {
		return m.buf[m.head:]
	}
	if m.head == len(m.buf) && len(m.Payload) == 1 {
		return m.Payload[0]
	}
	out := make([]byte, 0, m.Len())
	for _, v := range m.Vec(nil) {
		out = append(out, v...)
	}
	return out
}

// Bytes returns a copy of the whole message (headers and payload) in one
// allocation of exactly its length.
func (m *Msg) Bytes() []byte { return m.AppendTo(make([]byte, 0, m.Len())) }

// Keep returns the whole message (headers and payload) as one slice that
// stays valid after Free, for a layer that keeps it: a received datagram's
// own bytes (the stack owns them; nobody writes them), otherwise a copy.
func (m *Msg) Keep() []byte {
	if len(m.Payload) == 0 && !m.inRoom() {
		return m.buf[m.head:]
	}
	return m.Bytes()
}

// inRoom reports whether buf is the pooled header buffer, which the next
// user of this Msg overwrites after Free. That holds for a message made by
// NewMsg, and also for a received one that Push grew into a new buffer
// small enough to keep as room; so the test is on the buffer itself, not
// on how the message was made.
func (m *Msg) inRoom() bool {
	return len(m.buf) > 0 && len(m.room) > 0 && &m.buf[0] == &m.room[0]
}

// AppendTo appends the whole message (headers and payload) to b.
func (m *Msg) AppendTo(b []byte) []byte {
	b = append(b, m.buf[m.head:]...)
	for _, p := range m.Payload {
		b = append(b, p...)
	}
	return b
}
