package tla

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readSpecs(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.tla"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least 3 specs in testdata, got %v (%v)", files, err)
	}
	specs := map[string][]byte{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		specs[f] = src
	}
	return specs
}

// TestSpecsRoundTrip parses each specification, prints it, parses the
// output and checks that the tree is unchanged and that printing again
// gives the same text.
func TestSpecsRoundTrip(t *testing.T) {
	for name, src := range readSpecs(t) {
		t.Run(filepath.Base(name), func(t *testing.T) {
			m, err := ParseModule(name, src)
			if err != nil {
				t.Fatal(err)
			}
			out := Format(m)
			m2, err := ParseModule("printed.tla", []byte(out))
			if err != nil {
				t.Fatalf("printed form does not parse: %v\n%s", err, out)
			}
			if a, b := Dump(m), Dump(m2); a != b {
				t.Fatalf("round trip changed the tree\n%s\n--- before\n%s\n--- after\n%s", out, a, b)
			}
			if out2 := Format(m2); out2 != out {
				t.Errorf("printing is not idempotent")
			}
		})
	}
}

// TestSpecContents spot-checks what the parser found in the specs.
func TestSpecContents(t *testing.T) {
	parse := func(name string) *Module {
		src, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		m, err := ParseModule(name, src)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	defs := func(m *Module) map[string]Unit {
		d := map[string]Unit{}
		for _, u := range m.Units {
			switch u := u.(type) {
			case *OpDef:
				d[u.Name] = u
			case *FuncDef:
				d[u.Name] = u
			case *ModuleDef:
				d[u.Name] = u
			case *Module:
				d["MODULE "+u.Name] = u
			}
		}
		return d
	}
	body := func(d map[string]Unit, name string) string {
		u, ok := d[name]
		if !ok {
			t.Fatalf("no definition of %s", name)
		}
		return Dump(u)
	}

	tp := parse("TwoPhase.tla")
	if tp.Name != "TwoPhase" || strings.Join(tp.Extends, ",") != "Naturals,FiniteSets" {
		t.Errorf("header: %s %v", tp.Name, tp.Extends)
	}
	d := defs(tp)
	if got, want := body(d, "TCConsistent"), `(def TCConsistent/0 () (\A (r1 r2 \in RM) (pre ~ (list/\ (= (apply rmState r1) "aborted") (= (apply rmState r2) "committed")))))`; got != want {
		t.Errorf("TCConsistent:\n got %s\nwant %s", got, want)
	}
	if got, want := body(d, "TPSpec"), `(def TPSpec/0 () (/\ (/\ TPInit (pre [] ([]_ TPNext vars))) (WF vars (\/ TMCommit TMAbort))))`; got != want {
		t.Errorf("TPSpec:\n got %s\nwant %s", got, want)
	}

	v := defs(parse("Voting.tla"))
	if got := body(v, "C"); got != `(moddef C () (instance Consensus (chosen <- chosenSet)))` {
		t.Errorf("C: %s", got)
	}
	if got := body(v, "Phase2a"); !strings.Contains(got, `(let ((def Q1b/0 () (filter (m \in msgs) (list/\ (= (. m type) "1b")`) {
		t.Errorf("Phase2a: %s", got)
	}

	s := defs(parse("Structures.tla"))
	for name, want := range map[string]string{
		"Table":  `(def Table/0 () (@@ (@@ (:> 1 "one") (:> 2 "two")) (fn (k \in (set 3)) "many")))`,
		"B2":     `(def B2/0 () (\oplus B1 (\ominus B1 (app SetToBag (set 2)))))`,
		"Joined": `(def Joined/0 () (\o (\o (tuple 1 2) (tuple 3)) (tuple)))`,
		"grid":   `(fndef grid (i j \in (.. 1 N)) (<<k l>> \in (\X Nat Nat)) (+ (* i j) (- k l)))`, // - binds tighter than +
		"Total":  `(def Total/0 (s/0/0) (app Fold (lambda (a b) (+ a b)) 0 s))`,
		"NoLoss": `(def NoLoss/0 () (\A (k \in Keys) (~> (/= (apply inbox k) (tuple)) (= (apply inbox k) (tuple)))))`,
	} {
		if got := body(s, name); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}

	o := defs(parse("Operators.tla"))
	if got := body(o, "UseInner"); got != `(def UseInner/0 () (+ (app I!Id 1) (app J(2)!Id 3)))` {
		t.Errorf("UseInner: %s", got)
	}
	if got := body(o, "MODULE Inner"); got != "(module Inner ()\n  (variables z)\n  (def Id/0 (v/0/0) v))" {
		t.Errorf("Inner: %s", got)
	}
	if got := body(o, "Leftend"); got != `(def Leftend/0 () (=> (list/\ (= x 1) (= y 2)) (= x 1)))` {
		t.Errorf("Leftend: %s", got)
	}
}
