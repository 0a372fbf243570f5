package mpcal

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"strata/mpcal/tlc"
)

var update = flag.Bool("update", false, "rewrite the golden PlusCal files (testdata/golden/*.pcal)")

// TestGolden: for every MPCal input of the golden corpus the generated
// PlusCal equals the expected file (regenerate with -update and review
// the diff), and, written into the module, it is accepted by the PlusCal
// translator and by SANY; where the input has a .cfg, TLC checks it
// without finding an error and finds as many states as it found on a
// PlusCal translation written by hand (figures in the corpus README), and
// where a hand-written PlusCal equivalent NAME_pcal.tla exists TLC finds
// the same number of distinct states in it.
// Plain PlusCal inputs are checked and translated as they are.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.tla")
	var inputs []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_pcal.tla") {
			inputs = append(inputs, f)
		}
	}
	if len(inputs) < 40 {
		t.Errorf("the golden corpus has %d inputs, want at least 40", len(inputs))
	}
	figures := handFigures(t)
	if len(figures) < 40 {
		t.Errorf("the corpus README records TLC figures for %d inputs, want at least 40", len(figures))
	}
	for _, path := range inputs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			text := compileGolden(t, path)
			res := runTools(t, path, text)
			name := strings.TrimSuffix(filepath.Base(path), ".tla")
			if want, ok := figures[name]; ok && res != nil {
				if res.Distinct != want[1] || res.Generated != want[0] {
					t.Errorf("TLC: %d generated / %d distinct states; the hand translation recorded in testdata/golden/README.md: %d / %d",
						res.Generated, res.Distinct, want[0], want[1])
				}
			}
			hand := strings.TrimSuffix(path, ".tla") + "_pcal.tla"
			if _, err := os.Stat(hand); err != nil || res == nil {
				return
			}
			src, err := os.ReadFile(hand)
			if err != nil {
				t.Fatal(err)
			}
			want := runTools(t, hand, src)
			if want == nil {
				t.Fatalf("%s has no .cfg", hand)
			}
			if res.Distinct != want.Distinct {
				t.Errorf("TLC: %d distinct states from the compiled MPCal, %d from the hand-written %s", res.Distinct, want.Distinct, hand)
			}
		})
	}
}

// compileGolden compiles one input and compares the PlusCal with the
// golden file; it returns the module text with the PlusCal written in.
func compileGolden(t *testing.T, path string) []byte {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile(path, src)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Alg.MPCal {
		if err := Check(f); err != nil {
			t.Fatal(err)
		}
		return src
	}
	out, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	pcal := out.PlusCal()
	golden := strings.TrimSuffix(path, ".tla") + ".pcal"
	if *update {
		if err := os.WriteFile(golden, []byte(pcal), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("no golden file (run go test ./mpcal -run TestGolden -update and review it): %v", err)
	}
	if pcal != string(want) {
		t.Errorf("generated PlusCal differs from %s:\n%s", golden, lineDiff(string(want), pcal))
	}
	// Compiling is deterministic.
	f2, _ := ParseFile(path, src)
	if out2, err := Compile(f2); err != nil || out2.PlusCal() != pcal {
		t.Errorf("a second compilation gives different output")
	}
	return f.WithPlusCal(pcal)
}

// runTools translates the module with pcal.trans, parses the result with
// SANY and, if there is a .cfg, model-checks it. It returns TLC's result
// (nil without a .cfg).
func runTools(t *testing.T, path string, text []byte) *tlc.Result {
	t.Helper()
	dir := t.TempDir()
	spec := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(spec, text, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tlc.Translate(ctx, spec); err != nil {
		t.Fatalf("pcal.trans: %v", err)
	}
	if err := tlc.SANY(ctx, spec); err != nil {
		t.Fatalf("SANY: %v", err)
	}
	cfg, err := os.ReadFile(strings.TrimSuffix(path, ".tla") + ".cfg")
	if err != nil {
		return nil
	}
	if err := os.WriteFile(strings.TrimSuffix(spec, ".tla")+".cfg", cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := tlc.Check(ctx, tlc.Options{Spec: spec, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != tlc.OK {
		var b bytes.Buffer
		_ = tlc.Render(&b, res, nil)
		t.Fatalf("TLC: %s\n%s", res.Outcome, b.String())
	}
	return res
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + a + "\n  got: " + b
		}
	}
	return ""
}

// handFigures reads, from the corpus README, the states TLC found (states
// generated, distinct) on a PlusCal translation of each input written by
// hand, independently of the compiler: the compiled MPCal must give the
// same figures.
func handFigures(t *testing.T) map[string][2]int64 {
	src, err := os.ReadFile("testdata/golden/README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 6 || !strings.HasPrefix(strings.TrimSpace(f[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(f[1]), "`")
		gen, err1 := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		dis, err2 := strconv.ParseInt(strings.TrimSpace(f[3]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[name] = [2]int64{gen, dis}
	}
	return out
}
