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
	pending map[uint64]*rpcCall
	byTime  rpcHeap
	free    []*rpcCall // answered calls' records, for the next calls
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
	New:      func(stack.Config) stack.Layer { return NewRpc() },
}

// NewRpc builds the layer.
func NewRpc() *Rpc { return &Rpc{pending: map[uint64]*rpcCall{}} }

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
		var c *rpcCall
		if k := len(r.free); k > 0 {
			c, r.free = r.free[k-1], r.free[:k-1]
			*c = rpcCall{id: ev.ID, deadline: ev.Time}
		} else {
			c = &rpcCall{id: ev.ID, deadline: ev.Time}
		}
		r.pending[ev.ID] = c
		heap.Push(&r.byTime, c)
		r.c.calls++
		push(ev.Msg, rpcReq, ev.ID)
		out.Down(stack.Event{Type: stack.ESend, Peer: ev.Peer, Msg: ev.Msg, Now: ev.Now})
		out.Down(stack.Event{Type: stack.ETimerReq, Time: ev.Time, Now: ev.Now})
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
		if r.byTime.Len() > 0 {
			out.Down(stack.Event{Type: stack.ETimerReq, Time: r.byTime[0].deadline, Now: ev.Now})
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

var rpcOnewayFields = []stack.Field{stack.Const("kind", 1, rpcOneway), stack.Const("id", 8, 0)}

// FastPath implements stack.Fast: one-way messages pass with a constant
// header (requests and responses are not among the four cases).
func (r *Rpc) FastPath(c stack.Case) *stack.Path { return &stack.Path{Hdr: rpcOnewayFields} }
