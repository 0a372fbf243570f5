package tla

import (
	"strata/internal/tlastring"
	"strings"
	"unicode/utf8"
)

// Format renders a module as TLA+ source that parses back to the same
// tree (ignoring positions). Comments and the original layout are not
// kept: expressions go on one line, except that bulleted /\ and \/ lists,
// LET, and long IF and CASE expressions are laid out over several lines.
// Parentheses are added exactly where precedence or layout requires them.
func Format(m *Module) string {
	var p printer
	p.module(m)
	p.b.WriteByte('\n')
	return p.b.String()
}

// FormatExpr renders an expression as it would appear starting in column 1.
func FormatExpr(e Expr) string {
	var p printer
	p.expr(e)
	return p.b.String()
}

// FormatUnit renders one unit as it would appear starting in column 1.
func FormatUnit(u Unit) string {
	var p printer
	p.unit(u)
	return p.b.String()
}

// flatWidth is the longest IF or CASE kept on one line.
const flatWidth = 70

type printer struct {
	b    strings.Builder
	col  int  // characters on the current line so far
	flat bool // measuring: keep IF and CASE on one line
	// guard is set while printing a unit that is followed by a definition
	// of the prefix operator [] ("[] a == ..."): a trailing CASE would take
	// that [] as its next arm, so the unit's last expression is
	// parenthesized if it is open-ended.
	guard bool
}

// write appends s, which must not contain a newline.
func (p *printer) write(s string) {
	p.b.WriteString(s)
	p.col += utf8.RuneCountInString(s)
}

// newline starts a new line indented to column indent (0-based).
func (p *printer) newline(indent int) {
	p.b.WriteByte('\n')
	p.b.WriteString(strings.Repeat(" ", indent))
	p.col = indent
}

// writeRaw appends text that may span lines (a verbatim proof).
func (p *printer) writeRaw(s string) {
	p.b.WriteString(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		p.col = utf8.RuneCountInString(s[i+1:])
	} else {
		p.col += utf8.RuneCountInString(s)
	}
}

// fits reports whether e, with IF and CASE on one line, fits in width
// characters on one line (it may still need several lines if it contains a
// bulleted list or a LET).
func fits(e Expr, width int) bool {
	q := printer{flat: true}
	q.expr(e)
	s := q.b.String()
	return len(s) <= width && !strings.Contains(s, "\n")
}

// ---- when parentheses are needed ----

// unknownOp stands for an operator missing from the tables (only possible
// in hand-built trees); its range overlaps everything, so it is always
// parenthesized.
var unknownOp = &OpInfo{Lo: 0, Hi: 16}

func infixInfo(op string) *OpInfo {
	if i := infixOps[op]; i != nil {
		return i
	}
	return unknownOp
}

func prefixInfo(op string) *OpInfo {
	if i := prefixOps[op]; i != nil {
		return i
	}
	return unknownOp
}

// endsOpen reports whether e, printed without parentheses, ends with a
// construct that extends as far right as possible (IF, LET, CASE, a
// quantifier, CHOOSE, LAMBDA, or a bulleted list). Such an expression
// would swallow whatever operator follows it, so it needs parentheses
// unless it is last in its context.
func endsOpen(e Expr) bool {
	switch e := e.(type) {
	case *Junction, *If, *Case, *Let, *Quant, *Choose, *Lambda:
		return true
	case *Unary:
		return !unaryOperandParens(prefixInfo(e.Op), e.X) && endsOpen(e.X)
	case *Binary:
		return !infixChildParens(infixInfo(e.Op), e.R, false) && endsOpen(e.R)
	case *Cross:
		last := e.Factors[len(e.Factors)-1]
		return !crossFactorParens(last, true) && endsOpen(last)
	}
	return false
}

// closed reports whether e may be followed directly by [args], .field or
// a postfix operator without parentheses.
func closed(e Expr) bool {
	switch e.(type) {
	case *Ident, *OpApp, *Number, *String, *AtSign, *Tuple, *SetEnum,
		*SetFilter, *SetMap, *FuncCons, *FuncSet, *Record, *RecordSet,
		*Except, *FuncApp, *FieldAccess, *Postfix:
		return true
	}
	return false
}

