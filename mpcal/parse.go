package mpcal

import (
	"strconv"
	"strings"

	"strata/mpcal/tla"
)

// parser reads a PlusCal or MPCal algorithm with the TLA+ parser's lexer
// and expression parser, reading statement syntax itself.
type parser struct {
	file string
	src  []byte
	p    *tla.Parser
	lx   *tla.Lexer
	err  error

	lastEnd int // byte offset just after the last "end word" read
}

// maxStmtDepth bounds statement nesting so that malformed input cannot
// exhaust the stack.
const maxStmtDepth = 500

func newParser(file string, src []byte, off int) *parser {
	lx := tla.NewLexerAt(file, src, off)
	lx.DollarNames = true
	return &parser{file: file, src: src, lx: lx,
		p: tla.NewParser(file, lx, tla.Options{DisabledInfix: []string{"||", ":="}})}
}

// fail records the first error.
func (ps *parser) fail(pos Pos, format string, args ...any) {
	if ps.err == nil {
		ps.err = ps.p.Errorf(pos, format, args...)
	}
}

func (ps *parser) failed() bool {
	if ps.err == nil {
		ps.err = ps.p.Err()
	}
	return ps.err != nil
}

func (ps *parser) peek() tla.Token { return ps.p.Peek() }
func (ps *parser) at(k int) tla.Token {
	return ps.p.PeekAt(k)
}
func (ps *parser) next() tla.Token { return ps.p.Next() }

// is reports whether the current token has the text s (symbol, keyword or
// identifier: PlusCal's words are identifiers to the TLA+ lexer).
func (ps *parser) is(s string) bool {
	t := ps.peek()
	return t.Text == s && t.Kind != tla.TokString
}

func (ps *parser) isAt(k int, s string) bool {
	t := ps.at(k)
	return t.Text == s && t.Kind != tla.TokString
}

func describe(t tla.Token) string {
	switch t.Kind {
	case tla.TokEOF:
		return "end of input"
	case tla.TokIllegal:
		return t.Value
	}
	return strconv.Quote(t.Text)
}

// expect consumes s or records an error.
func (ps *parser) expect(s string) tla.Token {
	t := ps.peek()
	if ps.failed() {
		return t
	}
	if !ps.is(s) {
		if t.Kind == tla.TokIllegal {
			ps.fail(t.Pos, "%s", t.Value)
		} else {
			ps.fail(t.Pos, "expected %q, found %s", s, describe(t))
		}
		return t
	}
	return ps.next()
}

func (ps *parser) accept(s string) bool {
	if !ps.failed() && ps.is(s) {
		ps.next()
		return true
	}
	return false
}

func (ps *parser) ident() (string, Pos) {
	t := ps.peek()
	if ps.failed() {
		return "", t.Pos
	}
	if t.Kind != tla.TokIdent {
		ps.fail(t.Pos, "expected a name, found %s", describe(t))
		return "", t.Pos
	}
	ps.next()
	return t.Text, t.Pos
}

func (ps *parser) expr() tla.Expr {
	if ps.failed() {
		return nil
	}
	e, err := ps.p.ParseExpr()
	if err != nil {
		ps.err = err
		return nil
	}
	return e
}

// ParseAlgorithm parses the algorithm starting at byte offset off of src,
// which must be at "--mpcal", "--algorithm" or "--fair".
func ParseAlgorithm(file string, src []byte, off int) (*Algorithm, error) {
	ps := newParser(file, src, off)
	a := ps.algorithm()
	if ps.failed() {
		return nil, ps.err
	}
	return a, nil
}

func (ps *parser) algorithm() *Algorithm {
	start := ps.peek()
	a := &Algorithm{Pos: start.Pos, Start: start.Pos.Offset}
	ps.expect("--")
	switch {
	case ps.is("mpcal"):
		a.MPCal = true
	case ps.is("fair"):
		a.Fair = true
		ps.next()
		if !ps.is("algorithm") {
			ps.fail(ps.peek().Pos, "expected \"algorithm\" after --fair, found %s", describe(ps.peek()))
		}
	case ps.is("algorithm"):
	default:
		ps.fail(ps.peek().Pos, "expected mpcal or algorithm after --, found %s", describe(ps.peek()))
	}
	ps.next()
	a.Name, _ = ps.ident()
	if ps.failed() {
		return a
	}
	if ps.is("{") {
		ps.next()
		ps.cDecls(a)
		end := ps.expect("}")
		a.End = end.End.Offset
		return a
	}
	if a.MPCal {
		ps.fail(ps.peek().Pos, "an MPCal algorithm is written in C-syntax: expected \"{\", found %s", describe(ps.peek()))
		return a
	}
	a.PSyntax = true
	ps.pDecls(a)
	return a
}

