package mpcal

import (
	"maps"
	"sort"
	"strings"

	"strata/mpcal/tla"
)

// read is one read of a mapped resource found in an expression: it is
// performed (the mapping macro's read body inlined) before the statement,
// and the expression uses the yielded value's name instead.
type read struct {
	res   *resource
	index [][]tla.Expr
	name  string
}

func (r *read) target() LHS {
	l := LHS{Name: r.res.name}
	if r.res.fixed != nil {
		l.Sels = append(l.Sels, Selector{Index: r.res.fixed})
	}
	for _, ix := range r.index {
		l.Sels = append(l.Sels, Selector{Index: ix})
	}
	return l
}

// rx translates an expression: locals and refs renamed, self replaced,
// $variable and $value bound, and reads of mapped resources collected
// (in evaluation order, inner ones first) and replaced by their yielded
// names.
func (g *gen) rx(x tla.Expr, e *env, reads *[]*read) tla.Expr {
	if x == nil {
		return nil
	}
	var f func(x tla.Expr, s *tla.Scope) (tla.Expr, bool)
	f = func(x tla.Expr, s *tla.Scope) (tla.Expr, bool) {
		switch x := x.(type) {
		case *tla.Ident:
			if s.Bound(x.Name) {
				return nil, false
			}
			switch {
			case x.Name == "self" && e.self != nil:
				return e.self, true
			case x.Name == "$variable" && e.dollar != nil:
				return e.dollar, true
			case x.Name == "$value" && e.dollarVal != nil:
				return e.dollarVal, true
			}
			if r := e.res[x.Name]; r != nil {
				if r.mapping == nil {
					var v tla.Expr = &tla.Ident{Loc: x.Loc, Name: r.name}
					if r.fixed != nil {
						v = &tla.FuncApp{Loc: x.Loc, Func: v, Args: r.fixed}
					}
					return v, true
				}
				rd := &read{res: r, name: g.fresh("yielded_" + r.name)}
				*reads = append(*reads, rd)
				return &tla.Ident{Loc: x.Loc, Name: rd.name}, true
			}
			if n, ok := e.names[x.Name]; ok {
				return &tla.Ident{Loc: x.Loc, Name: n}, true
			}
		case *tla.FuncApp:
			var levels []*tla.FuncApp
			var base tla.Expr = x
			for {
				fa, ok := base.(*tla.FuncApp)
				if !ok {
					break
				}
				levels = append(levels, fa)
				base = fa.Func
			}
			id, ok := base.(*tla.Ident)
			if !ok || s.Bound(id.Name) {
				return nil, false
			}
			r := e.res[id.Name]
			if r == nil || r.mapping == nil || r.index == 0 || len(levels) < r.index {
				return nil, false
			}
			// levels[len-1] is applied first (innermost).
			inner := make([]*tla.FuncApp, len(levels))
			for i := range levels {
				inner[i] = levels[len(levels)-1-i]
			}
			rd := &read{res: r}
			for _, fa := range inner[:r.index] {
				var args []tla.Expr
				for _, a := range fa.Args {
					for n := range tla.FreeNames(a) {
						if s.Bound(n) {
							g.errorf(a.Position(), KindUnsupported, "the index of a read of %s depends on %s, which is bound inside the expression: read the resource in a with statement first", id.Name, n)
						}
					}
					args = append(args, tla.RewriteIn(a, s, f))
				}
				rd.index = append(rd.index, args)
			}
			rd.name = g.fresh("yielded_" + r.name)
			*reads = append(*reads, rd)
			var out tla.Expr = &tla.Ident{Loc: id.Loc, Name: rd.name}
			for _, fa := range inner[r.index:] {
				var args []tla.Expr
				for _, a := range fa.Args {
					args = append(args, tla.RewriteIn(a, s, f))
				}
				out = &tla.FuncApp{Loc: fa.Loc, Func: out, Args: args}
			}
			return out, true
		}
		return nil, false
	}
	return tla.Rewrite(x, f)
}