// infixChildParens decides whether a child of an infix operator needs
// parentheses. Without them the child's operator must bind strictly
// tighter than the parent's (by the precedence-range rule), except for a
// left-associative operator repeated on the left.
func infixChildParens(parent *OpInfo, c Expr, left bool) bool {
	if left && endsOpen(c) {
		return true
	}
	switch c := c.(type) {
	case *Binary:
		ci := infixInfo(c.Op)
		if left && ci == parent && parent.Left && parent != unknownOp {
			return false
		}
		return ci.Lo <= parent.Hi
	case *Cross:
		return crossOp.Lo <= parent.Hi
	case *Unary:
		// On the left, the prefix operator's operand would swallow the
		// parent; on the right, whatever follows the parent would be
		// swallowed unless the prefix operator binds tighter.
		return unaryLo(c) <= parent.Hi
	}
	return false
}

// unaryLo is the lowest precedence among directly nested prefix
// operators: in UNION ~a \in S, the ~ (4-4) takes the \in even though
// UNION (10-13) would not.
func unaryLo(u *Unary) int {
	lo := prefixInfo(u.Op).Lo
	if x, ok := u.X.(*Unary); ok {
		lo = min(lo, unaryLo(x))
	}
	return lo
}

// crossFactorParens decides for a factor of A \X B \X C.
func crossFactorParens(c Expr, last bool) bool {
	if _, ok := c.(*Cross); ok {
		return true // (A \X B) \X C differs from A \X B \X C
	}
	return infixChildParens(crossOp, c, !last)
}

// unaryOperandParens decides for the operand of a prefix operator.
func unaryOperandParens(op *OpInfo, c Expr) bool {
	switch c := c.(type) {
	case *Binary:
		return infixInfo(c.Op).Lo <= op.Hi
	case *Cross:
		return crossOp.Lo <= op.Hi
	}
	// SANY rejects ENABLED x' (the ranges 4-15 and 15-15 overlap), so a
	// postfix operator anywhere in the operand's selector chain needs
	// parentheses under such an operator.
	return op.Hi >= 15 && postfixInChain(c)
}

func postfixInChain(e Expr) bool {
	for {
		switch x := e.(type) {
		case *Postfix:
			return true
		case *FuncApp:
			if !closed(x.Func) {
				return false
			}
			e = x.Func
		case *FieldAccess:
			if !closed(x.X) {
				return false
			}
			e = x.X
		default:
			return false
		}
	}
}

// setMapElemParens: {x \in S : e} is a filter, so a SetMap element of
// that shape must be parenthesized.
func setMapElemParens(e Expr) bool {
	b, ok := e.(*Binary)
	if !ok || b.Op != "\\in" {
		return false
	}
	_, _, pattern := boundNames(b.L)
	return pattern
}

// ---- expressions ----

func (p *printer) sub(e Expr, paren bool) {
	if paren {
		p.write("(")
		p.expr(e)
		p.write(")")
		return
	}
	p.expr(e)
}

// open prints e, parenthesized if it ends open-ended: for positions that
// are followed by more tokens that such an expression could swallow.
func (p *printer) open(e Expr) { p.sub(e, endsOpen(e)) }

func (p *printer) list(xs []Expr) {
	for i, x := range xs {
		if i > 0 {
			p.write(", ")
		}
		p.expr(x)
	}
}

func (p *printer) names(ids []*Ident) {
	for i, id := range ids {
		if i > 0 {
			p.write(", ")
		}
		p.write(id.Name)
	}
}

// bound prints a bound; inRight makes its set print as the right operand
// of \in, as the parser requires for the first bound of [x \in S |-> e]
// and for {x \in S : P}.
func (p *printer) bound(b Bound, inRight bool) {
	if b.Tuple {
		p.write("<<")
		p.names(b.Names)
		p.write(">>")
	} else {
		p.names(b.Names)
	}
	if b.Set != nil {
		p.write(" \\in ")
		p.sub(b.Set, inRight && infixChildParens(inOp, b.Set, false))
	}
}

