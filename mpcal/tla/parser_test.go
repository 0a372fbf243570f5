package tla

import (
	"strings"
	"testing"
)

func mustParseExpr(t *testing.T, src string) Expr {
	t.Helper()
	x, err := ParseExpr("t.tla", []byte(src))
	if err != nil {
		t.Fatalf("ParseExpr(%q): %v", src, err)
	}
	return x
}

// TestParseExpr checks the tree (as an S-expression) for every kind of
// expression and the precedence and associativity rules.
func TestParseExpr(t *testing.T) {
	tests := []struct{ src, want string }{
		// atoms
		{`x`, `x`},
		{`42`, `42`},
		{`\h1F`, `\h1F`},
		{`"a\"b"`, `"a\"b"`},
		{`TRUE`, `TRUE`},
		{`(((x)))`, `x`},

		// precedence: tighter operators bind first
		{`a + b * c`, `(+ a (* b c))`},
		{`a * b + c`, `(+ (* a b) c)`},
		{`a = b + 1`, `(= a (+ b 1))`},
		{`a /\ b = c`, `(/\ a (= b c))`},
		{`a => b /\ c`, `(=> a (/\ b c))`},
		{`a <=> b => c`, `(=> (<=> a b) c)`},
		{`x \in 1..N`, `(\in x (.. 1 N))`},
		{`S \cup T \subseteq U`, `(\subseteq (\cup S T) U)`},
		{`a + b - c`, `(+ a (- b c))`}, // + is 10-10, - is 11-11
		{`a - b + c`, `(+ (- a b) c)`},
		{`a ^ b * c`, `(* (^ a b) c)`},
		{`s \o t \o u`, `(\o (\o s t) u)`},
		{`f @@ a :> b`, `(@@ f (:> a b))`},
		{`B1 (+) B2 (-) B3`, `(\oplus B1 (\ominus B2 B3))`},
		{`a \sqsubseteq b`, `(\sqsubseteq a b)`},
		{`1 \div 2 % 3`, `(% (\div 1 2) 3)`},
		{`a \cdot b \cdot c`, `(\cdot (\cdot a b) c)`},
		{`P ~> Q /\ R`, `(~> P (/\ Q R))`},
		{`P -+-> Q`, `(-+-> P Q)`},
		// left associativity
		{`a /\ b /\ c`, `(/\ (/\ a b) c)`},
		{`a \/ b \/ c`, `(\/ (\/ a b) c)`},
		{`a + b + c`, `(+ (+ a b) c)`},
		{`a \cup b \union c`, `(\cup (\cup a b) c)`},
		// synonyms are canonicalized
		{`a # b`, `(/= a b)`},
		{`a =< b`, `(<= a b)`},
		{`a \leq b`, `(<= a b)`},
		{`a \geq b`, `(>= a b)`},
		{`a \equiv b`, `(<=> a b)`},
		{`a \circ b`, `(\o a b)`},
		{`a \intersect b`, `(\cap a b)`},
		{`\lnot a`, `(pre ~ a)`},
		{`\neg a`, `(pre ~ a)`},
		// prefix operators
		{`~a = b`, `(pre ~ (= a b))`},
		{`~a /\ b`, `(/\ (pre ~ a) b)`},
		{`-a + b`, `(+ (pre - a) b)`},
		{`-a ^ b`, `(pre - (^ a b))`},
		{`a - -b`, `(- a (pre - b))`},
		{`- - a`, `(pre - (pre - a))`},
		{`SUBSET S \cup T`, `(\cup (pre SUBSET S) T)`},
		{`UNION {S}`, `(pre UNION (set S))`},
		{`DOMAIN f \cup S`, `(\cup (pre DOMAIN f) S)`},
		{`ENABLED A /\ B`, `(/\ (pre ENABLED A) B)`},
		{`UNCHANGED <<x, y>>`, `(pre UNCHANGED (tuple x y))`},
		{`[]P => <>Q`, `(=> (pre [] P) (pre <> Q))`},
		{`[]<>P`, `(pre [] (pre <> P))`},
		// postfix operators and selectors
		{`x'`, `(post ' x)`},
		{`x''`, `(post ' (post ' x))`},
		{`x' = x + 1`, `(= (post ' x) (+ x 1))`},
		{`f[x]'`, `(post ' (apply f x))`},
		{`f'[x]`, `(apply (post ' f) x)`},
		{`r.a.b'`, `(post ' (. (. r a) b))`},
		{`-x'`, `(pre - (post ' x))`},
		{`R^+ \cup R^*`, `(\cup (post ^+ R) (post ^* R))`},
		{`x^#`, `(post ^# x)`},
		{`(a + b)'`, `(post ' (+ a b))`},
		{`f[a, b]`, `(apply f a b)`},
		{`f[<<a, b>>]`, `(apply f (tuple a b))`},
		{`f[x][y]`, `(apply (apply f x) y)`},
		// operator application and instances
		{`Op(a, b)`, `(app Op a b)`},
		{`Op (a)`, `(app Op a)`},
		{`M!Op`, `(app M!Op)`},
		{`M!Op(x)`, `(app M!Op x)`},
		{`I(1)!J!Op(2, 3)`, `(app I(1)!J!Op 2 3)`},
		{`F(+, -., \cup, ')`, `(app F (opsym +) (opsym -.) (opsym \cup) (opsym '))`},
		{`F(LAMBDA x, y : x + y, 0)`, `(app F (lambda (x y) (+ x y)) 0)`},
		// cross products
		{`A \X B`, `(\X A B)`},
		{`A \X B \times C`, `(\X A B C)`},
		{`(A \X B) \X C`, `(\X (\X A B) C)`},
		{`A \X (B \X C)`, `(\X A (\X B C))`},
		{`x \in A \X B`, `(\in x (\X A B))`},
		// IF, CASE, LET
		{`IF a THEN b ELSE c`, `(if a b c)`},
		{`IF a THEN b ELSE c + 1`, `(if a b (+ c 1))`},
		{`IF a THEN IF b THEN c ELSE d ELSE e`, `(if a (if b c d) e)`},
		{`CASE a -> 1 [] b -> 2`, `(case (a -> 1) (b -> 2))`},
		{`CASE a -> 1 [] OTHER -> 2`, `(case (a -> 1) (other 2))`},
		{`CASE a -> []P [] b -> <>Q`, `(case (a -> (pre [] P)) (b -> (pre <> Q)))`},
		{`LET x == 1 IN x + 1`, `(let ((def x/0 () 1)) (+ x 1))`},
		{`LET f(a, G(_)) == G(a) g[i \in S] == i RECURSIVE h(_) h(n) == n IN f(1, h)`,
			`(let ((def f/0 (a/0/0 G/0/1) (app G a)) (fndef g (i \in S) i) (recursive (h/0/1)) (def h/0 (n/0/0) n)) (app f 1 h))`},
		{`LET a ++ b == a IN 1 ++ 2`, `(let ((def ++/2 (a/0/0 b/0/0) a)) (++ 1 2))`},
		{`LET I == INSTANCE M WITH x <- 1 IN I!y`, `(let ((moddef I () (instance M (x <- 1)))) (app I!y))`},
		// quantifiers and CHOOSE
		{`\A x \in S : P(x)`, `(\A (x \in S) (app P x))`},
		{`\E x, y \in S : x = y`, `(\E (x y \in S) (= x y))`},
		{`\E x \in S, y \in T : P`, `(\E (x \in S) (y \in T) P)`},
		{`\A <<a, b>> \in S : a = b`, `(\A (<<a b>> \in S) (= a b))`},
		{`\A x : P`, `(\A (x) P)`},
		{`\E x, y : P`, `(\E (x y) P)`},
		{`\forall x : \exists y : x = y`, `(\A (x) (\E (y) (= x y)))`},
		{`\EE x : P`, `(\EE (x) P)`},
		{`\AA x, y : P`, `(\AA (x y) P)`},
		{`a /\ \A x : P /\ Q`, `(/\ a (\A (x) (/\ P Q)))`},
		{`CHOOSE x \in S : P`, `(choose (x \in S) P)`},
		{`CHOOSE x : P`, `(choose (x) P)`},
		{`CHOOSE <<a, b>> \in S \X T : a < b`, `(choose (<<a b>> \in (\X S T)) (< a b))`},
		// sets
		{`{}`, `(set)`},
		{`{a, b, c}`, `(set a b c)`},
		{`{x \in S}`, `(set (\in x S))`},
		{`{x \in S, y}`, `(set (\in x S) y)`},
		{`{x \in S : x > 0}`, `(filter (x \in S) (> x 0))`},
		{`{<<a, b>> \in S : a > b}`, `(filter (<<a b>> \in S) (> a b))`},
		{`{x \in S \cup T : P}`, `(filter (x \in (\cup S T)) P)`},
		{`{x + 1 : x \in S}`, `(setmap (+ x 1) (x \in S))`},
		{`{<<x, y>> : x, y \in S, z \in T}`, `(setmap (tuple x y) (x y \in S) (z \in T))`},
		{`{(x \in S) : x \in T}`, `(setmap (\in x S) (x \in T))`},
		{`{x \in S => P : x \in T}`, `(setmap (=> (\in x S) P) (x \in T))`},
		// functions and records
		{`[x \in S |-> x + 1]`, `(fn (x \in S) (+ x 1))`},
		{`[x, y \in S, z \in T |-> x]`, `(fn (x y \in S) (z \in T) x)`},
		{`[<<a, b>> \in S |-> a]`, `(fn (<<a b>> \in S) a)`},
		{`[x \in S, <<a, b>> \in T |-> a]`, `(fn (x \in S) (<<a b>> \in T) a)`},
		{`[S -> T]`, `(-> S T)`},
		{`[x \in S -> T]`, `(-> (\in x S) T)`},
		{`[S -> [T -> U]]`, `(-> S (-> T U))`},
		{`[a |-> 1, b |-> 2]`, `(record (a 1) (b 2))`},
		{`[a : S, b : T]`, `(recordset (a S) (b T))`},
		{`r.a`, `(. r a)`},
		{`[f EXCEPT ![1] = 2]`, `(except f (![1] = 2))`},
		{`[f EXCEPT ![1, 2] = 3, !.a.b[x] = @ + 1]`, `(except f (![1 2] = 3) (!.a.b[x] = (+ @ 1)))`},
		{`[r EXCEPT !.a = @]`, `(except r (!.a = @))`},
		{`[f EXCEPT ![x] = [@ EXCEPT ![y] = 0]]`, `(except f (![x] = (except @ (![y] = 0))))`},
		// tuples
		{`<<>>`, `(tuple)`},
		{`<<a>>`, `(tuple a)`},
		{`<<a, <<b>>, c>>`, `(tuple a (tuple b) c)`},
		// actions and fairness
		{`[Next]_vars`, `([]_ Next vars)`},
		{`[Next]_<<x, y>>`, `([]_ Next (tuple x y))`},
		{`[M!Next]_M!vars`, `([]_ (app M!Next) (app M!vars))`},
		{`[A \/ B]_(x + 1)`, `([]_ (\/ A B) (+ x 1))`},
		{`<<Next>>_vars`, `(<<>>_ Next vars)`},
		{`[][Next]_vars`, `(pre [] ([]_ Next vars))`},
		{`<><<A>>_v`, `(pre <> (<<>>_ A v))`},
		{`WF_vars(Next)`, `(WF vars Next)`},
		{`SF_<<x, y>>(A /\ B)`, `(SF (tuple x y) (/\ A B))`},
		{`WF_(x)(A)`, `(WF x A)`},
		{`Init /\ [][Next]_vars /\ WF_vars(Next)`, `(/\ (/\ Init (pre [] ([]_ Next vars))) (WF vars Next))`},
		// bulleted lists (more in indent_test.go)
		{"/\\ a\n/\\ b", `(list/\ a b)`},
		{"\\/ a\n\\/ b", `(list\/ a b)`},
		{"\\land a\n\\land b", `(list/\ a b)`},
	}
	for _, tt := range tests {
		x, err := ParseExpr("t.tla", []byte(tt.src))
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tt.src, err)
			continue
		}
		if got := Dump(x); got != tt.want {
			t.Errorf("ParseExpr(%q)\n got: %s\nwant: %s", tt.src, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`a /\ b \/ c`, `1:8: syntax: precedence conflict between /\ and \/; add parentheses`},
		{`a \land b \lor c`, `precedence conflict between /\ and \/`},
		{`a = b = c`, `precedence conflict between = and =`},
		{`a => b => c`, `precedence conflict between => and =>`},
		{`a < b > c`, `precedence conflict`},
		{`a * b / c`, `precedence conflict between * and /`},
		{`a + b % c`, `precedence conflict between + and %`},
		{`SUBSET S \X T`, `precedence conflict between SUBSET and \X`},
		{`ENABLED x'`, `precedence conflict between ENABLED and '`},
		{`ENABLED a = b`, `precedence conflict between ENABLED and =`},
		{`a +`, `expected an expression, found end of input`},
		{`f(`, `expected an expression, found end of input`},
		{`f()`, `expected an expression, found ")"`},
		{`(a`, `expected ")", found end of input`},
		{`{a, b`, `expected "}", found end of input`},
		{`[a]`, `expected "|->", "->", "EXCEPT" or "]_", found "]"`},
		{`[f EXCEPT = 1]`, `expected "!"`},
		{`[f EXCEPT ! = 1]`, `expected "." or "["`},
		{`<<a, b>>_v`, `expected ">>"`},
		{`IF a THEN b`, `expected "ELSE"`},
		{`CASE OTHER -> 1`, `expected an expression, found "OTHER"`},
		{`LET IN 1`, `LET needs at least one definition`},
		{`\A x \in S, y : P`, `bounded and unbounded variables cannot be mixed`},
		{`\EE x \in S : P`, `\EE takes no bounds`},
		{`\A <<a, b>> : P`, `expected "\in", found ":"`},
		{`CHOOSE x, y : P`, `CHOOSE binds one name or one tuple of names`},
		{`a b`, `expected end of expression, found "b"`},
		{"\"abc", `unterminated string`},
		{"a + `", "unexpected character '`'"},
		{`r.1`, `expected a name, found "1"`},
		{`x \in`, `found end of input`},
		{`WF_vars`, `expected "(", found end of input`},
		{strings.Repeat("(", 5000) + "x" + strings.Repeat(")", 5000), `nesting deeper than 1000 levels`},
		{strings.Repeat("~", 5000) + "x", `nesting deeper than 1000 levels`},
	}
	for _, tt := range tests {
		_, err := ParseExpr("t.tla", []byte(tt.src))
		if err == nil {
			t.Errorf("ParseExpr(%.40q): no error, want %q", tt.src, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseExpr(%.40q)\n got: %v\nwant: %s", tt.src, err, tt.want)
		}
		if !strings.HasPrefix(err.Error(), "t.tla:") {
			t.Errorf("error %q lacks the file name", err)
		}
		if e, ok := err.(*Error); !ok || !e.Pos.IsValid() {
			t.Errorf("error %#v is not an *Error with a position", err)
		}
	}
}

