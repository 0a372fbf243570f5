package mpcal

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"strata/mpcal/tla"
)

// stdModules lists the names each standard module defines (operators
// written as symbols need no entry: they are not names) and the modules
// it extends.
var stdModules = map[string]struct {
	names   []string
	extends []string
}{
	"Naturals":      {[]string{"Nat"}, nil},
	"Integers":      {[]string{"Int"}, []string{"Naturals"}},
	"Reals":         {[]string{"Real", "Infinity"}, []string{"Integers"}},
	"Sequences":     {[]string{"Seq", "Len", "Head", "Tail", "Append", "SubSeq", "SelectSeq"}, []string{"Naturals"}},
	"FiniteSets":    {[]string{"IsFiniteSet", "Cardinality"}, []string{"Naturals", "Sequences"}},
	"TLC":           {[]string{"Print", "PrintT", "Assert", "JavaTime", "TLCGet", "TLCSet", "Permutations", "SortSeq", "RandomElement", "Any", "ToString", "TLCEval"}, []string{"Naturals", "Sequences"}},
	"Bags":          {[]string{"IsABag", "BagToSet", "SetToBag", "BagIn", "EmptyBag", "CopiesIn", "BagUnion", "SubBag", "BagOfAll", "BagCardinality"}, []string{"Naturals"}},
	"Randomization": {[]string{"RandomSubset", "RandomSetOfSubsets", "RandomSubsetSet", "TestRandomSetOfSubsets"}, []string{"Naturals", "FiniteSets"}},
	"TLCExt":        {[]string{"AssertEq", "AssertError", "Trace", "TLCModelValue", "TLCDefer", "TLCNoOp", "PickSuccessor", "TLCCache"}, []string{"TLC"}},
	"Json":          {[]string{"ToJson", "ToJsonArray", "ToJsonObject", "JsonSerialize", "JsonDeserialize", "ndJsonSerialize", "ndJsonDeserialize"}, nil},
}

var builtinNames = []string{"TRUE", "FALSE", "BOOLEAN", "STRING"}

// nameKind says what a name in scope is, for assignment and mapping rules.
type nameKind int

const (
	nkConst      nameKind = iota // module constant or definition, define
	nkGlobal                     // algorithm variable
	nkLocal                      // process/archetype/procedure variable
	nkValParam                   // non-ref parameter
	nkRefParam                   // ref parameter
	nkSelf                       // self
	nkBound                      // with-bound name
	nkMacroParam                 // macro parameter
	nkDollar                     // $variable
	nkDollarVal                  // $value
)

// checker collects semantic errors.
type checker struct {
	file    string
	alg     *Algorithm
	errs    ErrorList
	module  map[string]bool // module-level and standard names
	unknown bool            // the module extends or instances something unknown: skip undefined checks
	globals map[string]*VarDecl
	defines map[string]bool

	macros     map[string]*Macro
	procs      map[string]*Procedure
	archetypes map[string]*Archetype
	mappings   map[string]*MappingMacro
	macroDepth int // nesting of macroResource
}

func (c *checker) errorf(pos Pos, kind, format string, args ...any) {
	if pos.File == "" {
		pos.File = c.file
	}
	c.errs = append(c.errs, &Error{Pos: pos, Kind: kind, Msg: fmt.Sprintf(format, args...)})
}

// Check runs the PlusCal and MPCal semantic checks on a parsed file and
// returns an ErrorList (sorted by position) or nil.
func Check(f *File) error {
	_, err := check(f)
	return err
}

// check runs the checks and returns the checker too (its module names
// serve the generator without reading the extended modules again).
func check(f *File) (*checker, error) {
	c := &checker{file: f.Name, alg: f.Alg, module: map[string]bool{},
		globals: map[string]*VarDecl{}, defines: map[string]bool{},
		macros: map[string]*Macro{}, procs: map[string]*Procedure{},
		archetypes: map[string]*Archetype{}, mappings: map[string]*MappingMacro{}}
	c.moduleNames(f)
	c.declarations()
	c.bodies()
	if len(c.errs) == 0 {
		return c, nil
	}
	c.errs.sort()
	return c, c.errs
}

