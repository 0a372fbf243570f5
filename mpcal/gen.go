package mpcal

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"strata/mpcal/tla"
)

// Output is the result of compiling an MPCal algorithm to PlusCal.
type Output struct {
	Alg *Algorithm // the PlusCal algorithm
	// Labels maps each label of the output to the MPCal source position
	// of the label it came from, so that a TLC trace (whose actions are
	// named after labels) can be shown in the user's source terms.
	Labels map[string]Pos
	// Stmts maps each output label to the position of the MPCal statement
	// the label is on.
	Stmts map[string]Pos
	// Origin maps each output label to "archetype A" / "procedure P" /
	// "process P" and the source label name.
	Origin map[string]string
}

// PlusCal returns the generated PlusCal text.
func (o *Output) PlusCal() string { return FormatAlgorithm(o.Alg) }

// Compile checks an MPCal file and translates its algorithm to PlusCal:
// each archetype instance becomes a process with the archetype's body
// inlined, refs bound to the global variables, mapping macros' read and
// write bodies inlined (reads become with bindings carrying the yielded
// value, writes assignments of the yielded value), macros expanded, MPCal
// procedures specialised per ref binding, implicit control flow made
// explicit (each step ends in a goto), and a variable assigned more than
// once in a step rewritten through with bindings so the output is valid
// PlusCal.
func Compile(f *File) (*Output, error) {
	c, err := check(f)
	if err != nil {
		return nil, err
	}
	if !f.Alg.MPCal {
		return nil, fmt.Errorf("%s: the algorithm is plain PlusCal (--algorithm), not MPCal: pcal.trans translates it directly", f.Name)
	}
	g := newGen(f, c.module)
	out := g.run()
	if len(g.errs) > 0 {
		g.errs.sort()
		return nil, g.errs
	}
	return out, nil
}

// resource is what a ref parameter (or a mapped value parameter) stands
// for in one instance: a global variable (or the process's own local),
// accessed directly or through a mapping macro.
type resource struct {
	name    string     // output variable
	fixed   []tla.Expr // an index always applied first (v[self] for a hoisted local)
	index   int
	mapping *MappingMacro
}

func (r *resource) key() string {
	m := ""
	if r.mapping != nil {
		m = r.mapping.Name
	}
	f := ""
	if r.fixed != nil {
		f = "[self]"
	}
	return fmt.Sprintf("%s%s/%d/%s", r.name, f, r.index, m)
}

// maxOutput bounds the statements the compiler generates. Each path
// through a step is generated separately (the statements after an
// unlabeled if are copied into both branches, a continuation into every
// yield of a mapping macro), so a step with many consecutive unlabeled ifs
// grows exponentially; past this bound the compiler reports it instead of
// running out of memory.
const maxOutput = 200000

// env is the translation context of one body.
type env struct {
	names  map[string]string    // source variable → output variable
	res    map[string]*resource // ref (and mapped) parameters
	self   tla.Expr             // replaces self (nil: self stays)
	labels map[string]string    // source label → output label
	// In a mapping macro body: $variable's expression and target, $value.
	dollar    tla.Expr
	dollarLHS *LHS
	dollarVal tla.Expr
	yield     func(e tla.Expr) []Stmt // what a yield becomes
	// noYield is what the end of a mapping macro body's path without a
	// yield becomes: the rest of the step after a write, the statement
	// after the one that reads after a read.
	noYield func() []Stmt
	where   string
}

func (e *env) clone() *env {
	n := *e
	n.names = map[string]string{}
	for k, v := range e.names {
		n.names[k] = v
	}
	n.res = map[string]*resource{}
	for k, v := range e.res {
		n.res[k] = v
	}
	return &n
}

type gen struct {
	f        *File
	a        *Algorithm
	reserved map[string]bool // names that exist in the output's TLA+ namespace
	mention  map[string]bool // every identifier in the file
	errs     ErrorList
	out      *Algorithm
	specs    []*Procedure      // specialised procedures, in creation order
	specOf   map[string]string // key → output name
	labels   map[string]Pos
	stmts    map[string]Pos
	origin   map[string]string
	synth    map[string]bool // with names the compiler made up
	// after maps a lowered if or with to the lowered statements that
	// follow it (copied into its branches): where a step goes on when a
	// mapped read in its condition or bindings does not yield.
	after      map[Stmt][]Stmt
	budget     int // statements left to generate (see maxOutput)
	nextSuffix map[string]int
	macros     map[string]*Macro
	procs      map[string]*Procedure
	archs      map[string]*Archetype
	maps       map[string]*MappingMacro
}