func TestErrorPosition(t *testing.T) {
	_, err := ParseModule("spec.tla", []byte("---- MODULE M ----\nA ==\n  /\\ x = 1\n  /\\ y =\nB == 2\n===="))
	want := "spec.tla:5:1: syntax: expected an expression, found \"B\" (at or left of the enclosing /\\ or \\/ bullet)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	var e *Error
	if err, ok := err.(*Error); ok {
		e = err
	}
	if e == nil || e.Pos.Line != 5 || e.Pos.Col != 1 || e.File != "spec.tla" {
		t.Errorf("got %#v", e)
	}
}

// TestParseModule checks each kind of module unit.
func TestParseModule(t *testing.T) {
	src := `
junk before the header
------------------------- MODULE Units ---------------------------
EXTENDS Naturals, Sequences
CONSTANT N
CONSTANTS A, F(_, _), _ ** _, -. _, _ ^#
VARIABLE x
VARIABLES y, z
ASSUME N > 0
ASSUMPTION Pos == N > 0
AXIOM TRUE
RECURSIVE R(_), G
Op == 1
Op2(a, H(_), _ + _) == H(a)
a (+) b == a
-. a == a
a ^* == a
f[i \in Nat, j, k \in S] == i
LOCAL L == 2
LOCAL g[i \in S] == i
INSTANCE M
LOCAL INSTANCE M WITH p <- 1, q <- x + 1, + <- Plus, -. <- Neg, \cup <- \cap
I == INSTANCE M WITH p <- 1
LOCAL J(v) == INSTANCE M
-----
THEOREM x = x
THEOREM Named == TRUE
LEMMA L1 == TRUE PROOF OBVIOUS
COROLLARY TRUE
  <1>1. QED
PROPOSITION TRUE BY DEF Op
---- MODULE Inner ----
Y == 1
====
Last == 3
=================================================================
trailing junk`
	m, err := ParseModule("units.tla", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := `(module Units (Naturals Sequences)
  (constants (N/0/0))
  (constants (A/0/0 F/0/2 **/2/2 -./1/1 ^#/3/1))
  (variables x)
  (variables y z)
  (ASSUME  (> N 0))
  (ASSUMPTION Pos (> N 0))
  (AXIOM  TRUE)
  (recursive (R/0/1 G/0/0))
  (def Op/0 () 1)
  (def Op2/0 (a/0/0 H/0/1 +/2/2) (app H a))
  (def \oplus/2 (a/0/0 b/0/0) a)
  (def -./1 (a/0/0) a)
  (def ^*/3 (a/0/0) a)
  (fndef f (i \in Nat) (j k \in S) i)
  (def local L/0 () 2)
  (fndef local g (i \in S) i)
  (instance M)
  (instance local M (p <- 1) (q <- (+ x 1)) (+ <- Plus) (-. <- Neg) (\cup <- (opsym \cap)))
  (moddef I () (instance M (p <- 1)))
  (moddef local J (v/0/0) (instance M))
  ----
  (THEOREM  (= x x))
  (THEOREM Named TRUE)
  (LEMMA L1 TRUE proof "PROOF OBVIOUS")
  (COROLLARY  TRUE proof "<1>1. QED")
  (PROPOSITION  TRUE proof "BY DEF Op")
  (module Inner ()
  (def Y/0 () 1))
  (def Last/0 () 3))`
	if got := Dump(m); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	out := Format(m)
	m2, err := ParseModule("printed.tla", []byte(out))
	if err != nil || Dump(m2) != want {
		t.Errorf("printed module does not parse back (%v):\n%s", err, out)
	}
}

func TestParseModuleErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"no header", "1:1: syntax: no module header"},
		{"---- MODULE M ----\nA == 1\n", "3:1: syntax: missing ==== at the end of module M"},
		{"---- MODULE ----\n====", "expected a name"},
		{"---- MODULE M\nA == 1\n====", "expected ---- after the module name"},
		{"---- MODULE M ----\nA = 1\n====", "expected a definition or declaration"},
		{"---- MODULE M ----\nCONSTANT F(x)\n====", `expected "_"`},
		{"---- MODULE M ----\nCONSTANT _ _\n====", "expected an infix or postfix operator"},
		{"---- MODULE M ----\nTHEOREM ASSUME x PROVE x\n====", "ASSUME ... PROVE theorems are not supported"},
		{"---- MODULE M ----\nUSE DEF x\n====", `expected a definition or declaration, found "USE"`},
		{"---- MODULE M ----\nINSTANCE M WITH x = 1\n====", `expected "<-"`},
		{"---- MODULE M ----\nf[x] == 1\n====", `expected "\in", found "]"`},
	}
	for _, tt := range tests {
		_, err := ParseModule("m.tla", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseModule(%q)\n got: %v\nwant: %s", tt.src, err, tt.want)
		}
	}
}
