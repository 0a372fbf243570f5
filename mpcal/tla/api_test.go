package tla

import (
	"strings"
	"testing"
)

// These tests show how a PlusCal/MPCal parser is meant to drive the
// package: it lexes the algorithm text (which lives inside a comment),
// reads its own statement tokens, and hands TLA+ expressions and
// definitions to the shared Parser.

func TestParseExprAt(t *testing.T) {
	src := []byte("(* --algorithm A {\n  x := y + 1; z := 2 } *)")
	off := strings.Index(string(src), "y + 1")
	x, next, err := ParseExprAt("alg.tla", src, off, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if Dump(x) != "(+ y 1)" {
		t.Errorf("got %s", Dump(x))
	}
	if !next.Is(";") || next.Pos.Line != 2 || next.Pos.Col != 13 {
		t.Errorf("next token %v, want ; at 2:13", next)
	}
	if p := x.Position(); p.Line != 2 || p.Col != 8 || p.Offset != off {
		t.Errorf("expression at %v (offset %d)", p, p.Offset)
	}

	// Errors point into the whole file.
	_, _, err = ParseExprAt("alg.tla", src, strings.Index(string(src), "2 }"), Options{})
	if err != nil {
		t.Fatalf("2 followed by } should parse: %v", err)
	}
	_, _, err = ParseExprAt("alg.tla", []byte("a\n  b := (c"), len("a\n  b := "), Options{})
	if err == nil || err.Error() != "alg.tla:2:10: syntax: expected \")\", found end of input" {
		t.Errorf("got %v", err)
	}
}

func TestDisabledInfix(t *testing.T) {
	// PlusCal's x := y || y := x: with || and := disabled the expression
	// ends before them.
	src := []byte("x := y || y := x")
	x, next, err := ParseExprAt("t", src, 0, Options{DisabledInfix: []string{"||", ":="}})
	if err != nil || Dump(x) != "x" || !next.Is(":=") {
		t.Fatalf("got %v %v %v", x, next, err)
	}
	x, next, err = ParseExprAt("t", src, 5, Options{DisabledInfix: []string{"||", ":="}})
	if err != nil || Dump(x) != "y" || !next.Is("||") {
		t.Fatalf("got %v %v %v", x, next, err)
	}
	// Without the option they are ordinary TLA+ operators.
	x, _, err = ParseExprAt("t", src, 5, Options{})
	if err != nil || Dump(x) != "(:= (|| y y) x)" {
		t.Fatalf("got %s %v", Dump(x), err)
	}
}

func TestParseExprTokens(t *testing.T) {
	toks, err := Tokenize("t", []byte("f[a, b] + 1 ; rest"))
	if err != nil {
		t.Fatal(err)
	}
	x, n, err := ParseExprTokens("t", toks, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if Dump(x) != "(+ (apply f a b) 1)" || n != 8 || !toks[n].Is(";") {
		t.Errorf("got %s after %d tokens", Dump(x), n)
	}
	if _, _, err := ParseExprTokens("t", toks[:3], Options{}); err == nil || !strings.Contains(err.Error(), "t:1:4: syntax:") {
		t.Errorf("got %v", err)
	}
}

// TestSharedParser plays the part of an MPCal parser reading a mapping
// macro and a define block.
func TestSharedParser(t *testing.T) {
	src := `mapping macro ReliableFIFOLink {
    read {
        await Len($variable) > 0;
        yield Head($variable);
    }
}
define {
    Empty(q) == q = <<>>
    Both == /\ Empty(<<>>)
            /\ TRUE
}`
	lx := NewLexer("m.tla", []byte(src))
	lx.DollarNames = true
	p := NewParser("m.tla", lx, Options{DisabledInfix: []string{"||", ":="}})
	word := func(w string) {
		t.Helper()
		if tok := p.Next(); tok.Text != w {
			t.Fatalf("want %q, got %v", w, tok)
		}
	}
	for _, w := range []string{"mapping", "macro", "ReliableFIFOLink", "{", "read", "{", "await"} {
		word(w)
	}
	e, err := p.ParseExpr()
	if err != nil || Dump(e) != "(> (app Len $variable) 0)" {
		t.Fatalf("await: %s %v", Dump(e), err)
	}
	word(";")
	word("yield")
	if e, err = p.ParseExpr(); err != nil || Dump(e) != "(app Head $variable)" {
		t.Fatalf("yield: %s %v", Dump(e), err)
	}
	for _, w := range []string{";", "}", "}", "define", "{"} {
		word(w)
	}
	var defs []string
	for !p.Peek().Is("}") {
		u, err := p.ParseUnit()
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, Dump(u))
	}
	want := []string{`(def Empty/0 (q/0/0) (= q (tuple)))`, `(def Both/0 () (list/\ (app Empty (tuple)) TRUE))`}
	if strings.Join(defs, "\n") != strings.Join(want, "\n") {
		t.Errorf("defs:\n%s", strings.Join(defs, "\n"))
	}
	word("}")
	if p.Peek().Kind != TokEOF || p.PeekAt(3).Kind != TokEOF {
		t.Errorf("want EOF, got %v", p.Peek())
	}

	// An error is sticky and reported in the package's format.
	p = NewParser("m.tla", NewLexer("m.tla", []byte("x := ;")), Options{DisabledInfix: []string{":="}})
	p.Next()
	if tok := p.Next(); !tok.Is(":=") {
		t.Fatalf("got %v", tok)
	}
	if _, err := p.ParseExpr(); err == nil || err.Error() != `m.tla:1:6: syntax: expected an expression, found ";"` {
		t.Errorf("got %v", err)
	}
	if p.Err() == nil || p.Peek().Kind != TokEOF {
		t.Errorf("error is not sticky")
	}
	if err := p.Errorf(Pos{Line: 9, Col: 9}, "later"); err.Error() != `m.tla:1:6: syntax: expected an expression, found ";"` {
		t.Errorf("Errorf replaced the first error: %v", err)
	}
	if err := NewParser("m.tla", NewLexer("m.tla", nil), Options{}).Errorf(Pos{Line: 2, Col: 3}, "bad %s", "label"); err.Error() != "m.tla:2:3: syntax: bad label" {
		t.Errorf("got %v", err)
	}
}

func TestLookupOp(t *testing.T) {
	tests := []struct {
		spelling string
		fix      OpFix
		name     string
		lo, hi   int
		left     bool
	}{
		{`\land`, InfixOp, `/\`, 3, 3, true},
		{`#`, InfixOp, `/=`, 5, 5, false},
		{`(+)`, InfixOp, `\oplus`, 10, 10, true},
		{`\circ`, InfixOp, `\o`, 13, 13, true},
		{`:>`, InfixOp, `:>`, 7, 7, false},
		{`@@`, InfixOp, `@@`, 6, 6, true},
		{`\cdot`, InfixOp, `\cdot`, 5, 14, true},
		{`\neg`, PrefixOp, `~`, 4, 4, false},
		{`-`, PrefixOp, `-`, 12, 12, false},
		{`ENABLED`, PrefixOp, `ENABLED`, 4, 15, false},
		{`'`, PostfixOp, `'`, 15, 15, false},
	}
	for _, tt := range tests {
		op := LookupOp(tt.spelling, tt.fix)
		if op == nil || op.Name != tt.name || op.Lo != tt.lo || op.Hi != tt.hi || op.Left != tt.left || op.Fix != tt.fix {
			t.Errorf("LookupOp(%s) = %+v", tt.spelling, op)
		}
	}
	if LookupOp("+", PrefixOp) != nil || LookupOp("~", InfixOp) != nil {
		t.Error("fixity is not respected")
	}
}
