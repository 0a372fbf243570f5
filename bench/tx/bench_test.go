package tx

import (
	"bytes"
	"strings"
	"testing"

	"strata/bench/kit"
)

func TestConfigChecks(t *testing.T) {
	for _, c := range []Config{
		{Dir: "d", Transfers: 100, Rounds: 1, Engine: "paxos"},
		{Strata: "s", Dir: "d", Transfers: 5, Rounds: 1, Engine: "paxos"},
		{Strata: "s", Dir: "d", Transfers: 100, Rounds: 0, Engine: "paxos"},
		{Strata: "s", Dir: "d", Transfers: 100, Rounds: 1, Engine: "raft"},
	} {
		if err := c.check(); err == nil {
			t.Fatalf("%+v passed the check", c)
		}
	}
}

// Medians take the median p50 over rounds per variant, in A8..E3
// order, and Print lists them beside the message delays.
func TestMediansAndPrint(t *testing.T) {
	rs := []Result{
		{Round: 1, Variant: "E3", P50us: 300}, {Round: 2, Variant: "E3", P50us: 100}, {Round: 3, Variant: "E3", P50us: 200},
		{Round: 1, Variant: "A8", P50us: 800},
	}
	m := Medians(rs)
	if m[0] != 800 || m[4] != 200 || m[1] != 0 {
		t.Fatalf("medians %v", m)
	}
	rep := kit.NewReport("tx", nil)
	rep.Results = &Results{Variants: rs}
	var b bytes.Buffer
	Print(&b, rep)
	if !strings.Contains(b.String(), "E3             3          200") || !strings.Contains(b.String(), "A8             8          800") {
		t.Fatalf("table:\n%s", b.String())
	}
}
