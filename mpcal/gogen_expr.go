package mpcal

import (
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"strata/mpcal/tla"
)

// What a name in scope denotes in generated code.
const (
	bindGo       = iota // a Go variable holding a tla.Value
	bindVar             // an archetype variable: local, value parameter or plain ref
	bindIndexed         // a ref x[_]: read as c.Read(e, "x", i)
	bindMacroArg        // a macro parameter: its argument, compiled where used
	bindSelf            // self
	bindLet             // a LET operator with parameters: a Go closure
)

type goBinding struct {
	kind   int
	goName string // bindGo, bindLet: the Go name; bindVar, bindIndexed: the variable
	index  int    // bindIndexed: the number of [_]
	arity  int    // bindLet
	arg    tla.Expr
	argEnv *goEnv
	used   bool
}

type goEnv struct {
	parent *goEnv
	names  map[string]*goBinding
	inOp   bool // inside a module operator: no archetype state
}

func (e *goEnv) lookup(n string) *goBinding {
	for ; e != nil; e = e.parent {
		if b, ok := e.names[n]; ok {
			return b
		}
	}
	return nil
}

func (e *goEnv) child() *goEnv {
	return &goEnv{parent: e, names: map[string]*goBinding{}, inOp: e.inOp}
}

var goBinary = map[string]string{
	"<": "e.Lt", ">": "e.Gt", "<=": "e.Le", ">=": "e.Ge",
	"+": "e.Plus", "-": "e.Minus", "*": "e.Times", "\\div": "e.Div", "%": "e.Mod", "^": "e.Pow",
	"<=>": "e.Equiv", "\\cup": "e.Union", "\\cap": "e.Intersect", "\\": "e.SetMinus",
	"\\subseteq": "e.SubsetEq", "..": "e.Interval", "\\o": "e.Concat", "@@": "e.Merge",
}

var goUnary = map[string]string{
	"~": "e.Not", "-": "e.Neg", "SUBSET": "e.Subset", "UNION": "e.BigUnion", "DOMAIN": "e.Domain",
}

// goStdOps are the standard-module operators with a Go counterpart: name
// -> (arity, Eval method).
var goStdOps = map[string]struct {
	arity int
	fn    string
}{
	"Len": {1, "e.Len"}, "Append": {2, "e.Append"}, "Head": {1, "e.Head"}, "Tail": {1, "e.Tail"},
	"SubSeq": {3, "e.SubSeq"}, "Cardinality": {1, "e.Cardinality"},
}

