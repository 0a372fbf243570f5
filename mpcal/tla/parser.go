package tla

import (
	"fmt"
	"strings"
)

// maxDepth bounds expression and module nesting so that hostile input
// (say, a million opening parentheses) is an error instead of a stack
// overflow.
const maxDepth = 1000

// Options tune the parser for languages that embed TLA+ expressions.
type Options struct {
	// DisabledInfix lists infix operators (any spelling) that end an
	// expression instead of continuing it. PlusCal needs "||", which
	// separates its parallel assignments, and usually ":=".
	DisabledInfix []string
	// DollarNames is applied to the Lexer that ParseExprAt creates; see
	// Lexer.DollarNames.
	DollarNames bool
}

// TokenSource supplies tokens; *Lexer is one. After the end it must keep
// returning EOF.
type TokenSource interface{ Next() Token }

// sliceSource serves a slice of tokens, then EOF.
type sliceSource struct {
	toks []Token
	i    int
}

func (s *sliceSource) Next() Token {
	if s.i < len(s.toks) {
		s.i++
		return s.toks[s.i-1]
	}
	var end Pos
	if n := len(s.toks); n > 0 {
		end = s.toks[n-1].End
	}
	return Token{Kind: TokEOF, Pos: end, End: end}
}

// Parser parses TLA+ from a token stream. A PlusCal or MPCal parser can
// share one Parser: it reads its own tokens with Peek and Next and calls
// ParseExpr or ParseUnit where TLA+ syntax is expected. After the first
// error the Parser stops: Peek returns EOF and every Parse method returns
// that error.
type Parser struct {
	file     string
	src      TokenSource
	text     []byte  // source text if known, to keep proofs verbatim
	buf      []Token // lookahead; buf[0] is the current token
	bullets  []int   // columns of the enclosing /\ and \/ bullets
	disabled map[string]bool
	err      *Error
	depth    int
	consumed int
}

// NewParser returns a parser reading from src. file names the source in
// errors.
func NewParser(file string, src TokenSource, opts Options) *Parser {
	p := &Parser{file: file, src: src, disabled: map[string]bool{}}
	if lx, ok := src.(*Lexer); ok {
		p.text = lx.src
	}
	for _, s := range opts.DisabledInfix {
		if op := infixOps[s]; op != nil {
			p.disabled[op.Name] = true
		}
	}
	return p
}

// ---- token access ----

// raw returns the k-th token ahead, ignoring bulleted-list boundaries.
func (p *Parser) raw(k int) Token {
	for len(p.buf) <= k {
		if t := p.src.Next(); t.Kind != TokComment {
			p.buf = append(p.buf, t)
		}
	}
	return p.buf[k]
}

// tok returns the current token. A token at or left of the innermost
// bullet column comes back as kind offside: it ends the current list item
// whatever it is, which is how the indentation rule is enforced without
// the rest of the parser having to know about it.
func (p *Parser) tok() Token {
	t := p.raw(0)
	if p.err != nil {
		return Token{Kind: TokEOF, Pos: t.Pos, End: t.Pos}
	}
	if n := len(p.bullets); n > 0 && t.Kind != TokEOF && t.Pos.Col <= p.bullets[n-1] {
		t.Kind = offside
	}
	return t
}

// next consumes and returns the current token. It never consumes EOF or an
// offside token, so no loop can run past the end of its list item.
func (p *Parser) next() Token {
	t := p.tok()
	if t.Kind == TokEOF || t.Kind == offside {
		return t
	}
	p.buf = p.buf[1:]
	p.consumed++
	return t
}

// Peek returns the current token without consuming it. (Between calls to
// the Parse methods no bulleted list is open, so Peek shows real tokens.)
func (p *Parser) Peek() Token { return p.tok() }

// PeekAt returns the k-th token after the current one (PeekAt(0) is the
// current token), ignoring list boundaries.
func (p *Parser) PeekAt(k int) Token { return p.raw(k) }

// Next consumes and returns the current token.
func (p *Parser) Next() Token { return p.next() }

// Err returns the first error, or nil.
func (p *Parser) Err() error {
	if p.err == nil {
		return nil
	}
	return p.err
}

