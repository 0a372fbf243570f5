package mpcal

import (
	"bytes"
	"fmt"
	"go/format"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"strata/mpcal/tla"
)

// GoOptions configure GenerateGo.
type GoOptions struct {
	Package string // the Go package name (default: the module name, lower-cased)
}

// GenerateGo compiles the archetypes of an MPCal file to a Go package over
// the distsys runtime (see docs/distsys.md, "The Go back end"): a
// Constants struct and New, one Go function per module operator or
// define the archetypes use, and per archetype a function returning its
// *distsys.Archetype with one critical section (a Go method) per label.
// Processes and mapping macros are not compiled: the Go program binds
// resources (distsys.Mailboxes, channels, local state) in their place.
//
// The file is checked first (Check). Constructs the Go back end does not
// support are errors of kind "unsupported" at their position; all of them
// are reported, sorted, as an ErrorList. The output is gofmt-formatted.
func GenerateGo(f *File, opt GoOptions) ([]byte, error) {
	if f.Alg == nil || !f.Alg.MPCal {
		return nil, fmt.Errorf("%s: the Go back end compiles --mpcal algorithms (archetypes); this file has a plain PlusCal algorithm", f.Name)
	}
	if err := Check(f); err != nil {
		return nil, err
	}
	g := newGoGen(f, opt)
	g.generate()
	if len(g.errs) > 0 {
		g.errs.sort()
		return nil, g.errs
	}
	out, err := format.Source(g.buf.Bytes())
	if err != nil {
		// A generator bug, not a user error: report it with the text.
		return nil, fmt.Errorf("%s: generated Go does not parse (a bug in the Go back end): %v\n%s", f.Name, err, g.buf.Bytes())
	}
	return out, nil
}

type goGen struct {
	f    *File
	file string // base name used in positions
	pkg  string
	buf  bytes.Buffer
	errs ErrorList

	consts  map[string]*tla.OpDecl
	constOr []string
	ops     map[string]tla.Unit // module and define operators by name
	vars    map[string]bool     // module VARIABLES
	goNames map[string]bool     // Go names taken at package level
	opNames map[string]string   // operator -> Go method
	reached map[string]bool     // operators used by the archetypes
	opOrder []string
	macros  map[string]*Macro
	tmp     int // counter for Go local names

	procs     map[string]*Procedure // every procedure, by name
	procOrder []*Procedure          // the procedures the archetypes call (transitively), in source order
	procField map[string]string     // procedure -> its *distsys.Procedure field of Module
	procBuild map[string]string     // procedure -> the Module method that builds it
	cur       *Procedure            // the procedure being generated, nil in an archetype
}

func newGoGen(f *File, opt GoOptions) *goGen {
	g := &goGen{f: f, file: filepath.Base(f.Name), pkg: opt.Package,
		consts: map[string]*tla.OpDecl{}, ops: map[string]tla.Unit{}, vars: map[string]bool{},
		goNames: map[string]bool{"New": true, "Constants": true, "Module": true},
		opNames: map[string]string{}, reached: map[string]bool{}, macros: map[string]*Macro{},
		procs: map[string]*Procedure{}, procField: map[string]string{}, procBuild: map[string]string{}}
	if g.pkg == "" {
		g.pkg = strings.ToLower(goIdent(f.Alg.Name))
	}
	for _, u := range f.Module.Units {
		g.moduleUnit(u)
	}
	for _, u := range f.Alg.Defines {
		g.moduleUnit(u)
	}
	for _, m := range f.Alg.Macros {
		g.macros[m.Name] = m
	}
	for _, p := range f.Alg.Procedures {
		g.procs[p.Name] = p
	}
	return g
}

func (g *goGen) moduleUnit(u tla.Unit) {
	switch u := u.(type) {
	case *tla.ConstDecl:
		for i := range u.Decls {
			d := &u.Decls[i]
			if _, dup := g.consts[d.Name]; !dup {
				g.consts[d.Name] = d
				g.constOr = append(g.constOr, d.Name)
			}
		}
	case *tla.VarDecl:
		for _, n := range u.Names {
			g.vars[n.Name] = true
		}
	case *tla.OpDef:
		g.ops[u.Name] = u
	case *tla.FuncDef:
		g.ops[u.Name] = u
	}
}

func (g *goGen) errorf(pos Pos, format string, args ...any) {
	if pos.File == "" {
		pos.File = g.f.Name
	}
	g.errs = append(g.errs, &Error{Pos: pos, Kind: KindUnsupported, Msg: fmt.Sprintf(format, args...)})
}

func (g *goGen) pos(p Pos) string { return fmt.Sprintf("%s:%d:%d", g.file, p.Line, p.Col) }

func (g *goGen) p(format string, args ...any) { fmt.Fprintf(&g.buf, format, args...) }