// expr compiles x to a Go expression of type tla.Value, with e (*tla.Eval),
// m (*Module) and, in archetype code, c (*distsys.Context) in scope.
func (g *goGen) expr(x tla.Expr, env *goEnv) string {
	switch x := x.(type) {
	case *tla.Ident:
		return g.ident(x.Name, x.Pos, nil, env)
	case *tla.OpApp:
		if len(x.Prefix) > 0 {
			break
		}
		return g.ident(x.Name, x.Pos, x.Args, env)
	case *tla.Number:
		return g.number(x)
	case *tla.String:
		return "tla.String(" + strconv.Quote(x.Value) + ")"
	case *tla.Unary:
		if fn, ok := goUnary[x.Op]; ok {
			return fmt.Sprintf("%s(%s)", fn, g.expr(x.X, env))
		}
	case *tla.Binary:
		return g.binary(x, env)
	case *tla.Junction:
		op := " && "
		if x.Op == "\\/" {
			op = " || "
		}
		var parts []string
		for _, it := range x.Items {
			parts = append(parts, "e.Bool("+g.expr(it, env)+")")
		}
		return "tla.Bool(" + strings.Join(parts, op) + ")"
	case *tla.If:
		return fmt.Sprintf("func() tla.Value {\nif e.Bool(%s) {\nreturn %s\n}\nreturn %s\n}()", g.expr(x.Cond, env), g.expr(x.Then, env), g.expr(x.Else, env))
	case *tla.Case:
		var b strings.Builder
		b.WriteString("func() tla.Value {\n")
		for _, a := range x.Arms {
			fmt.Fprintf(&b, "if e.Bool(%s) {\nreturn %s\n}\n", g.expr(a.Cond, env), g.expr(a.Value, env))
		}
		if x.Other != nil {
			fmt.Fprintf(&b, "return %s\n}()", g.expr(x.Other, env))
		} else {
			b.WriteString("return distsys.Fail(e, \"CASE\", \"no arm is TRUE\")\n}()")
		}
		return b.String()
	case *tla.Let:
		return g.let(x, env)
	case *tla.Quant:
		if x.Op != "\\A" && x.Op != "\\E" {
			break
		}
		fn := "e.Forall"
		if x.Op == "\\E" {
			fn = "e.Exists"
		}
		return g.bounds(x.Pos, x.Bounds, env, func(inner *goEnv) string { return "e.Bool(" + g.expr(x.Body, inner) + ")" },
			func(set, v, body string) string {
				return fmt.Sprintf("%s(%s, func(%s tla.Value) bool { return %s })", fn, set, v, body)
			})
	case *tla.Choose:
		if x.Bound.Set == nil || len(x.Bound.Names) != 1 || x.Bound.Tuple {
			break
		}
		set := g.expr(x.Bound.Set, env)
		inner, v := g.bind1(env, x.Bound.Names[0].Name)
		return fmt.Sprintf("e.Choose(%s, func(%s tla.Value) bool { return e.Bool(%s) })", set, v, g.expr(x.Body, inner))
	case *tla.SetEnum:
		return "tla.Set(" + g.exprList(x.Elems, env) + ")"
	case *tla.SetFilter:
		if x.Bound.Set == nil || len(x.Bound.Names) != 1 || x.Bound.Tuple {
			break
		}
		set := g.expr(x.Bound.Set, env)
		inner, v := g.bind1(env, x.Bound.Names[0].Name)
		return fmt.Sprintf("e.Filter(%s, func(%s tla.Value) bool { return e.Bool(%s) })", set, v, g.expr(x.Pred, inner))
	case *tla.SetMap:
		if len(x.Bounds) != 1 || len(x.Bounds[0].Names) != 1 || x.Bounds[0].Tuple || x.Bounds[0].Set == nil {
			break
		}
		set := g.expr(x.Bounds[0].Set, env)
		inner, v := g.bind1(env, x.Bounds[0].Names[0].Name)
		return fmt.Sprintf("e.Map(%s, func(%s tla.Value) tla.Value { return %s })", set, v, g.expr(x.Elem, inner))
	case *tla.FuncCons:
		if len(x.Bounds) != 1 || len(x.Bounds[0].Names) != 1 || x.Bounds[0].Tuple || x.Bounds[0].Set == nil {
			break
		}
		set := g.expr(x.Bounds[0].Set, env)
		inner, v := g.bind1(env, x.Bounds[0].Names[0].Name)
		return fmt.Sprintf("e.Function(%s, func(%s tla.Value) tla.Value { return %s })", set, v, g.expr(x.Body, inner))
	case *tla.FuncSet:
		return fmt.Sprintf("e.FunctionSet(%s, %s)", g.expr(x.Dom, env), g.expr(x.Rng, env))
	case *tla.Record:
		fs := append([]tla.RecField(nil), x.Fields...)
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name }) // sorted: no sort at run time
		var parts []string
		for _, f := range fs {
			parts = append(parts, fmt.Sprintf("tla.F(%q, %s)", f.Name, g.expr(f.Value, env)))
		}
		return "tla.Record(" + strings.Join(parts, ", ") + ")"
	case *tla.Except:
		return g.except(x, env)
	case *tla.AtSign:
		if b := env.lookup("@"); b != nil {
			b.used = true
			return b.goName
		}
	case *tla.Tuple:
		return "tla.Tuple(" + g.exprList(x.Elems, env) + ")"
	case *tla.FuncApp:
		return g.apply(x, env)
	case *tla.FieldAccess:
		return fmt.Sprintf("e.Field(%s, %q)", g.expr(x.X, env), x.Field)
	}
	g.errorf(x.Position(), "Go back end: expression %s is not supported", shorten(tla.FormatExpr(x)))
	return "tla.Value{}"
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func (g *goGen) exprList(xs []tla.Expr, env *goEnv) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, g.expr(x, env))
	}
	return strings.Join(parts, ", ")
}

