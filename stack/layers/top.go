package layers

import "strata/stack"

// Top is the application interface: it passes application events down and
// deliveries, replies, requests and membership events up to the node, and
// keeps timer events inside the stack. No header.
type Top struct{ up, down uint64 }

// TopSpec describes Top.
var TopSpec = stack.Spec{
	Name: "top", Doc: "application interface",
	Provides: []stack.Prop{stack.App},
	New:      func(stack.Config) stack.Layer { return &Top{} },
}

func (t *Top) Down(ev stack.Event, out stack.Emitter) { t.down++; out.Down(ev) }

func (t *Top) Up(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.ETimer {
		return
	}
	t.up++
	out.Up(ev)
}

// Counters implements stack.Counted.
func (t *Top) Counters() []stack.Counter {
	return []stack.Counter{stack.C("to_app", t.up), stack.C("from_app", t.down)}
}

// FastPath implements stack.Fast.
func (t *Top) FastPath(c stack.Case) *stack.Path {
	if c == stack.SendDown || c == stack.CastDown {
		// Calls and responses pass down as any event does.
		return &stack.Path{Apply: t.fastDown, Calls: c == stack.SendDown}
	}
	return &stack.Path{Apply: t.fastUp}
}

func (t *Top) fastDown(*stack.Event, *stack.Frame) { t.down++ }
func (t *Top) fastUp(*stack.Event, *stack.Frame)   { t.up++ }
