package mpcal

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"strata/mpcal/tlc"
)

func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		// make test puts the toolchain on PATH; a go test run without it
		// cannot check that generated code compiles, which is the point.
		t.Fatalf("no go command on PATH to compile generated code: %v", err)
	}
	return p
}

func genFile(t *testing.T, path, pkg string) []byte {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile(path, src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := GenerateGo(f, GoOptions{Package: pkg})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGoGenGolden: the Go generated for each model under testdata/gogen
// equals the reviewed file beside it (regenerate with -update), which
// the end-to-end tests in distsys run; every critical section carries
// its MPCal position.
func TestGoGenGolden(t *testing.T) {
	for _, c := range []struct{ tla, gofile, pkg string }{
		{"testdata/gogen/lock/LockService.tla", "testdata/gogen/lock/lock.go", "lock"},
		{"testdata/gogen/echo/Echo.tla", "testdata/gogen/echo/echo.go", "echo"},
		{"testdata/gogen/proc/Proc.tla", "testdata/gogen/proc/proc.go", "proc"},
	} {
		t.Run(c.pkg, func(t *testing.T) {
			out := genFile(t, c.tla, c.pkg)
			if *update {
				if err := os.WriteFile(c.gofile, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(c.gofile)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("generated Go differs from %s (go test ./mpcal -run TestGoGenGolden -update)", c.gofile)
			}
			if again := genFile(t, c.tla, c.pkg); !bytes.Equal(out, again) {
				t.Fatal("generation is not deterministic")
			}
			sections := strings.Count(string(out), ") (string, error) {")
			comments := strings.Count(string(out), "\n// MPCal: "+filepath.Base(c.tla)+":")
			if sections == 0 || comments != sections {
				t.Fatalf("%d critical sections, %d // MPCal: comments", sections, comments)
			}
		})
	}
}

// TestGoGenCompiles compiles generated code with the go command: the
// checked-in packages and models/lock's Listings 2 and 7 generated into a
// scratch package inside the module, with go vet (which type-checks) and
// gofmt -l (which must list nothing).
func TestGoGenCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gocmd := goTool(t)
	dir, err := os.MkdirTemp("testdata/gogen", "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	pkgs := []string{"./testdata/gogen/lock", "./testdata/gogen/echo", "./testdata/gogen/proc"}
	for i, model := range []string{"../models/lock/LockService.tla", "../models/lock/LockServiceDist.tla"} {
		sub := filepath.Join(dir, []string{"central", "dist"}[i])
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		out := genFile(t, model, "gen")
		if err := os.WriteFile(filepath.Join(sub, "gen.go"), out, 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(sub))
	}
	cmd := exec.Command(gocmd, append([]string{"vet"}, pkgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
	gofmt := filepath.Join(filepath.Dir(gocmd), "gofmt")
	args := []string{"-l", dir, "testdata/gogen/lock", "testdata/gogen/echo", "testdata/gogen/proc"}
	if out, err := exec.Command(gofmt, args...).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("gofmt -l: %v\n%s", err, out)
	}
}

const rejectHead = `---- MODULE R ----
EXTENDS Naturals, Sequences
CONSTANTS N, F(_)
VARIABLES v
Op == v + 1
(*
--mpcal R {
  procedure P() { p: return; }
  archetype A(ref x)
  {
`

const rejectTail = `
  }
  variables g = 0;
  process (Q = 1) == instance A(ref g);
}
*)
====
`

// TestGoGenRejects: constructs the Go back end does not support are
// errors of kind unsupported at their MPCal position, found at
// generation time, never a panic at run time.
func TestGoGenRejects(t *testing.T) {
	cases := []struct{ head, body, want string }{
		{"", "a: x := CHOOSE y : y = 1;", "R.tla:11:11: unsupported: Go back end: expression CHOOSE y : y = 1 is not supported"},
		{"", "a: x := 1.5;", "R.tla:11:11: unsupported: Go back end: real number 1.5 is not supported"},
		{"", "a: x := 99999999999999999999;", "R.tla:11:11: unsupported: Go back end: integer literal 99999999999999999999 does not fit in 64 bits"},
		{"", "a: x := Op;", "R.tla:5:7: unsupported: Go back end: module variable v cannot be used by generated code"},
		{"", "a: x := F(1);", "R.tla:3:14: unsupported: Go back end: operator constant F (with arguments) is not supported"},
		{"", "a: x := [i \\in 1..2, j \\in 1..2 |-> i];", "R.tla:11:11: unsupported: Go back end: expression [i \\in 1 .. 2, j \\in 1 .. 2 |-> i] is not supported"},
		{"", "a: x := \\A i : i = 1;", "R.tla:11:11: unsupported: Go back end: unbounded or tuple-pattern quantifiers are not supported"},
		{"", "a: x := [a : {1}];", "R.tla:11:11: unsupported: Go back end: expression [a : {1}] is not supported"},
		// A procedure compiled because it is called: its own errors are
		// reported at their positions too.
		{"  procedure P() variables l; { p: l := 1.5; return; }\n", "a: call P();", "R.tla:8:40: unsupported: Go back end: real number 1.5 is not supported"},
		// PlusCal resumes such a call at Error: a step that can only fail.
		{"  procedure P() { p: return; }\n  procedure P2() { q: call P(); }\n", "a: call P2();", "R.tla:9:23: unsupported: Go back end: call P ends procedure P2, which must end with return"},
		// A tail call's return pops the frame that owns l.
		{"  procedure P(ref r) { p: return; }\n  procedure P2() variables l = 0; { q: call P(ref l); return; }\n", "a: call P2();",
			"R.tla:9:47: unsupported: Go back end: call P(ref l) followed by return: l is a variable of procedure P2, which the return discards"},
	}
	for _, c := range cases {
		src := rejectHead + "  " + c.body + rejectTail
		if c.head != "" {
			src = strings.Replace(src, "  procedure P() { p: return; }\n", c.head, 1)
		}
		f, err := ParseFile("R.tla", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		_, err = GenerateGo(f, GoOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.body, err, c.want)
		}
	}
	// A plain PlusCal algorithm has no archetypes to compile.
	f, err := ParseFile("P.tla", []byte("---- MODULE P ----\n(* --algorithm P { { l: skip; } } *)\n====\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateGo(f, GoOptions{}); err == nil || !strings.Contains(err.Error(), "compiles --mpcal algorithms") {
		t.Fatalf("plain PlusCal: %v", err)
	}
	// Checker errors come first, with their own kinds.
	src := rejectHead + "  a: x := nosuch;" + rejectTail
	f, err = ParseFile("R.tla", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateGo(f, GoOptions{}); err == nil || !strings.Contains(err.Error(), "R.tla:11:11: undefined:") {
		t.Fatalf("undefined name: %v", err)
	}
}

// TestGoGenProcModel model-checks testdata/gogen/proc/Proc.tla, the spec
// whose generated Go distsys's TestProcEndToEnd runs: TLC explores every
// interleaving of its procedure calls and returns and finds its
// invariant, that the client's outputs are Expected once it is done, and
// its liveness property, that the client finishes, to hold. The same spec
// with one wrong element in Expected must violate the invariant, so the
// invariant does constrain the outputs the Go test compares with it.
func TestGoGenProcModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs TLC")
	}
	const path = "testdata/gogen/proc/Proc.tla"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(strings.TrimSuffix(path, ".tla") + ".cfg")
	if err != nil {
		t.Fatal(err)
	}
	const expected = `Expected == <<1, 2, 6, "countdown", <<3, 2, 1, 0>>, "done">>`
	if !bytes.Contains(src, []byte("\n"+expected+"\n")) {
		t.Fatalf("%s does not define %s", path, expected)
	}
	wrong := bytes.Replace(src, []byte(expected), []byte(`Expected == <<1, 2, 6, "countdown", <<3, 2, 1>>, "done">>`), 1)
	for _, c := range []struct {
		name string
		src  []byte
		want tlc.Outcome
	}{{"spec", src, tlc.OK}, {"wrong-expected", wrong, tlc.InvariantViolated}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f, err := ParseFile(path, c.src)
			if err != nil {
				t.Fatal(err)
			}
			res, _, err := ModelCheck(context.Background(), f, cfg, t.TempDir(), tlc.Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != c.want || (c.want == tlc.OK && res.Distinct < 50) {
				var b bytes.Buffer
				_ = tlc.Render(&b, res, nil)
				t.Fatalf("TLC: %s after %d distinct states, want %s\n%s", res.Outcome, res.Distinct, c.want, b.String())
			}
			if c.want == tlc.InvariantViolated && res.Name != "OutputsAsModeled" {
				t.Fatalf("TLC: %s violated, want OutputsAsModeled", res.Name)
			}
		})
	}
}
