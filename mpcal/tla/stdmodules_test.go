package tla

import (
	"strings"
	"testing"
)

// TestStandardModuleOperators defines every user-definable symbol of the
// standard modules the way those modules do, and checks that uses of them
// get the right precedence.
func TestStandardModuleOperators(t *testing.T) {
	src := `---- MODULE Std ----
\* Naturals, Integers, Reals
a + b == 0
a - b == 0
a * b == 0
a ^ b == 0
a < b == 0
a > b == 0
a \leq b == 0
a \geq b == 0
a % b == 0
a \div b == 0
a .. b == 0
-. a == 0
a / b == 0
\* Sequences
s \o t == 0
\* TLC
f :> g == 0
f @@ g == 0
\* Bags
B1 (+) B2 == 0
B1 (-) B2 == 0
B1 \sqsubseteq B2 == 0
====`
	m, err := ParseModule("std.tla", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range m.Units {
		d := u.(*OpDef)
		names = append(names, d.Name)
	}
	want := `+ - * ^ < > <= >= % \div .. -. / \o :> @@ \oplus \ominus \sqsubseteq`
	if got := strings.Join(names, " "); got != want {
		t.Errorf("defined:\n got %s\nwant %s", got, want)
	}

	for _, tt := range []struct{ src, want string }{
		{`x \in 1..N + 1`, `(\in x (.. 1 (+ N 1)))`},
		{`-a .. b`, `(.. (pre - a) b)`},
		{`a * b % c`, `(% (* a b) c)`},
		{`a / b + c`, `(+ (/ a b) c)`},
		{`2 ^ n - 1 < m`, `(< (- (^ 2 n) 1) m)`},
		{`a \div b >= 0`, `(>= (\div a b) 0)`},
		{`s \o t \o u = v`, `(= (\o (\o s t) u) v)`},
		{`Len(s \o t) >= 1 /\ Head(s) = x`, `(/\ (>= (app Len (\o s t)) 1) (= (app Head s) x))`},
		{`SubSeq(s, 1, Len(s) - 1)`, `(app SubSeq s 1 (- (app Len s) 1))`},
		{`x :> 1 @@ y :> 2 @@ z :> 3`, `(@@ (@@ (:> x 1) (:> y 2)) (:> z 3))`},
		{`f @@ g :> h = k`, `(= (@@ f (:> g h)) k)`},
		{`SortSeq(s, LAMBDA a, b : a < b)`, `(app SortSeq s (lambda (a b) (< a b)))`},
		{`Print(x, TRUE) /\ Assert(y, "m")`, `(/\ (app Print x TRUE) (app Assert y "m"))`},
		{`B1 (+) B2 \sqsubseteq B3`, `(\sqsubseteq (\oplus B1 B2) B3)`},
		{`B1 (+) B2 (-) B3`, `(\oplus B1 (\ominus B2 B3))`},
		{`BagToSet(B) \subseteq S`, `(\subseteq (app BagToSet B) S)`},
		{`Cardinality(S \cup T) <= Cardinality(S) + Cardinality(T)`, `(<= (app Cardinality (\cup S T)) (+ (app Cardinality S) (app Cardinality T)))`},
		{`Seq(S) \X Nat`, `(\X (app Seq S) Nat)`},
	} {
		x, err := ParseExpr("t", []byte(tt.src))
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		if got := Dump(x); got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestCRLF(t *testing.T) {
	src := "---- MODULE M ----\r\nA == /\\ x\r\n     /\\ y\r\nB == 1\r\n====\r\n"
	m, err := ParseModule("crlf.tla", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := Dump(m); got != "(module M ()\n  (def A/0 () (list/\\ x y))\n  (def B/0 () 1))" {
		t.Errorf("got %s", got)
	}
	if p := m.Units[1].Position(); p.Line != 4 || p.Col != 1 {
		t.Errorf("B at %v", p)
	}
}