func newGen(f *File, module map[string]bool) *gen {
	g := &gen{f: f, a: f.Alg, reserved: map[string]bool{}, mention: map[string]bool{},
		specOf: map[string]string{}, synth: map[string]bool{}, after: map[Stmt][]Stmt{},
		budget: maxOutput, nextSuffix: map[string]int{},
		labels: map[string]Pos{}, stmts: map[string]Pos{}, origin: map[string]string{},
		macros: map[string]*Macro{}, procs: map[string]*Procedure{},
		archs: map[string]*Archetype{}, maps: map[string]*MappingMacro{}}
	if toks, err := tla.Tokenize(f.Name, f.Src); err == nil {
		for _, t := range toks {
			if t.Kind == tla.TokIdent {
				g.mention[t.Text] = true
			}
		}
	}
	for n := range module {
		g.reserved[n] = true
	}
	for _, n := range []string{"self", "pc", "stack", "Done", "Error", "defaultInitValue", "vars", "ProcSet", "Init", "Next", "Spec", "Termination", "Terminating"} {
		g.reserved[n] = true
	}
	for _, v := range g.a.Globals {
		g.reserved[v.Name] = true
	}
	for _, d := range g.a.Defines {
		for _, n := range tla.UnitNames(d) {
			g.reserved[n] = true
		}
	}
	for _, p := range g.a.Processes {
		g.reserved[p.Name] = true
	}
	for _, m := range g.a.Macros {
		g.macros[m.Name] = m
	}
	for _, p := range g.a.Procedures {
		g.procs[p.Name] = p
	}
	for _, ar := range g.a.Archetypes {
		g.archs[ar.Name] = ar
	}
	for _, m := range g.a.MappingMacros {
		g.maps[m.Name] = m
	}
	return g
}

func (g *gen) errorf(pos Pos, kind, format string, args ...any) {
	if pos.File == "" {
		pos.File = g.f.Name
	}
	g.errs = append(g.errs, &Error{Pos: pos, Kind: kind, Msg: fmt.Sprintf(format, args...)})
}

// keep claims name for the output if it is free, else a fresh variant.
func (g *gen) keep(name string) string {
	if !g.reserved[name] {
		g.reserved[name] = true
		return name
	}
	return g.fresh(name)
}

// fresh returns a new name based on base that is neither reserved nor
// mentioned anywhere in the file.
func (g *gen) fresh(base string) string {
	base = strings.TrimPrefix(base, "$")
	// Counting on from the last number given for this base keeps naming
	// linear in the number of names.
	for i := g.nextSuffix[base]; ; i++ {
		n := base + strconv.Itoa(i)
		if !g.reserved[n] && !g.mention[n] {
			g.reserved[n] = true
			g.nextSuffix[base] = i + 1
			return n
		}
	}
}

func (g *gen) run() *Output {
	a := g.a
	g.out = &Algorithm{Name: a.Name, Globals: append([]*VarDecl(nil), a.Globals...), Defines: a.Defines}
	// Plain-process labels keep their names; claim them first so that
	// instances' copies of archetype labels get fresh names on a clash.
	for _, p := range a.Processes {
		if p.Instance == nil {
			g.claimLabels(p.Body)
		}
	}
	for _, p := range a.Processes {
		var proc *Process
		if p.Instance != nil {
			proc = g.instance(p)
		} else {
			proc = g.plainProcess(p)
		}
		if proc != nil {
			g.out.Processes = append(g.out.Processes, proc)
		}
	}
	if a.Body != nil {
		e := &env{names: map[string]string{}, res: map[string]*resource{}, labels: map[string]string{}, where: "algorithm " + a.Name}
		g.out.Body = g.body(a.Body, e, false, "algorithm "+a.Name)
	}
	// Specialised procedures in the order they were first called.
	g.out.Procedures = g.specs
	return &Output{Alg: g.out, Labels: g.labels, Stmts: g.stmts, Origin: g.origin}
}