func (p *printer) bounds(bs []Bound, firstInRight bool) {
	for i, b := range bs {
		if i > 0 {
			p.write(", ")
		}
		p.bound(b, i == 0 && firstInRight)
	}
}

func (p *printer) subscript(e Expr) {
	switch e.(type) {
	case *Ident, *Tuple:
		p.expr(e)
	default:
		p.sub(e, true)
	}
}

func (p *printer) args(xs []Expr) {
	p.write("(")
	for i, x := range xs {
		if i > 0 {
			p.write(", ")
		} else if _, ok := x.(*OpSymbol); ok {
			p.write(" ") // "F( -, x)": "(-)" would lex as one symbol
		}
		p.expr(x)
	}
	p.write(")")
}

func (p *printer) expr(e Expr) {
	switch e := e.(type) {
	case *Ident:
		p.write(e.Name)
	case *OpApp:
		for _, s := range e.Prefix {
			p.write(s.Name)
			if len(s.Args) > 0 {
				p.args(s.Args)
			}
			p.write("!")
		}
		p.write(e.Name)
		if len(e.Args) > 0 {
			p.args(e.Args)
		}
	case *OpSymbol:
		p.write(e.Op)
	case *Number:
		p.write(e.Text)
	case *String:
		p.write(quote(e.Value))
	case *AtSign:
		p.write("@")
	case *Unary:
		op := prefixInfo(e.Op)
		p.write(e.Op)
		switch e.X.(type) {
		case *Unary, *Junction:
			p.write(" ") // "- -x", not the operator "--"
		default:
			if isWordOp(e.Op) {
				p.write(" ")
			}
		}
		p.sub(e.X, unaryOperandParens(op, e.X))
	case *Postfix:
		p.sub(e.X, !closed(e.X))
		p.write(e.Op)
	case *Binary:
		op := infixInfo(e.Op)
		p.sub(e.L, infixChildParens(op, e.L, true))
		p.write(" " + e.Op + " ")
		p.sub(e.R, infixChildParens(op, e.R, false))
	case *Cross:
		for i, f := range e.Factors {
			if i > 0 {
				p.write(" \\X ")
			}
			p.sub(f, crossFactorParens(f, i == len(e.Factors)-1))
		}
	case *Junction:
		col := p.col
		for i, item := range e.Items {
			if i > 0 {
				p.newline(col)
			}
			p.write(e.Op + " ")
			p.expr(item)
		}
	case *If:
		if p.flat || fits(e, flatWidth) {
			p.write("IF ")
			p.expr(e.Cond)
			p.write(" THEN ")
			p.expr(e.Then)
			p.write(" ELSE ")
			p.expr(e.Else)
			return
		}
		col := p.col
		p.write("IF ")
		p.expr(e.Cond)
		p.newline(col)
		p.write("THEN ")
		p.expr(e.Then)
		p.newline(col)
		p.write("ELSE ")
		p.expr(e.Else)
	case *Case:
		p.caseExpr(e)
	case *Let:
		col := p.col
		p.write("LET ")
		guard := p.guard
		p.units(e.Defs, func() { p.newline(col + 4) })
		p.guard = guard
		p.newline(col)
		p.write("IN  ")
		p.expr(e.Body)
	case *Quant:
		p.write(e.Op + " ")
		p.bounds(e.Bounds, false)
		p.write(" : ")
		p.expr(e.Body)
	case *Choose:
		p.write("CHOOSE ")
		p.bound(e.Bound, false)
		p.write(" : ")
		p.expr(e.Body)
	case *Lambda:
		p.write("LAMBDA ")
		p.names(e.Params)
		p.write(" : ")
		p.expr(e.Body)
	case *SetEnum:
		p.write("{")
		p.list(e.Elems)
		p.write("}")
	case *SetFilter:
		p.write("{")
		p.bound(e.Bound, true)
		p.write(" : ")
		p.expr(e.Pred)
		p.write("}")
	case *SetMap:
		p.write("{")
		p.sub(e.Elem, setMapElemParens(e.Elem))
		p.write(" : ")
		p.bounds(e.Bounds, false)
		p.write("}")
	case *FuncCons:
		p.write("[")
		p.bounds(e.Bounds, true)
		p.write(" |-> ")
		p.expr(e.Body)
		p.write("]")
	case *FuncSet:
		p.write("[")
		p.open(e.Dom)
		p.write(" -> ")
		p.expr(e.Rng)
		p.write("]")
	case *Record:
		p.fields(e.Fields, " |-> ")
	case *RecordSet:
		p.fields(e.Fields, " : ")
	case *Except:
		p.write("[")
		p.expr(e.Func)
		p.write(" EXCEPT ")
		for i, u := range e.Updates {
			if i > 0 {
				p.write(", ")
			}
			p.write("!")
			for _, s := range u.Path {
				if s.Index != nil {
					p.write("[")
					p.list(s.Index)
					p.write("]")
				} else {
					p.write("." + s.Field)
				}
			}
			p.write(" = ")
			p.expr(u.Value)
		}
		p.write("]")
	case *Tuple:
		p.write("<<")
		p.list(e.Elems)
		p.write(">>")
	case *FuncApp:
		p.sub(e.Func, !closed(e.Func))
		p.write("[")
		p.list(e.Args)
		p.write("]")
	case *FieldAccess:
		// "1.a" would do, but "1.1a" would lex as the decimal 1.1.
		_, num := e.X.(*Number)
		p.sub(e.X, num || !closed(e.X))
		p.write("." + e.Field)
	case *ActionExpr:
		if e.Angle {
			p.write("<<")
			p.expr(e.Action)
			p.write(">>_")
		} else {
			p.write("[")
			p.expr(e.Action)
			p.write("]_")
		}
		p.subscript(e.Sub)
	case *Fairness:
		if e.Strong {
			p.write("SF_")
		} else {
			p.write("WF_")
		}
		p.subscript(e.Sub)
		p.write("(")
		p.expr(e.Action)
		p.write(")")
	default:
		p.write("<?>")
	}
}

