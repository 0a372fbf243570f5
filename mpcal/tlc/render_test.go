package tlc

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestRenderInvariantViolation(t *testing.T) {
	r := parseCapture(t, "wrap")
	var b strings.Builder
	if err := Render(&b, r, func(st Step) string { return "src of " + st.Action }); err != nil {
		t.Fatal(err)
	}
	note := `note |-> "a note long enough to make TLC wrap the record over several lines" ]`
	want := `TLC: invariant NotBoth violated
  states generated    15
  distinct states     11
  left on queue        2
  depth                5
  time             2.85s

Counterexample, 5 states (after the first, only the variables that change):
  1. initial state
       r = [ sum |-> 0,
             pair |-> <<0, 0>>,
             ` + note + `
       x = 0
       y = 0
  2. IncX  (module Wrap line 9, col 9-93)
       src of IncX
       r = [ sum |-> 1,
             pair |-> <<1, 0>>,
             ` + note + `
       x = 1
  3. IncX  (module Wrap line 9, col 9-93)
       src of IncX
       r = [ sum |-> 2,
             pair |-> <<2, 0>>,
             ` + note + `
       x = 2
  4. IncY  (module Wrap line 10, col 9-93)
       src of IncY
       r = [ sum |-> 3,
             pair |-> <<2, 1>>,
             ` + note + `
       y = 1
  5. IncY  (module Wrap line 10, col 9-93)
       src of IncY
       r = [ sum |-> 4,
             pair |-> <<2, 2>>,
             ` + note + `
       y = 2
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRenderOtherOutcomes(t *testing.T) {
	src, err := os.ReadFile("testdata/Assert.tla")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		capture string
		mapper  Mapper
		want    []string
	}{
		{"assert", LabelMapper(src), []string{
			"TLC: assertion failed: Failure of assertion at line 15, column 5.\n",
			"\n  10. add  (module Assert line 38, col 14 to line 41, col 49)\n        line 10: add: total := total + 1;\n",
			"   2. inc  (module Assert line 32, col 14 to line 36, col 40)\n        line 8: inc: while i < 2 do\n        pc = <<\"add\", \"inc\">>\n   3.",
			"The assertion fails in a step from state 10.\n",
		}},
		{"dead", nil, []string{"TLC: deadlock reached\n", "State 4 has no successor.\n"}},
		{"loop", nil, []string{"TLC: property violated\n", "  4. Next  (module Loop line 6, col 9-24), back to state 1\n"}},
		{"syntax", nil, []string{"TLC: error at line 5, col 20\n", `  ***Parse Error*** Was expecting "==== or more Module body" Encountered "1" at line 5, column 20`}},
		{"eval", nil, []string{"TLC: error at module Eval line 6, col 42-51\n", "  Attempted to apply Head to the empty sequence.\n", "The error happens in a step from state 3.\n"}},
		{"counter", nil, []string{"TLC: no error found\n  states generated    18\n  distinct states     12\n  depth                6\n  time             2.08s\n"}},
		{"initinv", nil, []string{"Counterexample, 1 state:\n  1. initial state\n       x = 1\n       y = 0\n"}},
	} {
		var b strings.Builder
		if err := Render(&b, parseCapture(t, c.capture), c.mapper); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.capture, w, b.String())
			}
		}
	}
	if strings.Contains(renderString(t, parseCapture(t, "counter")), "Counterexample") {
		t.Error("a clean run has a counterexample")
	}
}

func renderString(t *testing.T, r *Result) string {
	t.Helper()
	var b strings.Builder
	if err := Render(&b, r, nil); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestRenderWriteError(t *testing.T) {
	r := parseCapture(t, "wrap")
	for n := 0; n < 5; n++ {
		if err := Render(&failingWriter{n: n}, r, nil); err == nil || err.Error() != "disk full" {
			t.Errorf("writer failing after %d writes: Render returned %v", n, err)
		}
	}
}

// TestRenderMapperPanics: a panicking mapper loses its line, not the report.
func TestRenderMapperPanics(t *testing.T) {
	var b strings.Builder
	err := Render(&b, parseCapture(t, "dead"), func(Step) string { panic("mapper bug") })
	if err != nil || !strings.Contains(b.String(), "  4. Next") {
		t.Errorf("err %v, output:\n%s", err, b.String())
	}
}

const pSyntax = `---- MODULE P ----
\* notalabel: outside the algorithm
(* --algorithm P
variables x = 0, S = {1, 2};
procedure p()
begin
  p1: x := x + 1;
      return;
end procedure;
begin
  a: if \E s \in S : s = x then
       b: x := [f : S].f;
     else either c: skip; or d:
       skip;
     end either;
     end if;
  \* inComment: skip;
  (* alsoComment: skip; *)
  e:
    call p();
end algorithm; *)
late: == 1
====
`

const cSyntax = `---- MODULE C ----
(* --fair algorithm C {
  variables x = 0, S = {1, 2};
  define { Ok == \A s \in S : s > 0 }
  process (Q \in {1, 2}) {
    q1: while (x < 3) {
      either { q2: x := x + 1; } or { q3: skip; };
    };
    q4: await \E y \in S : y = x;
  }
} *)
====
`

func TestLabelMapper(t *testing.T) {
	for _, c := range []struct {
		src    string
		labels map[string]string // label: mapped line, "" for none
	}{
		{pSyntax, map[string]string{
			"p1": "line 7: p1: x := x + 1;",
			"a":  "line 11: a: if \\E s \\in S : s = x then",
			"b":  "line 12: b: x := [f : S].f;",
			"c":  "line 13: else either c: skip; or d:",
			"d":  "line 13: else either c: skip; or d: skip;",
			"e":  "line 19: e: call p();",
			"S":  "", "s": "", "f": "", "inComment": "", "alsoComment": "", "notalabel": "", "late": "", "Terminating": "", "": "",
		}},
		{cSyntax, map[string]string{
			"q1": "line 6: q1: while (x < 3) {",
			"q2": "line 7: either { q2: x := x + 1; } or { q3: skip; };",
			"q3": "line 7: either { q2: x := x + 1; } or { q3: skip; };",
			"q4": "line 9: q4: await \\E y \\in S : y = x;",
			"S":  "", "y": "", "Q": "",
		}},
	} {
		m := LabelMapper([]byte(c.src))
		for label, want := range c.labels {
			if got := m(Step{Index: 2, Action: label}); got != want {
				t.Errorf("label %q maps to %q, want %q", label, got, want)
			}
		}
	}
	// Malformed text: no algorithm, an algorithm cut off, an unterminated
	// string or comment.
	for _, src := range []string{"", "--algorithm", "(* --algorithm x begin l: \"abc", "(* --fair algorithm (* l: *", "--fair x --algorithm y begin z: skip"} {
		m := LabelMapper([]byte(src))
		m(Step{Action: "l"})
		m(Step{Action: "z"})
	}
	if got := LabelMapper([]byte("--fair x --algorithm y begin z: skip"))(Step{Action: "z"}); got != "line 1: --fair x --algorithm y begin z: skip" {
		t.Errorf("got %q", got)
	}
}
