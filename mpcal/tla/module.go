package tla

import "regexp"

// headerRE finds the start of a module. Text before it is ignored, as SANY
// does, so files may begin with arbitrary prose.
var headerRE = regexp.MustCompile(`-{4,}[ \t]*MODULE\b`)

// ParseModule parses the first module in src. Text before the module's
// header line and after its closing ==== is ignored.
func ParseModule(file string, src []byte) (*Module, error) {
	loc := headerRE.FindIndex(src)
	if loc == nil {
		return nil, &Error{File: file, Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "no module header (---- MODULE Name ----) found"}
	}
	p := NewParser(file, NewLexerAt(file, src, loc[0]), Options{})
	return p.ParseModule()
}

// ParseModule parses a module starting at the current token (its ----
// header line) and stops after its closing ====.
func (p *Parser) ParseModule() (*Module, error) {
	if p.err != nil {
		return nil, p.err
	}
	m := p.module()
	if p.err != nil {
		return nil, p.err
	}
	return m, nil
}

// ParseUnit parses one definition or declaration at the current token:
// what may appear at the top level of a module (PlusCal's define block
// holds such units).
func (p *Parser) ParseUnit() (Unit, error) {
	if p.err != nil {
		return nil, p.err
	}
	u := p.unit(true)
	if p.err != nil {
		return nil, p.err
	}
	return u, nil
}

func (p *Parser) module() *Module {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	t := p.tok()
	if t.Kind != TokSeparator {
		p.unexpected(t, "a module header (---- MODULE Name ----)")
		return nil
	}
	p.next()
	if !p.expect("MODULE") {
		return nil
	}
	name, ok := p.expectIdent()
	if !ok {
		return nil
	}
	if s := p.tok(); s.Kind != TokSeparator {
		p.unexpected(s, "---- after the module name")
		return nil
	}
	p.next()
	m := &Module{Loc: Loc{t.Pos}, Name: name.Name}
	if p.tok().Is("EXTENDS") {
		p.next()
		ids, ok := p.identList()
		if !ok {
			return nil
		}
		for _, id := range ids {
			m.Extends = append(m.Extends, id.Name)
		}
	}
	for {
		switch t := p.tok(); t.Kind {
		case TokModuleEnd:
			p.next()
			return m
		case TokEOF:
			p.errorf(t.Pos, "missing ==== at the end of module %s", m.Name)
			return nil
		}
		u := p.unit(true)
		if u == nil {
			return nil
		}
		m.Units = append(m.Units, u)
	}
}

// unit parses one module-level unit (top) or one LET definition (!top).
// It either consumes at least one token or records an error, so the
// callers' loops always make progress.
func (p *Parser) unit(top bool) Unit {
	t := p.tok()
	if !top {
		if t.Is("RECURSIVE") {
			return p.recursive()
		}
		return p.definition(false)
	}
	switch {
	case t.Kind == TokSeparator:
		if p.raw(1).Is("MODULE") {
			if m := p.module(); m != nil {
				return m
			}
			return nil
		}
		p.next()
		return &Separator{Loc{t.Pos}}
	case t.Is("VARIABLE"), t.Is("VARIABLES"):
		p.next()
		ids, ok := p.identList()
		if !ok {
			return nil
		}
		return &VarDecl{Loc{t.Pos}, ids}
	case t.Is("CONSTANT"), t.Is("CONSTANTS"):
		p.next()
		ds, ok := p.opDeclList()
		if !ok {
			return nil
		}
		return &ConstDecl{Loc{t.Pos}, ds}
	case t.Is("RECURSIVE"):
		return p.recursive()
	case t.Is("ASSUME"), t.Is("ASSUMPTION"), t.Is("AXIOM"):
		p.next()
		name := p.optName()
		e := p.expr()
		if e == nil {
			return nil
		}
		return &Assume{Loc{t.Pos}, t.Text, name, e}
	case t.Is("THEOREM"), t.Is("LEMMA"), t.Is("PROPOSITION"), t.Is("COROLLARY"):
		return p.theorem()
	case t.Is("LOCAL"):
		p.next()
		if p.tok().Is("INSTANCE") {
			if in := p.instance(true); in != nil {
				return in
			}
			return nil
		}
		return p.definition(true)
	case t.Is("INSTANCE"):
		if in := p.instance(false); in != nil {
			return in
		}
		return nil
	}
	return p.definition(false)
}

// optName parses the optional "Name ==" of ASSUME and THEOREM.
func (p *Parser) optName() string {
	if t := p.tok(); t.Kind == TokIdent && p.raw(1).Is("==") && p.consume(2) {
		return t.Text
	}
	return ""
}

func (p *Parser) recursive() Unit {
	t := p.next()
	ds, ok := p.opDeclList()
	if !ok {
		return nil
	}
	return &Recursive{Loc{t.Pos}, ds}
}

