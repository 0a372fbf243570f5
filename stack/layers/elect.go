package layers

import "strata/stack"

// Elect names the coordinator of the view: its first member that is not
// suspected (Ensemble's elect layer). No header.
//
// It watches the failure detector below (ESuspect going up) and the view
// set by the membership layer above (EView going down). After a view the
// coordinator is the view's first member; whenever a suspicion or a view
// makes it another member, an EElect naming that member goes up, before
// the ESuspect that caused it, so that the layer above decides with the
// new coordinator in hand. Until the first view comes down the view is
// Config.Members (ID 1), or just Config.Local, as for gms and suspect.
//
// Guarantees: every member that has the same view and the same suspicions
// names the same coordinator; a member suspects itself never, so it names
// itself once every member ranked before it is suspected. Assumes
// suspicions are not withdrawn within a view (the suspect layer reports
// each member once per view, and gms removes suspected members).
type Elect struct {
	cfg      stack.Config
	view     *stack.View
	suspects map[stack.Addr]bool
	coord    stack.Addr // the coordinator as last announced (or implied by the view)
	c        struct{ elections uint64 }
}

// ElectSpec describes Elect.
var ElectSpec = stack.Spec{
	Name: "elect", Doc: "coordinator election: the view's first member not suspected (EElect)",
	Requires: []stack.Prop{stack.FailureDetection},
	Provides: []stack.Prop{stack.Election},
	New:      func(c stack.Config) stack.Layer { return NewElect(c) },
}

// NewElect builds the layer for the initial view.
func NewElect(cfg stack.Config) *Elect {
	e := &Elect{cfg: cfg, suspects: map[stack.Addr]bool{}}
	e.setView(initialView(cfg))
	return e
}

func (e *Elect) setView(v *stack.View) {
	e.view = v
	for a := range e.suspects {
		if v.Rank(a) < 0 {
			delete(e.suspects, a)
		}
	}
	e.coord = v.Members[0]
}

// elected is the first member of the view not suspected (this member if
// all before it are).
func (e *Elect) elected() stack.Addr {
	for _, m := range e.view.Members {
		if !e.suspects[m] || m == e.cfg.Local {
			return m
		}
	}
	return e.cfg.Local
}

// announce sends EElect up if the coordinator changed.
func (e *Elect) announce(ev stack.Event, out stack.Emitter) {
	if c := e.elected(); c != e.coord {
		e.coord = c
		e.c.elections++
		out.Up(stack.Event{Type: stack.EElect, Peer: c, Now: ev.Now})
	}
}

func (e *Elect) Down(ev stack.Event, out stack.Emitter) {
	out.Down(ev)
	if ev.Type == stack.EView && len(ev.View.Members) > 0 {
		e.setView(ev.View)
		e.announce(ev, out)
	}
}

func (e *Elect) Up(ev stack.Event, out stack.Emitter) {
	if ev.Type == stack.ESuspect && e.view.Rank(ev.Peer) >= 0 && ev.Peer != e.cfg.Local {
		e.suspects[ev.Peer] = true
		e.announce(ev, out)
	}
	out.Up(ev)
}

// Coordinator is the member this layer names (for tests and tools).
func (e *Elect) Coordinator() stack.Addr { return e.coord }

// Counters implements stack.Counted.
func (e *Elect) Counters() []stack.Counter {
	return []stack.Counter{stack.C("elections", e.c.elections), stack.C("suspected", uint64(len(e.suspects)))}
}

// FastPath implements stack.Fast: messages pass untouched.
func (e *Elect) FastPath(stack.Case) *stack.Path { return stack.Pass }