func (g *gen) claimLabels(ss []Stmt) {
	for _, st := range ss {
		inner, l := unlabel(st)
		if l != nil {
			g.reserved[l.Label] = true
		}
		for _, b := range children(inner) {
			g.claimLabels(b)
		}
	}
}

// labelEnv names the output labels of a body: the source name if free.
func (g *gen) labelEnv(ss []Stmt, e *env, origin string, plain bool) {
	var walk func(ss []Stmt)
	walk = func(ss []Stmt) {
		for _, st := range ss {
			inner, l := unlabel(st)
			if l != nil {
				out := l.Label
				if !plain {
					out = g.keep(l.Label)
				}
				e.labels[l.Label] = out
				g.labels[out] = l.Pos
				g.stmts[out] = l.Stmt.Position()
				g.origin[out] = origin + " label " + l.Label
			}
			for _, b := range children(inner) {
				walk(b)
			}
		}
	}
	walk(ss)
}

func (g *gen) instance(p *Process) *Process {
	in := p.Instance
	ar := g.archs[in.Archetype]
	e := &env{names: map[string]string{}, res: map[string]*resource{}, labels: map[string]string{}, where: "archetype " + ar.Name}
	if p.Op == "=" {
		e.self = p.ID
	}
	out := &Process{Pos: p.Pos, Fair: p.Fair, Name: p.Name, Op: p.Op, ID: p.ID}
	hoist := g.refLocals(ar.Body)
	mapOf := map[int]*MappingMacro{}
	for _, m := range in.Mappings {
		idx := m.Position - 1
		if m.Position == 0 {
			for i, a := range in.Args {
				if a.Ref && a.Name == m.Name {
					idx = i
				}
			}
		}
		mapOf[idx] = g.maps[m.Macro]
	}
	for i, par := range ar.Params {
		arg := in.Args[i]
		if par.Ref {
			e.res[par.Name] = &resource{name: arg.Name, index: par.Index, mapping: mapOf[i]}
			continue
		}
		name := g.keep(par.Name)
		// The process's name stands for its id in the arguments: self,
		// which an = process's id then replaces.
		val := substExpr(arg.Expr, p.Name, &tla.Ident{Name: "self"})
		init := g.plainExpr(val, &env{names: map[string]string{}, res: map[string]*resource{}, self: e.self})
		g.local(p, out, e, hoist, par.Name, &VarDecl{Pos: par.Pos, Name: name, Op: "=", Init: init})
		if m := mapOf[i]; m != nil {
			r := e.res[par.Name]
			if r == nil {
				r = &resource{name: name}
				e.res[par.Name] = r
			}
			r.mapping = m
		}
	}
	for _, l := range ar.Locals {
		g.local(p, out, e, hoist, l.Name, g.localDecl(l, e))
	}
	g.labelEnv(ar.Body, e, "archetype "+ar.Name, false)
	out.Body = g.body(ar.Body, e, false, "archetype "+ar.Name)
	return out
}

// localDecl translates a local variable's declaration to a process
// variable with a free name.
func (g *gen) localDecl(l *VarDecl, e *env) *VarDecl {
	d := &VarDecl{Pos: l.Pos, Name: g.keep(l.Name), Op: l.Op}
	if l.Init != nil {
		d.Init = g.plainExpr(l.Init, e)
	}
	return d
}

// refLocals returns the names a body (or a macro it calls) passes by ref
// to a procedure.
func (g *gen) refLocals(body []Stmt) map[string]bool {
	out := map[string]bool{}
	walkStmts(g.expandMacros(body, 0), func(s Stmt) Stmt {
		if c, ok := s.(*Call); ok {
			for _, a := range c.Args {
				if a.Ref {
					out[a.Name] = true
				}
			}
		}
		return s
	})
	return out
}