// ---- C-syntax ----

func (ps *parser) cDecls(a *Algorithm) {
	for !ps.failed() && !ps.is("}") {
		t := ps.peek()
		switch {
		case ps.is("variables") || ps.is("variable"):
			ps.next()
			a.Globals = append(a.Globals, ps.varDecls(false)...)
		case ps.is("define"):
			ps.next()
			ps.expect("{")
			a.Defines = append(a.Defines, ps.defines("}")...)
			ps.expect("}")
			ps.accept(";")
		case ps.is("macro"):
			a.Macros = append(a.Macros, ps.cMacro())
		case ps.is("procedure"):
			a.Procedures = append(a.Procedures, ps.cProcedure(a.MPCal))
		case ps.is("mapping") && ps.isAt(1, "macro"):
			if !a.MPCal {
				ps.fail(t.Pos, "mapping macros are MPCal: write the algorithm as --mpcal")
				return
			}
			a.MappingMacros = append(a.MappingMacros, ps.mappingMacro())
		case ps.is("archetype"):
			if !a.MPCal {
				ps.fail(t.Pos, "archetypes are MPCal: write the algorithm as --mpcal")
				return
			}
			a.Archetypes = append(a.Archetypes, ps.archetype())
		case ps.is("fair") || ps.is("process"):
			if a.Body != nil {
				ps.fail(t.Pos, "an algorithm has either processes or a body, not both")
				return
			}
			a.Processes = append(a.Processes, ps.cProcess(a.MPCal))
		case ps.is("{"):
			if len(a.Processes) > 0 || a.Body != nil {
				ps.fail(t.Pos, "an algorithm has either processes or a body, not both")
				return
			}
			a.Body = ps.block()
			ps.accept(";")
		default:
			ps.fail(t.Pos, "expected a declaration (variables, define, macro, procedure, process%s), found %s",
				map[bool]string{true: ", archetype, mapping macro", false: ""}[a.MPCal], describe(t))
			return
		}
	}
}

// varDecls reads "x = e, y \in S; z;" up to the first token that cannot
// start a declaration. In a procedure or archetype header (local) the list
// ends before "{".
func (ps *parser) varDecls(pSyntax bool) []*VarDecl {
	var out []*VarDecl
	for !ps.failed() {
		t := ps.peek()
		if t.Kind != tla.TokIdent || isDeclWord(t.Text, pSyntax) || ps.isAt(1, ":") {
			break
		}
		name, pos := ps.ident()
		d := &VarDecl{Pos: pos, Name: name}
		switch {
		case ps.is("="):
			ps.next()
			d.Op, d.Init = "=", ps.expr()
		case ps.is("\\in"):
			ps.next()
			d.Op, d.Init = "\\in", ps.expr()
		}
		out = append(out, d)
		if !ps.accept(",") && !ps.accept(";") {
			break
		}
	}
	if len(out) == 0 && !ps.failed() {
		ps.fail(ps.peek().Pos, "expected a variable declaration, found %s", describe(ps.peek()))
	}
	return out
}

func isDeclWord(s string, pSyntax bool) bool {
	switch s {
	case "define", "macro", "procedure", "process", "fair", "archetype", "mapping", "variables", "variable":
		return true
	case "begin":
		return pSyntax
	}
	return false
}

// defines reads TLA+ definitions up to the token end.
func (ps *parser) defines(end string) []tla.Unit {
	var out []tla.Unit
	for !ps.failed() && !ps.is(end) {
		if ps.peek().Kind == tla.TokEOF {
			ps.fail(ps.peek().Pos, "unterminated define block")
			break
		}
		u, err := ps.p.ParseUnit()
		if err != nil {
			ps.err = err
			break
		}
		out = append(out, u)
		ps.accept(";")
	}
	return out
}

