package mpcal

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"strata/mpcal/tla"
)

// FormatAlgorithm prints an algorithm in C-syntax (MPCal algorithms with
// their archetypes, mapping macros and instances). The output parses back
// to the same tree; comments and layout are not kept.
func FormatAlgorithm(a *Algorithm) string {
	var w printer
	w.algorithm(a)
	return w.String()
}

type printer struct {
	strings.Builder
	indent int
}

func (w *printer) line(format string, args ...any) {
	w.WriteString(strings.Repeat("  ", w.indent))
	fmt.Fprintf(w, format, args...)
	w.WriteByte('\n')
}

func expr(e tla.Expr) string {
	if e == nil {
		return "<nil>"
	}
	s := tla.FormatExpr(e)
	// Multi-line expressions (bulleted lists, LET) keep their own layout;
	// they are indented by the printer below.
	return s
}

func (w *printer) algorithm(a *Algorithm) {
	kw := "--algorithm"
	switch {
	case a.MPCal:
		kw = "--mpcal"
	case a.Fair:
		kw = "--fair algorithm"
	}
	w.line("%s %s {", kw, a.Name)
	w.indent++
	if len(a.Globals) > 0 {
		w.line("variables %s;", varDecls(a.Globals))
	}
	if len(a.Defines) > 0 {
		w.line("define {")
		w.indent++
		for _, d := range a.Defines {
			w.block(tla.FormatUnit(d))
		}
		w.indent--
		w.line("}")
	}
	for _, m := range a.MappingMacros {
		w.line("mapping macro %s {", m.Name)
		w.indent++
		w.line("read {")
		w.stmts(m.Read)
		w.line("}")
		w.line("write {")
		w.stmts(m.Write)
		w.line("}")
		w.indent--
		w.line("}")
	}
	for _, m := range a.Macros {
		w.line("macro %s(%s) {", m.Name, params(m.Params))
		w.stmts(m.Body)
		w.line("}")
	}
	for _, p := range a.Procedures {
		w.line("procedure %s(%s)%s {", p.Name, params(p.Params), locals(p.Locals))
		w.stmts(p.Body)
		w.line("}")
	}
	for _, ar := range a.Archetypes {
		w.line("archetype %s(%s)%s {", ar.Name, params(ar.Params), locals(ar.Locals))
		w.stmts(ar.Body)
		w.line("}")
	}
	for _, p := range a.Processes {
		head := fmt.Sprintf("%sprocess (%s %s %s)", p.Fair, p.Name, p.Op, expr(p.ID))
		if p.Instance != nil {
			w.line("%s == %s;", head, instance(p.Instance))
			continue
		}
		w.line("%s%s {", head, locals(p.Locals))
		w.stmts(p.Body)
		w.line("}")
	}
	if a.Body != nil {
		w.line("{")
		w.stmts(a.Body)
		w.line("}")
	}
	w.indent--
	w.line("}")
}

// block writes a possibly multi-line text at the current indentation.
func (w *printer) block(s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		w.line("%s", l)
	}
}

func varDecls(ds []*VarDecl) string {
	var parts []string
	for _, d := range ds {
		if d.Op == "" {
			parts = append(parts, d.Name)
		} else {
			parts = append(parts, fmt.Sprintf("%s %s %s", d.Name, d.Op, expr(d.Init)))
		}
	}
	return strings.Join(parts, "; ")
}

func locals(ds []*VarDecl) string {
	if len(ds) == 0 {
		return ""
	}
	return " variables " + varDecls(ds) + ";"
}