// local declares a process-local variable. One that the body passes by
// ref to a procedure cannot stay a process variable (PlusCal procedures
// cannot reach those): it becomes a global variable holding one value per
// process, [self \in S |-> init], which is how the PlusCal translator
// represents process variables anyway, so the state space is the same;
// the process and the procedures reach it as v[self].
func (g *gen) local(p *Process, out *Process, e *env, hoist map[string]bool, src string, d *VarDecl) {
	if !hoist[src] {
		e.names[src] = d.Name
		out.Locals = append(out.Locals, d)
		return
	}
	r := &resource{name: d.Name}
	if p.Op == "\\in" {
		self := []tla.Bound{{Names: []*tla.Ident{{Name: "self"}}, Set: p.ID}}
		switch d.Op {
		case "=":
			d = &VarDecl{Pos: d.Pos, Name: d.Name, Op: "=", Init: &tla.FuncCons{Bounds: self, Body: d.Init}}
		case "\\in":
			d = &VarDecl{Pos: d.Pos, Name: d.Name, Op: "\\in", Init: &tla.FuncSet{Dom: p.ID, Rng: d.Init}}
		default:
			d = &VarDecl{Pos: d.Pos, Name: d.Name, Op: "=", Init: &tla.FuncCons{Bounds: self, Body: &tla.Ident{Name: "defaultInitValue"}}}
		}
		r.fixed = []tla.Expr{&tla.Ident{Name: "self"}}
	}
	g.out.Globals = append(g.out.Globals, d)
	e.res[src] = r
}

func (g *gen) plainProcess(p *Process) *Process {
	e := &env{names: map[string]string{}, res: map[string]*resource{}, labels: map[string]string{}, where: "process " + p.Name}
	if p.Op == "=" {
		e.self = p.ID
	}
	out := &Process{Pos: p.Pos, Fair: p.Fair, Name: p.Name, Op: p.Op, ID: p.ID}
	hoist := g.refLocals(p.Body)
	for _, l := range p.Locals {
		g.local(p, out, e, hoist, l.Name, g.localDecl(l, e))
	}
	g.labelEnv(p.Body, e, "process "+p.Name, true)
	out.Body = g.body(p.Body, e, false, "process "+p.Name)
	return out
}

// plainExpr translates an expression that may not read mapped resources
// (initial values).
func (g *gen) plainExpr(x tla.Expr, e *env) tla.Expr {
	var reads []*read
	y := g.rx(x, e, &reads)
	if len(reads) > 0 {
		g.errorf(x.Position(), KindUnsupported, "a mapped resource cannot be read in an initial value")
	}
	return y
}

// ---- bodies ----

// block is one label's step after lowering: a tree of statements whose
// every path ends in a goto, return or call (or falls off a procedure).
type block struct {
	label string
	mod   string
	pos   Pos
	body  []Stmt
}

// body compiles a process, procedure or archetype body to PlusCal.
func (g *gen) body(ss []Stmt, e *env, proc bool, origin string) []Stmt {
	ss = g.expandMacros(ss, 0)
	lw := &lowerer{g: g}
	var after []Stmt
	if !proc {
		after = []Stmt{&Goto{Label: "Done"}}
	}
	lw.seq(ss, after)
	sort.SliceStable(lw.blocks, func(i, j int) bool { return lw.blocks[i].pos.Offset < lw.blocks[j].pos.Offset })
	var out []Stmt
	for _, b := range lw.blocks {
		body := g.tr(b.body, e)
		body = g.fixAssign(body)
		if len(body) == 0 {
			body = []Stmt{&Skip{}}
		}
		out = append(out, &Labeled{Label: e.labels[b.label], Mod: b.mod, Stmt: body[0]})
		out = append(out, body[1:]...)
	}
	return out
}

// lowerer splits a body into blocks, making control flow explicit: a
// while becomes an if whose true branch ends by going back to the loop's
// label; the statements after an if, either or with (up to the next
// label) are copied into each branch so that every compound statement is
// the last of its list.
type lowerer struct {
	g      *gen
	blocks []*block
}

func (lw *lowerer) seq(ss []Stmt, after []Stmt) []Stmt {
	if len(ss) == 0 {
		return after
	}
	if l, ok := ss[0].(*Labeled); ok {
		b := &block{label: l.Label, mod: l.Mod, pos: l.Pos}
		lw.blocks = append(lw.blocks, b)
		if w, ok := l.Stmt.(*While); ok {
			done := lw.seq(ss[1:], after)
			loop := &If{Pos: w.Pos, Cond: w.Cond,
				Then: lw.seq(w.Body, []Stmt{&Goto{Label: l.Label}}),
				Else: done}
			lw.g.after[loop] = done
			b.body = []Stmt{loop}
		} else {
			b.body = lw.stmt(l.Stmt, ss[1:], after)
		}
		return []Stmt{&Goto{Label: l.Label}}
	}
	return lw.stmt(ss[0], ss[1:], after)
}