// withReads performs the reads in order, then the statements k builds.
// A read whose mapping macro ends a path without yielding gives no value:
// on that path the statement that reads is skipped, as in PGo, and the
// step goes on with what skip builds (the statements after it).
func (g *gen) withReads(reads []*read, e *env, k, skip func() []Stmt) []Stmt {
	if len(reads) == 0 {
		return k()
	}
	r := reads[0]
	target := r.target()
	m := r.res.mapping
	me := &env{names: map[string]string{}, res: map[string]*resource{}, labels: e.labels, self: e.self,
		dollar: lhsExpr(target), dollarLHS: &target, where: "mapping macro " + m.Name + " read"}
	me.yield = func(v tla.Expr) []Stmt {
		return []Stmt{&With{Bindings: []Binding{{Name: r.name, Op: "=", Expr: v}},
			Body: g.withReads(reads[1:], e, k, skip)}}
	}
	me.noYield = skip
	return g.tr(g.freshWiths(g.expandMacros(m.Read, 0)), me)
}

// write performs a write of value to a mapped resource through its
// mapping macro, then the statements k builds. On a path of the write
// body that ends without a yield the resource is not assigned (PGo's
// meaning): only the body's other effects happen, then k.
func (g *gen) write(target LHS, m *MappingMacro, value tla.Expr, e *env, k func() []Stmt) []Stmt {
	vname := g.fresh("value")
	me := &env{names: map[string]string{}, res: map[string]*resource{}, labels: e.labels, self: e.self,
		dollar: lhsExpr(target), dollarLHS: &target, dollarVal: &tla.Ident{Name: vname},
		where: "mapping macro " + m.Name + " write"}
	me.yield = func(v tla.Expr) []Stmt {
		return append([]Stmt{&Assign{Pairs: []AssignPair{{LHS: copyLHS(target), RHS: v}}}}, k()...)
	}
	me.noYield = k
	return []Stmt{&With{Bindings: []Binding{{Name: vname, Op: "=", Expr: value}},
		Body: g.tr(g.freshWiths(g.expandMacros(m.Write, 0)), me)}}
}

// tr translates lowered statements (or a mapping macro body) to PlusCal.
func (g *gen) tr(ss []Stmt, e *env) []Stmt {
	if g.budget < 0 {
		return nil
	}
	if len(ss) == 0 {
		if e.noYield != nil {
			return e.noYield()
		}
		return nil
	}
	g.budget--
	if g.budget == 0 {
		g.errorf(ss[0].Position(), KindUnsupported, "the algorithm expands to more than %d PlusCal statements: every path through a step is generated separately, so break long runs of unlabeled if, either and mapped reads with labels", maxOutput)
		g.budget = -1
		return nil
	}
	st, rest := ss[0], ss[1:]
	k := func() []Stmt { return g.tr(rest, e) }
	var reads []*read
	x := func(ex tla.Expr) tla.Expr { return g.rx(ex, e, &reads) }
	switch s := st.(type) {
	case *Labeled:
		// Only in mapping macro bodies, where the checker rejects labels.
		return g.tr(append([]Stmt{s.Stmt}, rest...), e)
	case *Skip:
		return append([]Stmt{&Skip{Pos: s.Pos}}, k()...)
	case *Await:
		c := x(s.Cond)
		return g.withReads(reads, e, func() []Stmt { return append([]Stmt{&Await{Pos: s.Pos, Cond: c, When: s.When}}, k()...) }, k)
	case *Print:
		c := x(s.Expr)
		return g.withReads(reads, e, func() []Stmt { return append([]Stmt{&Print{Pos: s.Pos, Expr: c}}, k()...) }, k)
	case *Assert:
		c := x(s.Expr)
		return g.withReads(reads, e, func() []Stmt { return append([]Stmt{&Assert{Pos: s.Pos, Expr: c}}, k()...) }, k)
	case *Yield:
		v := x(s.Expr)
		if e.yield == nil {
			g.errorf(s.Pos, KindYieldOutsideMapping, "yield outside a mapping macro")
			return nil
		}
		return g.withReads(reads, e, func() []Stmt { return e.yield(v) }, k)
	case *Goto:
		lbl := s.Label
		if lbl != "Done" {
			lbl = e.labels[s.Label]
		}
		return []Stmt{&Goto{Pos: s.Pos, Label: lbl}}
	case *Return:
		return []Stmt{&Return{Pos: s.Pos}}
	case *If:
		c := x(s.Cond)
		return g.withReads(reads, e, func() []Stmt {
			return []Stmt{&If{Pos: s.Pos, Cond: c, Then: g.tr(concat(s.Then, rest), e), Else: g.tr(concat(s.Else, rest), e)}}
		}, func() []Stmt { return g.tr(concat(g.after[s], rest), e) })
	case *Either:
		out := &Either{Pos: s.Pos}
		for _, b := range s.Branches {
			out.Branches = append(out.Branches, g.tr(concat(b, rest), e))
		}
		return []Stmt{out}
	case *With:
		in := e.clone()
		w := &With{Pos: s.Pos}
		for _, b := range s.Bindings {
			ex := g.rx(b.Expr, in, &reads)
			name := b.Name
			if g.reserved[name] && !g.synth[name] {
				name = g.fresh(name)
			}
			in.names[b.Name] = name
			delete(in.res, b.Name)
			w.Bindings = append(w.Bindings, Binding{Pos: b.Pos, Name: name, Op: b.Op, Expr: ex})
		}
		return g.withReads(reads, e, func() []Stmt {
			w.Body = g.tr(concat(s.Body, rest), in)
			return []Stmt{w}
		}, func() []Stmt { return g.tr(concat(g.after[s], rest), e) })
	case *Call:
		return g.call(s, e, k)
	case *Assign:
		return g.assign(s, e, k)
	case *While:
		g.errorf(s.Pos, KindMissingLabel, "a while statement must be labeled")
		return k()
	case *MacroCall:
		g.errorf(s.Pos, KindRecursiveMacro, "macro %s is expanded too deeply", s.Name)
		return k()
	}
	return k()
}

