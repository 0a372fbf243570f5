package distsys

import (
	"errors"
	"fmt"

	"strata/distsys/tla"
)

// Procedure is the generated form of an MPCal procedure: its parameters,
// its local variables and one Section per label. Labels are looked up in
// the procedure that is running (the top frame's), so a procedure's
// labels may repeat an archetype's or another procedure's.
type Procedure struct {
	Name     string
	Pos      string // "file:line:col" of the procedure in the MPCal source
	Params   []Param
	Locals   []LocalVar // Init sees the parameters and earlier locals
	Start    string     // the first label
	Sections map[string]Section
}

// ErrorLabel is the label after a procedure's last statement, PlusCal's
// "Error": a procedure that ends without `return` stops the archetype
// with an error matching ErrNoReturn once that step has committed, as a
// PlusCal process whose pc is "Error" can take no further step.
const ErrorLabel = "Error"

// ErrNoReturn matches the error of a procedure whose control reached the
// end of its body without a return.
var ErrNoReturn = errors.New("control reached the end of the procedure without a return")

// MaxCallDepth is the default bound on the frame stack (WithMaxCallDepth):
// a call that would make it deeper fails the archetype instead of growing
// memory without bound.
const MaxCallDepth = 1 << 16

// WithMaxCallDepth bounds the number of nested procedure calls (default
// MaxCallDepth).
func WithMaxCallDepth(n int) Option {
	return func(c *Context) error {
		if n < 1 {
			return fmt.Errorf("distsys: call depth bound %d is not positive", n)
		}
		c.maxDepth = n
		return nil
	}
}

// Arg is one argument of a call: a value (Val), or the caller's variable
// passed by reference (Ref).
type Arg struct {
	val tla.Value
	ref string
}

// Val is a value argument, bound to a fresh local of the callee.
func Val(v tla.Value) Arg { return Arg{val: v} }

// Ref passes the caller's variable name (a local, a parameter, a plain
// or an indexed ref, of the archetype or of the calling procedure) by
// reference: the callee's parameter names the same resource.
func Ref(name string) Arg { return Arg{ref: name} }

// frame is one procedure activation. Frames are never modified once
// pushed: a call makes a new one whose parent is the caller's and a
// return moves to the parent, so the stack is an immutable list and
// restoring the top pointer undoes every call and return of an aborted
// section. The variables' values live in their resources (Local for
// value parameters and locals), which have their own section buffers.
type frame struct {
	proc   *Procedure
	ret    string           // the label the caller resumes at
	vars   map[string]*slot // parameters and locals; ref parameters share the caller's slot
	parent *frame           // the caller's frame, nil for the archetype
	depth  int              // 1 for a procedure called by the archetype
}

// Depth is the number of procedure frames on the stack (0 while the
// archetype's own code runs); after Run returns, that of the last
// committed step.
func (c *Context) Depth() int {
	if c.top == nil {
		return 0
	}
	return c.top.depth
}

// scope is the variables that names resolve in: the running procedure's,
// or the archetype's.
func (c *Context) scope() map[string]*slot {
	if c.top != nil {
		return c.top.vars
	}
	return c.vars
}

// unit names the code that is running, for error messages.
func (c *Context) unit() string {
	if c.top != nil {
		return "procedure " + c.top.proc.Name
	}
	return "archetype " + c.arch.Name
}

// Call is `call p(args); goto ret` (or a call followed by the label ret):
// it binds p's parameters, pushes its frame, initializes its locals and
// returns p's first label. Value arguments are evaluated by the caller
// before Call; ref arguments name variables of the caller's scope. The
// push belongs to the current section: if it aborts, the call never
// happened.
func (c *Context) Call(e *tla.Eval, p *Procedure, ret string, args ...Arg) (string, error) {
	return c.call(e, p, ret, c.top, args)
}