func (ps *parser) params(allowRef bool) []*Param {
	ps.expect("(")
	var out []*Param
	if ps.accept(")") {
		return out
	}
	for !ps.failed() {
		p := &Param{Pos: ps.peek().Pos}
		if ps.is("ref") {
			if !allowRef {
				ps.fail(ps.peek().Pos, "ref parameters are MPCal")
				return out
			}
			ps.next()
			p.Ref = true
		}
		p.Name, _ = ps.ident()
		p.Index = ps.underscores()
		if ps.accept("=") {
			p.Init = ps.expr()
		}
		out = append(out, p)
		if !ps.accept(",") {
			break
		}
	}
	ps.expect(")")
	return out
}

// underscores reads a run of [_] and returns how many.
func (ps *parser) underscores() int {
	n := 0
	for !ps.failed() && ps.is("[") && ps.isAt(1, "_") {
		ps.next()
		ps.next()
		ps.expect("]")
		n++
	}
	return n
}

func (ps *parser) cMacro() *Macro {
	m := &Macro{Pos: ps.next().Pos}
	m.Name, m.NamePos = ps.ident()
	m.Params = ps.params(false)
	m.Body = ps.block()
	ps.accept(";")
	return m
}

func (ps *parser) cProcedure(mpcal bool) *Procedure {
	pr := &Procedure{Pos: ps.next().Pos}
	pr.Name, pr.NamePos, pr.Params, pr.Locals, pr.Body = ps.cDefinition(mpcal)
	return pr
}

func (ps *parser) archetype() *Archetype {
	ar := &Archetype{Pos: ps.next().Pos}
	ar.Name, ar.NamePos, ar.Params, ar.Locals, ar.Body = ps.cDefinition(true)
	return ar
}

// cDefinition reads what follows "procedure" or "archetype": the name,
// parameters, local variables and body.
func (ps *parser) cDefinition(refs bool) (string, Pos, []*Param, []*VarDecl, []Stmt) {
	name, pos := ps.ident()
	params := ps.params(refs)
	var locals []*VarDecl
	if ps.accept("variables") || ps.accept("variable") {
		locals = ps.varDecls(false)
	}
	body := ps.block()
	ps.accept(";")
	return name, pos, params, locals, body
}

func (ps *parser) mappingMacro() *MappingMacro {
	mm := &MappingMacro{Pos: ps.next().Pos}
	ps.next() // macro
	mm.Name, mm.NamePos = ps.ident()
	ps.expect("{")
	for !ps.failed() && !ps.is("}") {
		t := ps.peek()
		switch {
		case ps.is("read") && !mm.HasRead:
			ps.next()
			mm.HasRead, mm.ReadPos = true, t.Pos
			mm.Read, mm.EndRead = ps.blockEnd()
		case ps.is("write") && !mm.HasWrite:
			ps.next()
			mm.HasWrite, mm.WritePos = true, t.Pos
			mm.Write, mm.EndWrite = ps.blockEnd()
		default:
			ps.fail(t.Pos, "expected read or write in mapping macro %s, found %s", mm.Name, describe(t))
		}
		ps.accept(";")
	}
	if !ps.failed() && (!mm.HasRead || !mm.HasWrite) {
		missing := "read"
		if mm.HasRead {
			missing = "write"
		}
		ps.fail(ps.peek().Pos, "mapping macro %s has no %s body", mm.Name, missing)
	}
	ps.expect("}")
	ps.accept(";")
	return mm
}

func (ps *parser) fairness() Fairness {
	if !ps.is("fair") {
		return Unfair
	}
	ps.next()
	if ps.is("+") {
		ps.next()
		return StrongFair
	}
	return WeakFair
}