func (g *goGen) bind1(env *goEnv, name string) (*goEnv, string) {
	inner := env.child()
	v := g.local(name)
	inner.names[name] = &goBinding{kind: bindGo, goName: v}
	return inner, v
}

// bounds nests one callback per bound name (\A x, y \in S : ...).
func (g *goGen) bounds(pos Pos, bs []tla.Bound, env *goEnv, body func(*goEnv) string, wrap func(set, v, body string) string) string {
	type one struct {
		name string
		set  tla.Expr
	}
	var flat []one
	for _, b := range bs {
		if b.Set == nil || b.Tuple {
			g.errorf(pos, "Go back end: unbounded or tuple-pattern quantifiers are not supported")
			return "tla.Value{}"
		}
		for _, n := range b.Names {
			flat = append(flat, one{n.Name, b.Set})
		}
	}
	// Every set is evaluated outside the quantifier: in TLA+ the sets of
	// \A x \in S, y \in T do not see x.
	inner := env
	var vars []string
	var sets []string
	for _, o := range flat {
		sets = append(sets, g.expr(o.set, env))
		var v string
		inner, v = g.bind1(inner, o.name)
		vars = append(vars, v)
	}
	s := body(inner)
	for i := len(flat) - 1; i >= 0; i-- {
		s = wrap(sets[i], vars[i], s)
		if i > 0 {
			s = "e.Bool(" + s + ")"
		}
	}
	return s
}

func (g *goGen) number(x *tla.Number) string {
	t := x.Text
	base := 10
	switch {
	case strings.HasPrefix(t, "\\b") || strings.HasPrefix(t, "\\B"):
		base, t = 2, t[2:]
	case strings.HasPrefix(t, "\\o") || strings.HasPrefix(t, "\\O"):
		base, t = 8, t[2:]
	case strings.HasPrefix(t, "\\h") || strings.HasPrefix(t, "\\H"):
		base, t = 16, t[2:]
	}
	if strings.Contains(t, ".") {
		g.errorf(x.Pos, "Go back end: real number %s is not supported", x.Text)
		return "tla.Value{}"
	}
	n, ok := new(big.Int).SetString(t, base)
	if !ok || !n.IsInt64() {
		g.errorf(x.Pos, "Go back end: integer literal %s does not fit in 64 bits", x.Text)
		return "tla.Value{}"
	}
	return fmt.Sprintf("tla.Int(%d)", n.Int64())
}

func (g *goGen) binary(x *tla.Binary, env *goEnv) string {
	switch x.Op {
	case "=":
		return fmt.Sprintf("tla.Eq(%s, %s)", g.expr(x.L, env), g.expr(x.R, env))
	case "/=":
		return fmt.Sprintf("tla.Neq(%s, %s)", g.expr(x.L, env), g.expr(x.R, env))
	case "/\\":
		return fmt.Sprintf("tla.Bool(e.Bool(%s) && e.Bool(%s))", g.expr(x.L, env), g.expr(x.R, env))
	case "\\/":
		return fmt.Sprintf("tla.Bool(e.Bool(%s) || e.Bool(%s))", g.expr(x.L, env), g.expr(x.R, env))
	case "=>":
		return fmt.Sprintf("tla.Bool(!e.Bool(%s) || e.Bool(%s))", g.expr(x.L, env), g.expr(x.R, env))
	case ":>":
		return fmt.Sprintf("tla.MapsTo(%s, %s)", g.expr(x.L, env), g.expr(x.R, env))
	case "\\in", "\\notin":
		in := g.membership(x.L, x.R, env)
		if x.Op == "\\notin" {
			return "e.Not(" + in + ")"
		}
		return in
	}
	if fn, ok := goBinary[x.Op]; ok {
		return fmt.Sprintf("%s(%s, %s)", fn, g.expr(x.L, env), g.expr(x.R, env))
	}
	g.errorf(x.Pos, "Go back end: operator %s is not supported", x.Op)
	return "tla.Value{}"
}

