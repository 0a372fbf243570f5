package tla

// Scope is the set of names bound (by quantifiers, CHOOSE, set and
// function constructors, LAMBDA and LET) between the expression being
// rewritten and the sub-expression being visited.
type Scope struct {
	parent *Scope
	names  []string
}

// Bound reports whether name is bound in the scope.
func (s *Scope) Bound(name string) bool {
	for ; s != nil; s = s.parent {
		for _, n := range s.names {
			if n == name {
				return true
			}
		}
	}
	return false
}

// Parent returns the enclosing scope (nil at the outermost).
func (s *Scope) Parent() *Scope { return s.parent }

// Names returns the names this scope binds (not its parents').
func (s *Scope) Names() []string { return s.names }

func (s *Scope) with(names ...string) *Scope {
	if len(names) == 0 {
		return s
	}
	return &Scope{parent: s, names: names}
}

func boundNamesOf(bs []Bound) []string {
	var out []string
	for _, b := range bs {
		for _, n := range b.Names {
			out = append(out, n.Name)
		}
	}
	return out
}

// UnitNames returns the names a definition unit defines (operators,
// functions, named instances, RECURSIVE declarations); nil for others.
func UnitNames(u Unit) []string {
	switch u := u.(type) {
	case *OpDef:
		return []string{u.Name}
	case *FuncDef:
		return []string{u.Name}
	case *ModuleDef:
		return []string{u.Name}
	case *Recursive:
		var out []string
		for _, d := range u.Decls {
			out = append(out, d.Name)
		}
		return out
	}
	return nil
}

// Rewrite returns a copy of e in which every sub-expression x for which f
// returns (y, true) is replaced by y (which is not visited further). f is
// called top-down, with the names bound around x. Nodes are copied where
// anything below them changed; e itself is never modified.
func Rewrite(e Expr, f func(x Expr, s *Scope) (Expr, bool)) Expr {
	return rewrite(e, nil, f)
}

// RewriteIn is Rewrite starting in scope s (for sub-expressions).
func RewriteIn(e Expr, s *Scope, f func(x Expr, s *Scope) (Expr, bool)) Expr {
	return rewrite(e, s, f)
}

func rewriteAll(es []Expr, s *Scope, f func(Expr, *Scope) (Expr, bool)) []Expr {
	if es == nil {
		return nil
	}
	out := make([]Expr, len(es))
	for i, x := range es {
		out[i] = rewrite(x, s, f)
	}
	return out
}

func rewriteBounds(bs []Bound, s *Scope, f func(Expr, *Scope) (Expr, bool)) []Bound {
	out := make([]Bound, len(bs))
	for i, b := range bs {
		out[i] = b
		if b.Set != nil {
			out[i].Set = rewrite(b.Set, s, f)
		}
	}
	return out
}

func rewriteUnit(u Unit, s *Scope, f func(Expr, *Scope) (Expr, bool)) Unit {
	switch u := u.(type) {
	case *OpDef:
		c := *u
		var ps []string
		for _, p := range u.Params {
			ps = append(ps, p.Name)
		}
		c.Body = rewrite(u.Body, s.with(ps...), f)
		return &c
	case *FuncDef:
		c := *u
		c.Bounds = rewriteBounds(u.Bounds, s, f)
		c.Body = rewrite(u.Body, s.with(boundNamesOf(u.Bounds)...), f)
		return &c
	}
	return u
}

