package distsys

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"strata/distsys/tla"
)

// Tracer records the critical sections that archetype instances commit,
// as a trace that `strata mpcal check --trace` (mpcal/tracecheck) checks
// against the MPCal model the code was generated from. Every Context
// given WithTrace(t) writes one line per committed section, in the trace
// format of docs/mpcal.md:
//
//	{"event":"AClient.receiveLock","action":"receiveLock(2)",
//	 "state":{"pc[2]":"\"enterCS\"","resp[2]":"\"grant\"","round[2]":"0"},
//	 "writes":{"cs":"<<\"enter\", 2>>"}}
//
// event is Archetype.label; action is the PlusCal action of the label
// for this self; state holds the label the instance goes to next (pc)
// and the committed value of every local variable after the section, as
// functions of self: this is the PlusCal translation's vocabulary for an
// archetype instantiated as a process set (`process (P \in S) ==
// instance A(...)`), where each local becomes a function of self.
// writes lists what the section wrote to its resources (the mailbox
// sends, the outputs), for the reader: the checker does not constrain
// them, since a resource's state in the model is what its mapping macro
// makes of the writes.
//
// Order: each section takes a sequence number when it starts to commit
// and the lines are written in that order (a section that aborts gives
// its number up). A resource makes a section's effects visible to other
// instances only from its pre-commit on (the mailboxes send at commit),
// and a section that reads what another wrote starts to commit after
// reading it, so a section that observed another's effect comes after
// it: the trace is an interleaving of the instances' steps that the
// model can take, if the code does what the model says.
//
// A Tracer is safe for concurrent use by many Contexts. With no tracer,
// a Context pays one nil check per write and per commit.
type Tracer struct {
	seq atomic.Uint64 // the next sequence number to hand out

	mu sync.Mutex // guards the fields below
	w  io.Writer
	// next is the sequence number of the next line to write; pending
	// holds the sections finished out of order (nil: aborted).
	next    uint64
	pending map[uint64][]byte
	events  int
	err     error
}

// NewTracer returns a Tracer writing the trace to w.
func NewTracer(w io.Writer) *Tracer {
	return &Tracer{w: w, pending: map[uint64][]byte{}}
}

// WithTrace makes the Context record its committed sections in t.
func WithTrace(t *Tracer) Option {
	return func(c *Context) error { c.trace.t = t; return nil }
}

// Events is the number of lines written so far.
func (t *Tracer) Events() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events
}

// Err is the first error writing the trace (then nothing more is
// written).
func (t *Tracer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Pending is the number of sections finished but not written because one
// that started to commit before them has not finished (0 once every
// Context has returned from Run).
func (t *Tracer) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// done files the line of section seq (nil: it aborted) and writes every
// line that no earlier section holds back.
func (t *Tracer) done(seq uint64, line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[seq] = line
	for {
		l, ok := t.pending[t.next]
		if !ok {
			return
		}
		delete(t.pending, t.next)
		t.next++
		if l == nil || t.err != nil {
			continue
		}
		if _, err := t.w.Write(l); err != nil {
			t.err = fmt.Errorf("distsys: writing the trace: %w", err)
			continue
		}
		t.events++
	}
}

// traceState is a Context's part of tracing: its Tracer and what the
// current section wrote to resources. Used by the Context's goroutine.
type traceState struct {
	t      *Tracer
	writes map[string]string
}

// traceLine is one trace line (the format of mpcal/tracecheck.Event).
type traceLine struct {
	Event  string            `json:"event"`
	Action string            `json:"action"`
	State  map[string]string `json:"state"`
	Writes map[string]string `json:"writes,omitempty"`
}

// traceWrite notes a write of the current section to a resource (locals
// are in the line's state).
func (c *Context) traceWrite(name string, idx []tla.Value, v tla.Value) {
	if s := c.vars[name]; s != nil {
		if _, local := s.res.(*Local); local && len(idx) == 0 {
			return
		}
	}
	key := name
	if len(idx) > 0 {
		parts := make([]string, len(idx))
		for i, x := range idx {
			parts[i] = x.String()
		}
		key += "[" + strings.Join(parts, ", ") + "]"
	}
	if c.trace.writes == nil {
		c.trace.writes = map[string]string{}
	}
	c.trace.writes[key] = v.String() // the last write of the section wins, as in the resource
}

// commitTraced is commit, recorded in the Context's Tracer if it has one:
// label is the section's label and next the one it goes to.
func (c *Context) commitTraced(ctx context.Context, label, next string) error {
	t := c.trace.t
	if t == nil {
		return c.commit(ctx)
	}
	writes := c.trace.writes
	c.trace.writes = nil
	seq := t.seq.Add(1) - 1
	err := c.commit(ctx)
	if err != nil {
		t.done(seq, nil)
		return err
	}
	self := c.self.String()
	ln := traceLine{
		Event:  c.arch.Name + "." + label,
		Action: label + "(" + self + ")",
		State:  map[string]string{"pc[" + self + "]": tla.String(next).String()},
		Writes: writes,
	}
	for _, l := range c.arch.Locals {
		if v, ok := c.Local(l.Name); ok {
			ln.State[l.Name+"["+self+"]"] = v.String()
		}
	}
	b, jerr := json.Marshal(ln)
	if jerr != nil {
		t.done(seq, nil)
		return fmt.Errorf("distsys: trace of %s: %w", ln.Event, jerr)
	}
	t.done(seq, append(b, '\n'))
	return nil
}
