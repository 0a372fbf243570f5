package tlc

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These tests run the real tools. Like mpcal/tla's SANY test they fail,
// not skip, when java or the jar is missing: `make setup` installs both.

// copyTestdata copies testdata files into a fresh directory (Translate
// rewrites its input) and returns the directory.
func copyTestdata(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func check(t *testing.T, opt Options) *Result {
	t.Helper()
	opt.Workers = 1
	r, err := Check(context.Background(), opt)
	if err != nil {
		t.Fatalf("Check(%s): %v", opt.Spec, err)
	}
	return r
}

func TestToolsInstalled(t *testing.T) {
	if _, err := findTools(); err != nil {
		t.Fatalf("%v", err)
	}
}

// TestCheckCleanCounter: the state counts computed by hand in Counter.tla,
// and the progress reports.
func TestCheckCleanCounter(t *testing.T) {
	var progress []Progress
	r := check(t, Options{Spec: "testdata/Counter.tla", NoDeadlock: true, Progress: func(p Progress) { progress = append(progress, p) }})
	if r.Outcome != OK || r.Distinct != 12 || r.Generated != 18 || r.Depth != 6 || r.Queue != 0 || len(r.Trace) != 0 {
		t.Errorf("got %v, %d distinct, %d generated, depth %d, queue %d, %d steps; want OK, 12, 18, 6, 0, 0",
			r.Outcome, r.Distinct, r.Generated, r.Depth, r.Queue, len(r.Trace))
	}
	if r.ExitCode != 0 || r.Wall <= 0 {
		t.Errorf("exit code %d, time %v", r.ExitCode, r.Wall)
	}
	if len(progress) == 0 || progress[0] != (Progress{Depth: 1, Generated: 1, Distinct: 1, Queue: 1}) {
		t.Errorf("progress %+v: the first report is the one initial state", progress)
	}
	if last := progress[len(progress)-1]; last.Distinct != 12 {
		t.Errorf("last progress %+v", last)
	}
}

// TestCheckDeadlockFlag: the same spec with deadlock checking on stops at
// (3, 2), which is 5 steps from (0, 0): 6 states.
func TestCheckDeadlockFlag(t *testing.T) {
	r := check(t, Options{Spec: "testdata/Counter.tla"})
	if r.Outcome != Deadlock || len(r.Trace) != 6 || r.ExitCode != 11 {
		t.Fatalf("got %v with %d steps, exit code %d; want a deadlock after 6 states, 11", r.Outcome, len(r.Trace), r.ExitCode)
	}
	if last := r.Trace[5].State; last["x"] != "3" || last["y"] != "2" {
		t.Errorf("deadlocked in %v", last)
	}
}

func TestCheckInvariantViolated(t *testing.T) {
	r := check(t, Options{Spec: "testdata/Wrap.tla"})
	if r.Outcome != InvariantViolated || r.Name != "NotBoth" || r.ExitCode != 12 {
		t.Fatalf("got %v %q exit %d, want invariant NotBoth violated, 12", r.Outcome, r.Name, r.ExitCode)
	}
	if len(r.Trace) != 5 {
		t.Fatalf("%d steps, want 5", len(r.Trace))
	}
	last := r.Trace[4]
	if last.State["x"] != "2" || last.State["y"] != "2" {
		t.Errorf("last state %v", last.State)
	}
	if got := strings.Join(strings.Fields(last.State["r"]), " "); got != `[ sum |-> 4, pair |-> <<2, 2>>, note |-> "a note long enough to make TLC wrap the record over several lines" ]` {
		t.Errorf("r = %s", got)
	}
	if !strings.Contains(last.State["r"], "\n") {
		t.Errorf("r = %q: expected TLC to wrap it (the decoder's multi-line case)", last.State["r"])
	}
	for _, st := range r.Trace[1:] {
		if (st.Action != "IncX" || st.Loc.Line != 9) && (st.Action != "IncY" || st.Loc.Line != 10) || st.Loc.Module != "Wrap" {
			t.Errorf("step %d: %s at %+v", st.Index, st.Action, st.Loc)
		}
	}
}

func TestCheckDeadlock(t *testing.T) {
	var raw strings.Builder
	r := check(t, Options{Spec: "testdata/Dead.tla", Output: &raw, JVMArgs: []string{"-Xmx256m"}})
	if r.Outcome != Deadlock || len(r.Trace) != 4 || r.Trace[3].State["x"] != "3" {
		t.Fatalf("got %v with trace %+v; want a deadlock at x = 3 after 4 states", r.Outcome, r.Trace)
	}
	if !strings.Contains(raw.String(), "@!@!@STARTMSG 2114:1 @!@!@\nDeadlock reached.") {
		t.Errorf("Options.Output did not get TLC's report:\n%s", raw.String())
	}
}

// TestCheckNoVerdict: a JVM that dies before TLC says anything is an
// error carrying what it printed.
func TestCheckNoVerdict(t *testing.T) {
	r, err := Check(context.Background(), Options{Spec: "testdata/Dead.tla", JVMArgs: []string{"-XX:+NoSuchOptionForStrata"}})
	if err == nil || r != nil || !strings.Contains(err.Error(), "without a verdict") || !strings.Contains(err.Error(), "NoSuchOptionForStrata") {
		t.Errorf("got %v, %v", r, err)
	}
}

func TestCheckLiveness(t *testing.T) {
	r := check(t, Options{Spec: "testdata/Loop.tla"})
	if r.Outcome != PropertyViolated || r.ExitCode != 13 {
		t.Fatalf("got %v, exit code %d", r.Outcome, r.ExitCode)
	}
	if n := len(r.Trace); n != 4 || r.Trace[n-1].BackTo != 1 {
		t.Errorf("trace %+v: want states 0, 1, 2 and the loop back to state 1", r.Trace)
	}
}

func TestCheckSyntaxError(t *testing.T) {
	r := check(t, Options{Spec: "testdata/Syntax.tla"})
	if r.Outcome != Error || r.Pos.Line != 5 || !strings.Contains(r.Message, "line 5") {
		t.Fatalf("got %v at %+v: %q; want a TLC error naming line 5", r.Outcome, r.Pos, r.Message)
	}
	if r.ExitCode != 150 {
		t.Errorf("exit code %d, want 150", r.ExitCode)
	}
}

// TestTranslateAndCheck: a PlusCal algorithm with two processes, its state
// count computed by hand in Workers.tla.
func TestTranslateAndCheck(t *testing.T) {
	dir := copyTestdata(t, "Workers.tla", "Workers.cfg")
	spec := filepath.Join(dir, "Workers.tla")
	if err := Translate(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Workers.old")); !os.IsNotExist(err) {
		t.Errorf("the translator's backup was left behind (%v)", err)
	}
	src, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "add(self) ==") {
		t.Fatalf("no translation in the file:\n%s", src)
	}
	if err := SANY(context.Background(), spec); err != nil {
		t.Errorf("SANY on the translation: %v", err)
	}
	r := check(t, Options{Spec: spec})
	if r.Outcome != OK || r.Distinct != 36 {
		t.Errorf("got %v with %d distinct states, want OK with 36", r.Outcome, r.Distinct)
	}
}

