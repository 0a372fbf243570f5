package stack

// Boundary receives the events that leave a stack: at the top towards the
// application, at the bottom towards the transport and the clock.
type Boundary interface {
	Top(ev Event)
	Bottom(ev Event)
}

// RefBoundary is a Boundary that can also take an event by reference,
// which the bypass uses for the events it builds in its own scratch space
// (an event is 96 bytes; a cast leaves as one per member). TopRef and
// BottomRef do what Top and Bottom do with *ev; they must not keep ev or
// change it.
type RefBoundary interface {
	Boundary
	TopRef(ev *Event)
	BottomRef(ev *Event)
}

// Tracer observes every event as it is handed to a layer (layer index,
// bottom = 0) or leaves the stack (layer -1 below the bottom, len(layers)
// above the top).
type Tracer func(layer int, dir Dir, ev Event)

// Runner runs events through a built stack.
type Runner interface {
	// Inject feeds an event into the stack: Down enters at the top, Up at
	// the bottom. Events injected while the stack is processing (from a
	// Boundary callback) run after the current one completes, so both
	// compositions see the same order.
	Inject(dir Dir, ev Event)
	// Layers returns the layers, bottom first.
	Layers() []Layer
	// SetBypass attaches a bypass built by Optimize for the same layers
	// (nil: none); Bypass returns it.
	SetBypass(*Bypass)
	Bypass() *Bypass
}

// NewRunner builds a composition of layers (bottom first): Compose if
// functional, else a Scheduler; with bypass, Optimize's fast paths in
// front of it (on unless told otherwise: Node does that).
func NewRunner(layers []Layer, b Boundary, trace Tracer, functional, bypass bool) (Runner, error) {
	var r Runner
	if functional {
		r = Compose(layers, b, trace)
	} else {
		r = NewScheduler(layers, b, trace)
	}
	if bypass {
		bp, err := Optimize(layers)
		if err != nil {
			return nil, err
		}
		r.SetBypass(bp)
	}
	return r, nil
}

type injection struct {
	dir Dir
	ev  Event
}

// base holds what both compositions share: layers, boundary, tracer and
// the deferral of re-entrant injections.
type base struct {
	layers  []Layer
	b       Boundary
	trace   Tracer
	busy    bool
	pending []injection
	bp      *Bypass
}

// SetBypass makes bp (from Optimize on the same layers) the runner's fast
// path: every injected event tries it first. Nil removes it.
func (s *base) setBypass(bp *Bypass, at func(int, Dir, Event)) {
	if bp != nil {
		bp.s, bp.full = s, at
		bp.rb, _ = s.b.(RefBoundary)
	}
	s.bp = bp
}

// Bypass returns the attached bypass, or nil.
func (s *base) Bypass() *Bypass { return s.bp }

func (s *base) Layers() []Layer { return s.layers }

func (s *base) exit(i int, dir Dir, ev Event) { s.exitRef(i, dir, &ev) }

// exitRef is exit for an event the caller holds (the bypass's scratch):
// it is copied once, into the boundary's call, instead of into exit's
// too (an event is 96 bytes).
func (s *base) exitRef(i int, dir Dir, ev *Event) {
	if s.trace != nil {
		s.trace(i, dir, *ev)
	}
	if dir == Down {
		s.b.Bottom(*ev)
	} else {
		s.b.Top(*ev)
	}
}

// run takes ev, and every injection made meanwhile, through the bypass if
// it takes them, else through the layers (full). (The bypass gets the
// event by reference: passed on by value, through a function value, each
// event would be copied once more.)
func (s *base) run(dir Dir, ev Event, full func(Dir, Event)) {
	if s.busy {
		s.pending = append(s.pending, injection{dir, ev})
		return
	}
	s.busy = true
	if s.bp == nil || !s.bp.try(dir, &ev) {
		full(dir, ev)
	}
	for len(s.pending) > 0 {
		in := s.pending[0]
		s.pending = s.pending[1:]
		if s.bp == nil || !s.bp.try(in.dir, &in.ev) {
			full(in.dir, in.ev)
		}
	}
	s.pending = s.pending[:0]
	s.busy = false
}

