package mpcal

import (
	"fmt"
	"strconv"
	"strings"

	"strata/mpcal/tla"
)

// goCont is what runs after a statement list: more statements (in their
// own scope), then their continuation; or, with jump set, a jump to a
// label. A nil *goCont is the end of the archetype (Done).
type goCont struct {
	stmts []Stmt
	env   *goEnv
	next  *goCont
	jump  string
}

// goSection is one label: its statement and what follows it in the same
// step.
type goSection struct {
	label  string
	pos    Pos
	stmt   Stmt
	rest   *goCont
	method string
}

// unitEnv binds the parameters and locals of an archetype or procedure
// and compiles the locals' declarations (distsys.LocalVar literals).
func (g *goGen) unitEnv(params []*Param, decls []*VarDecl) (*goEnv, []string) {
	env := &goEnv{names: map[string]*goBinding{}}
	for _, p := range params {
		if p.Ref && p.Index > 0 {
			env.names[p.Name] = &goBinding{kind: bindIndexed, goName: p.Name, index: p.Index}
		} else {
			env.names[p.Name] = &goBinding{kind: bindVar, goName: p.Name}
		}
	}
	// Locals are bound one by one: an initial value sees earlier locals.
	var locals []string
	for _, l := range decls {
		init := ""
		switch l.Op {
		case "=":
			init = g.expr(l.Init, env)
		case "\\in":
			init = fmt.Sprintf("c.Pick(e, %s)", g.expr(l.Init, env))
		}
		env.names[l.Name] = &goBinding{kind: bindVar, goName: l.Name}
		if init == "" {
			locals = append(locals, fmt.Sprintf("{Name: %q, Pos: %q},", l.Name, g.pos(l.Pos)))
		} else {
			locals = append(locals, fmt.Sprintf("{Name: %q, Pos: %q, Init: func(c *distsys.Context, e *tla.Eval) tla.Value {\nreturn %s\n}},", l.Name, g.pos(l.Pos), init))
		}
	}
	return env, locals
}

// unitSections collects the labels of a body and names their methods.
func (g *goGen) unitSections(kind, name, goName string, pos Pos, body []Stmt, env *goEnv) []*goSection {
	var secs []*goSection
	g.collect(body, nil, env, &secs)
	if len(secs) == 0 {
		g.errorf(pos, "Go back end: %s %s has no label", kind, name)
		return nil
	}
	if _, lab := unlabel(body[0]); lab == nil {
		g.errorf(body[0].Position(), "Go back end: the first statement of %s %s needs a label", kind, name)
	}
	lower := strings.ToLower(goName[:1]) + goName[1:]
	for _, s := range secs {
		s.method = g.unique(lower + goIdent(s.label))
	}
	return secs
}

// genHeader writes the fields common to distsys.Archetype and
// distsys.Procedure.
func (g *goGen) genHeader(name string, pos Pos, params []*Param, locals []string, secs []*goSection) {
	g.p("Name: %q,\nPos: %q,\nStart: %q,\n", name, g.pos(pos), secs[0].label)
	if len(params) > 0 {
		g.p("Params: []distsys.Param{\n")
		for _, p := range params {
			g.p("{Name: %q, Pos: %q, Ref: %v, Index: %d},\n", p.Name, g.pos(p.Pos), p.Ref, p.Index)
		}
		g.p("},\n")
	}
	if len(locals) > 0 {
		g.p("Locals: []distsys.LocalVar{\n%s\n},\n", strings.Join(locals, "\n"))
	}
	g.p("Sections: map[string]distsys.Section{\n")
	for _, s := range secs {
		g.p("%q: {Label: %q, Pos: %q, Run: m.%s},\n", s.label, s.label, g.pos(s.pos), s.method)
	}
	g.p("},\n}\n}\n\n")
}

// genBodies writes one method per critical section of a unit.
func (g *goGen) genBodies(unit string, secs []*goSection, env *goEnv) {
	for _, s := range secs {
		var w strings.Builder
		g.emitSeq(&w, []Stmt{s.stmt}, env, s.rest, s.label)
		g.p("// %s is the critical section %s.%s.\n// MPCal: %s:%d\n", s.method, unit, s.label, g.file, s.pos.Line)
		g.p("func (m *Module) %s(c *distsys.Context, e *tla.Eval) (string, error) {\n%s}\n\n", s.method, w.String())
	}
}