// membership is x \in S, with the infinite sets TLA+ programs test
// membership of (Nat, Int, BOOLEAN, Seq(S)) as special cases.
func (g *goGen) membership(l, r tla.Expr, env *goEnv) string {
	if env.lookup(nameOf(r)) == nil && g.ops[nameOf(r)] == nil && g.consts[nameOf(r)] == nil {
		switch nameOf(r) {
		case "Nat":
			return "tla.InNat(" + g.expr(l, env) + ")"
		case "Int":
			return "tla.InInt(" + g.expr(l, env) + ")"
		case "BOOLEAN":
			return "tla.InBoolean(" + g.expr(l, env) + ")"
		}
		if app, ok := r.(*tla.OpApp); ok && app.Name == "Seq" && len(app.Args) == 1 && len(app.Prefix) == 0 {
			return fmt.Sprintf("e.InSeq(%s, %s)", g.expr(l, env), g.expr(app.Args[0], env))
		}
	}
	return fmt.Sprintf("e.In(%s, %s)", g.expr(l, env), g.expr(r, env))
}

func nameOf(x tla.Expr) string {
	switch x := x.(type) {
	case *tla.Ident:
		return x.Name
	case *tla.OpApp:
		if len(x.Args) == 0 && len(x.Prefix) == 0 {
			return x.Name
		}
	}
	return ""
}

// ident compiles a name, applied to args if any.
func (g *goGen) ident(n string, pos Pos, args []tla.Expr, env *goEnv) string {
	if b := env.lookup(n); b != nil {
		b.used = true
		switch b.kind {
		case bindGo:
			if len(args) == 0 {
				return b.goName
			}
		case bindLet:
			if len(args) == b.arity {
				return fmt.Sprintf("%s(%s)", b.goName, g.exprList(args, env))
			}
		case bindVar:
			if len(args) == 0 {
				return fmt.Sprintf("c.Read(e, %q)", b.goName)
			}
		case bindIndexed:
			g.errorf(pos, "Go back end: the indexed resource %s must be read as %s[i] (with %d index)", n, n, b.index)
			return "tla.Value{}"
		case bindSelf:
			return "c.Self()"
		case bindMacroArg:
			if len(args) == 0 {
				return g.expr(b.arg, b.argEnv)
			}
		}
		g.errorf(pos, "Go back end: %s applied to %d arguments", n, len(args))
		return "tla.Value{}"
	}
	if u, ok := g.ops[n]; ok {
		name := g.opNames[n]
		if name == "" { // not reached: an operator used only through a macro argument
			g.reachName(n)
			name = g.unique(goIdent(n))
			g.opNames[n] = name
			g.errorf(pos, "Go back end: internal: operator %s was not generated", n)
		}
		want := 0
		if d, ok := u.(*tla.OpDef); ok {
			want = len(d.Params)
		}
		if len(args) != want {
			g.errorf(pos, "Go back end: operator %s takes %d arguments, given %d", n, want, len(args))
			return "tla.Value{}"
		}
		if len(args) == 0 {
			return fmt.Sprintf("m.%s(e)", name)
		}
		return fmt.Sprintf("m.%s(e, %s)", name, g.exprList(args, env))
	}
	if d, ok := g.consts[n]; ok && d.Arity == 0 && len(args) == 0 {
		return "m.k." + goIdent(n)
	}
	if g.vars[n] {
		g.errorf(pos, "Go back end: module variable %s cannot be used by generated code (archetypes reach state only through their parameters)", n)
		return "tla.Value{}"
	}
	switch n {
	case "TRUE":
		return "tla.True"
	case "FALSE":
		return "tla.False"
	case "BOOLEAN":
		return "tla.Boolean"
	case "defaultInitValue":
		return "distsys.DefaultInitValue"
	case "self":
		if !env.inOp {
			return "c.Self()"
		}
	}
	if op, ok := goStdOps[n]; ok && op.arity == len(args) {
		return fmt.Sprintf("%s(%s)", op.fn, g.exprList(args, env))
	}
	if len(args) > 0 {
		g.errorf(pos, "Go back end: operator %s is not supported", n)
	} else {
		g.errorf(pos, "Go back end: name %s is not supported here", n)
	}
	return "tla.Value{}"
}