// Scheduler is the imperative composition: a queue of (layer, direction,
// event) items drained one at a time, each handler running to completion
// before any other. The queue is ordered depth first: the events a handler
// emits go to the front, in emission order, so each event's consequences are
// handled before its next sibling. That is the order function composition
// defines, which is why Scheduler and Compose emit identical sequences at the
// stack's boundaries (a breadth-first queue would interleave the
// consequences of sibling events differently).
type Scheduler struct {
	base
	stack   []item // pending items; the next one is at the end
	emitted []item // outputs of the handler running now
	outs    []schedOut
}

type item struct {
	layer int
	dir   Dir
	ev    Event
}

type schedOut struct {
	s *Scheduler
	i int
}

func (o *schedOut) Down(ev Event) { o.s.emitted = append(o.s.emitted, item{o.i - 1, Down, ev}) }
func (o *schedOut) Up(ev Event)   { o.s.emitted = append(o.s.emitted, item{o.i + 1, Up, ev}) }

// NewScheduler builds the imperative composition of layers (bottom first).
func NewScheduler(layers []Layer, b Boundary, trace Tracer) *Scheduler {
	s := &Scheduler{base: base{layers: layers, b: b, trace: trace}}
	s.outs = make([]schedOut, len(layers))
	for i := range s.outs {
		s.outs[i] = schedOut{s, i}
	}
	return s
}

// Inject implements Runner.
func (s *Scheduler) Inject(dir Dir, ev Event) { s.run(dir, ev, s.full) }

// SetBypass attaches bp (see Optimize).
func (s *Scheduler) SetBypass(bp *Bypass) { s.setBypass(bp, s.at) }

// full runs ev through the layers from the top (Down) or bottom (Up).
func (s *Scheduler) full(dir Dir, ev Event) {
	if dir == Down {
		s.at(len(s.layers)-1, Down, ev)
	} else {
		s.at(0, Up, ev)
	}
}

// at runs ev from layer i (and everything it causes) to completion.
func (s *Scheduler) at(i int, dir Dir, ev Event) {
	n := len(s.layers)
	s.stack = append(s.stack, item{i, dir, ev})
	for len(s.stack) > 0 {
		it := s.stack[len(s.stack)-1]
		s.stack = s.stack[:len(s.stack)-1]
		if it.layer < 0 || it.layer >= n {
			s.exit(it.layer, it.dir, it.ev)
			continue
		}
		if s.trace != nil {
			s.trace(it.layer, it.dir, it.ev)
		}
		if it.dir == Down {
			s.layers[it.layer].Down(it.ev, &s.outs[it.layer])
		} else {
			s.layers[it.layer].Up(it.ev, &s.outs[it.layer])
		}
		for i := len(s.emitted) - 1; i >= 0; i-- {
			s.stack = append(s.stack, s.emitted[i])
		}
		clear(s.emitted)
		s.emitted = s.emitted[:0]
	}
}

// Composed is the functional composition: each layer's emitter calls the
// neighbouring layer's handler directly, so the stack is one function of
// the event (depth first).
type Composed struct {
	base
	outs []compOut
}

type compOut struct {
	c *Composed
	i int
}

func (o *compOut) Down(ev Event) { o.c.deliver(o.i-1, Down, ev) }
func (o *compOut) Up(ev Event)   { o.c.deliver(o.i+1, Up, ev) }

// Compose builds the functional composition of layers (bottom first).
func Compose(layers []Layer, b Boundary, trace Tracer) *Composed {
	c := &Composed{base: base{layers: layers, b: b, trace: trace}}
	c.outs = make([]compOut, len(layers))
	for i := range c.outs {
		c.outs[i] = compOut{c, i}
	}
	return c
}

// Inject implements Runner.
func (c *Composed) Inject(dir Dir, ev Event) { c.run(dir, ev, c.full) }

// SetBypass attaches bp (see Optimize).
func (c *Composed) SetBypass(bp *Bypass) { c.setBypass(bp, c.deliver) }

// full runs ev through the layers from the top (Down) or bottom (Up).
func (c *Composed) full(dir Dir, ev Event) {
	if dir == Down {
		c.deliver(len(c.layers)-1, Down, ev)
	} else {
		c.deliver(0, Up, ev)
	}
}

func (c *Composed) deliver(i int, dir Dir, ev Event) {
	if i < 0 || i >= len(c.layers) {
		c.exit(i, dir, ev)
		return
	}
	if c.trace != nil {
		c.trace(i, dir, ev)
	}
	if dir == Down {
		c.layers[i].Down(ev, &c.outs[i])
	} else {
		c.layers[i].Up(ev, &c.outs[i])
	}
}
