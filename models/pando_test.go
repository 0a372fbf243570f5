package models

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/mpcal/tla"
	"strata/mpcal/tlc"
)

// pandoDistinct is the number of distinct states TLC 2.18 finds for
// pando/Pando.tla with pando/Pando.cfg (3 acceptors, K = 2, 2 values, 2
// ballots). Update it if the bounds change.
const pandoDistinct = 18207

func checkPando(t *testing.T, spec string) *tlc.Result {
	t.Helper()
	r, err := tlc.Check(context.Background(), tlc.Options{Spec: spec, Workers: 1})
	if err != nil {
		t.Fatalf("TLC on %s: %v", spec, err)
	}
	return r
}

// TestPandoHolds: TLC finds none of the appendix's invariants (nor the
// type invariant) violated, in the recorded number of states.
func TestPandoHolds(t *testing.T) {
	r := checkPando(t, filepath.Join("pando", "Pando.tla"))
	if r.Outcome != tlc.OK {
		var b strings.Builder
		tlc.Render(&b, r, nil)
		t.Fatalf("TLC found a problem in the Pando spec:\n%s", b.String())
	}
	if r.Distinct != pandoDistinct {
		t.Errorf("%d distinct states, want %d (the count recorded for these bounds)", r.Distinct, pandoDistinct)
	}
}

// TestPandoMutants: broken copies of the spec must fail the check, which
// shows the invariants and the ASSUME can catch something.
func TestPandoMutants(t *testing.T) {
	tlaSrc, err := os.ReadFile(filepath.Join("pando", "Pando.tla"))
	if err != nil {
		t.Fatal(err)
	}
	cfgSrc, err := os.ReadFile(filepath.Join("pando", "Pando.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	// Phase 1a quorums that miss a Phase 2 quorum: {a1} shares nothing
	// with {a2, a3}.
	const q1a, badQ1a = "Quorum1a = {{a1, a2}, {a2, a3}}", "Quorum1a = {{a1}, {a3}}"
	for _, c := range []struct {
		name     string
		tla, cfg [][2]string // replacements, each of text found exactly once
		want     tlc.Outcome
	}{
		{
			// The ASSUME rejects quorums that do not intersect.
			name: "disjoint quorums",
			cfg:  [][2]string{{q1a, badQ1a}},
			want: tlc.AssumptionViolated,
		},
		{
			// With the intersection constraint weakened, a ballot can
			// skip to Phase 2 without meeting any acceptor of the
			// quorum that chose the previous ballot's value.
			name: "quorum intersection weakened",
			tla:  [][2]string{{`Cardinality(QA \cap Q2) >= 1`, `Cardinality(QA \cap Q2) >= 0`}},
			cfg:  [][2]string{{q1a, badQ1a}},
			want: tlc.InvariantViolated,
		},
		{
			// The fast path proposes its own value even when a promise
			// reports an accepted one.
			name: "fast path ignores accepted values",
			tla:  [][2]string{{`/\ \A m \in Q1Msgs : m.maxABal = -1`, `/\ TRUE`}},
			want: tlc.InvariantViolated,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name string, src []byte, repl [][2]string) {
				s := string(src)
				for _, r := range repl {
					if n := strings.Count(s, r[0]); n != 1 {
						t.Fatalf("%q occurs %d times in %s", r[0], n, name)
					}
					s = strings.Replace(s, r[0], r[1], 1)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("Pando.tla", tlaSrc, c.tla)
			write("Pando.cfg", cfgSrc, c.cfg)
			r := checkPando(t, filepath.Join(dir, "Pando.tla"))
			if r.Outcome != c.want {
				t.Fatalf("outcome %v (%s), want %v", r.Outcome, r.Message, c.want)
			}
			if c.want == tlc.InvariantViolated {
				// Which invariant breaks first depends on the search order;
				// all these mutants break one about the chosen values.
				switch r.Name {
				case "StabilityInv", "ConsistencyInv", "LearnInv", "ReadInv":
				default:
					t.Errorf("invariant %q violated", r.Name)
				}
				if len(r.Trace) < 2 {
					t.Errorf("trace of %d states", len(r.Trace))
				}
			}
		})
	}
}

// TestPandoParses: Strata's TLA+ parser reads the transcribed spec (a
// spec written by someone else), and reads back what it prints.
func TestPandoParses(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("pando", "Pando.tla"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := tla.ParseModule("Pando.tla", src)
	if err != nil {
		t.Fatal(err)
	}
	printed := tla.Format(m)
	m2, err := tla.ParseModule("printed.tla", []byte(printed))
	if err != nil {
		t.Fatalf("the printed module does not parse: %v\n%s", err, printed)
	}
	if a, b := tla.Format(m2), printed; a != b {
		t.Errorf("printing the reparsed module gives different text:\n%s\n---\n%s", a, b)
	}
	var names []string
	for _, u := range m.Units {
		if d, ok := u.(*tla.OpDef); ok {
			names = append(names, d.Name)
		}
	}
	for _, want := range []string{"Init", "Next", "Spec", "ProposeB", "FastRead", "TypeOK", "LearnInv", "ReadInv", "ConsistencyInv", "StabilityInv", "AcceptorInv"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("definition %s not found among %v", want, names)
		}
	}
}
