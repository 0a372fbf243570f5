package layers

import (
	"time"

	"strata/stack"
)

// periodic is a layer's own timer: at most one request in flight. The
// node keeps only the earliest request of all layers, so when another
// layer's earlier timer fires, a pending one is requested again.
type periodic struct {
	at time.Duration
	on bool
}

// arm requests a timer every from now, unless one is pending.
func (p *periodic) arm(now, every time.Duration, out stack.Emitter) {
	if p.on {
		return
	}
	p.on, p.at = true, now+every
	out.Down(stack.Event{Type: stack.ETimerReq, Time: p.at, Now: now})
}

// due reports whether an ETimer fires this timer (which is then off); if
// the timer is pending but not due, it is requested again.
func (p *periodic) due(ev stack.Event, out stack.Emitter) bool {
	switch {
	case p.on && ev.Time >= p.at:
		p.on = false
		return true
	case p.on:
		out.Down(stack.Event{Type: stack.ETimerReq, Time: p.at, Now: ev.Now})
	}
	return false
}
