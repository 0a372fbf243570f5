package tlc

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The files in testdata/output are TLC 2.18's -tool output on the specs
// in testdata, captured by testdata/output/capture.sh.

func parseCapture(t *testing.T, name string) *Result {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "output", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ParseOutput(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// figures checks the outcome and the state counts of a decoded run.
func figures(t *testing.T, r *Result, o Outcome, generated, distinct, queue int64, depth int) {
	t.Helper()
	if r.Outcome != o {
		t.Errorf("outcome %v, want %v (message %q)", r.Outcome, o, r.Message)
	}
	if r.Generated != generated || r.Distinct != distinct || r.Queue != queue || r.Depth != depth {
		t.Errorf("generated %d, distinct %d, queue %d, depth %d; want %d, %d, %d, %d",
			r.Generated, r.Distinct, r.Queue, r.Depth, generated, distinct, queue, depth)
	}
}

func TestDecodeClean(t *testing.T) {
	r := parseCapture(t, "counter")
	figures(t, r, OK, 18, 12, 0, 6)
	if r.Name != "" || r.Message != "" || len(r.Trace) != 0 || !r.Pos.IsZero() {
		t.Errorf("a clean run has no name, message, trace or position: %+v", r)
	}
	if r.Wall <= 0 || r.Wall > time.Minute {
		t.Errorf("TLC's 'Finished in' read as %v", r.Wall)
	}
	r = parseCapture(t, "workers")
	figures(t, r, OK, 62, 36, 0, 11)
}

func TestDecodeInvariantWithWrappedValues(t *testing.T) {
	r := parseCapture(t, "wrap")
	figures(t, r, InvariantViolated, 15, 11, 2, 5)
	if r.Name != "NotBoth" {
		t.Errorf("invariant %q, want NotBoth", r.Name)
	}
	if len(r.Trace) != 5 {
		t.Fatalf("%d steps, want 5: %+v", len(r.Trace), r.Trace)
	}
	first := r.Trace[0]
	if !first.Initial() || first.Action != "" || !first.Loc.IsZero() {
		t.Errorf("first step is not the initial state: %+v", first)
	}
	wantVars := []string{"r", "x", "y"}
	for i, st := range r.Trace {
		if st.Index != i+1 {
			t.Errorf("step %d numbered %d", i+1, st.Index)
		}
		if !reflect.DeepEqual(st.Vars, wantVars) {
			t.Errorf("step %d has variables %v, want %v", i+1, st.Vars, wantVars)
		}
		if i == 0 {
			continue
		}
		// IncX is defined on line 9, IncY on line 10 of Wrap.tla.
		want := map[string]int{"IncX": 9, "IncY": 10}[st.Action]
		if want == 0 || st.Loc.Module != "Wrap" || st.Loc.Line != want || st.Loc.Col != 9 || st.Loc.EndLine != want || st.Loc.EndCol != 93 {
			t.Errorf("step %d: action %q at %+v", i+1, st.Action, st.Loc)
		}
	}
	last := r.Trace[4].State
	if last["x"] != "2" || last["y"] != "2" {
		t.Errorf("last state x = %q, y = %q; want 2, 2", last["x"], last["y"])
	}
	wantR := "[ sum |-> 4,\n" +
		"  pair |-> <<2, 2>>,\n" +
		`  note |-> "a note long enough to make TLC wrap the record over several lines" ]`
	if last["r"] != wantR {
		t.Errorf("last r =\n%s\nwant\n%s", last["r"], wantR)
	}
}

func TestDecodeDeadlock(t *testing.T) {
	r := parseCapture(t, "dead")
	figures(t, r, Deadlock, 4, 4, 0, 4)
	if len(r.Trace) != 4 {
		t.Fatalf("%d steps, want 4", len(r.Trace))
	}
	for i, st := range r.Trace {
		// One variable: TLC prints "x = 0" without the /\.
		if !reflect.DeepEqual(st.Vars, []string{"x"}) || st.State["x"] != string(rune('0'+i)) {
			t.Errorf("step %d: %v %v", i+1, st.Vars, st.State)
		}
	}
	if a := r.Trace[3]; a.Action != "Next" || a.Loc != (Location{"Dead", 6, 9, 6, 27}) {
		t.Errorf("last step %+v", a)
	}
}

func TestDecodeLasso(t *testing.T) {
	r := parseCapture(t, "loop")
	if r.Outcome != PropertyViolated {
		t.Fatalf("outcome %v", r.Outcome)
	}
	if len(r.Trace) != 4 {
		t.Fatalf("%d steps, want 3 states and the loop back: %+v", len(r.Trace), r.Trace)
	}
	back := r.Trace[3]
	if back.BackTo != 1 || back.Index != 4 || back.Action != "Next" || back.State != nil || back.Initial() {
		t.Errorf("loop step %+v", back)
	}
	if r.Trace[2].State["x"] != "2" {
		t.Errorf("third state %v", r.Trace[2].State)
	}
	if r.Distinct != 3 || r.Generated != 4 || r.Depth != 3 {
		t.Errorf("distinct %d generated %d depth %d (no final depth report: the last progress's)", r.Distinct, r.Generated, r.Depth)
	}
}

func TestDecodeAssertion(t *testing.T) {
	r := parseCapture(t, "assert")
	if r.Outcome != AssertionFailed || r.Message != "Failure of assertion at line 15, column 5." {
		t.Fatalf("outcome %v, message %q", r.Outcome, r.Message)
	}
	if len(r.Trace) != 10 {
		t.Fatalf("%d steps, want 10", len(r.Trace))
	}
	last := r.Trace[9]
	want := map[string]string{"i": "<<2, 2>>", "pc": `<<"chk", "inc">>`, "total": "4"}
	if !reflect.DeepEqual(last.State, want) || last.Action != "add" {
		t.Errorf("last step %s %v, want add %v", last.Action, last.State, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome Outcome
		msg     []string // substrings of Result.Message
		pos     Location
		trace   int
	}{
		{"syntax", Error, []string{`Encountered "1" at line 5, column 20`}, Location{Line: 5, Col: 20, EndLine: 5, EndCol: 20}, 0},
		{"semantic", Error, []string{"line 5, col 14 to line 5, col 14 of module Semantic: Unknown operator: `y'."}, Location{"Semantic", 5, 14, 5, 14}, 0},
		{"eval", Error, []string{"Attempted to apply Head to the empty sequence.", "6. Line 6, column 42 to line 6, column 51 in Eval"}, Location{"Eval", 6, 42, 6, 51}, 3},
		{"noconstant", Error, []string{"The constant parameter N is not assigned a value"}, Location{}, 0},
		{"assume", AssumptionViolated, []string{"Assumption line 7, col 8 to line 7, col 12 of module Assume is false."}, Location{"Assume", 7, 8, 7, 12}, 0},
	} {
		r := parseCapture(t, c.name)
		if r.Outcome != c.outcome {
			t.Errorf("%s: outcome %v, want %v", c.name, r.Outcome, c.outcome)
		}
		for _, m := range c.msg {
			if !strings.Contains(r.Message, m) {
				t.Errorf("%s: message %q lacks %q", c.name, r.Message, m)
			}
		}
		if r.Pos != c.pos {
			t.Errorf("%s: position %+v, want %+v", c.name, r.Pos, c.pos)
		}
		if len(r.Trace) != c.trace {
			t.Errorf("%s: %d steps, want %d", c.name, len(r.Trace), c.trace)
		}
	}
}

func TestDecodeInitialStateViolation(t *testing.T) {
	r := parseCapture(t, "initinv")
	if r.Outcome != InvariantViolated || r.Name != "Small" {
		t.Fatalf("outcome %v %q", r.Outcome, r.Name)
	}
	if len(r.Trace) != 1 || !r.Trace[0].Initial() || !reflect.DeepEqual(r.Trace[0].State, map[string]string{"x": "1", "y": "0"}) {
		t.Errorf("trace %+v", r.Trace)
	}
}

// TestDecodeProgressReports: every progress report reaches the callback,
// in order, starting with the initial states.
func TestDecodeProgressReports(t *testing.T) {
	out := strings.Join([]string{
		"@!@!@STARTMSG 2190:0 @!@!@",
		"Finished computing initial states: 3 distinct states generated at 2026-11-23 09:28:24.",
		"@!@!@ENDMSG 2190 @!@!@",
		"@!@!@STARTMSG 2200:0 @!@!@",
		"Progress(10) at 2026-11-23 09:29:17: 11,259 states generated (11,259 s/min), 3,606 distinct states found (3,606 ds/min), 1,839 states left on queue.",
		"@!@!@ENDMSG 2200 @!@!@",
		"@!@!@STARTMSG 2200:0 @!@!@",
		"Progress(22) at 2026-11-23 09:31:17: 3,008,364 states generated, 377,256 distinct states found, 73,143 states left on queue.",
		"@!@!@ENDMSG 2200 @!@!@",
		"@!@!@STARTMSG 2186:0 @!@!@",
		"Finished in 02min 39s at (2026-11-23 09:31:52)",
		"@!@!@ENDMSG 2186 @!@!@",
	}, "\n")
	var got []Progress
	d := &decoder{progress: func(p Progress) { got = append(got, p) }}
	for _, l := range strings.SplitAfter(out, "\n") {
		d.line(l)
	}
	r := d.result()
	want := []Progress{{1, 3, 3, 3}, {10, 11259, 3606, 1839}, {22, 3008364, 377256, 73143}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("progress %+v, want %+v", got, want)
	}
	if r.Outcome != Unknown || r.Distinct != 377256 || r.Depth != 22 || r.Wall != 2*time.Minute+39*time.Second {
		t.Errorf("result %+v", r)
	}
}

// TestDecodeOddOutput: reports cut off, markers after printed text,
// garbage, and CRLF line ends.
func TestDecodeOddOutput(t *testing.T) {
	out := "hello from PrintT@!@!@STARTMSG 2110:1 @!@!@\r\n" +
		"Invariant Inv is violated.\r\n" +
		"@!@!@ENDMSG 2110 @!@!@\r\n" +
		"@!@!@STARTMSG 2217:4 @!@!@\n" +
		"1: <Initial predicate>\n" +
		"/\\ s = { \"a\",\n" +
		"  \"b\" }\n" +
		"/\\ t = \"x = 1\"\n" +
		"@!@!@STARTMSG 2217:4 @!@!@\n" + // no ENDMSG before the next report
		"2: <Step(self) line 1, col 1 to line 2, col 3 of module M>\n" +
		"/\\ s = {}\n" +
		"/\\ t = \"/\\\\ u = 2\"\n" +
		"@!@!@STARTMSG nonsense @!@!@\n" +
		"@!@!@STARTMSG 2217:4 @!@!@\n" +
		"3: <Step(1, \"p\") line 1, col 1 to line 2, col 3 of module M>\n" +
		"/\\ s = {}" // cut off
	r, err := ParseOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != InvariantViolated || r.Name != "Inv" {
		t.Errorf("outcome %v %q", r.Outcome, r.Name)
	}
	if len(r.Trace) != 3 {
		t.Fatalf("trace %+v", r.Trace)
	}
	if got := r.Trace[0].State; got["s"] != "{ \"a\",\n  \"b\" }" || got["t"] != `"x = 1"` {
		t.Errorf("state 1 %q", got)
	}
	if st := r.Trace[1]; st.Action != "Step" || st.Args != "self" || st.Loc != (Location{"M", 1, 1, 2, 3}) || st.State["t"] != `"/\\ u = 2"` {
		t.Errorf("state 2 %+v", st)
	}
	if st := r.Trace[2]; st.Args != `1, "p"` || st.State["s"] != "{}" {
		t.Errorf("state 3 %+v", st)
	}
}

func TestParseElapsed(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"959ms": 959 * time.Millisecond, "06s": 6 * time.Second, "02min 39s": 159 * time.Second,
		"01h 02min": time.Hour + 2*time.Minute, "": 0, "soon": 0,
	} {
		if got := parseElapsed(in); got != want {
			t.Errorf("parseElapsed(%q) = %v, want %v", in, got, want)
		}
	}
}

func FuzzParseTLCOutput(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "output", "*.out"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no captured outputs: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("@!@!@STARTMSG 2217:4 @!@!@\n1: Back to state: <\n@!@!@STARTMSG 2218:4 @!@!@\n0: Stuttering\n"))
	f.Add([]byte("@!@!@STARTMSG 2132:1 @!@!@\nthe second argument was:\n\"\\\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseOutput(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("reading from memory failed: %v", err)
		}
		if r.Outcome < Unknown || r.Outcome > Error || r.Generated < 0 || r.Distinct < 0 || r.Queue < 0 {
			t.Fatalf("impossible result %+v", r)
		}
		for _, st := range r.Trace {
			if len(st.Vars) != len(st.State) {
				t.Fatalf("step %+v: variables and state disagree", st)
			}
		}
		var out bytes.Buffer
		if err := Render(&out, r, LabelMapper(data)); err != nil {
			t.Fatal(err)
		}
	})
}
