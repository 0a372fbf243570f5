package crdt

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunSmall runs the harness on the smallest cluster for a few rounds:
// both systems converge every round, the report has a cell per system and
// a ratio, and Print shows the table.
func TestRunSmall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, Config{Nodes: []int{2}, Rounds: 3, Runs: 1, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) > 0 {
		t.Fatalf("failures: %v", rep.Failures)
	}
	res := rep.Results.(*Results)
	if len(res.Cells) != 2 || len(res.Summary) != 2 {
		t.Fatalf("cells %v, summary %v", res.Cells, res.Summary)
	}
	for _, c := range res.Cells {
		if c.Samples != 2*3 || c.P50Ms <= 0 || c.Merged == 0 {
			t.Fatalf("cell %+v", c)
		}
	}
	if _, ok := rep.Ratios["convergence p50 generated/handwritten 2 nodes"]; !ok {
		t.Fatalf("ratios %v", rep.Ratios)
	}
	var b bytes.Buffer
	if err := Print(&b, rep); err != nil || !strings.Contains(b.String(), "convergence time after an add") {
		t.Fatalf("print: %v\n%s", err, b.String())
	}
	if _, err := Run(ctx, Config{Nodes: []int{1}, Rounds: 1, Runs: 1, Interval: time.Millisecond}); err == nil {
		t.Fatal("a 1-node cluster was accepted")
	}
}
