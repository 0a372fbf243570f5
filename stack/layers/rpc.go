package layers

import (
	"container/heap"
	"encoding/binary"
	"time"

	"strata/stack"
)

// Rpc header: kind u8 (0 one-way, 1 request, 2 response), id u64.
const (
	rpcOneway = 0
	rpcReq    = 1
	rpcResp   = 2
	rpcHdr    = 9
)

// Rpc is request/response over a reliable channel: an ECall carries a
// correlation id and a deadline; the reply comes up as EReply with the same
// id, or with stack.ErrTimeout once the deadline passes, or with
// stack.ErrCanceled after ECancel. Late responses are counted and dropped.
// On the serving side a request comes up as ERequest and the application's
// EResponse goes back with the request's id. One-way ESend messages pass
// with a one-byte-kind header so both kinds share the stack.
type Rpc struct {
	// base is added to a call's id on the wire, and taken off its
	// response: the incarnation's epoch << 40, so that a response to a
	// call of an earlier incarnation of this address (the peer still
	// sends it: its reliable channel does not know the caller restarted)
	// never answers a call of this one that reuses the id.
	base    uint64
	pending map[uint64]*rpcCall
	byTime  rpcHeap
	free    []*rpcCall // answered calls' records, for the next calls
	// armed: a timer for armedAt was requested since the last ETimer (the
	// node keeps only its earliest request until it fires, and layers
	// request again after every ETimer). A call whose deadline is not
	// before armedAt needs no request of its own: when that timer fires,
	// the layer requests the earliest deadline again. So a stream of calls
	// requests a timer about once per timer expiry, not once per call.
	armed   bool
	armedAt time.Duration
	c       struct{ calls, replies, timeouts, canceled, late, requests, responses, malformed uint64 }
}

type rpcCall struct {
	id       uint64
	deadline time.Duration
	idx      int
}

type rpcHeap []*rpcCall

func (h rpcHeap) Len() int { return len(h) }
func (h rpcHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].id < h[j].id
}
func (h rpcHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *rpcHeap) Push(x any)   { c := x.(*rpcCall); c.idx = len(*h); *h = append(*h, c) }
func (h *rpcHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}

// RpcSpec describes Rpc.
var RpcSpec = stack.Spec{
	Name: "rpc", Doc: "request/response: ids, deadlines, cancel",
	Requires: []stack.Prop{stack.Reliable},
	Provides: []stack.Prop{stack.RPC},
	New:      func(cfg stack.Config) stack.Layer { return newRpcAt(cfg.Epoch) },
}

// NewRpc builds the layer.
func NewRpc() *Rpc { return newRpcAt(0) }

// newRpcAt builds the layer for incarnation epoch.
func newRpcAt(epoch uint64) *Rpc { return &Rpc{base: epoch << 40, pending: map[uint64]*rpcCall{}} }

func push(m *stack.Msg, kind byte, id uint64) {
	h := m.Push(rpcHdr)
	h[0] = kind
	binary.BigEndian.PutUint64(h[1:], id)
}

func (r *Rpc) Down(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.ECall:
		if _, dup := r.pending[ev.ID]; dup {
			r.c.malformed++
			return
		}
		r.call(ev.ID, ev.Time)
		push(ev.Msg, rpcReq, ev.ID+r.base)
		out.Down(stack.Event{Type: stack.ESend, Peer: ev.Peer, Msg: ev.Msg, Now: ev.Now})
		if !r.armed || ev.Time < r.armedAt {
			r.armed, r.armedAt = true, ev.Time
			out.Down(stack.Event{Type: stack.ETimerReq, Time: ev.Time, Now: ev.Now})
		}
	case stack.ECancel:
		if c, ok := r.pending[ev.ID]; ok {
			r.remove(c)
			r.c.canceled++
			out.Up(stack.Event{Type: stack.EReply, ID: ev.ID, Err: stack.ErrCanceled, Now: ev.Now})
		}
	case stack.EResponse:
		r.c.responses++
		push(ev.Msg, rpcResp, ev.ID)
		out.Down(stack.Event{Type: stack.ESend, Peer: ev.Peer, Msg: ev.Msg, Now: ev.Now})
	case stack.ESend:
		push(ev.Msg, rpcOneway, 0)
		out.Down(ev)
	default:
		out.Down(ev)
	}
}

// call records a call awaiting its reply.
func (r *Rpc) call(id uint64, deadline time.Duration) {
	var c *rpcCall
	if k := len(r.free); k > 0 {
		c, r.free = r.free[k-1], r.free[:k-1]
		*c = rpcCall{id: id, deadline: deadline}
	} else {
		c = &rpcCall{id: id, deadline: deadline}
	}
	r.pending[id] = c
	heap.Push(&r.byTime, c)
	r.c.calls++
}

func (r *Rpc) remove(c *rpcCall) {
	delete(r.pending, c.id)
	heap.Remove(&r.byTime, c.idx)
	if len(r.free) < 64 {
		r.free = append(r.free, c)
	}
}

