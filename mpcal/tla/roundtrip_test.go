package tla

import (
	"math/rand"
	"strings"
	"testing"
)

// TestRoundTripRandomExprs is the printer's property test: a random tree,
// printed and parsed again, gives the same tree, and printing is
// idempotent.
func TestRoundTripRandomExprs(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	g := &gen{rand.New(rand.NewSource(1))}
	kinds := map[string]int{}
	for i := 0; i < n; i++ {
		e := g.expr(1 + i%5)
		kinds[strings.SplitN(strings.TrimPrefix(Dump(e), "("), " ", 2)[0]]++
		want := Dump(e)
		out := FormatExpr(e)
		back, err := ParseExpr("printed", []byte(out))
		if err != nil {
			t.Fatalf("case %d: printed form does not parse: %v\ntree: %s\nprinted:\n%s", i, err, want, out)
		}
		if got := Dump(back); got != want {
			t.Fatalf("case %d: round trip changed the tree\nprinted:\n%s\n got: %s\nwant: %s", i, out, got, want)
		}
		if again := FormatExpr(back); again != out {
			t.Fatalf("case %d: printing is not idempotent:\n%s\n---\n%s", i, out, again)
		}
	}
	if len(kinds) < 30 {
		t.Errorf("generator covered only %d node shapes: %v", len(kinds), kinds)
	}
}

func TestRoundTripRandomModules(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 100
	}
	g := &gen{rand.New(rand.NewSource(2))}
	for i := 0; i < n; i++ {
		m := g.module(1+i%4, true)
		want := Dump(m)
		out := Format(m)
		back, err := ParseModule("printed.tla", []byte(out))
		if err != nil {
			t.Fatalf("case %d: printed module does not parse: %v\n%s", i, err, out)
		}
		if got := Dump(back); got != want {
			t.Fatalf("case %d: round trip changed the module\nprinted:\n%s\n got: %s\nwant: %s", i, out, got, want)
		}
	}
}

// TestPrinterParens spot-checks the parentheses and layout the printer
// chooses.
func TestPrinterParens(t *testing.T) {
	tests := []struct{ src, want string }{
		{`a + b * c`, `a + b * c`},
		{`(a + b) * c`, `(a + b) * c`},
		{`(a + b) + c`, `a + b + c`},
		{`a + (b + c)`, `a + (b + c)`},
		{`a - (b - c)`, `a - (b - c)`},
		{`(a = b) = c`, `(a = b) = c`},
		{`~(a = b)`, `~a = b`},
		{`(~a) = b`, `(~a) = b`},
		{`-(a ^ b)`, `-a ^ b`},
		{`(-a) ^ b`, `(-a) ^ b`},
		{`a - (-b)`, `a - -b`},
		{`-(-a)`, `- -a`},
		{`(a /\ b) \/ c`, `(a /\ b) \/ c`},
		{`(\A x : P) /\ Q`, `(\A x : P) /\ Q`},
		{`Q /\ (\A x : P)`, `Q /\ \A x : P`},
		{`(a = (\E x : P)) /\ b`, `(a = \E x : P) /\ b`},
		{`(IF a THEN b ELSE c) + 1`, `(IF a THEN b ELSE c) + 1`},
		{`(x + 1)'`, `(x + 1)'`},
		{`(f[x])'`, `f[x]'`},
		{`ENABLED (x')`, `ENABLED (x')`},
		{`ENABLED (x'[1])`, `ENABLED (x'[1])`},
		{`(A \X B) \X C`, `(A \X B) \X C`},
		{`A \X (B \X C)`, `A \X (B \X C)`},
		{`SUBSET (S \cup T)`, `SUBSET (S \cup T)`},
		{`(SUBSET S) \cup T`, `SUBSET S \cup T`},
		{`{(x \in S) : x \in T}`, `{(x \in S) : x \in T}`},
		{`{x \in (S /\ T) : P}`, `{x \in (S /\ T) : P}`},
		{`[x \in S -> T]`, `[x \in S -> T]`},
		{`CASE a -> (CASE b -> c) [] d -> e`, `CASE a -> (CASE b -> c) [] d -> e`},
		{`CASE a -> b [] c -> CASE d -> e`, `CASE a -> b [] c -> CASE d -> e`},
		{`F(-, +, -.)`, `F( -, +, -.)`},
		{`(1).a`, `(1).a`},
		{`[A]_(x + 1)`, `[A]_(x + 1)`},
		{`[A]_<<x>>`, `[A]_<<x>>`},
		{`WF_(x)(A)`, `WF_x(A)`},
		{`[](P => Q)`, `[](P => Q)`},
		{`<>[]P`, `<> []P`},
		{`\lnot a \land b`, `~a /\ b`},
		{`"a\"b\\c\n"`, `"a\"b\\c\n"`},
		{"x = (/\\ a\n     /\\ b)", "x = /\\ a\n    /\\ b"},
		{"(/\\ a\n /\\ b) = x", "(/\\ a\n /\\ b) = x"},
		{`IF a THEN b ELSE c`, `IF a THEN b ELSE c`},
		{`IF aaaaaaaaaaaaaaaaaaaa THEN bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb ELSE cccccccccccccccccccccccc`,
			"IF aaaaaaaaaaaaaaaaaaaa\nTHEN bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\nELSE cccccccccccccccccccccccc"},
		{`LET a == 1 b == 2 IN a + b`, "LET a == 1\n    b == 2\nIN  a + b"},
	}
	for _, tt := range tests {
		x := mustParseExpr(t, tt.src)
		if got := FormatExpr(x); got != tt.want {
			t.Errorf("FormatExpr(%s)\n got: %s\nwant: %s", tt.src, got, tt.want)
		}
	}
	// (* in an argument list must not start a comment.
	x := &OpApp{Name: "F", Args: []Expr{&OpSymbol{Op: "*"}, &OpSymbol{Op: "*"}}}
	if got := FormatExpr(x); got != "F( *, *)" {
		t.Errorf("got %s", got)
	}
}

// FuzzRoundTripTrees extends the property test under the fuzzer: each
// input picks a seed and a depth for the random tree generator.
func FuzzRoundTripTrees(f *testing.F) {
	for i := int64(0); i < 8; i++ {
		f.Add(i, uint8(i))
	}
	f.Fuzz(func(t *testing.T, seed int64, depth uint8) {
		g := &gen{rand.New(rand.NewSource(seed))}
		e := g.expr(int(depth % 7))
		out := FormatExpr(e)
		back, err := ParseExpr("printed", []byte(out))
		if err != nil {
			t.Fatalf("printed form does not parse: %v\ntree: %s\nprinted:\n%s", err, Dump(e), out)
		}
		if got, want := Dump(back), Dump(e); got != want {
			t.Fatalf("round trip changed the tree\nprinted:\n%s\n got: %s\nwant: %s", out, got, want)
		}
	})
}
