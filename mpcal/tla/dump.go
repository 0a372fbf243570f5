package tla

import (
	"fmt"
	"strconv"
	"strings"
)

// Dump renders a node as an S-expression that shows its structure and
// omits positions. Two trees are the same, ignoring positions, exactly
// when their dumps are equal; tests rely on this.
func Dump(n Node) string {
	var d dumper
	d.node(n)
	return d.String()
}

type dumper struct{ strings.Builder }

func (d *dumper) open(head string) { d.WriteString("(" + head) }
func (d *dumper) close()           { d.WriteString(")") }
func (d *dumper) sp()              { d.WriteByte(' ') }

func (d *dumper) exprs(xs []Expr) {
	for _, x := range xs {
		d.sp()
		d.node(x)
	}
}

func (d *dumper) bound(b Bound) {
	d.WriteString("(")
	if b.Tuple {
		d.WriteString("<<")
	}
	for i, id := range b.Names {
		if i > 0 {
			d.sp()
		}
		d.WriteString(id.Name)
	}
	if b.Tuple {
		d.WriteString(">>")
	}
	if b.Set != nil {
		d.WriteString(" \\in ")
		d.node(b.Set)
	}
	d.WriteString(")")
}

func (d *dumper) bounds(bs []Bound) {
	for _, b := range bs {
		d.sp()
		d.bound(b)
	}
}

func (d *dumper) fields(fs []RecField) {
	for _, f := range fs {
		d.WriteString(" (" + f.Name + " ")
		d.node(f.Value)
		d.close()
	}
}

func (d *dumper) decls(ds []OpDecl) {
	d.WriteString("(")
	for i, x := range ds {
		if i > 0 {
			d.sp()
		}
		fmt.Fprintf(d, "%s/%d/%d", x.Name, x.Kind, x.Arity)
	}
	d.WriteString(")")
}