func (lw *lowerer) stmt(s Stmt, rest, after []Stmt) []Stmt {
	switch x := s.(type) {
	case *If:
		cont := lw.seq(rest, after)
		out := &If{Pos: x.Pos, Cond: x.Cond, Then: lw.seq(x.Then, cont), Else: lw.seq(x.Else, cont)}
		lw.g.after[out] = cont
		return []Stmt{out}
	case *Either:
		cont := lw.seq(rest, after)
		out := &Either{Pos: x.Pos}
		for _, b := range x.Branches {
			out.Branches = append(out.Branches, lw.seq(b, cont))
		}
		return []Stmt{out}
	case *With:
		cont := lw.seq(rest, after)
		w := &With{Pos: x.Pos, Bindings: x.Bindings, Body: x.Body}
		// The continuation moves inside the with: rename bindings it
		// would capture.
		if len(cont) > 0 {
			used := stmtNames(cont)
			for i, b := range w.Bindings {
				if used[b.Name] {
					if i == 0 {
						w.Bindings = append([]Binding(nil), x.Bindings...)
					}
					n := lw.g.fresh(b.Name)
					lw.g.synth[n] = true
					w.Body = renameStmts(w.Body, b.Name, n)
					for j := i + 1; j < len(w.Bindings); j++ {
						w.Bindings[j].Expr = renameExpr(w.Bindings[j].Expr, b.Name, n)
					}
					w.Bindings[i].Name = n
				}
			}
		}
		w.Body = lw.seq(w.Body, cont)
		lw.g.after[w] = cont
		return []Stmt{w}
	case *While:
		// Unlabeled while: the checker reports it.
		return append([]Stmt{x}, lw.seq(rest, after)...)
	case *Goto, *Return:
		lw.seq(rest, after) // register any labeled blocks that follow
		return []Stmt{s}
	case *Call:
		return append([]Stmt{s}, lw.seq(rest, after)...)
	}
	return append([]Stmt{s}, lw.seq(rest, after)...)
}

// expandMacros replaces macro calls by the macros' bodies with the
// arguments substituted.
func (g *gen) expandMacros(ss []Stmt, depth int) []Stmt {
	var out []Stmt
	for _, st := range ss {
		inner, l := unlabel(st)
		var rep []Stmt
		if mc, ok := inner.(*MacroCall); ok && depth < 64 {
			m := g.macros[mc.Name]
			body := m.Body
			// Rename the macro's with bindings so that they capture nothing
			// of the arguments.
			body = g.freshWiths(body)
			for i, p := range m.Params {
				body = substStmts(body, p.Name, mc.Args[i], g, mc.Pos)
			}
			rep = g.expandMacros(body, depth+1)
		} else {
			rep = []Stmt{mapChildren(inner, func(b []Stmt) []Stmt { return g.expandMacros(b, depth) })}
		}
		if l != nil {
			if len(rep) == 0 {
				rep = []Stmt{&Skip{Pos: l.Pos}}
			}
			rep[0] = &Labeled{Pos: l.Pos, Label: l.Label, Mod: l.Mod, Stmt: rep[0]}
		}
		out = append(out, rep...)
	}
	return out
}

// freshWiths renames every with binding in ss to a fresh name.
func (g *gen) freshWiths(ss []Stmt) []Stmt {
	var out []Stmt
	for _, st := range ss {
		inner, l := unlabel(st)
		if w, ok := inner.(*With); ok {
			nw := &With{Pos: w.Pos, Bindings: append([]Binding(nil), w.Bindings...), Body: w.Body}
			for i, b := range nw.Bindings {
				n := g.fresh(b.Name)
				g.synth[n] = true
				nw.Body = renameStmts(nw.Body, b.Name, n)
				for j := i + 1; j < len(nw.Bindings); j++ {
					nw.Bindings[j].Expr = renameExpr(nw.Bindings[j].Expr, b.Name, n)
				}
				nw.Bindings[i].Name = n
			}
			nw.Body = g.freshWiths(nw.Body)
			inner = nw
		} else {
			inner = mapChildren(inner, g.freshWiths)
		}
		if l != nil {
			inner = &Labeled{Pos: l.Pos, Label: l.Label, Mod: l.Mod, Stmt: inner}
		}
		out = append(out, inner)
	}
	return out
}

