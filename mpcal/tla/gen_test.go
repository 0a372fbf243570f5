package tla

import (
	"math/rand"
	"sort"
)

// gen builds random syntax trees over every node kind, in the shape the
// parser produces (canonical operator names, no parentheses).
type gen struct{ r *rand.Rand }

var (
	genNames   = []string{"x", "y", "f", "S", "T", "Foo", "a1", "_u", "TRUE", "BOOLEAN", "x_1", "vars", "WFx"}
	genNumbers = []string{"0", "7", "42", "1.5", "\\b101", "\\B1", "\\o17", "\\h1F", "\\Hab"}
	genStrings = []string{"", "a", "q\"q", "b\\s", "nl\n", "tab\t", "\r\f", "ü", "∀x ≤ y", "\xff", "(* not a comment *)", `\* nor this`}

	genInfix, genPrefix, genPostfix []string
)

func init() {
	seen := map[string]bool{}
	for _, r := range infixRows {
		if r.names[0] != "\\X" && !seen[r.names[0]] {
			seen[r.names[0]] = true
			genInfix = append(genInfix, r.names[0])
		}
	}
	for _, r := range prefixRows {
		genPrefix = append(genPrefix, r.names[0])
	}
	for _, r := range postfixRows {
		genPostfix = append(genPostfix, r.names[0])
	}
	sort.Strings(genInfix)
}

func (g *gen) pick(xs []string) string { return xs[g.r.Intn(len(xs))] }
func (g *gen) name() string            { return g.pick(genNames) }
func (g *gen) ident() *Ident           { return &Ident{Name: g.name()} }

func (g *gen) idents(max int) []*Ident {
	ids := make([]*Ident, 1+g.r.Intn(max))
	for i := range ids {
		ids[i] = g.ident()
	}
	return ids
}

func (g *gen) exprs(depth, min, max int) []Expr {
	xs := make([]Expr, min+g.r.Intn(max-min+1))
	for i := range xs {
		xs[i] = g.expr(depth)
	}
	return xs
}

// bound makes a bound with a set; tuple and multi-name forms at random.
func (g *gen) bound(depth int, multi bool) Bound {
	b := Bound{Set: g.expr(depth)}
	switch g.r.Intn(3) {
	case 0:
		b.Tuple = true
		b.Names = g.idents(3)
	case 1:
		if multi {
			b.Names = g.idents(3)
			break
		}
		fallthrough
	default:
		b.Names = []*Ident{g.ident()}
	}
	return b
}

func (g *gen) bounds(depth int) []Bound {
	bs := make([]Bound, 1+g.r.Intn(2))
	for i := range bs {
		bs[i] = g.bound(depth, true)
	}
	return bs
}

// opSymbol is an operator symbol usable as an argument.
func (g *gen) opSymbol() Expr {
	switch g.r.Intn(4) {
	case 0:
		return &OpSymbol{Op: "-."}
	case 1:
		if op := g.pick(genPrefix); op != "-" {
			return &OpSymbol{Op: op}
		}
		return &OpSymbol{Op: "-"}
	case 2:
		return &OpSymbol{Op: g.pick(genPostfix)}
	}
	return &OpSymbol{Op: g.pick(genInfix)}
}

// arg is an operator argument: an expression, a LAMBDA or a bare symbol.
func (g *gen) arg(depth int) Expr {
	switch g.r.Intn(8) {
	case 0:
		return g.opSymbol()
	case 1:
		return &Lambda{Params: g.idents(2), Body: g.expr(depth)}
	}
	return g.expr(depth)
}

func (g *gen) args(depth int) []Expr {
	xs := make([]Expr, 1+g.r.Intn(3))
	for i := range xs {
		xs[i] = g.arg(depth)
	}
	return xs
}

func (g *gen) leaf() Expr {
	switch g.r.Intn(5) {
	case 0:
		return &Number{Text: g.pick(genNumbers)}
	case 1:
		return &String{Value: g.pick(genStrings)}
	case 2:
		return &AtSign{}
	}
	return g.ident()
}

func (g *gen) fields(depth int) []RecField {
	fs := make([]RecField, 1+g.r.Intn(3))
	for i := range fs {
		fs[i] = RecField{g.name(), g.expr(depth)}
	}
	return fs
}

const genKinds = 31