// TestAssertionFailure: PlusCal's assert gives the assertion's position
// in the source, and the last step maps back to its PlusCal label.
func TestAssertionFailure(t *testing.T) {
	dir := copyTestdata(t, "Assert.tla", "Assert.cfg")
	spec := filepath.Join(dir, "Assert.tla")
	if err := Translate(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	r := check(t, Options{Spec: spec})
	if r.Outcome != AssertionFailed || r.Message != "Failure of assertion at line 15, column 5." || r.ExitCode != 14 {
		t.Fatalf("got %v %q exit %d", r.Outcome, r.Message, r.ExitCode)
	}
	if len(r.Trace) != 10 {
		t.Fatalf("%d steps, want 10", len(r.Trace))
	}
	last := r.Trace[9]
	if last.State["total"] != "4" || last.State["pc"] != `<<"chk", "inc">>` && last.State["pc"] != `<<"inc", "chk">>` {
		t.Errorf("last state %v", last.State)
	}
	src, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := LabelMapper(src)(last); got != "line 10: add: total := total + 1;" {
		t.Errorf("last step %s maps to %q", last.Action, got)
	}
}

func TestTranslateError(t *testing.T) {
	dir := copyTestdata(t, "Unlabelled.tla")
	err := Translate(context.Background(), filepath.Join(dir, "Unlabelled.tla"))
	var te *ToolError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a *ToolError", err)
	}
	if te.Tool != "pcal.trans" || te.Line != 7 || te.Col != 6 || !strings.Contains(te.Msg, "Missing label") {
		t.Errorf("got %+v", te)
	}
	if want := filepath.Join(dir, "Unlabelled.tla") + ":7:6: pcal.trans: Missing label"; !strings.HasPrefix(te.Error(), want) {
		t.Errorf("error %q does not start with %q", te.Error(), want)
	}
}

func TestSANY(t *testing.T) {
	ctx := context.Background()
	if err := SANY(ctx, "testdata/Counter.tla"); err != nil {
		t.Errorf("clean module: %v", err)
	}
	for _, c := range []struct {
		file      string
		line, col int
		msg       string
	}{
		{"testdata/Syntax.tla", 5, 20, `Encountered "1"`},
		{"testdata/Semantic.tla", 5, 14, "Unknown operator: `y'"},
	} {
		err := SANY(ctx, c.file)
		var te *ToolError
		if !errors.As(err, &te) {
			t.Errorf("%s: got %v, want a *ToolError", c.file, err)
			continue
		}
		if te.Tool != "SANY" || te.File != c.file || te.Line != c.line || te.Col != c.col || !strings.Contains(te.Msg, c.msg) {
			t.Errorf("%s: got %+v", c.file, te)
		}
	}
	if err := SANY(ctx, "testdata/Missing.tla"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestMissingInputs(t *testing.T) {
	ctx := context.Background()
	if _, err := Check(ctx, Options{Spec: "testdata/Nope.tla"}); err == nil {
		t.Error("Check of a missing spec succeeded")
	}
	if _, err := Check(ctx, Options{Spec: "testdata/Counter.tla", Config: "testdata/Nope.cfg"}); err == nil || !strings.Contains(err.Error(), "configuration") {
		t.Errorf("Check with a missing config: %v", err)
	}
	if _, err := Check(ctx, Options{Spec: "testdata/Counter.cfg"}); err == nil {
		t.Error("Check of a .cfg as spec succeeded")
	}
	t.Setenv(JarEnv, filepath.Join(t.TempDir(), "none.jar"))
	if _, err := Jar(); !errors.Is(err, ErrJarMissing) || !strings.Contains(err.Error(), "make setup") {
		t.Errorf("Jar with a bad %s: %v", JarEnv, err)
	}
	for name, err := range map[string]error{
		"Translate": Translate(ctx, "testdata/Workers.tla"),
		"SANY":      SANY(ctx, "testdata/Counter.tla"),
	} {
		if !errors.Is(err, ErrJarMissing) {
			t.Errorf("%s without the jar: %v", name, err)
		}
	}
	if _, err := Check(ctx, Options{Spec: "testdata/Counter.tla"}); !errors.Is(err, ErrJarMissing) {
		t.Errorf("Check without the jar: %v", err)
	}
}
