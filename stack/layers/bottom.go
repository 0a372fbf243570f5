package layers

import (
	"strata/stack"
)

const (
	bottomMagic   = 0x53 // 'S'
	bottomVersion = 1
	bottomHdr     = 2
)

// Bottom binds the stack to its transport (the node's boundary below it).
// Header: magic u8, version u8. A datagram without them is not ours: it is
// counted and dropped.
type Bottom struct {
	sent, received, malformed uint64
}

// BottomSpec describes Bottom.
var BottomSpec = stack.Spec{
	Name: "bottom", Doc: "binds the transport; drops foreign datagrams",
	Provides: []stack.Prop{stack.Datagram},
	New:      func(stack.Config) stack.Layer { return &Bottom{} },
}

func (b *Bottom) Down(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.ESend {
		h := ev.Msg.Push(bottomHdr)
		h[0], h[1] = bottomMagic, bottomVersion
		b.sent++
	}
	out.Down(ev)
}

func (b *Bottom) Up(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.EDeliver {
		h, err := ev.Msg.Pop(bottomHdr)
		if err != nil || h[0] != bottomMagic || h[1] != bottomVersion {
			b.malformed++
			ev.Msg.Free()
			return
		}
		b.received++
	}
	out.Up(ev)
}

// Counters implements stack.Counted.
func (b *Bottom) Counters() []stack.Counter {
	return []stack.Counter{stack.C("sent", b.sent), stack.C("received", b.received), stack.C("malformed", b.malformed)}
}

var bottomFields = []stack.Field{stack.Const("magic", 1, bottomMagic), stack.Const("version", 1, bottomVersion)}

// FastPath implements stack.Fast: the header is constant; only the
// counters move.
func (b *Bottom) FastPath(c stack.Case) *stack.Path {
	if c == stack.SendDown || c == stack.CastDown {
		return &stack.Path{Hdr: bottomFields, Apply: func(*stack.Event, *stack.Frame) { b.sent++ }}
	}
	return &stack.Path{Hdr: bottomFields, Apply: func(*stack.Event, *stack.Frame) { b.received++ }}
}