func (g *goGen) genArchetype(a *Archetype) {
	name := g.unique(goIdent(a.Name))
	g.cur = nil
	env, locals := g.unitEnv(a.Params, a.Locals)
	secs := g.unitSections("archetype", a.Name, name, a.Pos, a.Body, env)
	if len(secs) == 0 {
		return
	}
	g.p("// %s is the archetype %s (MPCal: %s).\n", name, a.Name, g.pos(a.Pos))
	g.p("func (m *Module) %s() *distsys.Archetype {\nreturn &distsys.Archetype{\n", name)
	g.genHeader(a.Name, a.Pos, a.Params, locals, secs)
	g.genBodies(a.Name, secs, env)
}

// genProcedure writes the method that builds a procedure's
// *distsys.Procedure (New stores it in the Module; calls pass it to
// Context.Call) and its critical sections. Its labels are its own: the
// runtime looks them up in the running procedure.
func (g *goGen) genProcedure(p *Procedure) {
	build := g.procBuild[p.Name]
	g.cur = p
	defer func() { g.cur = nil }()
	env, locals := g.unitEnv(p.Params, p.Locals)
	secs := g.unitSections("procedure", p.Name, goIdent(p.Name), p.Pos, p.Body, env)
	if len(secs) == 0 {
		return
	}
	g.p("// %s builds the procedure %s (MPCal: %s).\n", build, p.Name, g.pos(p.Pos))
	g.p("func (m *Module) %s() *distsys.Procedure {\nreturn &distsys.Procedure{\n", build)
	g.genHeader(p.Name, p.Pos, p.Params, locals, secs)
	g.genBodies(p.Name, secs, env)
}

// collect finds the labeled statements of ss, each with what follows it.
func (g *goGen) collect(ss []Stmt, next *goCont, env *goEnv, out *[]*goSection) {
	for i, s := range ss {
		rest := &goCont{stmts: ss[i+1:], env: env, next: next}
		inner, lab := unlabel(s)
		if lab != nil {
			*out = append(*out, &goSection{label: lab.Label, pos: lab.Pos, stmt: inner, rest: rest})
		}
		switch s := inner.(type) {
		case *If:
			g.collect(s.Then, rest, env, out)
			g.collect(s.Else, rest, env, out)
		case *Either:
			for _, b := range s.Branches {
				g.collect(b, rest, env, out)
			}
		case *With:
			g.collect(s.Body, rest, env, out)
		case *While:
			if lab == nil {
				g.errorf(s.Pos, "Go back end: a while needs a label")
				continue
			}
			g.collect(s.Body, &goCont{jump: lab.Label}, env, out)
		}
	}
}

func jump(label string) string {
	return "return " + labelExpr(label) + ", nil\n"
}

// labelExpr is a label as a Go expression.
func labelExpr(label string) string {
	switch label {
	case "Done":
		return "distsys.Done"
	case "Error":
		return "distsys.ErrorLabel"
	}
	return strconv.Quote(label)
}

// endLabel is where control goes after the last statement of the body
// being generated: Done for an archetype; PlusCal's Error for a
// procedure, which must end with return.
func (g *goGen) endLabel() string {
	if g.cur != nil {
		return "Error"
	}
	return "Done"
}

const goCheck = "if err := e.Err(); err != nil {\nreturn \"\", err\n}\n"

func (g *goGen) emitCont(w *strings.Builder, k *goCont, sec string) {
	switch {
	case k == nil:
		w.WriteString(jump(g.endLabel()))
	case k.jump != "":
		w.WriteString(jump(k.jump))
	default:
		g.emitSeq(w, k.stmts, k.env, k.next, sec)
	}
}

