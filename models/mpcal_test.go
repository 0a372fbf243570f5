package models

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/mpcal"
	"strata/mpcal/tlc"
)

// checkModel compiles (if MPCal) and model-checks one model in a scratch
// directory, as `strata mpcal check` does.
func checkModel(t *testing.T, path string) *tlc.Result {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mpcal.ParseFile(path, src)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(strings.TrimSuffix(path, ".tla") + ".cfg")
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := mpcal.ModelCheck(context.Background(), f, cfg, t.TempDir(), tlc.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != tlc.OK {
		var b bytes.Buffer
		_ = tlc.Render(&b, res, nil)
		t.Fatalf("TLC on %s: %s\n%s", path, res.Outcome, b.String())
	}
	return res
}

// TestMPCalModelsMatchPlusCal: every MPCal model here compiles, passes
// TLC with its configuration, and, where a hand-written PlusCal
// equivalent X_pcal.tla exists, TLC finds exactly as many distinct (and
// generated) states in both: the compiled archetypes and mapping macros
// behave like the PlusCal written by hand (Listing 1 vs Listing 2 of the
// PGo paper, and so on).
func TestMPCalModelsMatchPlusCal(t *testing.T) {
	files, _ := filepath.Glob("*/*.tla")
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_pcal.tla") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(src, []byte("--mpcal")) {
			continue
		}
		n++
		t.Run(path, func(t *testing.T) {
			got := checkModel(t, path)
			hand := strings.TrimSuffix(path, ".tla") + "_pcal.tla"
			if _, err := os.Stat(hand); err != nil {
				return
			}
			want := checkModel(t, hand)
			if got.Distinct != want.Distinct || got.Generated != want.Generated {
				t.Errorf("compiled MPCal: %d distinct / %d generated states; hand-written PlusCal %s: %d / %d",
					got.Distinct, got.Generated, hand, want.Distinct, want.Generated)
			}
			if got.Distinct == 0 {
				t.Errorf("TLC found no states")
			}
		})
	}
	if n < 4 {
		t.Fatalf("found %d MPCal models, want at least 4", n)
	}
}
