package mpcal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func parseString(t *testing.T, src string) *File {
	t.Helper()
	f, err := ParseFile("t.tla", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return f
}

func module(alg string) string {
	return "---- MODULE t ----\nEXTENDS Naturals, Sequences, TLC\nCONSTANT N\n(*\n" + alg + "\n*)\n====\n"
}

// TestPAndCSyntaxSameTree: the same algorithm written in P-syntax and in
// C-syntax parses to the same tree.
func TestPAndCSyntaxSameTree(t *testing.T) {
	p := module(`--algorithm A
variables x = 0, y \in 1..N;
define
  Inv == x >= 0
end define;
macro Inc(v) begin v := v + 1; end macro;
procedure P(a) variables t = a; begin
  p1: t := t + 1;
      if t > N then return; elsif t = N then x := t; else skip; end if;
  p2: return;
end procedure;
fair+ process Q \in 1..2
variables z;
begin
  q1: while x < N do
        either Inc(x); or with i \in 1..N, j = i + 1 do y := j; end with; end either;
      end while;
  q2:+ await x >= N;
       when y > 0;
       call P(x);
  q3: assert x >= N; print <<x, y>>; goto q1;
end process;
end algorithm;`)
	c := module(`--algorithm A {
variables x = 0; y \in 1..N;
define { Inv == x >= 0 }
macro Inc(v) { v := v + 1; }
procedure P(a) variables t = a; {
  p1: t := t + 1;
      if (t > N) { return; } else if (t = N) { x := t; } else { skip; };
  p2: return;
}
fair+ process (Q \in 1..2) variables z; {
  q1: while (x < N) {
        either { Inc(x); } or { with (i \in 1..N, j = i + 1) { y := j; } };
      };
  q2:+ await x >= N;
       when y > 0;
       call P(x);
  q3: assert x >= N; print <<x, y>>; goto q1;
}
}`)
	fp, fc := parseString(t, p), parseString(t, c)
	if !fp.Alg.PSyntax || fc.Alg.PSyntax {
		t.Fatalf("syntax flags: P %v, C %v", fp.Alg.PSyntax, fc.Alg.PSyntax)
	}
	if a, b := dumpTree(fp.Alg), dumpTree(fc.Alg); a != b {
		t.Fatalf("P-syntax and C-syntax trees differ:\nP: %s\nC: %s", a, b)
	}
	if err := Check(fp); err != nil {
		t.Fatalf("check: %v", err)
	}
	// The algorithm block's extent covers exactly the algorithm.
	src := string(fp.Src)
	if got := src[fp.Alg.Start:fp.Alg.End]; !strings.HasPrefix(got, "--algorithm A") || !strings.HasSuffix(got, "end algorithm") {
		t.Errorf("P-syntax block extent: %q", got)
	}
	src = string(fc.Src)
	if got := src[fc.Alg.Start:fc.Alg.End]; !strings.HasPrefix(got, "--algorithm A {") || !strings.HasSuffix(got, "}\n}") {
		t.Errorf("C-syntax block extent: %q", got)
	}
}

// TestParseMPCalConstructs checks the MPCal extensions' trees.
func TestParseMPCalConstructs(t *testing.T) {
	f := parseString(t, module(`--mpcal M {
  mapping macro Id { read { yield $variable; } write { yield $value; } }
  archetype A(ref x[_][_], y, ref z) variables l \in 1..N; {
    a: x[1][2] := y || z := 3;
  }
  variables g = [i \in 1..N |-> [j \in 1..N |-> 0]], h = 0;
  fair process (P \in 1..N) == instance A(ref g[_][_], 5, ref h)
    mapping g[_][_] via Id
    mapping @2 via Id;
}`))
	a := f.Alg
	if !a.MPCal || len(a.Archetypes) != 1 || len(a.MappingMacros) != 1 || len(a.Processes) != 1 {
		t.Fatalf("shape: %s", dumpTree(a))
	}
	ar := a.Archetypes[0]
	if p := ar.Params[0]; !p.Ref || p.Index != 2 || p.Name != "x" {
		t.Errorf("param 0: %+v", p)
	}
	if p := ar.Params[1]; p.Ref || p.Index != 0 {
		t.Errorf("param 1: %+v", p)
	}
	in := a.Processes[0].Instance
	if in == nil || len(in.Args) != 3 || !in.Args[0].Ref || in.Args[0].Index != 2 || in.Args[1].Ref {
		t.Fatalf("instance: %s", dumpTree(in))
	}
	if m := in.Mappings; len(m) != 2 || m[0].Name != "g" || m[0].Index != 2 || m[1].Position != 2 || m[1].Macro != "Id" {
		t.Errorf("mappings: %s", dumpTree(m))
	}
	if a.Processes[0].Fair != WeakFair {
		t.Errorf("fairness %v", a.Processes[0].Fair)
	}
	if err := Check(f); err != nil {
		t.Fatalf("check: %v", err)
	}
}

// testFiles lists every module with an algorithm that the tests know.
func testFiles(t *testing.T) []string {
	var out []string
	for _, pat := range []string{"testdata/*.tla", "testdata/*/*.tla", "../models/*/*.tla"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// TestFormatRoundTrip: for every test file whose algorithm parses, the
// formatter's output parses back to the same tree, and formatting is
// idempotent.
func TestFormatRoundTrip(t *testing.T) {
	n := 0
	for _, path := range testFiles(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFile(path, src)
		if err != nil {
			continue // negative tests with syntax errors
		}
		n++
		text := FormatAlgorithm(f.Alg)
		re := f.WithAlgorithm(text)
		g, err := ParseFile(path, re)
		if err != nil {
			t.Errorf("%s: the formatted algorithm does not parse: %v\n%s", path, err, text)
			continue
		}
		if a, b := dumpTree(f.Alg), dumpTree(g.Alg); a != b {
			t.Errorf("%s: formatting changed the tree:\nbefore: %s\nafter:  %s", path, a, b)
		}
		if again := FormatAlgorithm(g.Alg); again != text {
			t.Errorf("%s: formatting is not idempotent", path)
		}
	}
	if n < 5 {
		t.Fatalf("only %d files round-tripped", n)
	}
}

// FuzzParseAlgorithm: malformed algorithms never panic the parser, the
// checker or the compiler, and whatever parses round-trips through the
// formatter.
func FuzzParseAlgorithm(f *testing.F) {
	for _, path := range []string{"testdata/lock_listing2.tla"} {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(string(src))
		}
	}
	f.Add(module("--mpcal A { archetype B(ref x) { l: x := x + 1; } variables v = 0; process (P = 1) == instance B(ref v); }"))
	f.Add(module("--algorithm A begin l: skip; end algorithm"))
	f.Add(module("--mpcal A { mapping macro M { read { yield $variable; } write { either { yield $value; } or { yield $variable; }; } } }"))
	f.Fuzz(func(t *testing.T, src string) {
		// A hang is a failure too: report the input rather than stall.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				panic(fmt.Sprintf("no answer after 20s for input %q", src))
			}
		}()
		file, err := ParseFile("f.tla", []byte(src))
		if err != nil {
			if len(Diagnostics(err)) == 0 && !strings.Contains(err.Error(), "f.tla") {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		if file.Alg.MPCal {
			_, _ = Compile(file)
		} else {
			_ = Check(file)
		}
		text := FormatAlgorithm(file.Alg)
		g, err := ParseFile("f.tla", file.WithAlgorithm(text))
		if err != nil {
			t.Fatalf("formatted algorithm does not parse: %v\n%s", err, text)
		}
		if a, b := dumpTree(file.Alg), dumpTree(g.Alg); a != b {
			t.Fatalf("formatting changed the tree:\n%s\n%s", a, b)
		}
	})
}