// moduleNames collects the module's constants, variables and definitions
// (outside pcal.trans's translation) and the standard modules' names.
func (c *checker) moduleNames(f *File) {
	for _, n := range builtinNames {
		c.module[n] = true
	}
	var extend func(names []string, dir string, depth int)
	extend = func(names []string, dir string, depth int) {
		for _, m := range names {
			if std, ok := stdModules[m]; ok {
				for _, n := range std.names {
					c.module[n] = true
				}
				extend(std.extends, dir, depth)
				continue
			}
			// A user module beside this one: read its definitions.
			src, err := os.ReadFile(filepath.Join(dir, m+".tla"))
			if err != nil || depth > 8 {
				c.unknown = true
				continue
			}
			mod, err := tla.ParseModule(m+".tla", src)
			if err != nil {
				c.unknown = true
				continue
			}
			c.units(mod.Units, nil)
			extend(mod.Extends, dir, depth+1)
		}
	}
	extend(f.Module.Extends, filepath.Dir(f.Name), 0)
	// Units inside pcal.trans's translation are generated from the
	// algorithm: they do not count as definitions the algorithm may use.
	skip := func(u tla.Unit) bool { return false }
	if b := strings.Index(string(f.Src), `\* BEGIN TRANSLATION`); b >= 0 {
		e := strings.Index(string(f.Src[b:]), `\* END TRANSLATION`)
		end := len(f.Src)
		if e >= 0 {
			end = b + e
		}
		skip = func(u tla.Unit) bool {
			o := u.Position().Offset
			return o >= b && o < end
		}
	}
	c.units(f.Module.Units, skip)
}

func (c *checker) units(us []tla.Unit, skip func(tla.Unit) bool) {
	for _, u := range us {
		if skip != nil && skip(u) {
			continue
		}
		switch u := u.(type) {
		case *tla.ConstDecl:
			for _, d := range u.Decls {
				c.module[d.Name] = true
			}
		case *tla.VarDecl:
			for _, n := range u.Names {
				c.module[n.Name] = true
			}
		case *tla.Instance:
			c.unknown = true
		default:
			for _, n := range tla.UnitNames(u) {
				c.module[n] = true
			}
		}
	}
}

// declarations checks the algorithm's top-level names.
func (c *checker) declarations() {
	a := c.alg
	topNames := map[string]Pos{}
	declare := func(name string, pos Pos, what string) {
		if prev, ok := topNames[name]; ok {
			c.errorf(pos, KindRedefinition, "%s %s is already defined at %d:%d", what, name, prev.Line, prev.Col)
			return
		}
		topNames[name] = pos
	}
	for _, g := range a.Globals {
		if c.module[g.Name] {
			c.errorf(g.Pos, KindRedefinition, "variable %s is already defined by the module", g.Name)
		}
		declare(g.Name, g.Pos, "variable")
		c.globals[g.Name] = g
	}
	for _, d := range a.Defines {
		if _, fwd := d.(*tla.Recursive); fwd {
			continue // RECURSIVE F(_) announces a definition that follows
		}
		for _, n := range tla.UnitNames(d) {
			if c.module[n] {
				c.errorf(d.Position(), KindRedefinition, "definition %s is already defined by the module", n)
			}
			declare(n, d.Position(), "definition")
			c.defines[n] = true
		}
	}
	for _, m := range a.Macros {
		declare(m.Name, m.NamePos, "macro")
		c.macros[m.Name] = m
		c.paramList(m.Params, nil)
	}
	for _, p := range a.Procedures {
		declare(p.Name, p.NamePos, "procedure")
		c.procs[p.Name] = p
		c.paramList(p.Params, p.Locals)
	}
	for _, m := range a.MappingMacros {
		declare(m.Name, m.NamePos, "mapping macro")
		c.mappings[m.Name] = m
	}
	for _, ar := range a.Archetypes {
		declare(ar.Name, ar.NamePos, "archetype")
		c.archetypes[ar.Name] = ar
		c.paramList(ar.Params, ar.Locals)
	}
	for _, p := range a.Processes {
		declare(p.Name, p.NamePos, "process")
		c.paramList(nil, p.Locals)
	}
}

// paramList reports parameters and locals defined twice.
func (c *checker) paramList(ps []*Param, ls []*VarDecl) {
	seen := map[string]Pos{}
	check := func(name string, pos Pos) {
		if prev, ok := seen[name]; ok {
			c.errorf(pos, KindRedefinition, "%s is already defined at %d:%d", name, prev.Line, prev.Col)
			return
		}
		seen[name] = pos
	}
	for _, p := range ps {
		check(p.Name, p.Pos)
	}
	for _, l := range ls {
		check(l.Name, l.Pos)
	}
}

// scope is what a body can see.
type scope struct {
	names  map[string]nameKind
	refs   map[string]*Param // ref parameters (and indexed value params)
	labels map[string]Pos
	kind   string // "archetype", "procedure", "process", "algorithm", "macro", "read", "write"
	name   string
}

func (s *scope) clone() *scope {
	n := &scope{names: map[string]nameKind{}, refs: s.refs, labels: s.labels, kind: s.kind, name: s.name}
	for k, v := range s.names {
		n.names[k] = v
	}
	return n
}

func (c *checker) baseScope(kind, name string, globals bool) *scope {
	s := &scope{names: map[string]nameKind{}, refs: map[string]*Param{}, labels: map[string]Pos{}, kind: kind, name: name}
	for n := range c.module {
		s.names[n] = nkConst
	}
	for n := range c.defines {
		s.names[n] = nkConst
	}
	if globals {
		for n := range c.globals {
			s.names[n] = nkGlobal
		}
	}
	return s
}