// mapChildren returns s with its nested statement lists transformed.
func mapChildren(s Stmt, f func([]Stmt) []Stmt) Stmt {
	switch x := s.(type) {
	case *If:
		return &If{Pos: x.Pos, Cond: x.Cond, Then: f(x.Then), Else: f(x.Else)}
	case *While:
		return &While{Pos: x.Pos, Cond: x.Cond, Body: f(x.Body)}
	case *Either:
		n := &Either{Pos: x.Pos}
		for _, b := range x.Branches {
			n.Branches = append(n.Branches, f(b))
		}
		return n
	case *With:
		return &With{Pos: x.Pos, Bindings: x.Bindings, Body: f(x.Body)}
	case *Labeled:
		r := f([]Stmt{x.Stmt})
		if len(r) == 1 {
			return &Labeled{Pos: x.Pos, Label: x.Label, Mod: x.Mod, Stmt: r[0]}
		}
	}
	return s
}

// mapExprs returns s with every expression (and assignment target index)
// transformed by f and every LHS by fl; nested lists are not visited.
func mapExprs(s Stmt, f func(tla.Expr) tla.Expr, fl func(LHS) LHS) Stmt {
	switch x := s.(type) {
	case *Assign:
		n := &Assign{Pos: x.Pos}
		for _, p := range x.Pairs {
			n.Pairs = append(n.Pairs, AssignPair{LHS: fl(p.LHS), RHS: f(p.RHS)})
		}
		return n
	case *If:
		return &If{Pos: x.Pos, Cond: f(x.Cond), Then: x.Then, Else: x.Else}
	case *While:
		return &While{Pos: x.Pos, Cond: f(x.Cond), Body: x.Body}
	case *With:
		n := &With{Pos: x.Pos, Body: x.Body}
		for _, b := range x.Bindings {
			n.Bindings = append(n.Bindings, Binding{Pos: b.Pos, Name: b.Name, Op: b.Op, Expr: f(b.Expr)})
		}
		return n
	case *Await:
		return &Await{Pos: x.Pos, Cond: f(x.Cond), When: x.When}
	case *Call:
		n := &Call{Pos: x.Pos, Proc: x.Proc, NamePos: x.NamePos}
		for _, a := range x.Args {
			if a.Ref {
				n.Args = append(n.Args, a)
			} else {
				n.Args = append(n.Args, &Arg{Pos: a.Pos, Expr: f(a.Expr)})
			}
		}
		return n
	case *MacroCall:
		n := &MacroCall{Pos: x.Pos, Name: x.Name}
		for _, a := range x.Args {
			n.Args = append(n.Args, f(a))
		}
		return n
	case *Print:
		return &Print{Pos: x.Pos, Expr: f(x.Expr)}
	case *Assert:
		return &Assert{Pos: x.Pos, Expr: f(x.Expr)}
	case *Yield:
		return &Yield{Pos: x.Pos, Expr: f(x.Expr)}
	}
	return s
}

// walkStmts applies a statement-local transformation to every statement
// in ss, recursively.
func walkStmts(ss []Stmt, f func(Stmt) Stmt) []Stmt {
	var out []Stmt
	for _, st := range ss {
		st = f(st)
		st = mapChildren(st, func(b []Stmt) []Stmt { return walkStmts(b, f) })
		out = append(out, st)
	}
	return out
}

func renameExpr(e tla.Expr, from, to string) tla.Expr {
	return substExpr(e, from, &tla.Ident{Name: to})
}

// substExpr replaces free occurrences of the name from by with.
func substExpr(e tla.Expr, from string, with tla.Expr) tla.Expr {
	if e == nil {
		return nil
	}
	return tla.Rewrite(e, func(x tla.Expr, s *tla.Scope) (tla.Expr, bool) {
		if id, ok := x.(*tla.Ident); ok && id.Name == from && !s.Bound(from) {
			return with, true
		}
		return nil, false
	})
}

// renameStmts renames the variable from in statements (stopping where a
// with rebinds it).
func renameStmts(ss []Stmt, from, to string) []Stmt {
	return substStmts(ss, from, &tla.Ident{Name: to}, nil, Pos{})
}

