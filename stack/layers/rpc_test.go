package layers

import (
	"encoding/binary"
	"testing"
	"time"

	"strata/stack"
)

// rpcOut collects what the Rpc layer emits.
type rpcOut struct{ down, up []stack.Event }

func (o *rpcOut) Down(ev stack.Event) { o.down = append(o.down, ev) }
func (o *rpcOut) Up(ev stack.Event)   { o.up = append(o.up, ev) }

// A call's record is reused by the next call once answered (the layer
// allocates nothing per call); and a reused record never confuses
// calls: every reply and every timeout carries its own call's id.
func TestRpcReusesCallRecords(t *testing.T) {
	r := NewRpc()
	out := &rpcOut{down: make([]stack.Event, 0, 4), up: make([]stack.Event, 0, 4)}
	id := uint64(0)
	req := []byte("q")
	call := func(deadline time.Duration) uint64 {
		id++
		r.Down(stack.Event{Type: stack.ECall, Peer: "p", ID: id, Msg: stack.NewMsg(req), Time: deadline}, out)
		for _, ev := range out.down {
			if ev.Msg != nil {
				ev.Msg.Free()
			}
		}
		out.down = out.down[:0]
		return id
	}
	dg := make([]byte, rpcHdr+1)
	reply := func(id uint64) {
		dg[0] = rpcResp
		binary.BigEndian.PutUint64(dg[1:], id)
		r.Up(stack.Event{Type: stack.EDeliver, Peer: "p", Msg: stack.Received(dg)}, out)
	}
	for range 10 { // warm up the free list
		reply(call(time.Second))
	}
	out.down, out.up = out.down[:0], out.up[:0]
	for range 100 {
		c := call(time.Second)
		rec := r.pending[c]
		reply(c)
		if len(out.up) != 1 || out.up[0].Type != stack.EReply || out.up[0].ID != c {
			t.Fatalf("reply to call %d: %+v", c, out.up)
		}
		out.up = out.up[:0]
		if next := call(time.Second); r.pending[next] != rec {
			t.Fatalf("call %d got a new record, not the one call %d left", next, c)
		} else {
			reply(next)
			out.up = out.up[:0]
		}
	}
	// Records answered, then three calls time out: each timeout names its
	// call, in deadline order, even though their records were reused.
	a, b, c := call(3*time.Second), call(2*time.Second), call(4*time.Second)
	reply(b)
	out.up = out.up[:0]
	r.Up(stack.Event{Type: stack.ETimer, Time: 5 * time.Second}, out)
	var got []uint64
	for _, ev := range out.up {
		if ev.Type == stack.EReply {
			if ev.Err != stack.ErrTimeout {
				t.Fatalf("call %d: %v, want a timeout", ev.ID, ev.Err)
			}
			got = append(got, ev.ID)
		}
	}
	if len(got) != 2 || got[0] != a || got[1] != c {
		t.Fatalf("timeouts for %v, want [%d %d]", got, a, c)
	}
	if r.Pending() != 0 {
		t.Fatalf("%d calls still pending", r.Pending())
	}
}

// A response to a call of an earlier incarnation of the same address
// (the server's reliable channel still delivers it after the caller
// restarted) does not answer the new incarnation's call with the same
// local id: ids on the wire carry the incarnation.
func TestRpcIgnoresEarlierIncarnationsResponses(t *testing.T) {
	old, cur := newRpcAt(1), newRpcAt(2)
	out := &rpcOut{}
	wire := func(r *Rpc, id uint64) uint64 {
		out.down = out.down[:0]
		r.Down(stack.Event{Type: stack.ECall, Peer: "p", ID: id, Msg: stack.NewMsg([]byte("q")), Time: time.Second}, out)
		h, err := out.down[0].Msg.Pop(rpcHdr)
		if err != nil {
			t.Fatal(err)
		}
		return binary.BigEndian.Uint64(h[1:])
	}
	oldWire := wire(old, 7)
	curWire := wire(cur, 7) // the restarted node reuses local id 7
	if oldWire == curWire {
		t.Fatalf("both incarnations put id %d on the wire", oldWire)
	}
	respond := func(r *Rpc, id uint64) {
		dg := make([]byte, rpcHdr+1)
		dg[0] = rpcResp
		binary.BigEndian.PutUint64(dg[1:], id)
		r.Up(stack.Event{Type: stack.EDeliver, Peer: "p", Msg: stack.Received(dg)}, out)
	}
	out.up = out.up[:0]
	respond(cur, oldWire) // the server answers the old call
	if len(out.up) != 0 {
		t.Fatalf("an earlier incarnation's response answered the new call: %+v", out.up)
	}
	respond(cur, curWire)
	if len(out.up) != 1 || out.up[0].Type != stack.EReply || out.up[0].ID != 7 {
		t.Fatalf("the new call's own response: %+v", out.up)
	}
}