func (ps *parser) cProcess(mpcal bool) *Process {
	pos := ps.peek().Pos
	fair := ps.fairness()
	pr := &Process{Pos: pos, Fair: fair}
	ps.expect("process")
	ps.expect("(")
	pr.Name, pr.NamePos = ps.ident()
	pr.Op, pr.ID = ps.processID()
	ps.expect(")")
	if ps.is("==") {
		if !mpcal {
			ps.fail(ps.peek().Pos, "archetype instances are MPCal: write the algorithm as --mpcal")
			return pr
		}
		ps.next()
		pr.Instance = ps.instance()
		ps.expect(";")
		return pr
	}
	if ps.accept("variables") || ps.accept("variable") {
		pr.Locals = ps.varDecls(false)
	}
	pr.Body = ps.block()
	ps.accept(";")
	return pr
}

func (ps *parser) processID() (string, tla.Expr) {
	switch {
	case ps.is("="):
		ps.next()
		return "=", ps.expr()
	case ps.is("\\in"):
		ps.next()
		return "\\in", ps.expr()
	}
	if !ps.failed() {
		ps.fail(ps.peek().Pos, "expected = or \\in after the process name, found %s", describe(ps.peek()))
	}
	return "", nil
}

func (ps *parser) instance() *Instance {
	in := &Instance{Pos: ps.expect("instance").Pos}
	in.Archetype, in.NamePos = ps.ident()
	ps.expect("(")
	if !ps.accept(")") {
		for !ps.failed() {
			in.Args = append(in.Args, ps.arg())
			if !ps.accept(",") {
				break
			}
		}
		ps.expect(")")
	}
	for !ps.failed() && ps.is("mapping") {
		ps.next()
		m := &Mapping{Pos: ps.peek().Pos}
		if ps.accept("@") {
			t := ps.peek()
			n, err := strconv.Atoi(t.Text)
			if t.Kind != tla.TokNumber || err != nil || n < 1 {
				ps.fail(t.Pos, "expected an argument position after @, found %s", describe(t))
				return in
			}
			ps.next()
			m.Position = n
		} else {
			m.Name, _ = ps.ident()
		}
		m.Index = ps.underscores()
		ps.expect("via")
		m.MacroPos = ps.peek().Pos
		m.Macro, _ = ps.ident()
		in.Mappings = append(in.Mappings, m)
	}
	return in
}

// arg reads an argument of an instance or a call: "ref x", "ref x[_]" or
// an expression.
func (ps *parser) arg() *Arg {
	a := &Arg{Pos: ps.peek().Pos}
	if ps.is("ref") {
		ps.next()
		a.Ref = true
		a.Name, _ = ps.ident()
		a.Index = ps.underscores()
		return a
	}
	a.Expr = ps.expr()
	return a
}

// block reads { stmts }.
func (ps *parser) block() []Stmt {
	s, _ := ps.blockEnd()
	return s
}

func (ps *parser) blockEnd() ([]Stmt, Pos) {
	ps.expect("{")
	out := ps.cStmts(0)
	end := ps.peek().Pos
	ps.expect("}")
	return out, end
}

// cStmts reads statements up to "}".
func (ps *parser) cStmts(depth int) []Stmt {
	var out []Stmt
	for !ps.failed() && !ps.is("}") {
		if ps.accept(";") {
			continue
		}
		if ps.peek().Kind == tla.TokEOF {
			ps.fail(ps.peek().Pos, "expected \"}\", found end of input")
			break
		}
		s := ps.cStmt(depth)
		if s == nil {
			break
		}
		out = append(out, s)
		if ps.is("}") || ps.accept(";") {
			continue
		}
		if !endsInBrace(s) && !ps.failed() {
			ps.fail(ps.peek().Pos, "expected \";\" after the statement, found %s", describe(ps.peek()))
		}
	}
	return out
}

// endsInBrace reports whether s ends with a block, after which PlusCal's
// C-syntax makes the semicolon optional.
func endsInBrace(s Stmt) bool {
	s, _ = unlabel(s)
	switch s.(type) {
	case *If, *While, *Either, *With:
		return true
	}
	return false
}

// cBody reads a block or a single statement (if/while/either/with bodies).
func (ps *parser) cBody(depth int) []Stmt {
	if ps.is("{") {
		ps.next()
		s := ps.cStmts(depth + 1)
		ps.expect("}")
		return s
	}
	s := ps.cStmt(depth + 1)
	if s == nil {
		return nil
	}
	return []Stmt{s}
}

