package mpcal

import (
	"bytes"
	"testing"
)

// TestSynthetic: the benchmark's synthetic specs are valid MPCal of about
// the size asked for, and their PlusCal is accepted by pcal.trans and SANY.
func TestSynthetic(t *testing.T) {
	for _, n := range []int{200, 1000, 3000} {
		src := Synthetic(n)
		lines := bytes.Count(src, []byte("\n"))
		if lines < n*9/10 || lines > n*11/10 {
			t.Errorf("Synthetic(%d) has %d lines", n, lines)
		}
		f, err := ParseFile("Synthetic.tla", src)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Compile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n == 200 {
			runTools(t, "Synthetic.tla", f.WithPlusCal(out.PlusCal()))
		}
	}
}
