package crdt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"strata/mpcal"
	"strata/mpcal/tlc"
)

func parse(t *testing.T, path string) *mpcal.File {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mpcal.ParseFile(path, src)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGeneratedGoUpToDate: the checked-in Go of each model is what
// `strata mpcal gogen` makes of it now (regenerate with
// `strata mpcal gogen X.tla --package x -o gen/x/x.go`).
func TestGeneratedGoUpToDate(t *testing.T) {
	for _, c := range []struct{ tla, gofile, pkg string }{
		{"AWORSet.tla", "gen/aworset/aworset.go", "aworset"},
		{"GCounter.tla", "gen/gcounter/gcounter.go", "gcounter"},
	} {
		t.Run(c.pkg, func(t *testing.T) {
			out, err := mpcal.GenerateGo(parse(t, c.tla), mpcal.GoOptions{Package: c.pkg})
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(c.gofile)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("%s is not what strata mpcal gogen makes of %s now; regenerate it", c.gofile, c.tla)
			}
		})
	}
}

// TestMutantsViolate: each mutant configuration (a wrong join selected
// by BugMerge) makes TLC report a violated invariant, with a trace.
func TestMutantsViolate(t *testing.T) {
	for cfg, want := range map[string][]string{
		// Keeps every dot: a remove is undone by a join with a replica
		// that has not seen it.
		"AWORSet_BugUnion.cfg": {"Correct", "StrongConvergence"},
		// Keeps only common dots: absence wins over a concurrent add.
		"AWORSet_BugRemoveWins.cfg": {"Correct", "StrongConvergence"},
		// Adds counts: a repeated gossip counts increments twice.
		"GCounter_BugSum.cfg": {"Correct", "StrongConvergence"},
	} {
		t.Run(cfg, func(t *testing.T) {
			t.Parallel() // one TLC worker each: two at once use both cores
			spec := cfg[:len(cfg)-len(filepath.Ext(cfg))]
			spec = spec[:bytes.IndexByte([]byte(spec), '_')] + ".tla"
			text, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := mpcal.ModelCheck(context.Background(), parse(t, spec), text, t.TempDir(), tlc.Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tlc.InvariantViolated || !slices.Contains(want, r.Name) {
				t.Fatalf("%s: outcome %v %q (%s), want one of %v violated", cfg, r.Outcome, r.Name, r.Message, want)
			}
			if len(r.Trace) < 2 {
				t.Errorf("trace of %d states", len(r.Trace))
			}
			t.Logf("%s: %s violated after %d states, depth %d", cfg, r.Name, r.Distinct, r.Depth)
		})
	}
}

// TestLongConfigurations checks the models with 3 replicas (minutes of
// TLC; not in make test): STRATA_CRDT_LONG=1 go test ./models/crdt -run Long.
func TestLongConfigurations(t *testing.T) {
	if os.Getenv("STRATA_CRDT_LONG") == "" {
		t.Skip("set STRATA_CRDT_LONG=1 to check the 3-replica configurations")
	}
	for cfg, distinct := range map[string]int64{"AWORSet_Long.cfg": 50256, "GCounter_Long.cfg": 31872} {
		t.Run(cfg, func(t *testing.T) {
			spec := cfg[:bytes.IndexByte([]byte(cfg), '_')] + ".tla"
			text, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := mpcal.ModelCheck(context.Background(), parse(t, spec), text, t.TempDir(), tlc.Options{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if r.Outcome != tlc.OK || r.Distinct != distinct {
				t.Fatalf("%s: outcome %v %q (%s), %d distinct states; want OK, %d", cfg, r.Outcome, r.Name, r.Message, r.Distinct, distinct)
			}
		})
	}
}