func (c *checker) bodies() {
	a := c.alg
	// Global initial values and definitions see the module and globals.
	gs := c.baseScope("algorithm", a.Name, true)
	for _, g := range a.Globals {
		c.expr(g.Init, gs)
	}
	for _, d := range a.Defines {
		c.unit(d, gs)
	}
	c.recursiveMacros()
	for _, m := range a.Macros {
		s := c.baseScope("macro", m.Name, true)
		for _, p := range m.Params {
			s.names[p.Name] = nkMacroParam
		}
		// A macro sees the names of its call sites; names it uses that are
		// defined nowhere are reported at the call (see macroCall).
		c.noLabels(m.Body, "macro")
		c.stmts(m.Body, s)
	}
	for _, m := range a.MappingMacros {
		for i, body := range [][]Stmt{m.Read, m.Write} {
			kind := "read"
			if i == 1 {
				kind = "write"
			}
			s := c.baseScope(kind, m.Name, false)
			s.names["$variable"] = nkDollar
			if kind == "write" {
				s.names["$value"] = nkDollarVal
			}
			s.names["self"] = nkSelf
			c.noLabels(body, "mapping macro")
			c.stmts(body, s)
			c.yields(body, m.Name+" "+kind)
		}
	}
	for _, p := range a.Procedures {
		s := c.baseScope("procedure", p.Name, true)
		s.names["self"] = nkSelf
		c.params(p.Params, s)
		c.locals(p.Locals, s)
		c.body(p.Body, s, p.Pos)
	}
	for _, ar := range a.Archetypes {
		s := c.baseScope("archetype", ar.Name, false)
		s.names["self"] = nkSelf
		c.params(ar.Params, s)
		c.locals(ar.Locals, s)
		c.body(ar.Body, s, ar.Pos)
	}
	for _, p := range a.Processes {
		s := c.baseScope("process", p.Name, true)
		c.expr(p.ID, s)
		if p.Instance != nil {
			c.instance(p, s)
			continue
		}
		s.names["self"] = nkSelf
		c.locals(p.Locals, s)
		c.body(p.Body, s, p.Pos)
	}
	if a.Body != nil {
		s := c.baseScope("algorithm", a.Name, true)
		c.body(a.Body, s, a.Pos)
	}
}

func (c *checker) params(ps []*Param, s *scope) {
	for _, p := range ps {
		if p.Init != nil {
			c.expr(p.Init, s)
		}
		if p.Ref {
			s.names[p.Name] = nkRefParam
		} else {
			s.names[p.Name] = nkValParam
		}
		if p.Index > 0 || p.Ref {
			s.refs[p.Name] = p
		}
	}
}

func (c *checker) locals(ls []*VarDecl, s *scope) {
	for _, l := range ls {
		if l.Init != nil {
			c.expr(l.Init, s)
		}
		s.names[l.Name] = nkLocal
	}
}

// unit checks a definition's body.
func (c *checker) unit(u tla.Unit, s *scope) {
	switch u := u.(type) {
	case *tla.OpDef:
		in := s.clone()
		for _, p := range u.Params {
			in.names[p.Name] = nkConst
		}
		if u.Kind == tla.NameDecl {
			in.names[u.Name] = nkConst // recursive definitions
		}
		c.expr(u.Body, in)
	case *tla.FuncDef:
		in := s.clone()
		in.names[u.Name] = nkConst
		for _, b := range u.Bounds {
			c.expr(b.Set, s)
			for _, n := range b.Names {
				in.names[n.Name] = nkConst
			}
		}
		c.expr(u.Body, in)
	}
}