// label reads "name:" (not "name :=") with an optional + or - (fairness
// of the step), or returns nil.
func (ps *parser) label() *Labeled {
	t := ps.peek()
	if t.Kind != tla.TokIdent || !ps.isAt(1, ":") {
		return nil
	}
	ps.next()
	ps.next()
	l := &Labeled{Pos: t.Pos, Label: t.Text}
	if ps.is("+") || ps.is("-") {
		l.Mod = ps.next().Text
	}
	return l
}

func (ps *parser) cStmt(depth int) Stmt {
	if ps.failed() {
		return nil
	}
	t := ps.peek()
	if depth > maxStmtDepth {
		ps.fail(t.Pos, "statements nested too deeply")
		return nil
	}
	if l := ps.label(); l != nil {
		if ps.is("}") || ps.is(";") {
			ps.fail(ps.peek().Pos, "expected a statement after label %s, found %s", t.Text, describe(ps.peek()))
			return nil
		}
		l.Stmt = ps.cStmt(depth + 1)
		if l.Stmt == nil {
			return nil
		}
		if _, ok := l.Stmt.(*Labeled); ok {
			ps.fail(l.Stmt.Position(), "a statement has two labels")
			return nil
		}
		return l
	}
	switch {
	case ps.is("skip"):
		ps.next()
		return &Skip{Pos: t.Pos}
	case ps.is("if"):
		ps.next()
		s := &If{Pos: t.Pos}
		ps.expect("(")
		s.Cond = ps.expr()
		ps.expect(")")
		s.Then = ps.cBody(depth)
		if ps.is(";") && ps.isAt(1, "else") {
			ps.next()
		}
		if ps.accept("else") {
			s.Else = ps.cBody(depth)
		}
		return s
	case ps.is("while"):
		ps.next()
		s := &While{Pos: t.Pos}
		ps.expect("(")
		s.Cond = ps.expr()
		ps.expect(")")
		s.Body = ps.cBody(depth)
		return s
	case ps.is("either"):
		ps.next()
		s := &Either{Pos: t.Pos}
		s.Branches = append(s.Branches, ps.cBody(depth))
		for !ps.failed() {
			if ps.is(";") && ps.isAt(1, "or") {
				ps.next()
			}
			if !ps.accept("or") {
				break
			}
			s.Branches = append(s.Branches, ps.cBody(depth))
		}
		return s
	case ps.is("with"):
		ps.next()
		s := &With{Pos: t.Pos}
		ps.expect("(")
		s.Bindings = ps.bindings(")")
		ps.expect(")")
		s.Body = ps.cBody(depth)
		return s
	}
	return ps.simpleStmt(depth)
}

// bindings reads with's "x \in S, y = e" (ending before end).
func (ps *parser) bindings(end string) []Binding {
	var out []Binding
	for !ps.failed() {
		b := Binding{Pos: ps.peek().Pos}
		b.Name, _ = ps.ident()
		switch {
		case ps.is("="):
			b.Op = "="
		case ps.is("\\in"):
			b.Op = "\\in"
		default:
			if !ps.failed() {
				ps.fail(ps.peek().Pos, "expected = or \\in in with, found %s", describe(ps.peek()))
			}
			return out
		}
		ps.next()
		b.Expr = ps.expr()
		out = append(out, b)
		if !ps.accept(",") && !ps.accept(";") {
			break
		}
		if ps.is(end) {
			break
		}
	}
	return out
}