// TailCall is `call p(args); return` inside a procedure: p replaces the
// running procedure's frame and returns, when it does, to that frame's
// caller.
func (c *Context) TailCall(e *tla.Eval, p *Procedure, args ...Arg) (string, error) {
	if err := e.Err(); err != nil {
		return "", err
	}
	if c.top == nil {
		return "", fmt.Errorf("%s: archetype %s: call %s followed by return outside a procedure", e.Pos, c.arch.Name, procName(p))
	}
	return c.call(e, p, c.top.ret, c.top.parent, args)
}

func procName(p *Procedure) string {
	if p == nil {
		return "<nil>"
	}
	return p.Name
}

func (c *Context) call(e *tla.Eval, p *Procedure, ret string, parent *frame, args []Arg) (string, error) {
	if err := e.Err(); err != nil {
		return "", err
	}
	if p == nil {
		return "", fmt.Errorf("%s: %s: call of a nil procedure", e.Pos, c.unit())
	}
	if len(args) != len(p.Params) {
		return "", fmt.Errorf("%s: procedure %s takes %d arguments, given %d", e.Pos, p.Name, len(p.Params), len(args))
	}
	depth := 1
	if parent != nil {
		depth = parent.depth + 1
	}
	if depth > c.maxDepth {
		return "", fmt.Errorf("%s: call %s: more than %d nested procedure calls", e.Pos, p.Name, c.maxDepth)
	}
	f := &frame{proc: p, ret: ret, vars: make(map[string]*slot, len(p.Params)+len(p.Locals)), parent: parent, depth: depth}
	caller := c.scope() // ref arguments are the caller's names, even in a tail call
	for i, a := range args {
		par := &p.Params[i]
		if a.ref == "" {
			if par.Ref {
				return "", fmt.Errorf("%s: call %s: parameter %s is a ref parameter: pass distsys.Ref, not a value", e.Pos, p.Name, par.Name)
			}
			if !a.val.IsValid() {
				return "", fmt.Errorf("%s: call %s: argument %s is not a valid value", e.Pos, p.Name, par.Name)
			}
			f.vars[par.Name] = &slot{res: NewLocal(a.val)}
			continue
		}
		if !par.Ref {
			return "", fmt.Errorf("%s: call %s: parameter %s is not a ref parameter: pass a value, not ref %s", e.Pos, p.Name, par.Name, a.ref)
		}
		s, ok := caller[a.ref]
		if !ok {
			return "", fmt.Errorf("%s: call %s: %s has no variable %s to pass by ref", e.Pos, p.Name, c.unit(), a.ref)
		}
		if got := s.index(); got != par.Index {
			return "", fmt.Errorf("%s: call %s: ref %s has %d [_] but parameter %s has %d", e.Pos, p.Name, a.ref, got, par.Name, par.Index)
		}
		f.vars[par.Name] = s
	}
	// The locals' initial values see the parameters and earlier locals:
	// evaluate them with the new frame on top.
	c.top = f
	for _, l := range p.Locals {
		v := DefaultInitValue
		if l.Init != nil {
			pos := e.Pos
			e.Pos = l.Pos
			v = l.Init(c, e)
			if err := e.Err(); err != nil {
				return "", err
			}
			e.Pos = pos
		}
		f.vars[l.Name] = &slot{res: NewLocal(v)}
	}
	return p.Start, nil
}

// index is the number of [_] of the variable in s.
func (s *slot) index() int {
	if s.indexed == nil || s.param == nil {
		return 0
	}
	return s.param.Index
}

// Return is `return`: it pops the running procedure's frame and returns
// the label its caller resumes at. Like Call, it is undone if the section
// aborts.
func (c *Context) Return(e *tla.Eval) (string, error) {
	if err := e.Err(); err != nil {
		return "", err
	}
	if c.top == nil {
		return "", fmt.Errorf("%s: archetype %s: return outside a procedure", e.Pos, c.arch.Name)
	}
	ret := c.top.ret
	c.top = c.top.parent
	return ret, nil
}