// expr reports undefined names and indexing of [_] resources with too few
// indices.
func (c *checker) expr(e tla.Expr, s *scope) {
	if e == nil {
		return
	}
	tla.Walk(e, func(x tla.Expr, bs *tla.Scope) bool {
		switch x := x.(type) {
		case *tla.String:
			// SANY takes any character in a string, but pcal.trans, which
			// translates the algorithm, stops at the first that is not
			// ASCII; TLA+ has no escape to spell one.
			for _, r := range x.Value {
				if r >= utf8.RuneSelf {
					c.errorf(x.Pos, KindUnsupported, "the PlusCal translator accepts only ASCII characters in strings, not %q", r)
					break
				}
			}
		case *tla.Ident:
			c.name(x.Name, x.Pos, s, bs)
			if p := s.refs[x.Name]; p != nil && p.Index > 0 && !bs.Bound(x.Name) {
				c.errorf(x.Pos, KindArityMismatch, "%s is declared %s%s and must be indexed %d time(s)", x.Name, x.Name, strings.Repeat("[_]", p.Index), p.Index)
			}
		case *tla.OpApp:
			if x.Prefix == nil {
				c.name(x.Name, x.Pos, s, bs)
			}
		case *tla.FuncApp:
			base, depth := x.Func, 1
			for {
				if f, ok := base.(*tla.FuncApp); ok {
					base, depth = f.Func, depth+1
					continue
				}
				break
			}
			id, ok := base.(*tla.Ident)
			if !ok || bs.Bound(id.Name) {
				return true
			}
			p := s.refs[id.Name]
			if p == nil || p.Index == 0 {
				return true
			}
			c.name(id.Name, id.Pos, s, bs)
			if depth < p.Index {
				at := x.Pos
				if len(x.Args) > 0 {
					at = x.Args[0].Position()
				}
				c.errorf(at, KindArityMismatch, "%s is declared %s%s and must be indexed %d time(s), not %d", id.Name, id.Name, strings.Repeat("[_]", p.Index), p.Index, depth)
			}
			// Visit the indices (and anything applied above), not the base.
			for f := tla.Expr(x); ; {
				fa, ok := f.(*tla.FuncApp)
				if !ok {
					break
				}
				for _, a := range fa.Args {
					c.exprIn(a, s, bs)
				}
				f = fa.Func
			}
			return false
		case *tla.Lambda, *tla.Let:
			// LET definitions are checked with their parameters in scope.
			if l, ok := x.(*tla.Let); ok {
				in := s.clone()
				for _, d := range l.Defs {
					for _, n := range tla.UnitNames(d) {
						in.names[n] = nkConst
					}
				}
				for _, d := range l.Defs {
					c.unitIn(d, in, bs)
				}
				c.exprIn(l.Body, in, bs)
				return false
			}
		}
		return true
	})
}

func (c *checker) exprIn(e tla.Expr, s *scope, bs *tla.Scope) {
	if e != nil {
		c.expr(e, withBound(s, bs))
	}
}

func (c *checker) unitIn(u tla.Unit, s *scope, bs *tla.Scope) { c.unit(u, withBound(s, bs)) }

// withBound returns s with the names bound by an enclosing expression
// (bs) added, to check a sub-expression on its own.
func withBound(s *scope, bs *tla.Scope) *scope {
	if bs == nil {
		return s
	}
	in := s.clone()
	for sc := bs; sc != nil; sc = sc.Parent() {
		for _, n := range sc.Names() {
			in.names[n] = nkBound
		}
	}
	return in
}

func (c *checker) name(n string, pos Pos, s *scope, bs *tla.Scope) {
	if bs.Bound(n) {
		return
	}
	if _, ok := s.names[n]; ok {
		return
	}
	if c.unknown && s.kind != "read" && s.kind != "write" && !strings.HasPrefix(n, "$") {
		return
	}
	switch {
	case n == "$value" && s.kind == "read":
		c.errorf(pos, KindUndefined, "$value is defined only in a mapping macro's write body")
	case strings.HasPrefix(n, "$"):
		c.errorf(pos, KindUndefined, "%s is defined only in mapping macros", n)
	case c.globals[n] != nil && s.kind == "archetype":
		c.errorf(pos, KindUndefined, "%s is a global variable: an archetype reaches global state only through its ref parameters", n)
	case c.globals[n] != nil && (s.kind == "read" || s.kind == "write"):
		c.errorf(pos, KindUndefined, "%s is a global variable: a mapping macro reaches state only through $variable", n)
	case c.unknown:
	default:
		c.errorf(pos, KindUndefined, "%s is not defined", n)
	}
}

// ---- statements ----

// body checks a process, procedure or archetype body: labels, then the
// statements.
func (c *checker) body(ss []Stmt, s *scope, pos Pos) {
	c.collectLabels(ss, s, false)
	if len(ss) == 0 {
		c.errorf(pos, KindMissingLabel, "the body is empty: it needs at least one labeled statement")
		return
	}
	if _, l := unlabel(ss[0]); l == nil {
		c.errorf(ss[0].Position(), KindMissingLabel, "the first statement of %s %s must be labeled", s.kind, s.name)
	}
	c.labelRules(ss)
	c.stmts(ss, s)
	if !c.alg.MPCal {
		// MPCal lifts PlusCal's limit of one assignment per variable per
		// step (the compiler rewrites the step, see fixAssign); a plain
		// PlusCal algorithm goes to pcal.trans as it is, which keeps it.
		c.assignments(ss, s)
	}
}

func (c *checker) collectLabels(ss []Stmt, s *scope, inWith bool) {
	for _, st := range ss {
		inner, l := unlabel(st)
		if l != nil {
			switch {
			case l.Label == "Done" || l.Label == "Error":
				c.errorf(l.Pos, KindReservedLabel, "%s is a reserved label", l.Label)
			case inWith:
				c.errorf(l.Pos, KindForbiddenLabel, "a with statement's body cannot contain labels (%s)", l.Label)
			default:
				if prev, ok := s.labels[l.Label]; ok {
					c.errorf(l.Pos, KindDuplicateLabel, "label %s is already used at %d:%d", l.Label, prev.Line, prev.Col)
				} else {
					s.labels[l.Label] = l.Pos
				}
			}
		}
		for _, b := range children(inner) {
			_, w := inner.(*With)
			c.collectLabels(b, s, inWith || w)
		}
	}
}