// simpleStmt reads the statements common to both syntaxes.
func (ps *parser) simpleStmt(depth int) Stmt {
	t := ps.peek()
	switch {
	case ps.is("await") || ps.is("when"):
		ps.next()
		return &Await{Pos: t.Pos, When: t.Text == "when", Cond: ps.expr()}
	case ps.is("goto"):
		ps.next()
		g := &Goto{Pos: t.Pos, LabPos: ps.peek().Pos}
		g.Label, _ = ps.ident()
		return g
	case ps.is("return"):
		ps.next()
		return &Return{Pos: t.Pos}
	case ps.is("call"):
		ps.next()
		c := &Call{Pos: t.Pos, NamePos: ps.peek().Pos}
		c.Proc, _ = ps.ident()
		ps.expect("(")
		if !ps.accept(")") {
			for !ps.failed() {
				c.Args = append(c.Args, ps.arg())
				if !ps.accept(",") {
					break
				}
			}
			ps.expect(")")
		}
		return c
	case ps.is("print"):
		ps.next()
		return &Print{Pos: t.Pos, Expr: ps.expr()}
	case ps.is("assert"):
		ps.next()
		return &Assert{Pos: t.Pos, Expr: ps.expr()}
	case ps.is("yield"):
		ps.next()
		return &Yield{Pos: t.Pos, Expr: ps.expr()}
	}
	if t.Kind != tla.TokIdent {
		if t.Kind == tla.TokIllegal {
			ps.fail(t.Pos, "%s", t.Value)
		} else {
			ps.fail(t.Pos, "expected a statement, found %s", describe(t))
		}
		return nil
	}
	if ps.isAt(1, "(") {
		ps.next()
		mc := &MacroCall{Pos: t.Pos, Name: t.Text}
		ps.next()
		if !ps.accept(")") {
			for !ps.failed() {
				mc.Args = append(mc.Args, ps.expr())
				if !ps.accept(",") {
					break
				}
			}
			ps.expect(")")
		}
		return mc
	}
	a := &Assign{Pos: t.Pos}
	for !ps.failed() {
		lhs := ps.lhs()
		ps.expect(":=")
		rhs := ps.expr()
		a.Pairs = append(a.Pairs, AssignPair{LHS: lhs, RHS: rhs})
		if !ps.accept("||") {
			break
		}
	}
	return a
}

func (ps *parser) lhs() LHS {
	l := LHS{Pos: ps.peek().Pos}
	l.Name, _ = ps.ident()
	for !ps.failed() {
		switch {
		case ps.is("["):
			ps.next()
			var idx []tla.Expr
			for !ps.failed() {
				idx = append(idx, ps.expr())
				if !ps.accept(",") {
					break
				}
			}
			ps.expect("]")
			l.Sels = append(l.Sels, Selector{Index: idx})
		case ps.is("."):
			ps.next()
			f, _ := ps.ident()
			l.Sels = append(l.Sels, Selector{Field: f})
		default:
			if !ps.is(":=") && !ps.failed() {
				ps.fail(ps.peek().Pos, "expected := in an assignment to %s, found %s", l.Name, describe(ps.peek()))
			}
			return l
		}
	}
	return l
}

// ---- P-syntax ----

func (ps *parser) pDecls(a *Algorithm) {
	for !ps.failed() {
		t := ps.peek()
		switch {
		case ps.is("variables") || ps.is("variable"):
			ps.next()
			a.Globals = append(a.Globals, ps.varDecls(true)...)
		case ps.is("define"):
			ps.next()
			a.Defines = append(a.Defines, ps.defines("end")...)
			ps.expect("end")
			ps.expect("define")
			ps.accept(";")
		case ps.is("macro"):
			ps.next()
			m := &Macro{Pos: t.Pos}
			m.Name, m.NamePos = ps.ident()
			m.Params = ps.params(false)
			ps.expect("begin")
			m.Body = ps.pStmts(0, "end")
			ps.pEnd("macro")
			a.Macros = append(a.Macros, m)
		case ps.is("procedure"):
			ps.next()
			pr := &Procedure{Pos: t.Pos}
			pr.Name, pr.NamePos = ps.ident()
			pr.Params = ps.params(false)
			if ps.accept("variables") || ps.accept("variable") {
				pr.Locals = ps.varDecls(true)
			}
			ps.expect("begin")
			pr.Body = ps.pStmts(0, "end")
			ps.pEnd("procedure")
			a.Procedures = append(a.Procedures, pr)
		case ps.is("fair") || ps.is("process"):
			pr := &Process{Pos: t.Pos, Fair: ps.fairness()}
			ps.expect("process")
			paren := ps.accept("(")
			pr.Name, pr.NamePos = ps.ident()
			pr.Op, pr.ID = ps.processID()
			if paren {
				ps.expect(")")
			}
			if ps.accept("variables") || ps.accept("variable") {
				pr.Locals = ps.varDecls(true)
			}
			ps.expect("begin")
			pr.Body = ps.pStmts(0, "end")
			ps.pEnd("process")
			a.Processes = append(a.Processes, pr)
		case ps.is("begin"):
			ps.next()
			a.Body = ps.pStmts(0, "end")
			ps.pEnd("algorithm")
			a.End = ps.lastEnd
			return
		case ps.is("end") && ps.isAt(1, "algorithm"):
			ps.pEnd("algorithm")
			a.End = ps.lastEnd
			return
		default:
			ps.fail(t.Pos, "expected a declaration (variables, define, macro, procedure, process, begin), found %s", describe(t))
			return
		}
	}
}