func (p *printer) fields(fs []RecField, sep string) {
	p.write("[")
	for i, f := range fs {
		if i > 0 {
			p.write(", ")
		}
		p.write(f.Name + sep)
		p.expr(f.Value)
	}
	p.write("]")
}

func (p *printer) caseExpr(e *Case) {
	multi := !p.flat && (len(e.Arms) > 1 || e.Other != nil) && !fits(e, flatWidth)
	col := p.col
	for i, a := range e.Arms {
		switch {
		case i == 0:
			p.write("CASE ")
		case multi:
			p.newline(col + 2)
			p.write("[] ")
		default:
			p.write(" [] ")
		}
		// A condition is followed by ->, and every value but the last by
		// [], which a nested CASE would take as its own; parenthesize
		// open-ended ones.
		p.open(a.Cond)
		p.write(" -> ")
		if i < len(e.Arms)-1 || e.Other != nil {
			p.open(a.Value)
		} else {
			p.expr(a.Value)
		}
	}
	if e.Other != nil {
		if multi {
			p.newline(col + 2)
			p.write("[] OTHER -> ")
		} else {
			p.write(" [] OTHER -> ")
		}
		p.expr(e.Other)
	}
}

func isWordOp(op string) bool {
	return op != "" && op[0] >= 'A' && op[0] <= 'Z'
}

// quote renders a TLA+ string literal.
func quote(s string) string { return tlastring.Quote(s) }

// ---- units ----

func (p *printer) decl(d OpDecl) {
	switch d.Kind {
	case InfixDecl:
		p.write("_ " + d.Name + " _")
	case PrefixDecl:
		p.write(d.Name + " _")
	case PostfixDecl:
		p.write("_" + d.Name)
	default:
		p.write(d.Name)
		if d.Arity > 0 {
			p.write("(_" + strings.Repeat(", _", d.Arity-1) + ")")
		}
	}
}