// children returns the statement lists nested in s.
func children(s Stmt) [][]Stmt {
	switch s := s.(type) {
	case *If:
		return [][]Stmt{s.Then, s.Else}
	case *While:
		return [][]Stmt{s.Body}
	case *Either:
		return s.Branches
	case *With:
		return [][]Stmt{s.Body}
	case *Labeled:
		return [][]Stmt{{s.Stmt}}
	}
	return nil
}

func (c *checker) noLabels(ss []Stmt, where string) {
	for _, st := range ss {
		inner, l := unlabel(st)
		if l != nil {
			c.errorf(l.Pos, KindForbiddenLabel, "a %s cannot contain labels (%s)", where, l.Label)
		}
		for _, b := range children(inner) {
			c.noLabels(b, where)
		}
	}
}

// labelRules enforces PlusCal's rules on where labels are required: a
// while is labeled; after a call the next statement is labeled (or is a
// return or goto); after a return or goto, and after an if or either that
// contains a label, call, return or goto, the next statement is labeled.
func (c *checker) labelRules(ss []Stmt) {
	var need string // why the next statement needs a label, or ""
	afterCall := false
	for _, st := range ss {
		inner, l := unlabel(st)
		if l == nil && need != "" {
			_, isRet := inner.(*Return)
			_, isGoto := inner.(*Goto)
			if !(afterCall && (isRet || isGoto)) {
				c.errorf(st.Position(), KindMissingLabel, "this statement must be labeled: it follows %s", need)
			}
		}
		if w, ok := inner.(*While); ok && l == nil {
			c.errorf(w.Pos, KindMissingLabel, "a while statement must be labeled")
		}
		need, afterCall = "", false
		switch x := inner.(type) {
		case *Call:
			need, afterCall = "a call", true
		case *Return:
			need = "a return"
		case *Goto:
			need = "a goto"
		case *If, *Either:
			if containsControl(x) {
				need = "an if or either containing a label, call, return or goto"
			}
		}
		for _, b := range children(inner) {
			c.labelRules(b)
		}
	}
}

// containsControl reports whether a compound statement contains a label,
// call, return or goto.
func containsControl(s Stmt) bool {
	for _, b := range children(s) {
		for _, st := range b {
			inner, l := unlabel(st)
			if l != nil {
				return true
			}
			switch inner.(type) {
			case *Call, *Return, *Goto:
				return true
			}
			if containsControl(inner) {
				return true
			}
		}
	}
	return false
}

// stmts checks names, assignments targets, calls and statement kinds.
func (c *checker) stmts(ss []Stmt, s *scope) {
	for _, st := range ss {
		c.stmt(st, s)
	}
}

func (c *checker) stmt(st Stmt, s *scope) {
	inner, _ := unlabel(st)
	mapping := s.kind == "read" || s.kind == "write"
	switch x := inner.(type) {
	case *Skip, *Return:
		if _, ok := x.(*Return); ok {
			if mapping {
				c.errorf(x.Position(), KindForbiddenStatement, "return is not allowed in a mapping macro")
			} else if s.kind == "archetype" || s.kind == "process" || s.kind == "algorithm" {
				c.errorf(x.Position(), KindForbiddenStatement, "return is allowed only in a procedure")
			}
		}
	case *Assign:
		for _, p := range x.Pairs {
			c.lhs(p.LHS, s)
			c.expr(p.RHS, s)
		}
	case *If:
		c.expr(x.Cond, s)
		c.stmts(x.Then, s)
		c.stmts(x.Else, s)
	case *While:
		if mapping {
			c.errorf(x.Pos, KindForbiddenStatement, "while is not allowed in a mapping macro")
		}
		if s.kind == "macro" {
			c.errorf(x.Pos, KindForbiddenStatement, "while is not allowed in a macro")
		}
		c.expr(x.Cond, s)
		c.stmts(x.Body, s)
	case *Either:
		for _, b := range x.Branches {
			c.stmts(b, s)
		}
	case *With:
		in := s.clone()
		for _, b := range x.Bindings {
			c.expr(b.Expr, in)
			in.names[b.Name] = nkBound
		}
		c.stmts(x.Body, in)
	case *Await:
		c.expr(x.Cond, s)
	case *Goto:
		if mapping {
			c.errorf(x.Pos, KindForbiddenStatement, "goto is not allowed in a mapping macro")
		} else if s.kind != "macro" {
			if _, ok := s.labels[x.Label]; !ok && x.Label != "Done" {
				c.errorf(x.LabPos, KindUndefined, "label %s is not defined in %s %s", x.Label, s.kind, s.name)
			}
		}
	case *Call:
		if mapping {
			c.errorf(x.Pos, KindForbiddenStatement, "call is not allowed in a mapping macro")
		}
		c.call(x, s)
	case *MacroCall:
		m := c.macros[x.Name]
		if m == nil {
			c.errorf(x.Pos, KindUndefined, "macro %s is not defined", x.Name)
			for _, a := range x.Args {
				c.expr(a, s)
			}
			return
		}
		if len(x.Args) != len(m.Params) {
			c.errorf(x.Pos, KindArgumentCount, "macro %s takes %d argument(s), not %d", x.Name, len(m.Params), len(x.Args))
		}
		for i, a := range x.Args {
			// A ref x[_] resource may be passed whole to a macro (PGo's
			// mayFail(self, netEnabled)): the macro is expanded in place,
			// so what counts is that its body indexes the parameter.
			if id, ok := a.(*tla.Ident); ok && i < len(m.Params) {
				if p := s.refs[id.Name]; p != nil && p.Index > 0 {
					c.macroResource(x, m, m.Params[i].Name, id, p)
					continue
				}
			}
			c.expr(a, s)
		}
	case *Print:
		c.expr(x.Expr, s)
	case *Assert:
		c.expr(x.Expr, s)
	case *Yield:
		if !mapping {
			c.errorf(x.Pos, KindYieldOutsideMapping, "yield is allowed only in a mapping macro's read or write body")
		}
		c.expr(x.Expr, s)
	}
}

