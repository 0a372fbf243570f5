package tla

import (
	"math/rand"
	"strings"
	"testing"
)

// checkStable is the fuzz property: parsing never panics, and whatever
// parses prints to text that parses to the same tree and prints the same
// again.
func checkStable(t *testing.T, data []byte) {
	if m, err := ParseModule("fuzz.tla", data); err == nil {
		out := Format(m)
		m2, err := ParseModule("printed.tla", []byte(out))
		if err != nil {
			t.Fatalf("printed module does not parse: %v\ninput: %q\nprinted:\n%s", err, data, out)
		}
		if a, b := Dump(m), Dump(m2); a != b {
			t.Fatalf("round trip changed the module\ninput: %q\nprinted:\n%s\n--- before\n%s\n--- after\n%s", data, out, a, b)
		}
		if out2 := Format(m2); out2 != out {
			t.Fatalf("printing is not idempotent\n%s\n---\n%s", out, out2)
		}
	} else if _, ok := err.(*Error); !ok {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
	if x, err := ParseExpr("fuzz.tla", data); err == nil {
		out := FormatExpr(x)
		x2, err := ParseExpr("printed.tla", []byte(out))
		if err != nil {
			t.Fatalf("printed expression does not parse: %v\ninput: %q\nprinted:\n%s", err, data, out)
		}
		if a, b := Dump(x), Dump(x2); a != b {
			t.Fatalf("round trip changed the expression\ninput: %q\nprinted:\n%s\n--- before\n%s\n--- after\n%s", data, out, a, b)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, src := range readSpecs(f) {
		f.Add(src)
	}
	for _, s := range []string{
		`a /\ b`, "/\\ a\n/\\ b", `[x \in S |-> x]`, `{x \in S : P}`, `CASE a -> b [] OTHER -> c`,
		`LET f(x) == x IN f(1)`, `[f EXCEPT ![1].a = @]`, `WF_vars(A)`, `<<A>>_v`, `M!Op(1)`,
		"---- MODULE M ----\nTHEOREM x\nPROOF OBVIOUS\n====", `\b101 + "s\n"`, `(* (* *) *) x`,
		"/\\ LET a\n++ b == 1 IN a", "---- MODULE M ----\nA == /\\ M!\nx == 1\n====",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkStable)
}

// TestGuardMalformedInput is a top-level guard: truncations and random
// mutations of the specifications must give a tree or an *Error, never a
// panic, and whatever parses must print stably. (The parser has no
// recover; this test only makes a panic fail loudly with its input.)
func TestGuardMalformedInput(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	pieces := []string{"/\\", "\\/", "(*", "*)", "\"", "<<", ">>", "[", "]", "{", "}", "(", ")",
		"----", "====", "==", "LET", "IN", "CASE", "[]", "->", "|->", "EXCEPT", "!", "@", "\\A", ":",
		"\n", "  ", "\t", "'", "WF_", "]_", "\\in", "MODULE", "\xff", "é", "<1>", "PROOF", ","}
	run := func(data []byte) {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("panic %v on input %q", v, data)
			}
		}()
		checkStable(t, data)
	}
	n := 0
	for _, src := range readSpecs(t) {
		step := max(1, len(src)/80)
		for i := 0; i <= len(src); i += step {
			run(src[:i])
			run(src[i:])
			n += 2
		}
		for i := 0; i < 150; i++ {
			b := []byte(string(src))
			for k := 1 + r.Intn(3); k > 0; k-- {
				pos := r.Intn(len(b) + 1)
				switch r.Intn(3) {
				case 0: // insert
					b = append(b[:pos], append([]byte(pieces[r.Intn(len(pieces))]), b[pos:]...)...)
				case 1: // delete
					end := min(len(b), pos+1+r.Intn(8))
					b = append(b[:pos], b[end:]...)
				case 2: // replace one byte
					if pos < len(b) {
						b[pos] = byte(r.Intn(128))
					}
				}
			}
			run(b)
			n++
		}
	}
	for _, s := range []string{"", "\x00", strings.Repeat("[", 3000), strings.Repeat("{x \\in ", 2000),
		strings.Repeat("LET a == ", 2000), strings.Repeat("---- MODULE M ----\n", 2000), strings.Repeat("(*", 1000)} {
		run([]byte(s))
		n++
	}
	t.Logf("%d malformed inputs", n)
}