func (p *printer) decls(ds []OpDecl) {
	for i, d := range ds {
		if i > 0 {
			p.write(", ")
		}
		p.decl(d)
	}
}

func (p *printer) local(l bool) {
	if l {
		p.write("LOCAL ")
	}
}

// startsWithBox reports whether u is printed starting with "[]".
func startsWithBox(u Unit) bool {
	d, ok := u.(*OpDef)
	return ok && d.Kind == PrefixDecl && d.Name == "[]"
}

// units prints a sequence of units, separated by sep.
func (p *printer) units(us []Unit, sep func()) {
	for i, u := range us {
		if i > 0 {
			sep()
		}
		p.guard = i+1 < len(us) && startsWithBox(us[i+1])
		p.unit(u)
		p.guard = false
	}
}

// last prints the expression that ends a unit.
func (p *printer) last(e Expr) { p.sub(e, p.guard && endsOpen(e)) }

func (p *printer) unit(u Unit) {
	switch u := u.(type) {
	case *OpDef:
		p.local(u.Local)
		switch {
		case u.Kind == InfixDecl && len(u.Params) == 2:
			p.write(u.Params[0].Name + " " + u.Name + " " + u.Params[1].Name)
		case u.Kind == PrefixDecl && len(u.Params) == 1:
			p.write(u.Name + " " + u.Params[0].Name)
		case u.Kind == PostfixDecl && len(u.Params) == 1:
			p.write(u.Params[0].Name + u.Name)
		default:
			p.write(u.Name)
			if len(u.Params) > 0 {
				p.write("(")
				p.decls(u.Params)
				p.write(")")
			}
		}
		p.write(" == ")
		p.last(u.Body)
	case *FuncDef:
		p.local(u.Local)
		p.write(u.Name + "[")
		p.bounds(u.Bounds, false)
		p.write("] == ")
		p.last(u.Body)
	case *Instance:
		p.instance(u)
	case *ModuleDef:
		p.local(u.Local)
		p.write(u.Name)
		if len(u.Params) > 0 {
			p.write("(")
			p.decls(u.Params)
			p.write(")")
		}
		p.write(" == ")
		inst := *u.Instance
		inst.Local = false
		p.instance(&inst)
	case *VarDecl:
		p.write("VARIABLES ")
		p.names(u.Names)
	case *ConstDecl:
		p.write("CONSTANTS ")
		p.decls(u.Decls)
	case *Recursive:
		p.write("RECURSIVE ")
		p.decls(u.Decls)
	case *Assume:
		p.write(u.Keyword + " ")
		if u.Name != "" {
			p.write(u.Name + " == ")
		}
		p.last(u.Expr)
	case *Theorem:
		p.write(u.Keyword + " ")
		if u.Name != "" {
			p.write(u.Name + " == ")
		}
		p.last(u.Expr)
		if u.Proof != "" {
			p.newline(0)
			p.writeRaw(u.Proof)
		}
	case *Separator:
		p.write(strings.Repeat("-", 77))
	case *Module:
		p.module(u)
	default:
		p.write("<?>")
	}
}

func (p *printer) instance(in *Instance) {
	p.local(in.Local)
	p.write("INSTANCE " + in.Module)
	for i, s := range in.Subst {
		if i == 0 {
			p.write(" WITH ")
		} else {
			p.write(", ")
		}
		p.write(s.Name + " <- ")
		if i == len(in.Subst)-1 {
			p.last(s.Expr)
		} else {
			p.expr(s.Expr)
		}
	}
}

func (p *printer) module(m *Module) {
	dashes := strings.Repeat("-", max(4, (68-len(m.Name))/2))
	p.write(dashes + " MODULE " + m.Name + " " + dashes)
	if len(m.Extends) > 0 {
		p.newline(0)
		p.write("EXTENDS " + strings.Join(m.Extends, ", "))
	}
	if len(m.Units) > 0 {
		p.newline(0)
		p.newline(0)
		guard := p.guard
		p.units(m.Units, func() { p.newline(0); p.newline(0) })
		p.guard = guard
	}
	p.newline(0)
	p.write(strings.Repeat("=", 77))
}