// macroResource checks, for a ref resource res (declared with res.Index
// [_]) passed whole to macro m as its parameter param, that the macro's
// body (and the macros it passes the parameter on to) indexes the
// parameter as often as the resource needs wherever it reads or assigns
// it. A violation is reported at the argument.
func (c *checker) macroResource(call *MacroCall, m *Macro, param string, arg *tla.Ident, res *Param) {
	if c.macroDepth > 16 {
		return // a recursive macro, reported by recursiveMacros
	}
	c.macroDepth++
	defer func() { c.macroDepth-- }()
	ms := c.baseScope("macro", m.Name, true)
	for _, p := range m.Params {
		ms.names[p.Name] = nkMacroParam
	}
	ms.refs[param] = &Param{Pos: res.Pos, Name: param, Ref: true, Index: res.Index}
	before := len(c.errs)
	c.stmts(m.Body, ms)
	found := c.errs[before:]
	c.errs = c.errs[:before]
	for _, e := range found {
		if e.Kind != KindArityMismatch {
			continue // the macro's own checks report the rest
		}
		pos := arg.Pos
		if pos.File == "" {
			pos.File = c.file
		}
		c.errs = append(c.errs, &Error{Pos: pos, Kind: KindArityMismatch,
			Msg: fmt.Sprintf("%s%s is passed whole to macro %s as %s, which the macro uses at %d:%d with fewer than %d index(es)", arg.Name, strings.Repeat("[_]", res.Index), m.Name, param, e.Pos.Line, e.Pos.Col, res.Index)})
		return
	}
}

// lhs checks an assignment target.
func (c *checker) lhs(l LHS, s *scope) {
	for _, sel := range l.Sels {
		for _, e := range sel.Index {
			c.expr(e, s)
		}
	}
	k, ok := s.names[l.Name]
	if !ok {
		if s.kind == "macro" || (c.unknown && c.globals[l.Name] == nil && !c.module[l.Name]) {
			return
		}
		c.name(l.Name, l.Pos, s, nil)
		return
	}
	switch k {
	case nkGlobal, nkLocal, nkValParam, nkRefParam, nkDollar, nkMacroParam:
	default:
		c.errorf(l.Pos, KindAssignNonVariable, "%s is not a variable and cannot be assigned", l.Name)
		return
	}
	if p := s.refs[l.Name]; p != nil && p.Index > 0 && len(l.Sels) < p.Index {
		c.errorf(l.Pos, KindArityMismatch, "%s is declared %s%s and must be indexed %d time(s) when assigned", l.Name, l.Name, strings.Repeat("[_]", p.Index), p.Index)
	}
}

func (c *checker) call(x *Call, s *scope) {
	p := c.procs[x.Proc]
	for _, a := range x.Args {
		if a.Ref {
			k, ok := s.names[a.Name]
			if !ok {
				c.name(a.Name, a.Pos, s, nil)
			} else if k != nkRefParam && k != nkGlobal && k != nkLocal && k != nkValParam {
				c.errorf(a.Pos, KindRefMismatch, "ref %s: only variables and resources can be passed by reference", a.Name)
			}
		} else {
			c.expr(a.Expr, s)
		}
	}
	if p == nil {
		c.errorf(x.NamePos, KindUndefined, "procedure %s is not defined", x.Proc)
		return
	}
	if len(x.Args) != len(p.Params) {
		c.errorf(x.NamePos, KindArgumentCount, "procedure %s takes %d argument(s), not %d", x.Proc, len(p.Params), len(x.Args))
		return
	}
	c.matchArgs(p.Name, p.Params, x.Args, func(a *Arg, par *Param) {
		// The referenced resource's index arity must match.
		if rp := s.refs[a.Name]; rp != nil && rp.Index != par.Index {
			c.errorf(a.Pos, KindArityMismatch, "ref %s has %d [_] but parameter %s of %s has %d", a.Name, rp.Index, par.Name, p.Name, par.Index)
		} else if a.Index > 0 && a.Index != par.Index {
			c.arityMismatch(a, par, p.Name)
		}
	})
}