// emitSeq writes ss and then k as Go statements that end in a return.
// sec is the label of the section being written (a while at its start
// jumps back to it).
func (g *goGen) emitSeq(w *strings.Builder, ss []Stmt, env *goEnv, k *goCont, sec string) {
	if len(ss) == 0 {
		g.emitCont(w, k, sec)
		return
	}
	s, rest := ss[0], ss[1:]
	if l, ok := s.(*Labeled); ok {
		// A label ends the step (the section's own label is unwrapped
		// before emitSeq sees it).
		w.WriteString(jump(l.Label))
		return
	}
	kRest := &goCont{stmts: rest, env: env, next: k}
	switch s.(type) {
	case *Skip, *Goto, *MacroCall: // no evaluation of their own
	default:
		fmt.Fprintf(w, "e.Pos = %q\n", g.pos(s.Position()))
	}
	switch s := s.(type) {
	case *Skip:
		g.emitSeq(w, rest, env, k, sec)
	case *Assign:
		g.emitAssign(w, s, env)
		w.WriteString(goCheck)
		g.emitSeq(w, rest, env, k, sec)
	case *If:
		v := g.local("cond")
		fmt.Fprintf(w, "%s := e.Bool(%s)\n%sif %s {\n", v, g.expr(s.Cond, env), goCheck, v)
		g.emitSeq(w, s.Then, env, kRest, sec)
		w.WriteString("}\n") // the branch returns: no else needed
		g.emitSeq(w, s.Else, env, kRest, sec)
	case *While:
		// Only a section's first statement can be an unlabeled while
		// here: the checker makes every while labeled, and a label
		// inside a step ends it above.
		v := g.local("cond")
		fmt.Fprintf(w, "%s := e.Bool(%s)\n%sif %s {\n", v, g.expr(s.Cond, env), goCheck, v)
		g.emitSeq(w, s.Body, env, &goCont{jump: sec}, sec)
		w.WriteString("}\n")
		g.emitSeq(w, rest, env, k, sec)
	case *Either:
		fmt.Fprintf(w, "switch c.Choose(%d) {\n", len(s.Branches))
		for i, b := range s.Branches {
			if i == len(s.Branches)-1 {
				w.WriteString("default:\n")
			} else {
				fmt.Fprintf(w, "case %d:\n", i)
			}
			g.emitSeq(w, b, env, kRest, sec)
		}
		w.WriteString("}\n")
	case *With:
		w.WriteString("{\n")
		inner := env.child()
		var bound []*goBinding
		for _, b := range s.Bindings {
			v := g.local(b.Name)
			val := g.expr(b.Expr, inner)
			if b.Op == "\\in" {
				val = fmt.Sprintf("c.Pick(e, %s)", val)
			}
			fmt.Fprintf(w, "%s := %s\n", v, val)
			nb := &goBinding{kind: bindGo, goName: v}
			inner = inner.child()
			inner.names[b.Name] = nb
			bound = append(bound, nb)
		}
		w.WriteString(goCheck)
		var body strings.Builder
		g.emitSeq(&body, s.Body, inner, kRest, sec)
		for _, b := range bound {
			if !b.used {
				fmt.Fprintf(w, "_ = %s\n", b.goName)
			}
		}
		w.WriteString(body.String())
		w.WriteString("}\n")
	case *Await:
		fmt.Fprintf(w, "if !c.Await(e, %s) {\nreturn \"\", e.Err()\n}\n", g.expr(s.Cond, env))
		g.emitSeq(w, rest, env, k, sec)
	case *Assert:
		fmt.Fprintf(w, "c.Assert(e, %s, %q)\n%s", g.expr(s.Expr, env), tla.FormatExpr(s.Expr), goCheck)
		g.emitSeq(w, rest, env, k, sec)
	case *Print:
		fmt.Fprintf(w, "c.Print(e, %s)\n%s", g.expr(s.Expr, env), goCheck)
		g.emitSeq(w, rest, env, k, sec)
	case *Goto:
		w.WriteString(jump(s.Label))
	case *MacroCall:
		m := g.macros[s.Name]
		if m == nil || len(m.Params) != len(s.Args) {
			g.errorf(s.Pos, "Go back end: macro %s: not found or wrong argument count", s.Name)
			w.WriteString(jump("Done"))
			return
		}
		// Textual substitution, as PlusCal does: each parameter stands
		// for its argument, compiled in the caller's scope where used.
		menv := env.child()
		for i, p := range m.Params {
			menv.names[p.Name] = &goBinding{kind: bindMacroArg, arg: s.Args[i], argEnv: env}
		}
		g.emitSeq(w, m.Body, menv, kRest, sec)
	case *Call:
		g.emitCall(w, s, rest, env, k)
	case *Return:
		if g.cur == nil {
			g.errorf(s.Pos, "Go back end: return outside a procedure")
		}
		w.WriteString("return c.Return(e)\n")
	default:
		g.errorf(s.Position(), "Go back end: statement %T is not supported here", s)
		w.WriteString(jump("Done"))
	}
}

