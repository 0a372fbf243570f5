package distsys

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

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
// Order: the Contexts sharing a Tracer commit one at a time (the
// Tracer's lock is held from the start of a section's pre-commit to the
// end of its commit) and each writes its line before it lets the next
// one commit, so the trace is the order in which the sections committed.
// That order is an interleaving the model can take when every resource
// makes a section's effects visible to other instances during its
// commit and not after: true of local state, of LocalMap entries, and of
// mailbox sends that go as last agents (MailboxOptions.LastAgent, a
// section with one destination and private resources besides: the
// receiver appends the batch before the commit returns). A two-phase or
// relaxed mailbox send reaches the receiver's inbox after the sender's
// commit returns, so two senders' messages may arrive in the other order
// than their sections committed, and the trace of a correct run can be
// rejected by a model whose network is one FIFO queue per receiver.
// Contexts in different processes need one Tracer each and a merge of
// the traces that this package does not do.
//
// Tracing serializes the commits of the Contexts that share the Tracer;
// it is for tests and debugging runs. Without a tracer a Context pays one
// nil check per write and per commit.
type Tracer struct {
	mu     sync.Mutex // guards the fields below, and is held across a traced commit
	w      io.Writer
	events int
	err    error
}

// NewTracer returns a Tracer writing the trace to w.
func NewTracer(w io.Writer) *Tracer { return &Tracer{w: w} }

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

// traceWrite notes a write of the current section to a resource (the
// archetype's locals are in the line's state).
func (c *Context) traceWrite(name string, idx []tla.Value, v tla.Value) {
	for _, l := range c.arch.Locals {
		if l.Name == name {
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
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := c.commit(ctx); err != nil {
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
	if t.err != nil {
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // TLA+ is full of < and >
	if err := enc.Encode(ln); err != nil {
		t.err = fmt.Errorf("distsys: trace of %s: %w", ln.Event, err)
		return nil
	}
	if _, err := t.w.Write(b.Bytes()); err != nil {
		t.err = fmt.Errorf("distsys: writing the trace: %w", err)
		return nil
	}
	t.events++
	return nil
}