// matchArgs checks each argument's ref kind against its parameter's, and
// refs with refArity.
func (c *checker) matchArgs(def string, params []*Param, args []*Arg, refArity func(*Arg, *Param)) {
	for i, a := range args {
		par := params[i]
		switch {
		case a.Ref && !par.Ref:
			c.errorf(a.Pos, KindRefMismatch, "parameter %s of %s is not a ref parameter: pass a value, not ref %s", par.Name, def, a.Name)
		case !a.Ref && par.Ref:
			c.errorf(a.Pos, KindRefMismatch, "parameter %s of %s is a ref parameter: pass ref and a variable", par.Name, def)
		case a.Ref:
			refArity(a, par)
		}
	}
}

func (c *checker) arityMismatch(a *Arg, par *Param, def string) {
	c.errorf(a.Pos, KindArityMismatch, "ref %s%s does not match parameter %s%s of %s", a.Name, strings.Repeat("[_]", a.Index), par.Name, strings.Repeat("[_]", par.Index), def)
}

// instance checks an archetype instance: argument count, ref kinds,
// [_] arities and mappings.
func (c *checker) instance(p *Process, s *scope) {
	in := p.Instance
	ar := c.archetypes[in.Archetype]
	for _, a := range in.Args {
		if a.Ref {
			if c.globals[a.Name] == nil {
				if _, ok := s.names[a.Name]; ok {
					c.errorf(a.Pos, KindRefMismatch, "ref %s: only global variables can be passed by reference to an instance", a.Name)
				} else {
					c.errorf(a.Pos, KindUndefined, "%s is not a global variable", a.Name)
				}
			}
		} else {
			// In an instance's arguments the process's name stands for
			// its id, as in PGo (sm[sender] for process (sender \in S)).
			args := s.clone()
			args.names[p.Name] = nkSelf
			c.expr(a.Expr, args)
		}
	}
	if ar == nil {
		c.errorf(in.NamePos, KindUndefined, "archetype %s is not defined", in.Archetype)
		return
	}
	if len(in.Args) != len(ar.Params) {
		c.errorf(in.NamePos, KindArgumentCount, "archetype %s takes %d argument(s), not %d", ar.Name, len(ar.Params), len(in.Args))
		return
	}
	c.matchArgs(ar.Name, ar.Params, in.Args, func(a *Arg, par *Param) {
		if a.Index != par.Index {
			c.arityMismatch(a, par, ar.Name)
		}
	})
	mapped := map[int]Pos{}
	for _, m := range in.Mappings {
		idx := -1
		if m.Position > 0 {
			if m.Position > len(in.Args) {
				c.errorf(m.Pos, KindUndefined, "@%d: archetype %s has %d argument(s)", m.Position, ar.Name, len(in.Args))
				continue
			}
			idx = m.Position - 1
		} else {
			for i, a := range in.Args {
				if a.Ref && a.Name == m.Name {
					idx = i
					break
				}
			}
			if idx < 0 {
				c.errorf(m.Pos, KindUndefined, "%s is not a ref argument of this instance", m.Name)
				continue
			}
		}
		if prev, ok := mapped[idx]; ok {
			c.errorf(m.Pos, KindDuplicateMapping, "argument %d is already mapped at %d:%d", idx+1, prev.Line, prev.Col)
		} else {
			mapped[idx] = m.Pos
		}
		if par := ar.Params[idx]; m.Index != par.Index {
			c.errorf(m.Pos, KindArityMismatch, "mapping %s with %d [_] does not match parameter %s%s of %s", mappingTarget(m), m.Index, par.Name, strings.Repeat("[_]", par.Index), ar.Name)
		}
		if c.mappings[m.Macro] == nil {
			c.errorf(m.MacroPos, KindUndefined, "mapping macro %s is not defined", m.Macro)
		}
	}
}

func mappingTarget(m *Mapping) string {
	if m.Position > 0 {
		return fmt.Sprintf("@%d", m.Position)
	}
	return m.Name
}

// recursiveMacros reports macros that expand themselves.
func (c *checker) recursiveMacros() {
	state := map[string]int{} // 0 unvisited, 1 on stack, 2 done
	var visit func(m *Macro)
	visit = func(m *Macro) {
		state[m.Name] = 1
		var walk func(ss []Stmt)
		walk = func(ss []Stmt) {
			for _, st := range ss {
				inner, _ := unlabel(st)
				if mc, ok := inner.(*MacroCall); ok {
					if callee := c.macros[mc.Name]; callee != nil {
						switch state[callee.Name] {
						case 1:
							c.errorf(mc.Pos, KindRecursiveMacro, "macro %s expands itself (through %s)", callee.Name, m.Name)
						case 0:
							visit(callee)
						}
					}
				}
				for _, b := range children(inner) {
					walk(b)
				}
			}
		}
		walk(m.Body)
		state[m.Name] = 2
	}
	for _, m := range c.alg.Macros {
		if state[m.Name] == 0 {
			visit(m)
		}
	}
}

