package tla

import "errors"

// Eval evaluates one expression (or statement) of generated code: its
// methods are the operators that can fail, without the error result.
// The first error is kept, stamped with Pos, and from then on every
// method returns the invalid Value without doing anything; Err reports
// it. Generated code checks Err before it uses a result to decide
// anything (a branch, a write), so an error is never acted on.
//
// The zero Eval is ready to use. An Eval is not safe for concurrent use;
// it is cheap (two words), so make one per critical section.
type Eval struct {
	// Pos is the MPCal source position of the expression being
	// evaluated, "file:line:col"; generated code sets it before each
	// statement, and errors carry the Pos current when they happened.
	Pos string
	err error
}

// Err returns the first error, or nil.
func (e *Eval) Err() error { return e.err }

// Fail records err (if it is the first), stamping an *Error with Pos.
// Generated code uses it for failures of its own (an assert).
func (e *Eval) Fail(err error) {
	if e.err != nil || err == nil {
		return
	}
	var te *Error
	if errors.As(err, &te) && te.Pos == "" {
		c := *te
		c.Pos = e.Pos
		err = &c
	}
	e.err = err
}

// Reset clears the error (for an Eval reused across critical sections).
func (e *Eval) Reset() { e.err = nil }

func (e *Eval) v1(op func(Value) (Value, error), a Value) Value {
	if e.err != nil {
		return Value{}
	}
	v, err := op(a)
	if err != nil {
		e.Fail(err)
		return Value{}
	}
	return v
}

func (e *Eval) v2(op func(a, b Value) (Value, error), a, b Value) Value {
	if e.err != nil {
		return Value{}
	}
	v, err := op(a, b)
	if err != nil {
		e.Fail(err)
		return Value{}
	}
	return v
}

// Bool returns v as a Go bool for a condition; false after an error.
func (e *Eval) Bool(v Value) bool {
	if e.err != nil {
		return false
	}
	b, err := v.AsBool()
	e.Fail(err)
	return b
}

func (e *Eval) Interval(a, b Value) Value  { return e.v2(Interval, a, b) }
func (e *Eval) Plus(a, b Value) Value      { return e.v2(Plus, a, b) }
func (e *Eval) Minus(a, b Value) Value     { return e.v2(Minus, a, b) }
func (e *Eval) Neg(a Value) Value          { return e.v1(Neg, a) }
func (e *Eval) Times(a, b Value) Value     { return e.v2(Times, a, b) }
func (e *Eval) Div(a, b Value) Value       { return e.v2(Div, a, b) }
func (e *Eval) Mod(a, b Value) Value       { return e.v2(Mod, a, b) }
func (e *Eval) Pow(a, b Value) Value       { return e.v2(Pow, a, b) }
func (e *Eval) Lt(a, b Value) Value        { return e.v2(Lt, a, b) }
func (e *Eval) Le(a, b Value) Value        { return e.v2(Le, a, b) }
func (e *Eval) Gt(a, b Value) Value        { return e.v2(Gt, a, b) }
func (e *Eval) Ge(a, b Value) Value        { return e.v2(Ge, a, b) }
func (e *Eval) Not(a Value) Value          { return e.v1(Not, a) }
func (e *Eval) And(a, b Value) Value       { return e.v2(And, a, b) }
func (e *Eval) Or(a, b Value) Value        { return e.v2(Or, a, b) }
func (e *Eval) Implies(a, b Value) Value   { return e.v2(Implies, a, b) }
func (e *Eval) Equiv(a, b Value) Value     { return e.v2(Equiv, a, b) }
func (e *Eval) In(x, s Value) Value        { return e.v2(In, x, s) }
func (e *Eval) NotIn(x, s Value) Value     { return e.v2(NotIn, x, s) }
func (e *Eval) Union(a, b Value) Value     { return e.v2(Union, a, b) }
func (e *Eval) Intersect(a, b Value) Value { return e.v2(Intersect, a, b) }
func (e *Eval) SetMinus(a, b Value) Value  { return e.v2(SetMinus, a, b) }
func (e *Eval) SubsetEq(a, b Value) Value  { return e.v2(SubsetEq, a, b) }
func (e *Eval) Subset(s Value) Value       { return e.v1(Subset, s) }
func (e *Eval) BigUnion(s Value) Value     { return e.v1(BigUnion, s) }
func (e *Eval) Cardinality(s Value) Value  { return e.v1(Cardinality, s) }
func (e *Eval) Apply(f, x Value) Value     { return e.v2(Apply, f, x) }
func (e *Eval) Domain(f Value) Value       { return e.v1(Domain, f) }
func (e *Eval) Merge(f, g Value) Value     { return e.v2(Merge, f, g) }
func (e *Eval) Len(s Value) Value          { return e.v1(Len, s) }
func (e *Eval) Append(s, x Value) Value    { return e.v2(Append, s, x) }
func (e *Eval) Head(s Value) Value         { return e.v1(Head, s) }
func (e *Eval) Tail(s Value) Value         { return e.v1(Tail, s) }
func (e *Eval) Concat(s, t Value) Value    { return e.v2(Concat, s, t) }
func (e *Eval) InSeq(s, set Value) Value   { return e.v2(InSeq, s, set) }
func (e *Eval) FunctionSet(s, t Value) Value {
	return e.v2(FunctionSet, s, t)
}

