package distsys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"strata/distsys/tla"
)

// Done is the label after an archetype's last statement: Run returns.
const Done = "Done"

// Archetype is the generated form of an MPCal archetype.
type Archetype struct {
	Name     string
	Pos      string // "file:line:col" of the archetype in the MPCal source
	Params   []Param
	Locals   []LocalVar
	Start    string             // the first label
	Sections map[string]Section // by label
}

// Param is an archetype parameter: a `ref` (bound with BindRef or, with
// Index > 0, BindIndexed) or a value (bound with BindValue).
type Param struct {
	Name  string
	Pos   string
	Ref   bool
	Index int // the number of [_]
}

// LocalVar is an archetype local variable. Init computes its initial
// value once, at NewContext (nil: the model value defaultInitValue, as
// PlusCal leaves it).
type LocalVar struct {
	Name string
	Pos  string
	Init func(c *Context, e *tla.Eval) tla.Value
}

// Section is one critical section: the statements of one label. Run
// returns the next label; it reports failures through e (or its error
// result) and must not act on a value after e.Err() is set.
type Section struct {
	Label string
	Pos   string
	Run   func(c *Context, e *tla.Eval) (next string, err error)
}

// DefaultInitValue is the value of a variable declared without one.
var DefaultInitValue = tla.ModelValue("defaultInitValue")

// Option configures NewContext.
type Option func(*Context) error

// BindRef binds the `ref` parameter name (without [_]) to r.
func BindRef(name string, r Resource) Option {
	return func(c *Context) error { return c.bind(name, r, nil, tla.Value{}) }
}

// BindIndexed binds the `ref name[_]` parameter to r.
func BindIndexed(name string, r IndexedResource) Option {
	return func(c *Context) error { return c.bind(name, nil, r, tla.Value{}) }
}

// BindValue binds the value parameter name to v.
func BindValue(name string, v tla.Value) Option {
	return func(c *Context) error { return c.bind(name, nil, nil, v) }
}

// WithSeed seeds the random choices (either, with \in) and the backoff.
func WithSeed(seed uint64) Option {
	return func(c *Context) error { c.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)); return nil }
}

// WithOutput sends print statements' output to w (default os.Stdout).
func WithOutput(w io.Writer) Option { return func(c *Context) error { c.out = w; return nil } }

// WithBackoff sets the retry delay range of an aborted section: the first
// retry waits up to lo, each further one up to twice as long, capped at hi.
func WithBackoff(lo, hi time.Duration) Option {
	return func(c *Context) error {
		if lo <= 0 || hi < lo {
			return fmt.Errorf("distsys: backoff range %v..%v is empty", lo, hi)
		}
		c.backoffLo, c.backoffHi = lo, hi
		return nil
	}
}

// Context is one running instance of an archetype. Its fields are used by
// the goroutine running Run (and, before that, NewContext) only.
type Context struct {
	arch *Archetype
	self tla.Value
	vars map[string]*slot
	rng  *rand.Rand
	out  io.Writer

	backoffLo, backoffHi time.Duration

	ctx     context.Context   // the context of the current Run
	touched []Resource        // resources touched by the current section, in order
	seen    map[Resource]bool // touched, once a section touches more than touchScan resources
	printed bytes.Buffer      // the current section's print output
	aborts  uint64            // sections aborted (for tests and tracing)
	// eval is the current section's evaluator, kept here so that running
	// a section does not allocate one (Section.Run takes a pointer).
	eval tla.Eval
	// top is the running procedure's frame (nil: the archetype's code).
	// Call, TailCall and Return move it; Run puts back the value it had
	// before a section that does not commit (frame.go).
	top      *frame
	maxDepth int // WithMaxCallDepth

	trace traceState // WithTrace (trace.go)
}

// slot is what a name of the archetype is bound to.
type slot struct {
	param   *Param
	res     Resource        // a value, local or plain ref
	indexed IndexedResource // a ref with [_]
}

