package tla

import (
	"strings"
	"testing"
)

// TestIndentationRule checks how bulleted /\ and \/ lists end: an item
// ends at the first token at or left of its bullet's column, and the list
// continues only with the same bullet in exactly that column.
func TestIndentationRule(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"two items", `
/\ a
/\ b`, `(list/\ a b)`},
		{"one item", `/\ a`, `(list/\ a)`},
		{"infix on the bullet's line", `/\ a /\ b`, `(list/\ (/\ a b))`},
		{"bullet further right is infix", `
/\ a
   /\ b`, `(list/\ (/\ a b))`},
		{"item continues on the next line", `
/\ a
     + 1 = 2
/\ b`, `(list/\ (= (+ a 1) 2) b)`},
		{"continuation one column right of the bullet", `
  /\ x
   = 1`, `(list/\ (= x 1))`},
		{"token in the bullet's column ends the list", `
  /\ x
  = 1`, `(= (list/\ x) 1)`},
		{"token left of the bullet ends the list", `
   /\ a
   /\ b
=> c`, `(=> (list/\ a b) c)`},
		{"other bullet kind in the column ends the list", `
/\ a
\/ b`, `(\/ (list/\ a) b)`},
		{"nested lists", `
/\ \/ a
   \/ b
/\ c`, `(list/\ (list\/ a b) c)`},
		{"nested lists twice", `
\/ /\ a
   /\ b
\/ /\ c
   /\ \/ d
      \/ e`, `(list\/ (list/\ a b) (list/\ c (list\/ d e)))`},
		{"inner list ended by outer bullet", `
/\ \/ /\ a
      /\ b
   \/ c
/\ d`, `(list/\ (list\/ (list/\ a b) c) d)`},
		{"quantifier body is a list", `
/\ \E x \in S :
     /\ x > 0
     /\ x < 5
/\ y`, `(list/\ (\E (x \in S) (list/\ (> x 0) (< x 5))) y)`},
		{"quantifier body continues, then next item", `
\/ \A x \in S : P(x)
                 /\ Q(x)
\/ R`, `(list\/ (\A (x \in S) (/\ (app P x) (app Q x))) R)`},
		{"IF inside an item", `
/\ IF a
     THEN /\ b
          /\ c
     ELSE d
/\ e`, `(list/\ (if a (list/\ b c) d) e)`},
		{"LET inside an item", `
/\ LET t == /\ x
            /\ y
   IN  t
/\ z`, `(list/\ (let ((def t/0 () (list/\ x y))) t) z)`},
		{"CASE inside an item", `
/\ CASE a -> 1
     [] b -> 2
/\ c`, `(list/\ (case (a -> 1) (b -> 2)) c)`},
		{"list in parentheses", `
(/\ a
 /\ b) /\ c`, `(/\ (list/\ a b) c)`},
		{"list as an operand", `
x = /\ a
    /\ b`, `(= x (list/\ a b))`},
		{"list inside brackets", `
f[/\ a
  /\ b, c]`, `(apply f (list/\ a b) c)`},
		{"tabs advance to multiples of 8", "\t/\\ a\n\t/\\ b\n        /\\ c", `(list/\ a b c)`},
		{"comments do not matter", `
/\ a (* a comment
/\ inside *)
/\ b \* /\ not a bullet`, `(list/\ a b)`},
		{"disjunction of conjunctions", `
\/ /\ x = 1
   /\ y = 2
\/ /\ x = 2
   /\ y = 1`, `(list\/ (list/\ (= x 1) (= y 2)) (list/\ (= x 2) (= y 1)))`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.TrimPrefix(tt.src, "\n")
			x, err := ParseExpr("t.tla", []byte(src))
			if err != nil {
				t.Fatalf("ParseExpr:\n%s\n%v", src, err)
			}
			if got := Dump(x); got != tt.want {
				t.Errorf("ParseExpr:\n%s\n got: %s\nwant: %s", src, got, tt.want)
			}
		})
	}
}

func TestIndentationErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"argument left of the bullet", "/\\ f(a,\nb)", "2:1: syntax: expected an expression, found \"b\" (at or left of the enclosing"},
		{"closing paren left of the bullet", "  /\\ (a\n  )", "2:3: syntax: expected \")\", found \")\" (at or left of the enclosing"},
		{"empty item", "/\\\n/\\ b", "2:1: syntax: expected an expression"},
		{"ELSE left of the bullet", "/\\ IF a THEN b\nELSE c", "expected \"ELSE\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExpr("t.tla", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestIndentationInModule checks that definitions end their bodies' lists
// and that lists in a module print back with the same structure.
func TestIndentationInModule(t *testing.T) {
	src := `---- MODULE M ----
A == /\ x
     /\ y
B == \/ x
     \/ /\ y
        /\ z
C ==
  /\ x
  /\ LET u == 1
         v == /\ u
              /\ u
     IN  u
====`
	m, err := ParseModule("m.tla", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := `(module M ()
  (def A/0 () (list/\ x y))
  (def B/0 () (list\/ x (list/\ y z)))
  (def C/0 () (list/\ x (let ((def u/0 () 1) (def v/0 () (list/\ u u))) u))))`
	if got := Dump(m); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	out := Format(m)
	m2, err := ParseModule("printed", []byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if Dump(m2) != want {
		t.Errorf("printed form parses differently:\n%s", out)
	}
}

// TestIndentationLookahead covers definitions and qualified names whose
// later tokens fall left of an enclosing bullet: lookahead must not let
// the parser consume them as part of the item.
func TestIndentationLookahead(t *testing.T) {
	for _, src := range []string{
		"/\\ LET a\n++ b == 1 IN a",
		"/\\ LET a\n== 1 IN a",
		"/\\ LET -. a\n== 1 IN a",
		"/\\ LET a ^+\n== 1 IN a",
		"/\\ LET f\n[x \\in S] == 1 IN a",
		"/\\ M!\nOp",
	} {
		if x, err := ParseExpr("t.tla", []byte(src)); err == nil {
			t.Errorf("%q parsed as %s; want an error", src, Dump(x))
		}
	}
	m, err := ParseModule("t.tla", []byte("---- MODULE M ----\nA == /\\ M!\nx == 1\n===="))
	if err == nil {
		t.Errorf("parsed as %s; want an error", Dump(m))
	}
}