func (g *gen) expr(depth int) Expr {
	if depth <= 0 {
		return g.leaf()
	}
	d := depth - 1
	switch g.r.Intn(genKinds) {
	case 0:
		return g.leaf()
	case 1:
		x := &OpApp{Name: g.name()}
		for i := g.r.Intn(3); i > 0; i-- {
			s := InstSel{Name: g.name()}
			if g.r.Intn(2) == 0 {
				s.Args = g.args(d)
			}
			x.Prefix = append(x.Prefix, s)
		}
		if x.Prefix == nil || g.r.Intn(2) == 0 {
			x.Args = g.args(d)
		}
		return x
	case 2:
		return &Unary{Op: g.pick(genPrefix), X: g.expr(d)}
	case 3:
		return &Postfix{Op: g.pick(genPostfix), X: g.expr(d)}
	case 4, 5, 6:
		return &Binary{Op: g.pick(genInfix), L: g.expr(d), R: g.expr(d)}
	case 7:
		return &Cross{Factors: g.exprs(d, 2, 3)}
	case 8:
		op := "/\\"
		if g.r.Intn(2) == 0 {
			op = "\\/"
		}
		return &Junction{Op: op, Items: g.exprs(d, 1, 3)}
	case 9:
		return &If{Cond: g.expr(d), Then: g.expr(d), Else: g.expr(d)}
	case 10:
		c := &Case{}
		for i := 1 + g.r.Intn(3); i > 0; i-- {
			c.Arms = append(c.Arms, CaseArm{g.expr(d), g.expr(d)})
		}
		if g.r.Intn(2) == 0 {
			c.Other = g.expr(d)
		}
		return c
	case 11:
		l := &Let{Body: g.expr(d)}
		for i := 1 + g.r.Intn(2); i > 0; i-- {
			l.Defs = append(l.Defs, g.letUnit(d))
		}
		return l
	case 12:
		q := &Quant{Op: g.pick([]string{"\\A", "\\E"}), Body: g.expr(d)}
		if g.r.Intn(3) == 0 {
			q.Bounds = []Bound{{Names: g.idents(2)}}
		} else {
			q.Bounds = g.bounds(d)
		}
		return q
	case 13:
		return &Quant{Op: g.pick([]string{"\\AA", "\\EE"}), Bounds: []Bound{{Names: g.idents(2)}}, Body: g.expr(d)}
	case 14:
		b := g.bound(d, false)
		if g.r.Intn(3) == 0 {
			b.Set = nil
		}
		return &Choose{Bound: b, Body: g.expr(d)}
	case 15:
		return &SetEnum{Elems: g.exprs(d, 0, 3)}
	case 16:
		return &SetFilter{Bound: g.bound(d, false), Pred: g.expr(d)}
	case 17:
		return &SetMap{Elem: g.expr(d), Bounds: g.bounds(d)}
	case 18:
		return &FuncCons{Bounds: g.bounds(d), Body: g.expr(d)}
	case 19:
		return &FuncSet{Dom: g.expr(d), Rng: g.expr(d)}
	case 20:
		return &Record{Fields: g.fields(d)}
	case 21:
		return &RecordSet{Fields: g.fields(d)}
	case 22:
		x := &Except{Func: g.expr(d)}
		for i := 1 + g.r.Intn(2); i > 0; i-- {
			var u ExceptUpdate
			for j := 1 + g.r.Intn(2); j > 0; j-- {
				if g.r.Intn(2) == 0 {
					u.Path = append(u.Path, ExceptSel{Field: g.name()})
				} else {
					u.Path = append(u.Path, ExceptSel{Index: g.exprs(d, 1, 2)})
				}
			}
			u.Value = g.expr(d)
			x.Updates = append(x.Updates, u)
		}
		return x
	case 23:
		return &Tuple{Elems: g.exprs(d, 0, 3)}
	case 24:
		return &FuncApp{Func: g.expr(d), Args: g.exprs(d, 1, 2)}
	case 25:
		return &FieldAccess{X: g.expr(d), Field: g.name()}
	case 26:
		return &ActionExpr{Angle: g.r.Intn(2) == 0, Action: g.expr(d), Sub: g.sub(d)}
	case 27:
		return &Fairness{Strong: g.r.Intn(2) == 0, Sub: g.sub(d), Action: g.expr(d)}
	case 28:
		return &Lambda{Params: g.idents(2), Body: g.expr(d)}
	case 29:
		return &OpApp{Name: g.name(), Args: g.args(d)}
	}
	return g.ident()
}

func (g *gen) sub(depth int) Expr {
	switch g.r.Intn(3) {
	case 0:
		return g.ident()
	case 1:
		return &Tuple{Elems: g.exprs(depth, 1, 2)}
	}
	return g.expr(depth)
}