// pEnd reads "end word" and an optional ";".
func (ps *parser) pEnd(word string) {
	ps.expect("end")
	w := ps.expect(word)
	ps.lastEnd = w.End.Offset
	ps.accept(";")
}

// pStmts reads P-syntax statements up to one of the terminators.
func (ps *parser) pStmts(depth int, terms ...string) []Stmt {
	var out []Stmt
	for !ps.failed() {
		for _, t := range terms {
			if ps.is(t) {
				return out
			}
		}
		if ps.accept(";") {
			continue
		}
		if ps.peek().Kind == tla.TokEOF {
			ps.fail(ps.peek().Pos, "expected %s, found end of input", strings.Join(terms, " or "))
			return out
		}
		s := ps.pStmt(depth)
		if s == nil {
			return out
		}
		out = append(out, s)
		if !ps.accept(";") {
			stop := false
			for _, t := range terms {
				stop = stop || ps.is(t)
			}
			if !stop && !ps.failed() {
				ps.fail(ps.peek().Pos, "expected \";\" after the statement, found %s", describe(ps.peek()))
			}
		}
	}
	return out
}

func (ps *parser) pStmt(depth int) Stmt {
	t := ps.peek()
	if depth > maxStmtDepth {
		ps.fail(t.Pos, "statements nested too deeply")
		return nil
	}
	if l := ps.label(); l != nil {
		l.Stmt = ps.pStmt(depth + 1)
		if l.Stmt == nil {
			return nil
		}
		return l
	}
	switch {
	case ps.is("skip"):
		ps.next()
		return &Skip{Pos: t.Pos}
	case ps.is("if"):
		ps.next()
		s := &If{}
		ps.pIfTail(s, depth)
		s.Pos = t.Pos
		return s
	case ps.is("while"):
		ps.next()
		s := &While{Pos: t.Pos, Cond: ps.expr()}
		ps.expect("do")
		s.Body = ps.pStmts(depth+1, "end")
		ps.expect("end")
		ps.expect("while")
		return s
	case ps.is("either"):
		ps.next()
		s := &Either{Pos: t.Pos}
		s.Branches = append(s.Branches, ps.pStmts(depth+1, "or", "end"))
		for ps.accept("or") {
			s.Branches = append(s.Branches, ps.pStmts(depth+1, "or", "end"))
		}
		ps.expect("end")
		ps.expect("either")
		return s
	case ps.is("with"):
		ps.next()
		s := &With{Pos: t.Pos}
		s.Bindings = ps.bindings("do")
		ps.expect("do")
		s.Body = ps.pStmts(depth+1, "end")
		ps.expect("end")
		ps.expect("with")
		return s
	}
	return ps.simpleStmt(depth)
}

// pIfTail reads "c then ... [elsif ...] [else ...] end if" after if or
// elsif; an elsif is an if nested in the else branch.
func (ps *parser) pIfTail(s *If, depth int) {
	if depth > maxStmtDepth {
		ps.fail(ps.peek().Pos, "statements nested too deeply")
		return
	}
	s.Pos = ps.peek().Pos
	s.Cond = ps.expr()
	ps.expect("then")
	s.Then = ps.pStmts(depth+1, "else", "elsif", "end")
	switch {
	case ps.is("elsif"):
		ps.next()
		inner := &If{}
		ps.pIfTail(inner, depth+1)
		s.Else = []Stmt{inner}
		return
	case ps.accept("else"):
		s.Else = ps.pStmts(depth+1, "end")
	}
	ps.expect("end")
	ps.expect("if")
}