func (p *Parser) opDeclList() ([]OpDecl, bool) {
	var ds []OpDecl
	for {
		d, ok := p.opDecl()
		if !ok {
			return nil, false
		}
		ds = append(ds, d)
		if !p.tok().Is(",") {
			return ds, true
		}
		p.next()
	}
}

// opDecl parses x, F(_, _), _ + _, -. _ or _ ^+.
func (p *Parser) opDecl() (OpDecl, bool) {
	t := p.tok()
	d := OpDecl{Loc: Loc{t.Pos}}
	switch {
	case t.Kind == TokIdent:
		p.next()
		d.Name, d.Kind = t.Text, NameDecl
		if p.tok().Is("(") {
			p.next()
			for {
				if !p.expect("_") {
					return d, false
				}
				d.Arity++
				if !p.tok().Is(",") {
					break
				}
				p.next()
			}
			if !p.expect(")") {
				return d, false
			}
		}
		return d, true
	case t.Is("_"):
		p.next()
		op := p.tok()
		if info := opToken(op, InfixOp); info != nil {
			p.next()
			d.Name, d.Kind, d.Arity = info.Name, InfixDecl, 2
			return d, p.expect("_")
		}
		if info := opToken(op, PostfixOp); info != nil {
			p.next()
			d.Name, d.Kind, d.Arity = info.Name, PostfixDecl, 1
			return d, true
		}
		p.unexpected(op, "an infix or postfix operator")
		return d, false
	case opToken(t, PrefixOp) != nil:
		p.next()
		d.Name, d.Kind, d.Arity = prefixDeclName(t), PrefixDecl, 1
		return d, p.expect("_")
	}
	p.unexpected(t, "an operator declaration")
	return d, false
}

// prefixDeclName is the name under which a prefix operator is declared or
// defined: the minus is "-." there, to tell it from the infix minus.
func prefixDeclName(t Token) string {
	if t.Text == "-" || t.Text == "-." {
		return "-."
	}
	return opToken(t, PrefixOp).Name
}

// definition parses an operator, function or module definition.
func (p *Parser) definition(local bool) Unit {
	t := p.tok()
	start := Loc{t.Pos}
	if t.Kind == TokIdent {
		n := p.raw(1)
		switch {
		case n.Is("=="):
			if !p.consume(2) {
				return nil
			}
			return p.defBody(start, local, t.Text, NameDecl, nil)
		case n.Is("("):
			if !p.consume(2) {
				return nil
			}
			ps, ok := p.opDeclList()
			if !ok || !p.expect(")") || !p.expect("==") {
				return nil
			}
			return p.defBody(start, local, t.Text, NameDecl, ps)
		case n.Is("["):
			if !p.consume(2) {
				return nil
			}
			bs, ok := p.boundList()
			if !ok || !p.expect("]") || !p.expect("==") {
				return nil
			}
			body := p.expr()
			if body == nil {
				return nil
			}
			return &FuncDef{start, local, t.Text, bs, body}
		case opToken(n, InfixOp) != nil && p.raw(2).Kind == TokIdent && p.raw(3).Is("=="):
			r := p.raw(2)
			if !p.consume(4) {
				return nil
			}
			ps := []OpDecl{{Loc: start, Name: t.Text}, {Loc: Loc{r.Pos}, Name: r.Text}}
			return p.defBody(start, local, opToken(n, InfixOp).Name, InfixDecl, ps)
		case opToken(n, PostfixOp) != nil && p.raw(2).Is("=="):
			if !p.consume(3) {
				return nil
			}
			ps := []OpDecl{{Loc: start, Name: t.Text}}
			return p.defBody(start, local, opToken(n, PostfixOp).Name, PostfixDecl, ps)
		}
	} else if opToken(t, PrefixOp) != nil && p.raw(1).Kind == TokIdent && p.raw(2).Is("==") {
		a := p.raw(1)
		if !p.consume(3) {
			return nil
		}
		ps := []OpDecl{{Loc: Loc{a.Pos}, Name: a.Text}}
		return p.defBody(start, local, prefixDeclName(t), PrefixDecl, ps)
	}
	p.unexpected(t, "a definition or declaration")
	return nil
}

// defBody finishes a definition after its "==": either a named instance
// (Name == INSTANCE M ...) or an operator definition.
func (p *Parser) defBody(start Loc, local bool, name string, kind DeclKind, params []OpDecl) Unit {
	if kind == NameDecl && p.tok().Is("INSTANCE") {
		in := p.instance(false)
		if in == nil {
			return nil
		}
		return &ModuleDef{start, local, name, params, in}
	}
	body := p.expr()
	if body == nil {
		return nil
	}
	return &OpDef{start, local, name, kind, params, body}
}