func (g *gen) decl() OpDecl {
	switch g.r.Intn(6) {
	case 0:
		return OpDecl{Name: g.pick(genInfix), Kind: InfixDecl, Arity: 2}
	case 1:
		op := g.pick(genPrefix)
		if op == "-" {
			op = "-."
		}
		return OpDecl{Name: op, Kind: PrefixDecl, Arity: 1}
	case 2:
		return OpDecl{Name: g.pick(genPostfix), Kind: PostfixDecl, Arity: 1}
	case 3:
		return OpDecl{Name: g.name(), Kind: NameDecl, Arity: 1 + g.r.Intn(2)}
	}
	return OpDecl{Name: g.name(), Kind: NameDecl}
}

func (g *gen) decls() []OpDecl {
	ds := make([]OpDecl, 1+g.r.Intn(3))
	for i := range ds {
		ds[i] = g.decl()
	}
	return ds
}

func (g *gen) instance(depth int) *Instance {
	in := &Instance{Module: g.name()}
	for i := g.r.Intn(3); i > 0; i-- {
		s := Subst{Name: g.name(), Expr: g.expr(depth)}
		if g.r.Intn(3) == 0 {
			s.Name = g.opSymbol().(*OpSymbol).Op
		}
		if g.r.Intn(4) == 0 {
			s.Expr = g.opSymbol()
		}
		in.Subst = append(in.Subst, s)
	}
	return in
}

// letUnit is a unit allowed inside LET.
func (g *gen) letUnit(depth int) Unit {
	switch g.r.Intn(7) {
	case 0:
		return &FuncDef{Name: g.name(), Bounds: g.bounds(depth), Body: g.expr(depth)}
	case 1:
		return &Recursive{Decls: g.decls()}
	case 2:
		md := &ModuleDef{Name: g.name(), Instance: g.instance(depth)}
		if g.r.Intn(2) == 0 {
			md.Params = g.decls()
		}
		return md
	case 3:
		return &OpDef{Name: g.pick(genInfix), Kind: InfixDecl, Params: []OpDecl{{Name: g.name()}, {Name: g.name()}}, Body: g.expr(depth)}
	case 4:
		op := g.pick(genPrefix)
		if op == "-" {
			op = "-."
		}
		return &OpDef{Name: op, Kind: PrefixDecl, Params: []OpDecl{{Name: g.name()}}, Body: g.expr(depth)}
	case 5:
		return &OpDef{Name: g.pick(genPostfix), Kind: PostfixDecl, Params: []OpDecl{{Name: g.name()}}, Body: g.expr(depth)}
	}
	d := &OpDef{Name: g.name(), Body: g.expr(depth)}
	if g.r.Intn(2) == 0 {
		d.Params = g.decls()
	}
	return d
}

// unit is any module-level unit.
func (g *gen) unit(depth int, nest bool) Unit {
	switch g.r.Intn(12) {
	case 0:
		return &VarDecl{Names: g.idents(3)}
	case 1:
		return &ConstDecl{Decls: g.decls()}
	case 2:
		return &Assume{Keyword: g.pick([]string{"ASSUME", "ASSUMPTION", "AXIOM"}), Name: g.pick([]string{"", "A1"}), Expr: g.expr(depth)}
	case 3:
		return &Theorem{Keyword: g.pick([]string{"THEOREM", "LEMMA", "PROPOSITION", "COROLLARY"}), Name: g.pick([]string{"", "T1"}),
			Expr: g.expr(depth), Proof: g.pick([]string{"", "PROOF OBVIOUS", "BY DEF x, y", "<1>1. QED\n  BY x"})}
	case 4:
		in := g.instance(depth)
		in.Local = g.r.Intn(2) == 0
		return in
	case 5:
		return &Separator{}
	case 6:
		if nest {
			return g.module(depth, false)
		}
	case 7, 8:
		u := g.letUnit(depth)
		switch u := u.(type) {
		case *OpDef:
			u.Local = g.r.Intn(3) == 0
		case *FuncDef:
			u.Local = g.r.Intn(3) == 0
		case *ModuleDef:
			u.Local = g.r.Intn(3) == 0
		}
		return u
	}
	return &OpDef{Name: g.name(), Body: g.expr(depth)}
}

func (g *gen) module(depth int, nest bool) *Module {
	m := &Module{Name: "M" + g.name()}
	if g.r.Intn(2) == 0 {
		m.Extends = []string{"Naturals", g.name()}
	}
	for i := g.r.Intn(5); i > 0; i-- {
		m.Units = append(m.Units, g.unit(depth, nest))
	}
	return m
}
