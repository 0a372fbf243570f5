package pbkv

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"strata/mpcal"
)

var update = flag.Bool("update", false, "rewrite gen/pbkv.go from PBKV.tla")

// TestGenGolden: gen/pbkv.go is what `strata mpcal gogen PBKV.tla
// --package gen` makes of the model today (regenerate with -update), so
// the code the cluster runs is the code compiled from the model TLC
// checks.
func TestGenGolden(t *testing.T) {
	src, err := os.ReadFile("PBKV.tla")
	if err != nil {
		t.Fatal(err)
	}
	f, err := mpcal.ParseFile("PBKV.tla", src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := mpcal.GenerateGo(f, mpcal.GoOptions{Package: "gen"})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("gen/pbkv.go", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("gen/pbkv.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Fatalf("gen/pbkv.go is not what the generator makes of PBKV.tla; run go test ./models/pbkv -run TestGenGolden -update")
	}
}