// apply is f[x] (or f[x, y], applied to the tuple), or a read of an
// indexed resource r[i].
func (g *goGen) apply(x *tla.FuncApp, env *goEnv) string {
	// Collect r[i][j]... to find an indexed resource at the root.
	var chain []*tla.FuncApp
	var root tla.Expr = x
	for {
		fa, ok := root.(*tla.FuncApp)
		if !ok {
			break
		}
		chain = append(chain, fa)
		root = fa.Func
	}
	if b := env.lookup(nameOf(root)); b != nil && b.kind == bindIndexed {
		b.used = true
		if len(chain) < b.index {
			g.errorf(x.Pos, "Go back end: %s has %d [_] but is indexed %d times", b.goName, b.index, len(chain))
			return "tla.Value{}"
		}
		var idx []string
		for i := len(chain) - 1; i >= len(chain)-b.index; i-- {
			idx = append(idx, g.key(chain[i].Args, env))
		}
		v := fmt.Sprintf("c.Read(e, %q, %s)", b.goName, strings.Join(idx, ", "))
		for i := len(chain) - b.index - 1; i >= 0; i-- {
			v = fmt.Sprintf("e.Apply(%s, %s)", v, g.key(chain[i].Args, env))
		}
		return v
	}
	return fmt.Sprintf("e.Apply(%s, %s)", g.expr(x.Func, env), g.key(x.Args, env))
}

func (g *goGen) key(args []tla.Expr, env *goEnv) string {
	if len(args) == 1 {
		return g.expr(args[0], env)
	}
	return "tla.Tuple(" + g.exprList(args, env) + ")"
}

func (g *goGen) except(x *tla.Except, env *goEnv) string {
	v := g.expr(x.Func, env)
	for _, u := range x.Updates {
		var path []string
		for _, s := range u.Path {
			if s.Field != "" || s.Index == nil {
				path = append(path, fmt.Sprintf("tla.String(%q)", s.Field))
			} else {
				path = append(path, g.key(s.Index, env))
			}
		}
		inner := env.child()
		old := g.local("old")
		at := &goBinding{kind: bindGo, goName: old}
		inner.names["@"] = at
		val := g.expr(u.Value, inner)
		if at.used {
			v = fmt.Sprintf("e.ExceptWith(%s, []tla.Value{%s}, func(%s tla.Value) tla.Value { return %s })", v, strings.Join(path, ", "), old, val)
		} else {
			v = fmt.Sprintf("e.Except(%s, []tla.Value{%s}, %s)", v, strings.Join(path, ", "), val)
		}
	}
	return v
}

func (g *goGen) let(x *tla.Let, env *goEnv) string {
	var b strings.Builder
	b.WriteString("func() tla.Value {\n")
	inner := env.child()
	for _, d := range x.Defs {
		od, ok := d.(*tla.OpDef)
		if !ok || od.Kind != tla.NameDecl {
			g.errorf(d.Position(), "Go back end: only operator definitions are supported in LET")
			continue
		}
		v := g.local(od.Name)
		if len(od.Params) == 0 {
			fmt.Fprintf(&b, "%s := %s\n_ = %s\n", v, g.expr(od.Body, inner), v)
			inner.names[od.Name] = &goBinding{kind: bindGo, goName: v}
			continue
		}
		body := inner.child()
		var ps []string
		for _, p := range od.Params {
			if p.Arity > 0 {
				g.errorf(od.Pos, "Go back end: LET operator %s takes an operator argument; not supported", od.Name)
			}
			pv := g.local(p.Name)
			body.names[p.Name] = &goBinding{kind: bindGo, goName: pv}
			ps = append(ps, pv+" tla.Value")
		}
		// Bound before its body: RECURSIVE LET operators call themselves.
		inner.names[od.Name] = &goBinding{kind: bindLet, goName: v, arity: len(od.Params)}
		fmt.Fprintf(&b, "var %s func(%s) tla.Value\n%s = func(%s) tla.Value { return %s }\n_ = %s\n",
			v, strings.TrimSuffix(strings.Repeat("tla.Value, ", len(ps)), ", "), v, strings.Join(ps, ", "), g.expr(od.Body, body), v)
	}
	fmt.Fprintf(&b, "return %s\n}()", g.expr(x.Body, inner))
	return b.String()
}