// target resolves an assignment's variable through macro parameters.
func (g *goGen) target(lhs LHS, env *goEnv) (*goBinding, bool) {
	name, e := lhs.Name, env
	for {
		b := e.lookup(name)
		if b == nil {
			g.errorf(lhs.Pos, "Go back end: cannot assign %s: not a variable of the archetype", name)
			return nil, false
		}
		if b.kind != bindMacroArg {
			if b.kind != bindVar && b.kind != bindIndexed {
				g.errorf(lhs.Pos, "Go back end: cannot assign %s", name)
				return nil, false
			}
			return b, true
		}
		n := nameOf(b.arg)
		if n == "" {
			g.errorf(lhs.Pos, "Go back end: macro parameter %s is assigned but its argument %s is not a variable", name, tla.FormatExpr(b.arg))
			return nil, false
		}
		name, e = n, b.argEnv
	}
}

// emitAssign writes lhs := e || ...: every right-hand side and index is
// evaluated before any write, as in PlusCal.
func (g *goGen) emitAssign(w *strings.Builder, s *Assign, env *goEnv) {
	type write struct {
		name string
		idx  string // "nil" or []tla.Value{...}
		val  string
	}
	var writes []write
	for _, p := range s.Pairs {
		b, ok := g.target(p.LHS, env)
		if !ok {
			continue
		}
		sels := p.LHS.Sels
		idx := "nil"
		read := fmt.Sprintf("c.Read(e, %q)", b.goName)
		if b.kind == bindIndexed {
			if len(sels) < b.index {
				g.errorf(p.LHS.Pos, "Go back end: %s has %d [_] and must be assigned with %d index", b.goName, b.index, b.index)
				continue
			}
			var is []string
			for _, sel := range sels[:b.index] {
				if sel.Field != "" || sel.Index == nil {
					g.errorf(p.LHS.Pos, "Go back end: %s is indexed, not a record", b.goName)
					continue
				}
				is = append(is, g.key(sel.Index, env))
			}
			idx = "[]tla.Value{" + strings.Join(is, ", ") + "}"
			read = fmt.Sprintf("c.Read(e, %q, %s)", b.goName, strings.Join(is, ", "))
			sels = sels[b.index:]
		}
		val := g.expr(p.RHS, env)
		if len(sels) > 0 {
			var path []string
			for _, sel := range sels {
				if sel.Index == nil {
					path = append(path, fmt.Sprintf("tla.String(%q)", sel.Field))
				} else {
					path = append(path, g.key(sel.Index, env))
				}
			}
			val = fmt.Sprintf("e.Except(%s, []tla.Value{%s}, %s)", read, strings.Join(path, ", "), val)
		}
		writes = append(writes, write{b.goName, idx, val})
	}
	if len(writes) == 1 {
		fmt.Fprintf(w, "c.Write(e, %q, %s, %s)\n", writes[0].name, writes[0].idx, writes[0].val)
		return
	}
	var tmps, idxs []string
	for _, wr := range writes {
		v := g.local("new" + wr.name)
		tmps = append(tmps, v)
		fmt.Fprintf(w, "%s := %s\n", v, wr.val)
		idx := wr.idx
		if idx != "nil" {
			idx = g.local("at" + wr.name)
			fmt.Fprintf(w, "%s := %s\n", idx, wr.idx)
		}
		idxs = append(idxs, idx)
	}
	for i, wr := range writes {
		fmt.Fprintf(w, "c.Write(e, %q, %s, %s)\n", wr.name, idxs[i], tmps[i])
	}
}