func (d *dumper) node(n Node) {
	switch n := n.(type) {
	case nil:
		d.WriteString("<nil>")
	case *Ident:
		d.WriteString(n.Name)
	case *OpApp:
		d.open("app ")
		for _, s := range n.Prefix {
			d.WriteString(s.Name)
			if s.Args != nil {
				d.WriteString("(")
				for i, a := range s.Args {
					if i > 0 {
						d.sp()
					}
					d.node(a)
				}
				d.WriteString(")")
			}
			d.WriteString("!")
		}
		d.WriteString(n.Name)
		d.exprs(n.Args)
		d.close()
	case *OpSymbol:
		d.WriteString("(opsym " + n.Op + ")")
	case *Number:
		d.WriteString(n.Text)
	case *String:
		d.WriteString(strconv.Quote(n.Value))
	case *Unary:
		d.open("pre " + n.Op + " ")
		d.node(n.X)
		d.close()
	case *Postfix:
		d.open("post " + n.Op + " ")
		d.node(n.X)
		d.close()
	case *Binary:
		d.open(n.Op + " ")
		d.node(n.L)
		d.sp()
		d.node(n.R)
		d.close()
	case *Cross:
		d.open("\\X")
		d.exprs(n.Factors)
		d.close()
	case *Junction:
		d.open("list" + n.Op)
		d.exprs(n.Items)
		d.close()
	case *If:
		d.open("if")
		d.exprs([]Expr{n.Cond, n.Then, n.Else})
		d.close()
	case *Case:
		d.open("case")
		for _, a := range n.Arms {
			d.WriteString(" (")
			d.node(a.Cond)
			d.WriteString(" -> ")
			d.node(a.Value)
			d.close()
		}
		if n.Other != nil {
			d.WriteString(" (other ")
			d.node(n.Other)
			d.close()
		}
		d.close()
	case *Let:
		d.open("let (")
		for i, u := range n.Defs {
			if i > 0 {
				d.sp()
			}
			d.node(u)
		}
		d.WriteString(") ")
		d.node(n.Body)
		d.close()
	case *Quant:
		d.open(n.Op)
		d.bounds(n.Bounds)
		d.sp()
		d.node(n.Body)
		d.close()
	case *Choose:
		d.open("choose ")
		d.bound(n.Bound)
		d.sp()
		d.node(n.Body)
		d.close()
	case *SetEnum:
		d.open("set")
		d.exprs(n.Elems)
		d.close()
	case *SetFilter:
		d.open("filter ")
		d.bound(n.Bound)
		d.sp()
		d.node(n.Pred)
		d.close()
	case *SetMap:
		d.open("setmap ")
		d.node(n.Elem)
		d.bounds(n.Bounds)
		d.close()
	case *FuncCons:
		d.open("fn")
		d.bounds(n.Bounds)
		d.sp()
		d.node(n.Body)
		d.close()
	case *FuncSet:
		d.open("-> ")
		d.node(n.Dom)
		d.sp()
		d.node(n.Rng)
		d.close()
	case *Record:
		d.open("record")
		d.fields(n.Fields)
		d.close()
	case *RecordSet:
		d.open("recordset")
		d.fields(n.Fields)
		d.close()
	case *Except:
		d.open("except ")
		d.node(n.Func)
		for _, u := range n.Updates {
			d.WriteString(" (!")
			for _, s := range u.Path {
				if s.Index != nil {
					d.WriteString("[")
					for i, x := range s.Index {
						if i > 0 {
							d.sp()
						}
						d.node(x)
					}
					d.WriteString("]")
				} else {
					d.WriteString("." + s.Field)
				}
			}
			d.WriteString(" = ")
			d.node(u.Value)
			d.close()
		}
		d.close()
	case *AtSign:
		d.WriteString("@")
	case *Tuple:
		d.open("tuple")
		d.exprs(n.Elems)
		d.close()
	case *FuncApp:
		d.open("apply ")
		d.node(n.Func)
		d.exprs(n.Args)
		d.close()
	case *FieldAccess:
		d.open(". ")
		d.node(n.X)
		d.WriteString(" " + n.Field)
		d.close()
	case *Lambda:
		d.open("lambda (")
		for i, id := range n.Params {
			if i > 0 {
				d.sp()
			}
			d.WriteString(id.Name)
		}
		d.WriteString(") ")
		d.node(n.Body)
		d.close()
	case *ActionExpr:
		if n.Angle {
			d.open("<<>>_ ")
		} else {
			d.open("[]_ ")
		}
		d.node(n.Action)
		d.sp()
		d.node(n.Sub)
		d.close()
	case *Fairness:
		if n.Strong {
			d.open("SF ")
		} else {
			d.open("WF ")
		}
		d.node(n.Sub)
		d.sp()
		d.node(n.Action)
		d.close()

	case *OpDef:
		d.open("def ")
		if n.Local {
			d.WriteString("local ")
		}
		fmt.Fprintf(d, "%s/%d ", n.Name, n.Kind)
		d.decls(n.Params)
		d.sp()
		d.node(n.Body)
		d.close()
	case *FuncDef:
		d.open("fndef ")
		if n.Local {
			d.WriteString("local ")
		}
		d.WriteString(n.Name)
		d.bounds(n.Bounds)
		d.sp()
		d.node(n.Body)
		d.close()
	case *Instance:
		d.open("instance ")
		if n.Local {
			d.WriteString("local ")
		}
		d.WriteString(n.Module)
		for _, s := range n.Subst {
			d.WriteString(" (" + s.Name + " <- ")
			d.node(s.Expr)
			d.close()
		}
		d.close()
	case *ModuleDef:
		d.open("moddef ")
		if n.Local {
			d.WriteString("local ")
		}
		d.WriteString(n.Name + " ")
		d.decls(n.Params)
		d.sp()
		d.node(n.Instance)
		d.close()
	case *VarDecl:
		d.open("variables")
		for _, id := range n.Names {
			d.WriteString(" " + id.Name)
		}
		d.close()
	case *ConstDecl:
		d.open("constants ")
		d.decls(n.Decls)
		d.close()
	case *Recursive:
		d.open("recursive ")
		d.decls(n.Decls)
		d.close()
	case *Assume:
		d.open(n.Keyword + " " + n.Name + " ")
		d.node(n.Expr)
		d.close()
	case *Theorem:
		d.open(n.Keyword + " " + n.Name + " ")
		d.node(n.Expr)
		if n.Proof != "" {
			d.WriteString(" proof " + strconv.Quote(n.Proof))
		}
		d.close()
	case *Separator:
		d.WriteString("----")
	case *Module:
		d.open("module " + n.Name + " (" + strings.Join(n.Extends, " ") + ")")
		for _, u := range n.Units {
			d.WriteString("\n  ")
			d.node(u)
		}
		d.close()
	default:
		fmt.Fprintf(d, "<unknown %T>", n)
	}
}