func (r *Rpc) Up(ev stack.Event, out stack.Emitter) {
	switch ev.Type {
	case stack.EDeliver:
		h, err := ev.Msg.Pop(rpcHdr)
		if err != nil || h[0] > rpcResp {
			r.c.malformed++
			return
		}
		id := binary.BigEndian.Uint64(h[1:])
		switch h[0] {
		case rpcOneway:
			out.Up(ev)
		case rpcReq:
			r.c.requests++
			out.Up(stack.Event{Type: stack.ERequest, Peer: ev.Peer, ID: id, Msg: ev.Msg, Now: ev.Now})
		case rpcResp:
			id -= r.base
			c, ok := r.pending[id]
			if !ok {
				r.c.late++ // after its deadline or cancellation
				ev.Msg.Free()
				return
			}
			r.remove(c)
			r.c.replies++
			out.Up(stack.Event{Type: stack.EReply, Peer: ev.Peer, ID: id, Msg: ev.Msg, Now: ev.Now})
		}
	case stack.ETimer:
		for r.byTime.Len() > 0 && r.byTime[0].deadline <= ev.Time {
			c := r.byTime[0]
			id := c.id // c goes back to the free list
			r.remove(c)
			r.c.timeouts++
			out.Up(stack.Event{Type: stack.EReply, ID: id, Err: stack.ErrTimeout, Now: ev.Now})
		}
		r.armed = r.byTime.Len() > 0
		if r.armed {
			r.armedAt = r.byTime[0].deadline
			out.Down(stack.Event{Type: stack.ETimerReq, Time: r.armedAt, Now: ev.Now})
		}
		out.Up(ev)
	default:
		out.Up(ev)
	}
}

// Pending is the number of calls awaiting a reply.
func (r *Rpc) Pending() int { return len(r.pending) }

// Counters implements stack.Counted.
func (r *Rpc) Counters() []stack.Counter {
	return []stack.Counter{stack.C("calls", r.c.calls), stack.C("replies", r.c.replies), stack.C("timeouts", r.c.timeouts),
		stack.C("canceled", r.c.canceled), stack.C("late_responses", r.c.late), stack.C("requests_served", r.c.requests),
		stack.C("responses_sent", r.c.responses), stack.C("malformed", r.c.malformed)}
}

// rpcFields is the header on the send paths: calls, responses and
// one-way messages take them, told apart by kind (so both fields vary).
// Casts carry the one-way header, constant.
var (
	rpcFields       = []stack.Field{stack.Var("kind", 1), stack.Var("id", 8)}
	rpcOnewayFields = []stack.Field{stack.Const("kind", 1, rpcOneway), stack.Const("id", 8, 0)}
)

// FastPath implements stack.Fast. On the send paths the common case is a
// one-way message, a call (not a duplicate id, and no timer to request:
// one at or before its deadline is armed), a response, a request
// arriving, or a response to a pending call arriving: everything but
// cancellations, timeouts and late or malformed responses.
func (r *Rpc) FastPath(c stack.Case) *stack.Path {
	switch c {
	case stack.SendDown:
		return &stack.Path{Hdr: rpcFields, CCP: r.fastSendCCP, Apply: r.fastSend, Calls: true}
	case stack.SendUp:
		return &stack.Path{Hdr: rpcFields, CCP: r.fastRecvCCP, Apply: r.fastRecv}
	}
	return &stack.Path{Hdr: rpcOnewayFields}
}

func (r *Rpc) fastSendCCP(ev *stack.Event, _ *stack.Frame) bool {
	if ev.Type != stack.ECall {
		return true // ESend, EResponse (the bypass takes no other)
	}
	_, dup := r.pending[ev.ID]
	return !dup && r.armed && ev.Time >= r.armedAt
}

// fastSend is Down's ECall, EResponse and ESend: the event continues as
// the ESend the full path emits.
func (r *Rpc) fastSend(ev *stack.Event, f *stack.Frame) {
	v := f.V
	switch ev.Type {
	case stack.ECall:
		r.call(ev.ID, ev.Time)
		v[0], v[1] = rpcReq, ev.ID+r.base
	case stack.EResponse:
		r.c.responses++
		v[0], v[1] = rpcResp, ev.ID
	default:
		v[0], v[1] = rpcOneway, 0
	}
	ev.Type, ev.ID, ev.Time = stack.ESend, 0, 0
}

func (r *Rpc) fastRecvCCP(ev *stack.Event, f *stack.Frame) bool {
	switch f.V[0] {
	case rpcOneway:
		return true
	case rpcReq:
		return f.Calls()
	case rpcResp:
		_, ok := r.pending[f.V[1]-r.base]
		return ok && f.Calls()
	}
	return false // malformed: counted by the full path
}

// fastRecv is Up's EDeliver of a request or of the response to a pending
// call: the event goes up as the ERequest or EReply the full path makes.
func (r *Rpc) fastRecv(ev *stack.Event, f *stack.Frame) {
	kind, id := f.V[0], f.V[1]
	switch kind {
	case rpcReq:
		r.c.requests++
		ev.Type, ev.ID = stack.ERequest, id
	case rpcResp:
		id -= r.base
		r.remove(r.pending[id])
		r.c.replies++
		ev.Type, ev.ID = stack.EReply, id
	}
}