// instance parses INSTANCE M [WITH a <- e, ...].
func (p *Parser) instance(local bool) *Instance {
	t := p.tok()
	if !p.expect("INSTANCE") {
		return nil
	}
	name, ok := p.expectIdent()
	if !ok {
		return nil
	}
	in := &Instance{Loc: Loc{t.Pos}, Local: local, Module: name.Name}
	if !p.tok().Is("WITH") {
		return in
	}
	p.next()
	for {
		s := p.tok()
		var target string
		switch {
		case s.Kind == TokIdent:
			target = s.Text
		case s.Text == "-." || opToken(s, PrefixOp) != nil && opToken(s, InfixOp) == nil:
			target = prefixDeclName(s)
		default:
			target = opSymbolName(s)
		}
		if target == "" {
			p.unexpected(s, "a name or operator symbol to substitute")
			return nil
		}
		p.next()
		if !p.expect("<-") {
			return nil
		}
		e := p.substArg()
		if e == nil {
			return nil
		}
		in.Subst = append(in.Subst, Subst{Loc{s.Pos}, target, e})
		if !p.tok().Is(",") {
			return in
		}
		p.next()
	}
}

// substArg parses the right side of "x <- e", which may be a bare
// operator symbol. Unlike an operator argument it has no closing ")", so a
// symbol counts as bare when a comma, the end of the line or the end of
// the module follows it.
func (p *Parser) substArg() Expr {
	t := p.tok()
	if name := opSymbolName(t); name != "" {
		n := p.raw(1)
		if n.Is(",") || n.Pos.Line > t.Pos.Line || n.Kind == TokEOF || n.Kind == TokModuleEnd {
			p.next()
			return &OpSymbol{Loc{t.Pos}, name}
		}
	}
	return p.expr()
}

// theorem parses THEOREM [Name ==] expr and skips any proof after it.
func (p *Parser) theorem() Unit {
	t := p.next()
	name := p.optName()
	if p.tok().Is("ASSUME") {
		p.errorf(p.tok().Pos, "ASSUME ... PROVE theorems are not supported")
		return nil
	}
	e := p.expr()
	if e == nil {
		return nil
	}
	proof, ok := p.skipProof()
	if !ok {
		return nil
	}
	return &Theorem{Loc{t.Pos}, t.Text, name, e, proof}
}

// proofStart are the keywords that can begin a proof (besides step labels
// like <1>).
var proofStart = map[string]bool{"PROOF": true, "BY": true, "OBVIOUS": true, "OMITTED": true}

var unitKeywords = map[string]bool{
	"VARIABLE": true, "VARIABLES": true, "CONSTANT": true, "CONSTANTS": true,
	"ASSUME": true, "ASSUMPTION": true, "AXIOM": true, "THEOREM": true,
	"LEMMA": true, "PROPOSITION": true, "COROLLARY": true, "LOCAL": true,
	"INSTANCE": true, "RECURSIVE": true,
}

// startsUnit reports whether t, the current token, can begin a module
// unit.
func (p *Parser) startsUnit(t Token) bool {
	switch {
	case t.Kind == TokIdent:
		return true
	case t.Kind == TokKeyword && unitKeywords[t.Text]:
		return true
	}
	// A prefix operator definition such as "-. a == ...".
	return opToken(t, PrefixOp) != nil && p.raw(1).Kind == TokIdent && p.raw(2).Is("==")
}

func isStepLabel(t Token) bool {
	return t.Kind == TokSymbol && len(t.Text) > 2 && t.Text[0] == '<' && t.Text[len(t.Text)-1] == '>'
}

// skipProof skips a TLAPS proof, if one follows, and returns its source
// text. Proofs are not parsed: the proof runs until the next token in
// column 1 that can start a module unit (a name, a keyword such as
// THEOREM or VARIABLES, ---- or ====), so proof steps must be indented or
// start with a step label or proof keyword.
func (p *Parser) skipProof() (string, bool) {
	first := p.tok()
	if !(first.Kind == TokKeyword && proofStart[first.Text] || isStepLabel(first)) {
		return "", true
	}
	var skipped []Token
	for {
		t := p.tok()
		switch {
		case t.Kind == TokEOF || t.Kind == TokModuleEnd || t.Kind == TokSeparator:
		case t.Kind == TokIllegal:
			p.unexpected(t, "a proof")
			return "", false
		case len(skipped) > 0 && t.Pos.Col == 1 && p.startsUnit(t):
		default:
			skipped = append(skipped, p.next())
			continue
		}
		break
	}
	last := skipped[len(skipped)-1]
	if p.text != nil && last.End.Offset <= len(p.text) && first.Pos.Offset <= last.End.Offset {
		return string(p.text[first.Pos.Offset:last.End.Offset]), true
	}
	return joinTokens(skipped), true
}