// yields checks that no path through a mapping macro body yields more
// than once and that a yield is the last statement on its path. A path
// may end without a yield, as in PGo: a write that does not yield leaves
// the resource unchanged, and a read that does not yield skips the
// statement that reads (see gen.withReads).
func (c *checker) yields(body []Stmt, what string) {
	var walk func(ss []Stmt, n int) []int
	// walk returns the yield counts at the ends of the paths.
	walk = func(ss []Stmt, n int) []int {
		counts := []int{n}
		for _, st := range ss {
			inner, _ := unlabel(st)
			var next []int
			for _, k := range counts {
				switch x := inner.(type) {
				case *Yield:
					if k >= 1 {
						c.errorf(x.Pos, KindMultipleYield, "%s yields more than once on a path", what)
						return nil
					}
					next = append(next, k+1)
				case *If:
					next = append(next, walk(x.Then, k)...)
					next = append(next, walk(x.Else, k)...)
				case *Either:
					for _, b := range x.Branches {
						next = append(next, walk(b, k)...)
					}
				case *With:
					next = append(next, walk(x.Body, k)...)
				default:
					if k >= 1 {
						c.errorf(inner.Position(), KindStatementAfterYield, "yield must be the last statement on its path in %s", what)
						return nil
					}
					next = append(next, k)
				}
			}
			counts = dedupe(next)
			if counts == nil {
				return nil
			}
		}
		return counts
	}
	walk(body, 0)
}

func dedupe(xs []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// assignments reports a variable assigned twice in one step (on some
// path between labels), PlusCal's rule, for plain PlusCal algorithms;
// macro calls count the macro's assignments.
func (c *checker) assignments(ss []Stmt, s *scope) {
	var walk func(ss []Stmt, done map[string]bool, subst map[string]string, depth int) map[string]bool
	expanding := map[string]bool{}
	assign := func(name string, pos Pos, done map[string]bool, subst map[string]string) {
		if to, ok := subst[name]; ok {
			name = to
			if name == "" {
				return
			}
		}
		if done[name] {
			c.errorf(pos, KindMultipleAssignment, "%s is assigned more than once in one step (add a label between the assignments)", name)
			return
		}
		done[name] = true
	}
	walk = func(ss []Stmt, done map[string]bool, subst map[string]string, depth int) map[string]bool {
		if depth > 64 {
			return done
		}
		for _, st := range ss {
			inner, l := unlabel(st)
			if l != nil {
				done = map[string]bool{}
			}
			switch x := inner.(type) {
			case *Assign:
				here := map[string]bool{}
				for _, p := range x.Pairs {
					name := p.LHS.Name
					if to, ok := subst[name]; ok {
						name = to
					}
					if here[name] {
						continue // x[1] := a || x[2] := b is one assignment
					}
					here[name] = true
					assign(p.LHS.Name, p.LHS.Pos, done, subst)
				}
			case *If:
				a := walk(x.Then, maps.Clone(done), subst, depth+1)
				b := walk(x.Else, maps.Clone(done), subst, depth+1)
				for k := range b {
					a[k] = true
				}
				done = a
			case *Either:
				out := maps.Clone(done)
				for _, br := range x.Branches {
					for k := range walk(br, maps.Clone(done), subst, depth+1) {
						out[k] = true
					}
				}
				done = out
			case *With:
				done = walk(x.Body, done, subst, depth+1)
			case *While:
				walk(x.Body, maps.Clone(done), subst, depth+1)
			case *MacroCall:
				m := c.macros[x.Name]
				if m == nil || len(m.Params) != len(x.Args) || expanding[m.Name] {
					continue // recursion is reported by recursiveMacros
				}
				expanding[m.Name] = true
				inner := map[string]string{}
				for k, v := range subst {
					inner[k] = v
				}
				for i, p := range m.Params {
					if id, ok := x.Args[i].(*tla.Ident); ok {
						inner[p.Name] = id.Name
					} else {
						inner[p.Name] = ""
					}
				}
				// Positions inside the macro mean little at the call: report
				// at the call.
				before := len(c.errs)
				done = walk(m.Body, done, inner, depth+1)
				delete(expanding, m.Name)
				for _, e := range c.errs[before:] {
					if e.Kind == KindMultipleAssignment {
						e.Pos = x.Pos
						if e.Pos.File == "" {
							e.Pos.File = c.file
						}
					}
				}
			case *Goto, *Return, *Call:
				done = map[string]bool{}
			}
		}
		return done
	}
	walk(ss, map[string]bool{}, map[string]string{}, 0)
}