// NewContext binds an archetype instance: self, its parameters (options)
// and its locals' initial values. Every parameter must be bound exactly
// once, with the right kind of binding; the error names the parameter's
// MPCal position.
func NewContext(a *Archetype, self tla.Value, opts ...Option) (*Context, error) {
	if a == nil {
		return nil, errors.New("distsys: nil archetype")
	}
	if !self.IsValid() {
		return nil, fmt.Errorf("%s: archetype %s: self is not a valid value", a.Pos, a.Name)
	}
	c := &Context{arch: a, self: self, vars: map[string]*slot{}, out: os.Stdout,
		backoffLo: time.Millisecond, backoffHi: 100 * time.Millisecond, seen: map[Resource]bool{},
		ctx: context.Background(), maxDepth: MaxCallDepth}
	for i := range a.Params {
		c.vars[a.Params[i].Name] = &slot{param: &a.Params[i]}
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.rng == nil {
		c.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	for _, p := range a.Params {
		s := c.vars[p.Name]
		if s.res == nil && s.indexed == nil {
			how := "BindValue"
			switch {
			case p.Ref && p.Index > 0:
				how = "BindIndexed"
			case p.Ref:
				how = "BindRef"
			}
			return nil, fmt.Errorf("%s: archetype %s: parameter %s is not bound (use distsys.%s)", p.Pos, a.Name, p.Name, how)
		}
	}
	for _, l := range a.Locals {
		v := DefaultInitValue
		if l.Init != nil {
			e := tla.Eval{Pos: l.Pos}
			v = l.Init(c, &e)
			if err := e.Err(); err != nil {
				return nil, fmt.Errorf("archetype %s: initial value of %s: %w", a.Name, l.Name, err)
			}
		}
		// A later local may refer to an earlier one: bind as we go.
		c.vars[l.Name] = &slot{res: NewLocal(v)}
	}
	return c, nil
}

func (c *Context) bind(name string, r Resource, ix IndexedResource, v tla.Value) error {
	s, ok := c.vars[name]
	if !ok {
		return fmt.Errorf("%s: archetype %s has no parameter %s", c.arch.Pos, c.arch.Name, name)
	}
	p := s.param
	if s.res != nil || s.indexed != nil {
		return fmt.Errorf("%s: archetype %s: parameter %s is bound twice", p.Pos, c.arch.Name, name)
	}
	switch {
	case r != nil:
		if !p.Ref || p.Index > 0 {
			return fmt.Errorf("%s: archetype %s: parameter %s is %s, not a plain ref (BindRef)", p.Pos, c.arch.Name, name, p.kind())
		}
		s.res = r
	case ix != nil:
		if !p.Ref || p.Index == 0 {
			return fmt.Errorf("%s: archetype %s: parameter %s is %s, not an indexed ref (BindIndexed)", p.Pos, c.arch.Name, name, p.kind())
		}
		s.indexed = ix
	default:
		if p.Ref {
			return fmt.Errorf("%s: archetype %s: parameter %s is %s, not a value (BindValue)", p.Pos, c.arch.Name, name, p.kind())
		}
		if !v.IsValid() {
			return fmt.Errorf("%s: archetype %s: parameter %s bound to an invalid value", p.Pos, c.arch.Name, name)
		}
		s.res = NewLocal(v)
	}
	return nil
}

func (p *Param) kind() string {
	switch {
	case p.Ref && p.Index > 0:
		return fmt.Sprintf("ref %s with %d [_]", p.Name, p.Index)
	case p.Ref:
		return "ref " + p.Name
	}
	return "a value parameter"
}

// Self is the archetype instance's self.
func (c *Context) Self() tla.Value { return c.self }

// Aborts is the number of section attempts aborted so far.
func (c *Context) Aborts() uint64 { return c.aborts }

// Local returns the committed value of a local variable or value
// parameter (for tests, after Run returns).
func (c *Context) Local(name string) (tla.Value, bool) {
	s, ok := c.vars[name]
	if !ok {
		return tla.Value{}, false
	}
	l, ok := s.res.(*Local)
	if !ok {
		return tla.Value{}, false
	}
	return l.Value(), true
}

// touchScan is how many touched resources a section looks through before
// it indexes them in a map: most sections touch a handful, and hashing an
// interface per access cost about 2.5 µs per echo round trip (bench
// mpcal-go profile) where comparing a few interface values costs
// nanoseconds.
const touchScan = 16

func (c *Context) touch(r Resource) {
	if len(c.touched) < touchScan {
		for _, t := range c.touched {
			if t == r {
				return
			}
		}
		c.touched = append(c.touched, r)
		if len(c.touched) == touchScan {
			for _, t := range c.touched {
				c.seen[t] = true
			}
		}
		return
	}
	if !c.seen[r] {
		c.seen[r] = true
		c.touched = append(c.touched, r)
	}
}

func (c *Context) lookup(e *tla.Eval, name string, indexed bool) *slot {
	s, ok := c.scope()[name]
	if !ok {
		e.Fail(fmt.Errorf("%s: %s has no variable %s", e.Pos, c.unit(), name))
		return nil
	}
	if indexed != (s.indexed != nil) {
		if indexed {
			e.Fail(fmt.Errorf("%s: %s is not an indexed resource", e.Pos, name))
		} else {
			e.Fail(fmt.Errorf("%s: %s is an indexed resource; read %s[i]", e.Pos, name, name))
		}
		return nil
	}
	return s
}

func (c *Context) resolve(e *tla.Eval, name string, idx []tla.Value) Resource {
	if e.Err() != nil {
		return nil
	}
	s := c.lookup(e, name, len(idx) > 0)
	if s == nil {
		return nil
	}
	r := s.res
	if len(idx) > 0 {
		if len(idx) != s.param.Index {
			e.Fail(fmt.Errorf("%s: %s has %d [_] but is indexed %d times", e.Pos, name, s.param.Index, len(idx)))
			return nil
		}
		key := idx[0]
		if len(idx) > 1 {
			key = tla.Tuple(idx...)
		}
		var err error
		r, err = s.indexed.Index(key)
		if err != nil {
			e.Fail(fmt.Errorf("%s: %s[%v]: %w", e.Pos, name, key, err))
			return nil
		}
	}
	c.touch(r)
	return r
}

func (c *Context) fail(e *tla.Eval, err error) {
	var ae *AbortError
	if errors.As(err, &ae) && ae.Pos == "" {
		cp := *ae
		cp.Pos = e.Pos
		err = &cp
	}
	var te *tla.Error
	if !errors.As(err, &te) && !errors.As(err, &ae) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%s: %w", e.Pos, err)
	}
	e.Fail(err)
}

// Read is the value of a local variable, value parameter or plain ref
// (with idx: of the indexed ref name[idx...]); a failure is recorded in e.
func (c *Context) Read(e *tla.Eval, name string, idx ...tla.Value) tla.Value {
	r := c.resolve(e, name, idx)
	if r == nil {
		return tla.Value{}
	}
	v, err := r.Read(c.ctx)
	if err != nil {
		c.fail(e, err)
		return tla.Value{}
	}
	return v
}

// Write assigns v to a variable or plain ref (with idx: to name[idx...]).
func (c *Context) Write(e *tla.Eval, name string, idx []tla.Value, v tla.Value) {
	if e.Err() != nil {
		return
	}
	r := c.resolve(e, name, idx)
	if r == nil {
		return
	}
	if err := r.Write(c.ctx, v); err != nil {
		c.fail(e, err)
	} else if c.trace.t != nil {
		c.traceWrite(name, idx, v)
	}
}

// Choose picks one of n `either` branches uniformly at random.
func (c *Context) Choose(n int) int {
	if n <= 1 {
		return 0
	}
	return c.rng.IntN(n)
}

// Pick is a uniformly random element of the set s, for `with (x \in s)`;
// an empty set aborts the section (the with cannot proceed now).
func (c *Context) Pick(e *tla.Eval, s tla.Value) tla.Value {
	if e.Err() != nil {
		return tla.Value{}
	}
	n, err := tla.Cardinality(s)
	if err != nil {
		e.Fail(err)
		return tla.Value{}
	}
	k, err := n.AsInt64()
	if err != nil {
		e.Fail(err)
		return tla.Value{}
	}
	if k == 0 {
		c.fail(e, &AbortError{Reason: "with over an empty set"})
		return tla.Value{}
	}
	els, err := tla.Elements(s)
	if err != nil {
		e.Fail(err)
		return tla.Value{}
	}
	return els[c.rng.IntN(len(els))]
}

// Await aborts the section unless cond is TRUE; it reports whether the
// section may go on.
func (c *Context) Await(e *tla.Eval, cond tla.Value) bool {
	if !e.Bool(cond) {
		if e.Err() == nil {
			c.fail(e, &AbortError{Reason: "await condition is false"})
		}
		return false
	}
	return true
}

// Assert fails the archetype (an *AssertionError) unless cond is TRUE.
func (c *Context) Assert(e *tla.Eval, cond tla.Value, text string) {
	if !e.Bool(cond) && e.Err() == nil {
		e.Fail(&AssertionError{Pos: e.Pos, Expr: text})
	}
}

// Print buffers v's TLC form; the section's prints are written when it
// commits.
func (c *Context) Print(e *tla.Eval, v tla.Value) {
	if e.Err() != nil {
		return
	}
	c.printed.WriteString(v.String())
	c.printed.WriteByte('\n')
}

// Run executes the archetype from its first label until Done, an error,
// or ctx's end (then it returns ctx's error). The label of each step is
// looked up in the running procedure (the top frame's) or, with no
// frame, in the archetype; a step that does not commit leaves the frame
// stack as it was, so an aborted call or return is retried like any
// other write.
func (c *Context) Run(ctx context.Context) error {
	label := c.arch.Start
	c.top = nil
	backoff := c.backoffLo
	for label != Done {
		if err := ctx.Err(); err != nil {
			return err
		}
		top := c.top
		sections := c.arch.Sections
		if top != nil {
			if label == ErrorLabel {
				return fmt.Errorf("archetype %s (self %v), procedure %s (%s): %w", c.arch.Name, c.self, top.proc.Name, top.proc.Pos, ErrNoReturn)
			}
			sections = top.proc.Sections
		}
		sec, ok := sections[label]
		if !ok {
			if top != nil {
				return fmt.Errorf("%s: procedure %s has no label %q", top.proc.Pos, top.proc.Name, label)
			}
			return fmt.Errorf("%s: archetype %s has no label %q", c.arch.Pos, c.arch.Name, label)
		}
		c.ctx = ctx
		c.eval = tla.Eval{Pos: sec.Pos}
		e := &c.eval
		next, err := sec.Run(c, e)
		if err == nil {
			err = e.Err()
		}
		if err == nil {
			err = c.commitTraced(ctx, label, next)
		} else {
			c.abort()
		}
		if err != nil {
			c.top = top // the step's calls and returns did not happen
		}
		switch {
		case err == nil:
			label = next
			backoff = c.backoffLo
		case errors.Is(err, ErrAborted):
			c.aborts++
			if err := c.sleep(ctx, backoff); err != nil {
				return err
			}
			backoff = min(2*backoff, c.backoffHi)
		case ctx.Err() != nil:
			return ctx.Err()
		case top != nil:
			return fmt.Errorf("archetype %s (self %v), procedure %s, label %s: %w", c.arch.Name, c.self, top.proc.Name, label, err)
		default:
			return fmt.Errorf("archetype %s (self %v), label %s: %w", c.arch.Name, c.self, label, err)
		}
	}
	return nil
}

func (c *Context) sleep(ctx context.Context, max time.Duration) error {
	d := time.Duration(c.rng.Int64N(int64(max) + 1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// commit runs the two phases over the touched resources; a PreCommit
// failure aborts them all.
func (c *Context) commit(ctx context.Context) error {
	defer c.reset()
	if la := c.soleAgent(); la != nil {
		// The other resources are private and cannot refuse: the last
		// agent's answer is the section's outcome.
		for _, r := range c.touched {
			if r == Resource(la) {
				continue
			}
			if err := r.PreCommit(ctx); err != nil {
				for _, r := range c.touched {
					r.Abort()
				}
				return err
			}
		}
		if err := la.commitAlone(ctx); err != nil {
			for _, r := range c.touched {
				r.Abort()
			}
			return err
		}
		return c.commitAll(ctx)
	}
	for _, r := range c.touched {
		if err := r.PreCommit(ctx); err != nil {
			for _, r := range c.touched {
				r.Abort()
			}
			return err
		}
	}
	return c.commitAll(ctx)
}

// soleAgent is the section's one resource that can decide it alone, if
// every other resource it touched is private (see lastAgent).
func (c *Context) soleAgent() lastAgent {
	var la lastAgent
	for _, r := range c.touched {
		if a, ok := r.(lastAgent); ok && a.soleAgent() {
			if la != nil {
				return nil
			}
			la = a
			continue
		}
		if _, ok := r.(private); !ok {
			return nil
		}
	}
	return la
}

// commitAll commits the touched resources in order and writes the
// section's prints.
func (c *Context) commitAll(ctx context.Context) error {
	for _, r := range c.touched {
		if err := r.Commit(ctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	if c.printed.Len() > 0 {
		if _, err := c.out.Write(c.printed.Bytes()); err != nil {
			return fmt.Errorf("print: %w", err)
		}
	}
	return nil
}

func (c *Context) abort() {
	for _, r := range c.touched {
		r.Abort()
	}
	c.reset()
}

func (c *Context) reset() {
	if len(c.seen) > 0 {
		clear(c.seen)
	}
	c.touched = c.touched[:0]
	c.printed.Reset()
	c.trace.writes = nil
}

// MissingConstant is the error of a generated New when the constant
// declared at pos is not supplied.
func MissingConstant(pos, name string) error {
	return fmt.Errorf("%s: constant %s is not set", pos, name)
}

// Fail records a failure of generated code that no TLA+ operator reports
// (a CASE with no true arm) at e's position and returns the invalid value.
func Fail(e *tla.Eval, op, msg string) tla.Value {
	e.Fail(&tla.Error{Op: op, Msg: msg})
	return tla.Value{}
}