func concat(a, b []Stmt) []Stmt {
	out := make([]Stmt, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

// target translates an assignment target. It returns the mapped resource
// written, if any.
func (g *gen) target(l LHS, e *env, reads *[]*read) (LHS, *resource) {
	out := LHS{Pos: l.Pos}
	for _, sel := range l.Sels {
		ns := Selector{Field: sel.Field}
		for _, ix := range sel.Index {
			ns.Index = append(ns.Index, g.rx(ix, e, reads))
		}
		out.Sels = append(out.Sels, ns)
	}
	switch {
	case l.Name == "$variable" && e.dollarLHS != nil:
		base := copyLHS(*e.dollarLHS)
		base.Pos = l.Pos
		base.Sels = append(base.Sels, out.Sels...)
		return base, nil
	case e.res[l.Name] != nil:
		r := e.res[l.Name]
		out.Name = r.name
		if r.fixed != nil {
			out.Sels = append([]Selector{{Index: r.fixed}}, out.Sels...)
		}
		if r.mapping != nil {
			if len(out.Sels) != r.index+len(r.fixed) {
				g.errorf(l.Pos, KindArityMismatch, "a write to the mapped resource %s must assign it whole: %d index(es), not %d", l.Name, r.index, len(out.Sels))
			}
			return out, r
		}
		return out, nil
	case e.names[l.Name] != "":
		out.Name = e.names[l.Name]
	default:
		out.Name = l.Name
	}
	return out, nil
}

func (g *gen) assign(s *Assign, e *env, k func() []Stmt) []Stmt {
	var reads []*read
	type pair struct {
		lhs LHS
		rhs tla.Expr
		res *resource
	}
	var pairs []pair
	mapped := false
	for _, p := range s.Pairs {
		l, r := g.target(p.LHS, e, &reads)
		pairs = append(pairs, pair{lhs: l, rhs: g.rx(p.RHS, e, &reads), res: r})
		mapped = mapped || r != nil
	}
	if !mapped {
		return g.withReads(reads, e, func() []Stmt {
			a := &Assign{Pos: s.Pos}
			for _, p := range pairs {
				a.Pairs = append(a.Pairs, AssignPair{LHS: p.lhs, RHS: p.rhs})
			}
			return append([]Stmt{a}, k()...)
		}, k)
	}
	if len(pairs) == 1 {
		p := pairs[0]
		return g.withReads(reads, e, func() []Stmt { return g.write(p.lhs, p.res.mapping, p.rhs, e, k) }, k)
	}
	// Several targets, some mapped: evaluate every right-hand side first
	// (|| semantics), then assign the plain targets and write the mapped
	// ones in order.
	return g.withReads(reads, e, func() []Stmt {
		bind := &With{Pos: s.Pos}
		var plain []AssignPair
		var writes []pair
		for _, p := range pairs {
			n := g.fresh("rhs")
			bind.Bindings = append(bind.Bindings, Binding{Name: n, Op: "=", Expr: p.rhs})
			v := &tla.Ident{Name: n}
			if p.res == nil {
				plain = append(plain, AssignPair{LHS: p.lhs, RHS: v})
			} else {
				writes = append(writes, pair{lhs: p.lhs, rhs: v, res: p.res})
			}
		}
		var chain func(i int) []Stmt
		chain = func(i int) []Stmt {
			if i == len(writes) {
				return k()
			}
			w := writes[i]
			return g.write(w.lhs, w.res.mapping, w.rhs, e, func() []Stmt { return chain(i + 1) })
		}
		var body []Stmt
		if len(plain) > 0 {
			body = append(body, &Assign{Pos: s.Pos, Pairs: plain})
		}
		bind.Body = append(body, chain(0)...)
		return []Stmt{bind}
	}, k)
}

// call translates a procedure call, specialising the procedure for the
// resources its ref parameters are bound to.
func (g *gen) call(s *Call, e *env, k func() []Stmt) []Stmt {
	p := g.procs[s.Proc]
	var reads []*read
	bind := make([]*resource, len(p.Params))
	var vals []*Arg
	for i, a := range s.Args {
		if a.Ref {
			switch {
			case e.res[a.Name] != nil:
				r := *e.res[a.Name]
				bind[i] = &r
			default:
				bind[i] = &resource{name: a.Name, index: p.Params[i].Index}
			}
			continue
		}
		vals = append(vals, &Arg{Pos: a.Pos, Expr: g.rx(a.Expr, e, &reads)})
	}
	name := g.spec(p, bind)
	return g.withReads(reads, e, func() []Stmt {
		return append([]Stmt{&Call{Pos: s.Pos, Proc: name, Args: vals}}, k()...)
	}, k)
}

// spec returns the output procedure for p with its ref parameters bound.
func (g *gen) spec(p *Procedure, bind []*resource) string {
	var parts []string
	for _, b := range bind {
		if b != nil {
			parts = append(parts, b.key())
		} else {
			parts = append(parts, "-")
		}
	}
	key := p.Name + "(" + strings.Join(parts, ",") + ")"
	if n, ok := g.specOf[key]; ok {
		return n
	}
	name := g.keep(p.Name)
	g.specOf[key] = name
	out := &Procedure{Pos: p.Pos, Name: name}
	g.specs = append(g.specs, out)
	e := &env{names: map[string]string{}, res: map[string]*resource{}, labels: map[string]string{}, where: "procedure " + p.Name}
	for i, par := range p.Params {
		if par.Ref {
			e.res[par.Name] = bind[i]
			continue
		}
		n := g.keep(par.Name)
		e.names[par.Name] = n
		np := &Param{Pos: par.Pos, Name: n}
		if par.Init != nil {
			np.Init = g.plainExpr(par.Init, e)
		}
		out.Params = append(out.Params, np)
	}
	for _, l := range p.Locals {
		n := g.keep(l.Name)
		d := &VarDecl{Pos: l.Pos, Name: n, Op: l.Op}
		if l.Init != nil {
			d.Init = g.plainExpr(l.Init, e)
		}
		e.names[l.Name] = n
		out.Locals = append(out.Locals, d)
	}
	g.labelEnv(p.Body, e, "procedure "+p.Name, false)
	out.Body = g.body(p.Body, e, true, "procedure "+p.Name)
	return name
}

// ---- one assignment per variable per step ----

// fixAssign rewrites a step in which a variable is assigned on a path
// more than once: each assignment binds the new value with a with, later
// expressions read the bound name, and one assignment at the end of each
// path stores the last value (PlusCal allows one assignment per variable
// per step; MPCal does not, since mapping macros hide assignments).
func (g *gen) fixAssign(ss []Stmt) []Stmt {
	multi := map[string]bool{}
	var count func(ss []Stmt, done map[string]int)
	count = func(ss []Stmt, done map[string]int) {
		for i, st := range ss {
			switch s := st.(type) {
			case *Assign:
				here := map[string]bool{}
				for _, p := range s.Pairs {
					here[p.LHS.Name] = true
				}
				for n := range here {
					done[n]++
					if done[n] > 1 {
						multi[n] = true
					}
				}
			case *If:
				count(concat(s.Then, ss[i+1:]), maps.Clone(done))
				count(concat(s.Else, ss[i+1:]), maps.Clone(done))
				return
			case *Either:
				for _, b := range s.Branches {
					count(concat(b, ss[i+1:]), maps.Clone(done))
				}
				return
			case *With:
				count(concat(s.Body, ss[i+1:]), done)
				return
			}
		}
	}
	count(ss, map[string]int{})
	if len(multi) == 0 {
		return ss
	}
	return g.alias(ss, multi, map[string]string{})
}

// alias rewrites ss given the current alias of each multiply-assigned
// variable.
func (g *gen) alias(ss []Stmt, multi map[string]bool, cur map[string]string) []Stmt {
	sub := func(e tla.Expr) tla.Expr {
		if e == nil {
			return nil
		}
		return tla.Rewrite(e, func(x tla.Expr, s *tla.Scope) (tla.Expr, bool) {
			if id, ok := x.(*tla.Ident); ok && cur[id.Name] != "" && !s.Bound(id.Name) {
				return &tla.Ident{Loc: id.Loc, Name: cur[id.Name]}, true
			}
			return nil, false
		})
	}
	flush := func() []Stmt {
		var names []string
		for n, a := range cur {
			if a != "" {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		var out []Stmt
		for _, n := range names {
			out = append(out, &Assign{Pairs: []AssignPair{{LHS: LHS{Name: n}, RHS: &tla.Ident{Name: cur[n]}}}})
		}
		return out
	}
	subLHS := func(l LHS) LHS {
		n := LHS{Pos: l.Pos, Name: l.Name}
		for _, s := range l.Sels {
			ns := Selector{Field: s.Field}
			for _, ix := range s.Index {
				ns.Index = append(ns.Index, sub(ix))
			}
			n.Sels = append(n.Sels, ns)
		}
		return n
	}
	if len(ss) == 0 {
		return flush()
	}
	if g.budget--; g.budget < 0 {
		return nil
	}
	st, rest := ss[0], ss[1:]
	switch s := st.(type) {
	case *Goto, *Return:
		return append(flush(), s)
	case *Call:
		c := mapExprs(s, sub, subLHS)
		return append(append(flush(), c), g.alias(rest, multi, map[string]string{})...)
	case *If:
		return []Stmt{&If{Pos: s.Pos, Cond: sub(s.Cond), Then: g.alias(concat(s.Then, rest), multi, maps.Clone(cur)), Else: g.alias(concat(s.Else, rest), multi, maps.Clone(cur))}}
	case *Either:
		out := &Either{Pos: s.Pos}
		for _, b := range s.Branches {
			out.Branches = append(out.Branches, g.alias(concat(b, rest), multi, maps.Clone(cur)))
		}
		return []Stmt{out}
	case *With:
		w := &With{Pos: s.Pos}
		for _, b := range s.Bindings {
			w.Bindings = append(w.Bindings, Binding{Pos: b.Pos, Name: b.Name, Op: b.Op, Expr: sub(b.Expr)})
		}
		w.Body = g.alias(concat(s.Body, rest), multi, cur)
		return []Stmt{w}
	case *Assign:
		var plain []AssignPair
		type upd struct {
			sels []Selector
			rhs  tla.Expr
		}
		byVar := map[string][]upd{}
		var order []string
		for _, p := range s.Pairs {
			l := subLHS(p.LHS)
			r := sub(p.RHS)
			if !multi[l.Name] {
				plain = append(plain, AssignPair{LHS: l, RHS: r})
				continue
			}
			if _, ok := byVar[l.Name]; !ok {
				order = append(order, l.Name)
			}
			byVar[l.Name] = append(byVar[l.Name], upd{sels: l.Sels, rhs: r})
		}
		var out []Stmt
		if len(plain) > 0 {
			out = append(out, &Assign{Pos: s.Pos, Pairs: plain})
		}
		if len(order) == 0 {
			return append(out, g.alias(rest, multi, cur)...)
		}
		w := &With{Pos: s.Pos}
		next := maps.Clone(cur)
		for _, n := range order {
			var old tla.Expr = &tla.Ident{Name: n}
			if cur[n] != "" {
				old = &tla.Ident{Name: cur[n]}
			}
			var val tla.Expr
			ex := &tla.Except{Func: old}
			for _, u := range byVar[n] {
				if len(u.sels) == 0 {
					val = u.rhs
					ex = nil
					break
				}
				var path []tla.ExceptSel
				for _, s := range u.sels {
					path = append(path, tla.ExceptSel{Field: s.Field, Index: s.Index})
				}
				ex.Updates = append(ex.Updates, tla.ExceptUpdate{Path: path, Value: u.rhs})
			}
			if ex != nil {
				val = ex
			}
			a := g.fresh(n)
			w.Bindings = append(w.Bindings, Binding{Name: a, Op: "=", Expr: val})
			next[n] = a
		}
		w.Body = g.alias(rest, multi, next)
		return append(out, w)
	default:
		return append([]Stmt{mapExprs(st, sub, subLHS)}, g.alias(rest, multi, cur)...)
	}
}
