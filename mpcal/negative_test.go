package mpcal

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// diagnose runs the whole front end (parse, check, compile) and returns
// the diagnostics of the first stage that fails.
func diagnose(name string, src []byte) ([]*Error, error) {
	f, err := ParseFile(name, src)
	if err == nil {
		if f.Alg.MPCal {
			_, err = Compile(f)
		} else {
			err = Check(f)
		}
	}
	if err == nil {
		return nil, nil
	}
	d := Diagnostics(err)
	if len(d) == 0 {
		return nil, fmt.Errorf("an error without a position: %w", err)
	}
	return d, nil
}

var expectRe = regexp.MustCompile(`^\\\* EXPECT: ([a-z-]+) (\d+):(\d+)`)

// TestNegativeCorpus: every file in testdata/negative has one error,
// annotated on its first line as "\* EXPECT: kind line:col"; the
// compiler's first diagnostic is that kind at that position.
func TestNegativeCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/negative/*.tla")
	seen := map[string]int{}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(src), "\n")
		m := expectRe.FindStringSubmatch(first)
		if m == nil {
			t.Errorf("%s: first line has no \\* EXPECT: kind line:col", path)
			continue
		}
		line, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		d, err := diagnose(path, src)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(d) == 0 {
			t.Errorf("%s: no error reported, want %s at %d:%d", path, m[1], line, col)
			continue
		}
		got := d[0]
		if got.Kind != m[1] || got.Pos.Line != line || got.Pos.Col != col {
			t.Errorf("%s: got %s at %d:%d (%s), want %s at %d:%d", path, got.Kind, got.Pos.Line, got.Pos.Col, got.Msg, m[1], line, col)
		}
		seen[m[1]]++
	}
	if len(files) < 30 {
		t.Errorf("only %d negative inputs, want at least 30", len(files))
	}
	for _, c := range inlineNegatives {
		seen[c.kind]++
	}
	// Every kind of error the compiler can raise has a negative test.
	for _, k := range allKinds {
		if seen[k] == 0 {
			t.Errorf("no negative test for error kind %s", k)
		}
	}
}

var allKinds = []string{KindSyntax, KindUndefined, KindRedefinition, KindMultipleAssignment, KindMissingLabel,
	KindForbiddenLabel, KindReservedLabel, KindDuplicateLabel, KindRefMismatch, KindDuplicateMapping,
	KindRecursiveMacro, KindYieldOutsideMapping, KindMultipleYield, KindStatementAfterYield, KindArityMismatch,
	KindArgumentCount, KindAssignNonVariable, KindForbiddenStatement, KindUnsupported}

// inlineNegatives complement the corpus with small cases, the position
// given by the text the error must point at (its first occurrence after
// the marker "@@", which is removed).
var inlineNegatives = []struct {
	name, kind, alg string
}{
	{"after-yield", KindStatementAfterYield, `--mpcal A {
  mapping macro M { read { yield $variable; @@skip; } write { yield $value; } }
}`},
	{"while-in-mapping", KindForbiddenStatement, `--mpcal A {
  mapping macro M { read { yield $variable; } write { @@while (TRUE) { skip; }; yield $value; } }
}`},
	{"goto-in-mapping", KindForbiddenStatement, `--mpcal A {
  mapping macro M { read { @@goto l; } write { yield $value; } }
}`},
	{"return-in-archetype", KindForbiddenStatement, `--mpcal A {
  archetype B() { l: @@return; }
}`},
	{"while-in-macro", KindForbiddenStatement, `--algorithm A {
  macro M() { @@while (TRUE) { skip; } }
  { l: M(); }
}`},
	{"read-under-binder", KindUnsupported, `--mpcal A {
  mapping macro M { read { yield $variable; } write { yield $value; } }
  archetype B(ref x[_]) variables y; { l: y := \A i \in 1..N : x[@@i] > 0; }
  variables g = [i \in 1..N |-> 0];
  process (P \in 1..2) == instance B(ref g[_]) mapping g[_] via M;
}`},
	{"initial-read", KindUnsupported, `--mpcal A {
  mapping macro M { read { yield $variable; } write { yield $value; } }
  archetype B(ref x) variables y = @@x; { l: skip; }
  variables g = 0;
  process (P \in 1..2) == instance B(ref g) mapping g via M;
}`},
	{"partial-mapped-write", KindArityMismatch, `--mpcal A {
  mapping macro M { read { yield $variable; } write { yield $value; } }
  archetype B(ref x[_]) { l: @@x[1][2] := 3; }
  variables g = [i \in 1..N |-> <<0, 0>>];
  process (P \in 1..2) == instance B(ref g[_]) mapping g[_] via M;
}`},
	{"value-in-read", KindUndefined, `--mpcal A {
  mapping macro M { read { yield @@$value; } write { yield $value; } }
}`},
	{"global-in-archetype", KindUndefined, `--mpcal A {
  archetype B() { l: print @@g; }
  variables g = 0;
  process (P \in 1..2) == instance B();
}`},
	{"non-ascii-string", KindUnsupported, `--mpcal A {
  archetype B() variables s = @@"café"; { l: print s; }
  process (P \in 1..2) == instance B();
}`},
	{"macro-reads-whole-ref", KindArityMismatch, `--mpcal A {
  macro Copy(from, to) { to := from; }
  archetype B(ref x[_]) variables y; { l: Copy(@@x, y); }
  variables g = [i \in 1..2 |-> 0];
  process (P \in 1..2) == instance B(ref g[_]);
}`},
	{"goto-undefined", KindUndefined, `--algorithm A { process (P \in 1..2) { l: goto @@nowhere; } }`},
	{"too-many-yields-write", KindMultipleYield, `--mpcal A {
  mapping macro M { read { yield $variable; } write { if (TRUE) { yield 1; } else { skip; }; @@yield 2; } }
}`},
}

func TestInlineNegatives(t *testing.T) {
	for _, c := range inlineNegatives {
		t.Run(c.name, func(t *testing.T) {
			src := module(c.alg)
			at := strings.Index(src, "@@")
			if at < 0 {
				t.Fatal("no @@ marker")
			}
			src = src[:at] + src[at+2:]
			line := strings.Count(src[:at], "\n") + 1
			col := at - strings.LastIndex(src[:at], "\n")
			d, err := diagnose("t.tla", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(d) == 0 {
				t.Fatalf("no error, want %s at %d:%d", c.kind, line, col)
			}
			if d[0].Kind != c.kind || d[0].Pos.Line != line || d[0].Pos.Col != col {
				t.Fatalf("got %s at %d:%d (%s), want %s at %d:%d", d[0].Kind, d[0].Pos.Line, d[0].Pos.Col, d[0].Msg, c.kind, line, col)
			}
		})
	}
}