// Errorf records an error at pos (if none is recorded yet) and returns the
// recorded error. Embedding parsers use it so that all errors look alike.
func (p *Parser) Errorf(pos Pos, format string, args ...any) error {
	p.errorf(pos, format, args...)
	return p.err
}

func (p *Parser) errorf(pos Pos, format string, args ...any) {
	if p.err == nil {
		p.err = &Error{File: p.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
}

// unexpected reports that t is not what was wanted.
func (p *Parser) unexpected(t Token, want string) {
	if t.Kind == TokIllegal {
		p.errorf(t.Pos, "%s", t.Value)
		return
	}
	p.errorf(t.Pos, "expected %s, found %s", want, t.describe())
}

// expect consumes the symbol or keyword s.
func (p *Parser) expect(s string) bool {
	t := p.tok()
	if !t.Is(s) {
		p.unexpected(t, fmt.Sprintf("%q", s))
		return false
	}
	p.next()
	return true
}

// consume consumes n tokens that lookahead (raw) has already identified.
// It fails if one of them lies outside the current list item, which raw
// does not see.
func (p *Parser) consume(n int) bool {
	for ; n > 0; n-- {
		if t := p.tok(); t.Kind == TokEOF || t.Kind == offside {
			p.unexpected(t, "the rest of the definition")
			return false
		}
		p.next()
	}
	return true
}

func (p *Parser) expectIdent() (*Ident, bool) {
	t := p.tok()
	if t.Kind != TokIdent {
		p.unexpected(t, "a name")
		return nil, false
	}
	p.next()
	return &Ident{Loc{t.Pos}, t.Text}, true
}

// identList parses "a, b, c".
func (p *Parser) identList() ([]*Ident, bool) { return commaList(p, p.expectIdent) }

// commaList parses one or more items separated by commas.
func commaList[T any](p *Parser, item func() (T, bool)) ([]T, bool) {
	var xs []T
	for {
		x, ok := item()
		if !ok {
			return nil, false
		}
		xs = append(xs, x)
		if !p.tok().Is(",") {
			return xs, true
		}
		p.next()
	}
}

func (p *Parser) enter() bool {
	p.depth++
	if p.depth > maxDepth {
		p.errorf(p.raw(0).Pos, "nesting deeper than %d levels", maxDepth)
		return false
	}
	return true
}

func (p *Parser) leave() { p.depth-- }

// ---- public entry points ----

// ParseExpr parses one expression starting at the current token and stops
// at the first token that cannot continue it.
func (p *Parser) ParseExpr() (Expr, error) {
	if p.err != nil {
		return nil, p.err
	}
	x := p.expr()
	if p.err != nil {
		return nil, p.err
	}
	return x, nil
}

// ParseExpr parses src, which must hold exactly one expression.
func ParseExpr(file string, src []byte) (Expr, error) {
	p := NewParser(file, NewLexer(file, src), Options{})
	x, err := p.ParseExpr()
	if err != nil {
		return nil, err
	}
	if t := p.tok(); t.Kind != TokEOF {
		p.unexpected(t, "end of expression")
		return nil, p.err
	}
	return x, nil
}

// ParseExprAt parses the expression that starts at byte offset off of
// src. It returns the expression and the first token after it, whose Pos
// tells the caller where to continue. Positions are relative to the whole
// of src.
func ParseExprAt(file string, src []byte, off int, opts Options) (Expr, Token, error) {
	lx := NewLexerAt(file, src, off)
	lx.DollarNames = opts.DollarNames
	p := NewParser(file, lx, opts)
	x, err := p.ParseExpr()
	if err != nil {
		return nil, Token{}, err
	}
	return x, p.tok(), nil
}

// ParseExprTokens parses an expression from the start of toks and returns
// it with the number of tokens it used.
func ParseExprTokens(file string, toks []Token, opts Options) (Expr, int, error) {
	p := NewParser(file, &sliceSource{toks: toks}, opts)
	x, err := p.ParseExpr()
	if err != nil {
		return nil, 0, err
	}
	return x, p.consumed, nil
}

// ---- expressions ----

func (p *Parser) expr() Expr { return p.binary(nil) }

// binary parses an expression whose operators all bind tighter than the
// pending operator ctx (nil: no pending operator).
func (p *Parser) binary(ctx *OpInfo) Expr {
	x := p.unary(ctx)
	if x == nil {
		return nil
	}
	return p.binaryFrom(x, ctx)
}

func (p *Parser) infixAt(t Token) *OpInfo {
	if t.Kind != TokSymbol {
		return nil
	}
	op := infixOps[t.Text]
	if op == nil || p.disabled[op.Name] {
		return nil
	}
	return op
}

// binaryFrom continues an expression whose first operand x is parsed,
// applying the precedence-range rule against ctx (see ops.go).
func (p *Parser) binaryFrom(x Expr, ctx *OpInfo) Expr {
	for p.err == nil {
		t := p.tok()
		op := p.infixAt(t)
		if op == nil {
			return x
		}
		if ctx != nil {
			if ctx.Lo > op.Hi {
				return x // the pending operator binds tighter
			}
			if op.Lo <= ctx.Hi { // the ranges overlap
				if op == ctx && ctx.Fix == InfixOp && (op.Left || op == crossOp) {
					return x // a + b + c: let the caller build ((a + b) + c)
				}
				p.errorf(t.Pos, "precedence conflict between %s and %s; add parentheses", ctx.Name, op.Name)
				return nil
			}
		}
		p.next()
		if op == crossOp {
			// A \X B \X C is one product with three factors.
			factors := []Expr{x}
			for {
				y := p.binary(op)
				if y == nil {
					return nil
				}
				factors = append(factors, y)
				if p.infixAt(p.tok()) != crossOp {
					break
				}
				p.next()
			}
			x = &Cross{Loc{x.Position()}, factors}
			continue
		}
		y := p.binary(op)
		if y == nil {
			return nil
		}
		x = &Binary{Loc{x.Position()}, op.Name, x, y}
	}
	return nil
}

// unary parses prefix operators, a primary expression and what follows it
// directly (function application, field selection, postfix operators).
func (p *Parser) unary(ctx *OpInfo) Expr {
	if !p.enter() {
		return nil
	}
	defer p.leave()
	t := p.tok()
	if op := opToken(t, PrefixOp); op != nil && t.Text != "-." {
		p.next()
		x := p.binary(op)
		if x == nil {
			return nil
		}
		return &Unary{Loc{t.Pos}, op.Name, x}
	}
	x := p.primary()
	if x == nil {
		return nil
	}
	return p.selectors(x, ctx)
}

// selectors applies f[a], r.field and postfix operators to x. They bind
// tighter than any prefix or infix operator, except that SANY rejects a
// 15-level postfix operator right after a prefix operator whose range
// reaches 15 (ENABLED x' is a precedence conflict), and so do we.
func (p *Parser) selectors(x Expr, ctx *OpInfo) Expr {
	for {
		t := p.tok()
		switch {
		case t.Is("["):
			p.next()
			args, ok := p.exprList()
			if !ok || !p.expect("]") {
				return nil
			}
			x = &FuncApp{Loc{x.Position()}, x, args}
		case t.Is("."):
			p.next()
			f, ok := p.expectIdent()
			if !ok {
				return nil
			}
			x = &FieldAccess{Loc{x.Position()}, x, f.Name}
		default:
			op := opToken(t, PostfixOp)
			if op == nil {
				return x
			}
			if ctx != nil && ctx.Fix == PrefixOp && ctx.Hi >= op.Lo {
				p.errorf(t.Pos, "precedence conflict between %s and %s; add parentheses", ctx.Name, op.Name)
				return nil
			}
			p.next()
			x = &Postfix{Loc{x.Position()}, op.Name, x}
		}
	}
}

// exprList parses "e1, e2, ..." (at least one).
func (p *Parser) exprList() ([]Expr, bool) {
	var xs []Expr
	for {
		x := p.expr()
		if x == nil {
			return nil, false
		}
		xs = append(xs, x)
		if !p.tok().Is(",") {
			return xs, true
		}
		p.next()
	}
}

func (p *Parser) primary() Expr {
	t := p.tok()
	switch t.Kind {
	case TokIdent:
		return p.name()
	case TokNumber:
		p.next()
		return &Number{Loc{t.Pos}, t.Text}
	case TokString:
		p.next()
		return &String{Loc{t.Pos}, t.Value}
	case TokSymbol:
		switch t.Text {
		case "(":
			p.next()
			x := p.expr()
			if x == nil || !p.expect(")") {
				return nil
			}
			return x
		case "<<":
			return p.tuple()
		case "{":
			return p.braces()
		case "[":
			return p.brackets()
		case "@":
			p.next()
			return &AtSign{Loc{t.Pos}}
		case "/\\", "\\land", "\\/", "\\lor":
			return p.junction()
		case "\\A", "\\forall", "\\E", "\\exists", "\\AA", "\\EE":
			return p.quant()
		}
	case TokKeyword:
		switch t.Text {
		case "IF":
			return p.ifExpr()
		case "CASE":
			return p.caseExpr()
		case "LET":
			return p.let()
		case "CHOOSE":
			return p.choose()
		case "LAMBDA":
			return p.lambda()
		case "WF_", "SF_":
			return p.fairness()
		}
	}
	p.unexpected(t, "an expression")
	return nil
}

// name parses x, Op(a, b), M!Op, I(x)!Op(y).
func (p *Parser) name() Expr {
	first := p.next()
	start := first.Pos
	var prefix []InstSel
	name, pos := first.Text, first.Pos
	var args []Expr
	if p.tok().Is("(") {
		if args = p.args(); args == nil {
			return nil
		}
	}
	for p.tok().Is("!") && p.raw(1).Kind == TokIdent {
		prefix = append(prefix, InstSel{Loc{pos}, name, args})
		t := p.raw(1)
		if !p.consume(2) {
			return nil
		}
		name, pos, args = t.Text, t.Pos, nil
		if p.tok().Is("(") {
			if args = p.args(); args == nil {
				return nil
			}
		}
	}
	if prefix == nil && args == nil {
		return &Ident{Loc{start}, name}
	}
	return &OpApp{Loc{start}, prefix, name, args}
}

// args parses "(a, b, ...)"; an argument may also be a bare operator
// symbol or a LAMBDA. It returns nil on error.
func (p *Parser) args() []Expr {
	p.next() // (
	var xs []Expr
	for {
		x := p.arg()
		if x == nil {
			return nil
		}
		xs = append(xs, x)
		if p.tok().Is(",") {
			p.next()
			continue
		}
		if !p.expect(")") {
			return nil
		}
		return xs
	}
}

// arg parses an operator argument: an expression, or an operator symbol
// standing alone (followed by "," or ")").
func (p *Parser) arg() Expr {
	t := p.tok()
	if n := p.raw(1); n.Is(",") || n.Is(")") {
		if name := opSymbolName(t); name != "" {
			p.next()
			return &OpSymbol{Loc{t.Pos}, name}
		}
	}
	return p.expr()
}

// opSymbolName is the canonical name of an operator symbol used as an
// argument: infix spelling first, "-." for the prefix minus.
func opSymbolName(t Token) string {
	if t.Kind != TokSymbol && t.Kind != TokKeyword {
		return ""
	}
	if t.Text == "-." {
		return "-."
	}
	if op := opToken(t, InfixOp); op != nil {
		return op.Name
	}
	if op := opToken(t, PrefixOp); op != nil {
		return op.Name
	}
	if op := opToken(t, PostfixOp); op != nil {
		return op.Name
	}
	return ""
}

// junction parses a bulleted /\ or \/ list. Each item is parsed with the
// bullet's column pushed, so a token at or left of it ends the item; the
// list continues while the next token is the same bullet in that column.
func (p *Parser) junction() Expr {
	first := p.tok()
	op := infixOps[first.Text].Name
	col := first.Pos.Col
	j := &Junction{Loc{first.Pos}, op, nil}
	for {
		p.next() // the bullet
		p.bullets = append(p.bullets, col)
		item := p.expr()
		p.bullets = p.bullets[:len(p.bullets)-1]
		if item == nil {
			return nil
		}
		j.Items = append(j.Items, item)
		t := p.tok()
		if t.Kind != TokSymbol || t.Pos.Col != col || infixOps[t.Text] == nil || infixOps[t.Text].Name != op {
			return j
		}
	}
}

func (p *Parser) tuple() Expr {
	start := p.next() // <<
	if p.tok().Is(">>") {
		p.next()
		return &Tuple{Loc{start.Pos}, nil}
	}
	xs, ok := p.exprList()
	if !ok {
		return nil
	}
	t := p.tok()
	switch {
	case t.Is(">>"):
		p.next()
		return &Tuple{Loc{start.Pos}, xs}
	case t.Is(">>_") && len(xs) == 1:
		p.next()
		sub := p.subscript()
		if sub == nil {
			return nil
		}
		return &ActionExpr{Loc{start.Pos}, true, xs[0], sub}
	}
	p.unexpected(t, "\">>\"")
	return nil
}

// subscript parses the v of [A]_v, <<A>>_v, WF_v(A): a name (perhaps
// instance-qualified), a tuple or a parenthesized expression.
func (p *Parser) subscript() Expr {
	t := p.tok()
	switch {
	case t.Kind == TokIdent && p.raw(1).Is("!"):
		return p.name() // M!vars, as in [][Next]_M!vars
	case t.Kind == TokIdent:
		p.next()
		return &Ident{Loc{t.Pos}, t.Text}
	case t.Is("<<"):
		return p.tuple()
	case t.Is("("):
		p.next()
		x := p.expr()
		if x == nil || !p.expect(")") {
			return nil
		}
		return x
	}
	p.unexpected(t, "a subscript (name, <<tuple>> or parenthesized expression)")
	return nil
}

// boundNames reports whether x can be the left side of a bound: a name or
// a tuple of names.
func boundNames(x Expr) ([]*Ident, bool, bool) {
	switch x := x.(type) {
	case *Ident:
		return []*Ident{x}, false, true
	case *Tuple:
		if len(x.Elems) == 0 {
			return nil, false, false
		}
		ids := make([]*Ident, len(x.Elems))
		for i, e := range x.Elems {
			id, ok := e.(*Ident)
			if !ok {
				return nil, false, false
			}
			ids[i] = id
		}
		return ids, true, true
	}
	return nil, false, false
}

// bound parses "x, y \in S", "<<a, b>> \in S" or, unless needSet, an
// unbounded "x, y" (or "<<a, b>>" when tupleUnbounded).
func (p *Parser) bound(needSet, tupleUnbounded bool) (Bound, bool) {
	t := p.tok()
	b := Bound{Loc: Loc{t.Pos}}
	var ok bool
	if t.Is("<<") {
		p.next()
		b.Tuple = true
		if b.Names, ok = p.identList(); !ok || !p.expect(">>") {
			return b, false
		}
	} else if b.Names, ok = p.identList(); !ok {
		return b, false
	}
	if p.tok().Is("\\in") {
		p.next()
		if b.Set = p.expr(); b.Set == nil {
			return b, false
		}
		return b, true
	}
	if needSet || (b.Tuple && !tupleUnbounded) {
		p.unexpected(p.tok(), "\"\\in\"")
		return b, false
	}
	return b, true
}

// boundList parses comma-separated bounds that all have sets.
func (p *Parser) boundList() ([]Bound, bool) {
	return commaList(p, func() (Bound, bool) { return p.bound(true, false) })
}

func (p *Parser) quant() Expr {
	t := p.next()
	op := t.Text
	switch op {
	case "\\forall":
		op = "\\A"
	case "\\exists":
		op = "\\E"
	}
	temporal := op == "\\AA" || op == "\\EE"
	var bs []Bound
	for {
		b, ok := p.bound(false, false)
		if !ok {
			return nil
		}
		if temporal && b.Set != nil {
			p.errorf(b.Pos, "%s takes no bounds", op)
			return nil
		}
		if b.Set == nil && len(bs) > 0 {
			p.errorf(b.Pos, "bounded and unbounded variables cannot be mixed")
			return nil
		}
		bs = append(bs, b)
		if b.Set == nil || !p.tok().Is(",") {
			break
		}
		p.next()
	}
	if !p.expect(":") {
		return nil
	}
	body := p.expr()
	if body == nil {
		return nil
	}
	return &Quant{Loc{t.Pos}, op, bs, body}
}

func (p *Parser) choose() Expr {
	t := p.next()
	b, ok := p.bound(false, true)
	if !ok {
		return nil
	}
	if !b.Tuple && len(b.Names) != 1 {
		p.errorf(b.Pos, "CHOOSE binds one name or one tuple of names")
		return nil
	}
	if !p.expect(":") {
		return nil
	}
	body := p.expr()
	if body == nil {
		return nil
	}
	return &Choose{Loc{t.Pos}, b, body}
}

func (p *Parser) lambda() Expr {
	t := p.next()
	params, ok := p.identList()
	if !ok || !p.expect(":") {
		return nil
	}
	body := p.expr()
	if body == nil {
		return nil
	}
	return &Lambda{Loc{t.Pos}, params, body}
}

func (p *Parser) ifExpr() Expr {
	t := p.next()
	c := p.expr()
	if c == nil || !p.expect("THEN") {
		return nil
	}
	a := p.expr()
	if a == nil || !p.expect("ELSE") {
		return nil
	}
	b := p.expr()
	if b == nil {
		return nil
	}
	return &If{Loc{t.Pos}, c, a, b}
}

func (p *Parser) caseExpr() Expr {
	t := p.next()
	c := &Case{Loc: Loc{t.Pos}}
	for {
		if len(c.Arms) > 0 && p.tok().Is("OTHER") {
			p.next()
			if !p.expect("->") {
				return nil
			}
			if c.Other = p.expr(); c.Other == nil {
				return nil
			}
			return c
		}
		cond := p.expr()
		if cond == nil || !p.expect("->") {
			return nil
		}
		val := p.expr()
		if val == nil {
			return nil
		}
		c.Arms = append(c.Arms, CaseArm{cond, val})
		if !p.tok().Is("[]") {
			return c
		}
		p.next()
	}
}

func (p *Parser) let() Expr {
	t := p.next()
	l := &Let{Loc: Loc{t.Pos}}
	for !p.tok().Is("IN") {
		u := p.unit(false)
		if u == nil {
			return nil
		}
		l.Defs = append(l.Defs, u)
	}
	if len(l.Defs) == 0 {
		p.errorf(p.tok().Pos, "LET needs at least one definition")
		return nil
	}
	p.next() // IN
	if l.Body = p.expr(); l.Body == nil {
		return nil
	}
	return l
}

func (p *Parser) fairness() Expr {
	t := p.next()
	sub := p.subscript()
	if sub == nil || !p.expect("(") {
		return nil
	}
	a := p.expr()
	if a == nil || !p.expect(")") {
		return nil
	}
	return &Fairness{Loc{t.Pos}, t.Text == "SF_", sub, a}
}

// brackets parses everything that starts with "[": records [a |-> 1],
// record sets [a : S], function constructors [x \in S |-> e], function
// sets [S -> T], EXCEPT, and actions [A]_v.
func (p *Parser) brackets() Expr {
	lb := p.next()
	start := Loc{lb.Pos}
	if t := p.tok(); t.Kind == TokIdent {
		switch n := p.raw(1); {
		case n.Is("|->"):
			fs, ok := p.fields("|->")
			if !ok {
				return nil
			}
			return &Record{start, fs}
		case n.Is(":"):
			fs, ok := p.fields(":")
			if !ok {
				return nil
			}
			return &RecordSet{start, fs}
		case n.Is(","):
			return p.funcCons(start, nil)
		}
	}
	// [x \in S |-> e] and [<<a, b>> \in S |-> e] cannot be told from an
	// expression x \in S until the |-> (or a comma). Parse the set as the
	// right operand of \in, then either continue as a constructor or carry
	// on with x \in S as the left part of an ordinary expression. This
	// avoids backtracking, whose cost would grow exponentially with
	// nesting.
	x := p.unary(nil)
	if x == nil {
		return nil
	}
	if ids, tuple, ok := boundNames(x); ok && p.tok().Is("\\in") {
		p.next()
		set := p.binary(inOp)
		if set == nil {
			return nil
		}
		if t := p.tok(); t.Is("|->") || t.Is(",") {
			return p.funcCons(start, &Bound{Loc{x.Position()}, ids, tuple, set})
		}
		x = &Binary{Loc{x.Position()}, "\\in", x, set}
	}
	if x = p.binaryFrom(x, nil); x == nil {
		return nil
	}
	t := p.tok()
	switch {
	case t.Is("->"):
		p.next()
		rng := p.expr()
		if rng == nil || !p.expect("]") {
			return nil
		}
		return &FuncSet{start, x, rng}
	case t.Is("EXCEPT"):
		return p.except(start, x)
	case t.Is("]_"):
		p.next()
		sub := p.subscript()
		if sub == nil {
			return nil
		}
		return &ActionExpr{start, false, x, sub}
	}
	p.unexpected(t, "\"|->\", \"->\", \"EXCEPT\" or \"]_\"")
	return nil
}

// fields parses "a |-> 1, b |-> 2]" or "a : S, b : T]".
func (p *Parser) fields(sep string) ([]RecField, bool) {
	var fs []RecField
	for {
		id, ok := p.expectIdent()
		if !ok || !p.expect(sep) {
			return nil, false
		}
		v := p.expr()
		if v == nil {
			return nil, false
		}
		fs = append(fs, RecField{id.Name, v})
		if !p.tok().Is(",") {
			return fs, p.expect("]")
		}
		p.next()
	}
}

// funcCons finishes [bounds |-> e]; first is the bound already parsed, if
// any.
func (p *Parser) funcCons(start Loc, first *Bound) Expr {
	var bs []Bound
	more := true
	if first != nil {
		bs = append(bs, *first)
		if more = p.tok().Is(","); more {
			p.next()
		}
	}
	if more {
		rest, ok := p.boundList()
		if !ok {
			return nil
		}
		bs = append(bs, rest...)
	}
	if !p.expect("|->") {
		return nil
	}
	e := p.expr()
	if e == nil || !p.expect("]") {
		return nil
	}
	return &FuncCons{start, bs, e}
}

func (p *Parser) except(start Loc, f Expr) Expr {
	p.next() // EXCEPT
	x := &Except{start, f, nil}
	for {
		if !p.expect("!") {
			return nil
		}
		var u ExceptUpdate
		for {
			if p.tok().Is(".") {
				p.next()
				id, ok := p.expectIdent()
				if !ok {
					return nil
				}
				u.Path = append(u.Path, ExceptSel{Field: id.Name})
			} else if p.tok().Is("[") {
				p.next()
				idx, ok := p.exprList()
				if !ok || !p.expect("]") {
					return nil
				}
				u.Path = append(u.Path, ExceptSel{Index: idx})
			} else {
				break
			}
		}
		if len(u.Path) == 0 {
			p.unexpected(p.tok(), "\".\" or \"[\"")
			return nil
		}
		if !p.expect("=") {
			return nil
		}
		if u.Value = p.expr(); u.Value == nil {
			return nil
		}
		x.Updates = append(x.Updates, u)
		if !p.tok().Is(",") {
			break
		}
		p.next()
	}
	if !p.expect("]") {
		return nil
	}
	return x
}

// braces parses {a, b}, {x \in S : P} and {e : x \in S}.
func (p *Parser) braces() Expr {
	lb := p.next()
	start := Loc{lb.Pos}
	if p.tok().Is("}") {
		p.next()
		return &SetEnum{start, nil}
	}
	// As in brackets: {x \in S : P} is only known to be a filter at the
	// colon.
	x := p.unary(nil)
	if x == nil {
		return nil
	}
	if ids, tuple, ok := boundNames(x); ok && p.tok().Is("\\in") {
		p.next()
		set := p.binary(inOp)
		if set == nil {
			return nil
		}
		if p.tok().Is(":") {
			p.next()
			pred := p.expr()
			if pred == nil || !p.expect("}") {
				return nil
			}
			return &SetFilter{start, Bound{Loc{x.Position()}, ids, tuple, set}, pred}
		}
		x = &Binary{Loc{x.Position()}, "\\in", x, set}
	}
	if x = p.binaryFrom(x, nil); x == nil {
		return nil
	}
	if p.tok().Is(":") {
		p.next()
		bs, ok := p.boundList()
		if !ok || !p.expect("}") {
			return nil
		}
		return &SetMap{start, x, bs}
	}
	elems := []Expr{x}
	for p.tok().Is(",") {
		p.next()
		e := p.expr()
		if e == nil {
			return nil
		}
		elems = append(elems, e)
	}
	if !p.expect("}") {
		return nil
	}
	return &SetEnum{start, elems}
}

// joinTokens is the fallback text of a skipped region when the source
// text is unknown.
func joinTokens(ts []Token) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.Text)
	}
	return b.String()
}