// emitCall writes `call P(args)` and the return or goto after it: the
// caller's label to resume at is the label of the next statement, the
// target of the goto, or (after a return) the running procedure's own
// return label, a tail call. A ref argument is passed by name and
// resolved in the caller's frame at run time.
func (g *goGen) emitCall(w *strings.Builder, s *Call, rest []Stmt, env *goEnv, k *goCont) {
	p := g.procs[s.Proc]
	field := g.procField[s.Proc]
	if p == nil || field == "" || len(p.Params) != len(s.Args) {
		g.errorf(s.Pos, "Go back end: procedure %s: not found or wrong argument count", s.Proc)
		w.WriteString(jump("Done"))
		return
	}
	ret, tail, ok := g.resumeLabel(rest, k)
	if !ok {
		g.errorf(s.Pos, "Go back end: call %s must be followed by a label, a return or a goto", s.Proc)
		w.WriteString(jump("Done"))
		return
	}
	if ret == "Error" && g.cur != nil && !tail {
		// PlusCal resumes at Error; say so rather than compile a step
		// that can only fail.
		g.errorf(s.Pos, "Go back end: call %s ends procedure %s, which must end with return: add return (or a goto) after the call", s.Proc, g.cur.Name)
	}
	var args []string
	for i, a := range s.Args {
		if !a.Ref {
			args = append(args, "distsys.Val("+g.expr(a.Expr, env)+")")
			continue
		}
		b, name, ok := g.refArg(a, env)
		if !ok {
			continue
		}
		if tail && g.cur != nil && g.isOwnVar(name) {
			g.errorf(a.Pos, "Go back end: call %s(ref %s) followed by return: %s is a variable of procedure %s, which the return discards", s.Proc, a.Name, name, g.cur.Name)
		}
		if want := p.Params[i].Index; b.index != want {
			g.errorf(a.Pos, "Go back end: ref %s has %d [_] but parameter %s of %s has %d", a.Name, b.index, p.Params[i].Name, p.Name, want)
		}
		args = append(args, fmt.Sprintf("distsys.Ref(%q)", name))
	}
	list := ""
	if len(args) > 0 {
		list = ", " + strings.Join(args, ", ")
	}
	if tail {
		fmt.Fprintf(w, "return c.TailCall(e, m.%s%s)\n", field, list)
		return
	}
	fmt.Fprintf(w, "return c.Call(e, m.%s, %s%s)\n", field, labelExpr(ret), list)
}

// resumeLabel finds where a call returns to: the statements after it in
// the same step (rest), then the continuation k.
func (g *goGen) resumeLabel(rest []Stmt, k *goCont) (label string, tail, ok bool) {
	for {
		if len(rest) > 0 {
			inner, lab := unlabel(rest[0])
			if lab != nil {
				return lab.Label, false, true
			}
			switch x := inner.(type) {
			case *Goto:
				return x.Label, false, true
			case *Return:
				return "", true, g.cur != nil
			}
			return "", false, false
		}
		switch {
		case k == nil:
			return g.endLabel(), false, true
		case k.jump != "":
			return k.jump, false, true
		}
		rest, k = k.stmts, k.next
	}
}

// refArg resolves a ref argument through macro parameters to a variable
// of the running archetype or procedure.
func (g *goGen) refArg(a *Arg, env *goEnv) (*goBinding, string, bool) {
	name, e := a.Name, env
	for {
		b := e.lookup(name)
		if b == nil {
			g.errorf(a.Pos, "Go back end: ref %s: not a variable of the caller", a.Name)
			return nil, "", false
		}
		switch b.kind {
		case bindVar, bindIndexed:
			b.used = true
			return b, b.goName, true
		case bindMacroArg:
			if n := nameOf(b.arg); n != "" {
				name, e = n, b.argEnv
				continue
			}
		}
		g.errorf(a.Pos, "Go back end: ref %s: only variables and resources can be passed by reference", a.Name)
		return nil, "", false
	}
}

// isOwnVar reports whether name is a local or value parameter of the
// procedure being generated (not a ref parameter, which names the
// caller's resource).
func (g *goGen) isOwnVar(name string) bool {
	for _, p := range g.cur.Params {
		if p.Name == name {
			return !p.Ref
		}
	}
	for _, l := range g.cur.Locals {
		if l.Name == name {
			return true
		}
	}
	return false
}