func rewrite(e Expr, s *Scope, f func(Expr, *Scope) (Expr, bool)) Expr {
	if e == nil {
		return nil
	}
	if y, ok := f(e, s); ok {
		return y
	}
	switch x := e.(type) {
	case *OpApp:
		c := *x
		c.Args = rewriteAll(x.Args, s, f)
		if x.Prefix != nil {
			c.Prefix = make([]InstSel, len(x.Prefix))
			for i, p := range x.Prefix {
				c.Prefix[i] = p
				c.Prefix[i].Args = rewriteAll(p.Args, s, f)
			}
		}
		return &c
	case *Unary:
		c := *x
		c.X = rewrite(x.X, s, f)
		return &c
	case *Postfix:
		c := *x
		c.X = rewrite(x.X, s, f)
		return &c
	case *Binary:
		c := *x
		c.L, c.R = rewrite(x.L, s, f), rewrite(x.R, s, f)
		return &c
	case *Cross:
		c := *x
		c.Factors = rewriteAll(x.Factors, s, f)
		return &c
	case *Junction:
		c := *x
		c.Items = rewriteAll(x.Items, s, f)
		return &c
	case *If:
		c := *x
		c.Cond, c.Then, c.Else = rewrite(x.Cond, s, f), rewrite(x.Then, s, f), rewrite(x.Else, s, f)
		return &c
	case *Case:
		c := *x
		c.Arms = make([]CaseArm, len(x.Arms))
		for i, a := range x.Arms {
			c.Arms[i] = CaseArm{Cond: rewrite(a.Cond, s, f), Value: rewrite(a.Value, s, f)}
		}
		c.Other = rewrite(x.Other, s, f)
		return &c
	case *Let:
		c := *x
		var names []string
		for _, d := range x.Defs {
			names = append(names, UnitNames(d)...)
		}
		inner := s.with(names...)
		c.Defs = make([]Unit, len(x.Defs))
		for i, d := range x.Defs {
			c.Defs[i] = rewriteUnit(d, inner, f)
		}
		c.Body = rewrite(x.Body, inner, f)
		return &c
	case *Quant:
		c := *x
		c.Bounds = rewriteBounds(x.Bounds, s, f)
		c.Body = rewrite(x.Body, s.with(boundNamesOf(x.Bounds)...), f)
		return &c
	case *Choose:
		c := *x
		c.Bound = rewriteBounds([]Bound{x.Bound}, s, f)[0]
		c.Body = rewrite(x.Body, s.with(boundNamesOf([]Bound{x.Bound})...), f)
		return &c
	case *SetEnum:
		c := *x
		c.Elems = rewriteAll(x.Elems, s, f)
		return &c
	case *SetFilter:
		c := *x
		c.Bound = rewriteBounds([]Bound{x.Bound}, s, f)[0]
		c.Pred = rewrite(x.Pred, s.with(boundNamesOf([]Bound{x.Bound})...), f)
		return &c
	case *SetMap:
		c := *x
		c.Bounds = rewriteBounds(x.Bounds, s, f)
		c.Elem = rewrite(x.Elem, s.with(boundNamesOf(x.Bounds)...), f)
		return &c
	case *FuncCons:
		c := *x
		c.Bounds = rewriteBounds(x.Bounds, s, f)
		c.Body = rewrite(x.Body, s.with(boundNamesOf(x.Bounds)...), f)
		return &c
	case *FuncSet:
		c := *x
		c.Dom, c.Rng = rewrite(x.Dom, s, f), rewrite(x.Rng, s, f)
		return &c
	case *Record:
		c := *x
		c.Fields = make([]RecField, len(x.Fields))
		for i, fl := range x.Fields {
			c.Fields[i] = RecField{Name: fl.Name, Value: rewrite(fl.Value, s, f)}
		}
		return &c
	case *RecordSet:
		c := *x
		c.Fields = make([]RecField, len(x.Fields))
		for i, fl := range x.Fields {
			c.Fields[i] = RecField{Name: fl.Name, Value: rewrite(fl.Value, s, f)}
		}
		return &c
	case *Except:
		c := *x
		c.Func = rewrite(x.Func, s, f)
		c.Updates = make([]ExceptUpdate, len(x.Updates))
		for i, u := range x.Updates {
			nu := ExceptUpdate{Value: rewrite(u.Value, s, f)}
			for _, sel := range u.Path {
				nu.Path = append(nu.Path, ExceptSel{Field: sel.Field, Index: rewriteAll(sel.Index, s, f)})
			}
			c.Updates[i] = nu
		}
		return &c
	case *Tuple:
		c := *x
		c.Elems = rewriteAll(x.Elems, s, f)
		return &c
	case *FuncApp:
		c := *x
		c.Func = rewrite(x.Func, s, f)
		c.Args = rewriteAll(x.Args, s, f)
		return &c
	case *FieldAccess:
		c := *x
		c.X = rewrite(x.X, s, f)
		return &c
	case *Lambda:
		c := *x
		var ps []string
		for _, p := range x.Params {
			ps = append(ps, p.Name)
		}
		c.Body = rewrite(x.Body, s.with(ps...), f)
		return &c
	case *ActionExpr:
		c := *x
		c.Action, c.Sub = rewrite(x.Action, s, f), rewrite(x.Sub, s, f)
		return &c
	case *Fairness:
		c := *x
		c.Action, c.Sub = rewrite(x.Action, s, f), rewrite(x.Sub, s, f)
		return &c
	}
	// Ident, OpSymbol, Number, String, AtSign: leaves.
	return e
}

// Walk calls f on every sub-expression of e, top-down, with the names
// bound around it; f returns false to skip the node's children.
func Walk(e Expr, f func(x Expr, s *Scope) bool) { WalkIn(e, nil, f) }

// WalkIn is Walk starting in scope s (for sub-expressions).
func WalkIn(e Expr, s *Scope, f func(x Expr, s *Scope) bool) {
	rewrite(e, s, func(x Expr, s *Scope) (Expr, bool) {
		if !f(x, s) {
			return x, true
		}
		return nil, false
	})
}

// FreeNames returns the names used free in e (identifiers and the
// operator names of applications without an instance prefix).
func FreeNames(e Expr) map[string]bool {
	out := map[string]bool{}
	Walk(e, func(x Expr, s *Scope) bool {
		switch x := x.(type) {
		case *Ident:
			if !s.Bound(x.Name) {
				out[x.Name] = true
			}
		case *OpApp:
			if x.Prefix == nil && !s.Bound(x.Name) {
				out[x.Name] = true
			}
		}
		return true
	})
	return out
}