// substStmts substitutes an expression for a name in statements,
// including assignment targets (the expression must then be a variable,
// possibly indexed) and ref arguments.
func substStmts(ss []Stmt, from string, with tla.Expr, g *gen, at Pos) []Stmt {
	var out []Stmt
	for _, st := range ss {
		inner, l := unlabel(st)
		if w, ok := inner.(*With); ok {
			nw := &With{Pos: w.Pos, Body: w.Body}
			shadow := false
			for _, b := range w.Bindings {
				e := b.Expr
				if !shadow {
					e = substExpr(e, from, with)
				}
				nw.Bindings = append(nw.Bindings, Binding{Pos: b.Pos, Name: b.Name, Op: b.Op, Expr: e})
				shadow = shadow || b.Name == from
			}
			if !shadow {
				nw.Body = substStmts(w.Body, from, with, g, at)
			}
			inner = nw
		} else {
			inner = mapExprs(inner, func(e tla.Expr) tla.Expr { return substExpr(e, from, with) }, func(lh LHS) LHS {
				lh = copyLHS(lh)
				for i, sel := range lh.Sels {
					for j, ix := range sel.Index {
						lh.Sels[i].Index[j] = substExpr(ix, from, with)
					}
				}
				if lh.Name != from {
					return lh
				}
				base, ok := exprLHS(with)
				base = copyLHS(base)
				if !ok {
					if g != nil {
						g.errorf(at, KindAssignNonVariable, "the macro assigns its parameter %s, but the argument %s is not a variable", from, tla.FormatExpr(with))
					}
					return lh
				}
				base.Pos = lh.Pos
				base.Sels = append(base.Sels, lh.Sels...)
				return base
			})
			if c, ok := inner.(*Call); ok {
				if id, isID := with.(*tla.Ident); isID {
					for i, a := range c.Args {
						if a.Ref && a.Name == from {
							c.Args[i] = &Arg{Pos: a.Pos, Ref: true, Name: id.Name, Index: a.Index}
						}
					}
				}
			}
			inner = mapChildren(inner, func(b []Stmt) []Stmt { return substStmts(b, from, with, g, at) })
		}
		if l != nil {
			inner = &Labeled{Pos: l.Pos, Label: l.Label, Mod: l.Mod, Stmt: inner}
		}
		out = append(out, inner)
	}
	return out
}

// copyLHS deep-copies the selector slices so substitutions do not alias.
func copyLHS(l LHS) LHS {
	n := LHS{Pos: l.Pos, Name: l.Name}
	for _, s := range l.Sels {
		n.Sels = append(n.Sels, Selector{Field: s.Field, Index: append([]tla.Expr(nil), s.Index...)})
	}
	return n
}

// exprLHS turns x, x[i], x.f ... into an assignment target.
func exprLHS(e tla.Expr) (LHS, bool) {
	switch x := e.(type) {
	case *tla.Ident:
		return LHS{Name: x.Name}, true
	case *tla.FuncApp:
		l, ok := exprLHS(x.Func)
		if !ok {
			return l, false
		}
		l.Sels = append(l.Sels, Selector{Index: x.Args})
		return l, true
	case *tla.FieldAccess:
		l, ok := exprLHS(x.X)
		if !ok {
			return l, false
		}
		l.Sels = append(l.Sels, Selector{Field: x.Field})
		return l, true
	}
	return LHS{}, false
}

// lhsExpr is the expression reading an assignment target.
func lhsExpr(l LHS) tla.Expr {
	var e tla.Expr = &tla.Ident{Name: l.Name}
	for _, s := range l.Sels {
		if s.Index != nil {
			e = &tla.FuncApp{Func: e, Args: s.Index}
		} else {
			e = &tla.FieldAccess{X: e, Field: s.Field}
		}
	}
	return e
}

// stmtNames returns every name used in ss (expressions, targets, with
// bindings).
func stmtNames(ss []Stmt) map[string]bool {
	out := map[string]bool{}
	add := func(e tla.Expr) tla.Expr {
		if e != nil {
			for n := range tla.FreeNames(e) {
				out[n] = true
			}
		}
		return e
	}
	walkStmts(ss, func(s Stmt) Stmt {
		inner, _ := unlabel(s)
		if w, ok := inner.(*With); ok {
			for _, b := range w.Bindings {
				out[b.Name] = true
			}
		}
		mapExprs(inner, add, func(l LHS) LHS {
			out[l.Name] = true
			for _, s := range l.Sels {
				for _, e := range s.Index {
					add(e)
				}
			}
			return l
		})
		return s
	})
	return out
}