// Field is r.name.
func (e *Eval) Field(r Value, name string) Value {
	return e.v1(func(r Value) (Value, error) { return Field(r, name) }, r)
}

// SubSeq is SubSeq(s, m, n).
func (e *Eval) SubSeq(s, m, n Value) Value {
	return e.v1(func(s Value) (Value, error) { return SubSeq(s, m, n) }, s)
}

// Except is [f EXCEPT ![path...] = v].
func (e *Eval) Except(f Value, path []Value, v Value) Value {
	return e.v1(func(f Value) (Value, error) { return Except(f, path, v) }, f)
}

// ExceptWith is [f EXCEPT ![path...] = update(@)]. update gets this Eval's
// errors by using it; ExceptWith stops if it recorded one.
func (e *Eval) ExceptWith(f Value, path []Value, update func(old Value) Value) Value {
	return e.v1(func(f Value) (Value, error) {
		return ExceptWith(f, path, func(old Value) (Value, error) {
			v := update(old)
			return v, e.err
		})
	}, f)
}

// pred adapts a predicate written against this Eval.
func (e *Eval) pred(p func(Value) bool) func(Value) (bool, error) {
	return func(x Value) (bool, error) {
		ok := p(x)
		return ok, e.err
	}
}

// Filter is {x \in S : p(x)}; p uses this Eval (e.Bool for its result).
func (e *Eval) Filter(s Value, p func(Value) bool) Value {
	return e.v1(func(s Value) (Value, error) { return Filter(s, e.pred(p)) }, s)
}

// Map is {f(x) : x \in S}.
func (e *Eval) Map(s Value, f func(Value) Value) Value {
	return e.v1(func(s Value) (Value, error) {
		return Map(s, func(x Value) (Value, error) { v := f(x); return v, e.err })
	}, s)
}

// Function is [x \in S |-> body(x)].
func (e *Eval) Function(s Value, body func(Value) Value) Value {
	return e.v1(func(s Value) (Value, error) {
		return Function(s, func(x Value) (Value, error) { v := body(x); return v, e.err })
	}, s)
}

// Exists is \E x \in S : p(x).
func (e *Eval) Exists(s Value, p func(Value) bool) Value {
	return e.v1(func(s Value) (Value, error) { return Exists(s, e.pred(p)) }, s)
}

// Forall is \A x \in S : p(x).
func (e *Eval) Forall(s Value, p func(Value) bool) Value {
	return e.v1(func(s Value) (Value, error) { return Forall(s, e.pred(p)) }, s)
}

// Choose is CHOOSE x \in S : p(x).
func (e *Eval) Choose(s Value, p func(Value) bool) Value {
	return e.v1(func(s Value) (Value, error) { return Choose(s, e.pred(p)) }, s)
}