// goIdent turns a TLA+ name into an exported Go identifier.
func goIdent(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case i == 0 && unicode.IsLetter(r):
			b.WriteRune(unicode.ToUpper(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			if i == 0 {
				b.WriteString("X")
			}
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "X"
	}
	return b.String()
}

// unique reserves a package-level Go name derived from want.
func (g *goGen) unique(want string) string {
	name := want
	for i := 2; g.goNames[name]; i++ {
		name = fmt.Sprintf("%s%d", want, i)
	}
	g.goNames[name] = true
	return name
}

// local is a fresh Go local variable name for the TLA+ name n.
func (g *goGen) local(n string) string {
	g.tmp++
	var b strings.Builder
	for _, r := range n {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return fmt.Sprintf("v%s%d", goIdent(b.String()), g.tmp)
}

func (g *goGen) generate() {
	// Which operators the archetypes use, transitively, in a stable order.
	for _, a := range g.f.Alg.Archetypes {
		g.reachStmts(a.Body)
		for _, l := range a.Locals {
			if l.Init != nil {
				g.reachExpr(l.Init)
			}
		}
	}
	for _, m := range g.f.Alg.Macros {
		g.reachStmts(m.Body)
	}
	g.reachProcs()
	for _, p := range g.procOrder {
		g.reachStmts(p.Body)
		for _, l := range p.Locals {
			if l.Init != nil {
				g.reachExpr(l.Init)
			}
		}
	}
	for _, n := range g.opOrder {
		g.opNames[n] = g.unique(goIdent(n))
	}
	for _, p := range g.procOrder {
		g.procField[p.Name] = g.unique("p" + goIdent(p.Name))
		g.procBuild[p.Name] = g.unique("proc" + goIdent(p.Name))
	}
	if len(g.f.Alg.Archetypes) == 0 {
		g.errorf(g.f.Alg.Pos, "Go back end: the algorithm has no archetype to compile")
	}
	g.p("// Code generated by strata mpcal gogen from %s; DO NOT EDIT.\n\n", g.file)
	g.p("// Package %s is the MPCal algorithm %s (%s) compiled to Go over the\n", g.pkg, g.f.Alg.Name, g.file)
	g.p("// distsys runtime: New takes the module's constants; each archetype is a\n")
	g.p("// *distsys.Archetype to run with distsys.NewContext and Context.Run, its\n")
	g.p("// resources bound by the caller.\n")
	g.p("package %s\n\nimport (\n\t\"strata/distsys\"\n\t\"strata/distsys/tla\"\n)\n\n", g.pkg)
	g.genConstants()
	for _, n := range g.opOrder {
		g.genOp(n)
	}
	for _, a := range g.f.Alg.Archetypes {
		g.genArchetype(a)
	}
	for _, p := range g.procOrder {
		g.genProcedure(p)
	}
}

// reachProcs finds the procedures the archetypes call, directly, through
// macros or through other procedures, and lists them in source order.
// Only those are compiled, as only they have a PlusCal translation.
func (g *goGen) reachProcs() {
	seen := map[string]bool{}
	var visit func(ss []Stmt)
	visit = func(ss []Stmt) {
		walkStmts(ss, func(s Stmt) Stmt {
			if c, ok := s.(*Call); ok && !seen[c.Proc] {
				if p := g.procs[c.Proc]; p != nil {
					seen[c.Proc] = true
					visit(p.Body)
				}
			}
			return s
		})
	}
	for _, a := range g.f.Alg.Archetypes {
		visit(a.Body)
	}
	for _, m := range g.f.Alg.Macros {
		visit(m.Body)
	}
	for _, p := range g.f.Alg.Procedures {
		if seen[p.Name] {
			g.procOrder = append(g.procOrder, p)
		}
	}
}

func (g *goGen) genConstants() {
	g.p("// Constants are the module's CONSTANTS, supplied to New.\ntype Constants struct {\n")
	for _, n := range g.constOr {
		d := g.consts[n]
		if d.Arity > 0 {
			if g.reached[n] {
				g.errorf(d.Pos, "Go back end: operator constant %s (with arguments) is not supported", n)
			}
			continue
		}
		g.p("\t%s tla.Value // MPCal: %s\n", goIdent(n), g.pos(d.Pos))
	}
	if len(g.procOrder) == 0 {
		g.p("}\n\n// Module is the compiled module with its constants.\ntype Module struct{ k Constants }\n\n")
	} else {
		g.p("}\n\n// Module is the compiled module with its constants and procedures.\ntype Module struct {\nk Constants\n")
		for _, p := range g.procOrder {
			g.p("%s *distsys.Procedure // procedure %s\n", g.procField[p.Name], p.Name)
		}
		g.p("}\n\n")
	}
	g.p("// New checks that every constant is supplied.\nfunc New(k Constants) (*Module, error) {\n")
	for _, n := range g.constOr {
		d := g.consts[n]
		if d.Arity > 0 {
			continue
		}
		g.p("\tif !k.%s.IsValid() {\n\t\treturn nil, distsys.MissingConstant(%q, %q)\n\t}\n", goIdent(n), g.pos(d.Pos), n)
	}
	if len(g.procOrder) == 0 {
		g.p("\treturn &Module{k: k}, nil\n}\n\n")
		return
	}
	g.p("m := &Module{k: k}\n")
	for _, p := range g.procOrder {
		g.p("m.%s = m.%s()\n", g.procField[p.Name], g.procBuild[p.Name])
	}
	g.p("return m, nil\n}\n\n")
}

// reachExpr records the module operators e uses, and theirs.
func (g *goGen) reachExpr(e tla.Expr) {
	if e == nil {
		return
	}
	names := tla.FreeNames(e)
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted) // a stable output
	for _, n := range sorted {
		g.reachName(n)
	}
}

func (g *goGen) reachName(n string) {
	u, ok := g.ops[n]
	if !ok || g.reached[n] {
		if _, c := g.consts[n]; c {
			g.reached[n] = true
		}
		return
	}
	g.reached[n] = true
	switch u := u.(type) {
	case *tla.OpDef:
		g.reachExpr(u.Body)
	case *tla.FuncDef:
		for _, b := range u.Bounds {
			g.reachExpr(b.Set)
		}
		g.reachExpr(u.Body)
	}
	g.opOrder = append(g.opOrder, n)
}

func (g *goGen) reachStmts(ss []Stmt) {
	for _, s := range ss {
		g.reachStmt(s)
	}
}

func (g *goGen) reachStmt(s Stmt) {
	switch s := s.(type) {
	case *Labeled:
		g.reachStmt(s.Stmt)
	case *Assign:
		for _, p := range s.Pairs {
			for _, sel := range p.LHS.Sels {
				for _, x := range sel.Index {
					g.reachExpr(x)
				}
			}
			g.reachExpr(p.RHS)
		}
	case *If:
		g.reachExpr(s.Cond)
		g.reachStmts(s.Then)
		g.reachStmts(s.Else)
	case *While:
		g.reachExpr(s.Cond)
		g.reachStmts(s.Body)
	case *Either:
		for _, b := range s.Branches {
			g.reachStmts(b)
		}
	case *With:
		for _, b := range s.Bindings {
			g.reachExpr(b.Expr)
		}
		g.reachStmts(s.Body)
	case *Await:
		g.reachExpr(s.Cond)
	case *Print:
		g.reachExpr(s.Expr)
	case *Assert:
		g.reachExpr(s.Expr)
	case *MacroCall:
		for _, a := range s.Args {
			g.reachExpr(a)
		}
	case *Call:
		for _, a := range s.Args {
			g.reachExpr(a.Expr)
		}
	}
}

// genOp writes a module operator or define as a method of *Module.
func (g *goGen) genOp(n string) {
	name := g.opNames[n]
	switch u := g.ops[n].(type) {
	case *tla.OpDef:
		env := &goEnv{names: map[string]*goBinding{}, inOp: true}
		var params []string
		for _, p := range u.Params {
			if p.Arity > 0 || p.Kind != tla.NameDecl {
				g.errorf(u.Pos, "Go back end: operator %s takes an operator argument (%s); not supported", n, p.Name)
				return
			}
			v := g.local(p.Name)
			env.names[p.Name] = &goBinding{kind: bindGo, goName: v}
			params = append(params, v+" tla.Value")
		}
		if u.Kind != tla.NameDecl {
			g.errorf(u.Pos, "Go back end: user-defined infix or prefix operator %s is not supported", n)
			return
		}
		body := g.expr(u.Body, env)
		g.p("// %s is the operator %s (MPCal: %s).\n", name, n, g.pos(u.Pos))
		g.p("func (m *Module) %s(e *tla.Eval", name)
		for _, p := range params {
			g.p(", %s", p)
		}
		g.p(") tla.Value {\n\treturn %s\n}\n\n", body)
	case *tla.FuncDef:
		if len(u.Bounds) != 1 || len(u.Bounds[0].Names) != 1 || u.Bounds[0].Tuple || tla.FreeNames(u.Body)[n] {
			g.errorf(u.Pos, "Go back end: function definition %s: only non-recursive [x \\in S] definitions are supported", n)
			return
		}
		env := &goEnv{names: map[string]*goBinding{}, inOp: true}
		set := g.expr(u.Bounds[0].Set, env)
		v := g.local(u.Bounds[0].Names[0].Name)
		inner := &goEnv{parent: env, names: map[string]*goBinding{u.Bounds[0].Names[0].Name: {kind: bindGo, goName: v}}, inOp: true}
		body := g.expr(u.Body, inner)
		g.p("// %s is the function %s (MPCal: %s).\n", name, n, g.pos(u.Pos))
		g.p("func (m *Module) %s(e *tla.Eval) tla.Value {\n\treturn e.Function(%s, func(%s tla.Value) tla.Value { return %s })\n}\n\n", name, set, v, body)
	}
}