func params(ps []*Param) string {
	var parts []string
	for _, p := range ps {
		s := p.Name + strings.Repeat("[_]", p.Index)
		if p.Ref {
			s = "ref " + s
		}
		if p.Init != nil {
			s += " = " + expr(p.Init)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func args(as []*Arg) string {
	var parts []string
	for _, a := range as {
		if a.Ref {
			parts = append(parts, "ref "+a.Name+strings.Repeat("[_]", a.Index))
		} else {
			parts = append(parts, expr(a.Expr))
		}
	}
	return strings.Join(parts, ", ")
}

func instance(in *Instance) string {
	s := fmt.Sprintf("instance %s(%s)", in.Archetype, args(in.Args))
	for _, m := range in.Mappings {
		target := m.Name
		if m.Position > 0 {
			target = fmt.Sprintf("@%d", m.Position)
		}
		s += fmt.Sprintf(" mapping %s%s via %s", target, strings.Repeat("[_]", m.Index), m.Macro)
	}
	return s
}

func lhs(l LHS) string {
	var b strings.Builder
	b.WriteString(l.Name)
	for _, s := range l.Sels {
		if s.Index != nil {
			var idx []string
			for _, e := range s.Index {
				idx = append(idx, expr(e))
			}
			b.WriteString("[" + strings.Join(idx, ", ") + "]")
		} else {
			b.WriteString("." + s.Field)
		}
	}
	return b.String()
}

// stmts prints a statement list; the statements after a label up to the
// next label (the label's step) are indented under it.
func (w *printer) stmts(ss []Stmt) {
	w.indent++
	inStep := false
	for _, s := range ss {
		if l, ok := s.(*Labeled); ok {
			if inStep {
				w.indent--
			}
			w.line("%s:%s", l.Label, l.Mod)
			w.indent++
			inStep = true
			w.stmt(l.Stmt)
			continue
		}
		w.stmt(s)
	}
	if inStep {
		w.indent--
	}
	w.indent--
}

// exprLine writes prefix + e + suffix, indenting continuation lines of a
// multi-line expression under its first character.
func (w *printer) exprLine(prefix string, e tla.Expr, suffix string) {
	lines := strings.Split(expr(e), "\n")
	if len(lines) == 1 {
		w.line("%s%s%s", prefix, lines[0], suffix)
		return
	}
	pad := strings.Repeat(" ", len(prefix))
	w.line("%s%s", prefix, lines[0])
	for i, l := range lines[1:] {
		if i == len(lines)-2 {
			w.line("%s%s%s", pad, l, suffix)
		} else {
			w.line("%s%s", pad, l)
		}
	}
}

func (w *printer) stmt(s Stmt) {
	switch s := s.(type) {
	case *Labeled:
		w.line("%s:%s", s.Label, s.Mod)
		w.indent++
		w.stmt(s.Stmt)
		w.indent--
	case *Skip:
		w.line("skip;")
	case *Assign:
		var parts []string
		for _, p := range s.Pairs {
			parts = append(parts, lhs(p.LHS)+" := "+expr(p.RHS))
		}
		joined := strings.Join(parts, " || ")
		if !strings.Contains(joined, "\n") {
			w.line("%s;", joined)
			return
		}
		for i, p := range s.Pairs {
			suffix := " ||"
			if i == len(s.Pairs)-1 {
				suffix = ";"
			}
			w.exprLine(lhs(p.LHS)+" := ", p.RHS, suffix)
		}
	case *If:
		w.exprLine("if (", s.Cond, ") {")
		w.stmts(s.Then)
		for len(s.Else) > 0 {
			if inner, ok := s.Else[0].(*If); ok && len(s.Else) == 1 {
				w.exprLine("} else if (", inner.Cond, ") {")
				w.stmts(inner.Then)
				s = inner
				continue
			}
			w.line("} else {")
			w.stmts(s.Else)
			break
		}
		w.line("};")
	case *While:
		w.exprLine("while (", s.Cond, ") {")
		w.stmts(s.Body)
		w.line("};")
	case *Either:
		for i, b := range s.Branches {
			if i == 0 {
				w.line("either {")
			} else {
				w.line("} or {")
			}
			w.stmts(b)
		}
		w.line("};")
	case *With:
		// A binding's expression may span lines (a bulleted list): its
		// continuation lines go under its first character, or a reader
		// (the parser included) would end the list early.
		var lines []string
		cur := "with ("
		for i, b := range s.Bindings {
			if i > 0 {
				cur += ", "
			}
			cur += fmt.Sprintf("%s %s ", b.Name, b.Op)
			ls := strings.Split(expr(b.Expr), "\n")
			pad := strings.Repeat(" ", utf8.RuneCountInString(cur))
			cur += ls[0]
			for _, l := range ls[1:] {
				lines = append(lines, cur)
				cur = pad + l
			}
		}
		for _, l := range append(lines, cur+") {") {
			w.line("%s", l)
		}
		w.stmts(s.Body)
		w.line("};")
	case *Await:
		kw := "await "
		if s.When {
			kw = "when "
		}
		w.exprLine(kw, s.Cond, ";")
	case *Goto:
		w.line("goto %s;", s.Label)
	case *Call:
		w.line("call %s(%s);", s.Proc, args(s.Args))
	case *Return:
		w.line("return;")
	case *MacroCall:
		var as []string
		for _, a := range s.Args {
			as = append(as, expr(a))
		}
		w.line("%s(%s);", s.Name, strings.Join(as, ", "))
	case *Print:
		w.exprLine("print ", s.Expr, ";")
	case *Assert:
		w.exprLine("assert ", s.Expr, ";")
	case *Yield:
		w.exprLine("yield ", s.Expr, ";")
	default:
		panic(fmt.Sprintf("mpcal: unknown statement %T", s))
	}
}
