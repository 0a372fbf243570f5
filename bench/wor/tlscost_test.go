package wor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The TLS cost ratio is the median over rounds of TLS over plain
// throughput, per mode and client count, in the report's ratios (so
// --json carries it with both sides' settings) and in the printed text.
func TestTLSCostReport(t *testing.T) {
	row := func(mode string, clients, round int, plain, tls float64) TLSCostRow {
		return TLSCostRow{Mode: mode, Clients: clients, Size: 8, Round: round,
			Plain: Result{OpsPerSec: plain}, TLS: Result{OpsPerSec: tls}}
	}
	rows := []TLSCostRow{
		row("memory", 1, 1, 1000, 900),
		row("memory", 16, 1, 1000, 500),
		row("memory", 1, 2, 1000, 800),
		row("memory", 1, 3, 1000, 1000),
	}
	cfg := Config{Modes: []string{"memory"}, Clients: []int{1, 16}, Sizes: []int{8}, Rounds: 3, Warmup: time.Second, Measure: 2 * time.Second}
	rep := TLSCostReport(cfg, rows)
	if got := rep.Ratios["write-throughput tls-cost strata-tls/strata memory clients=1"]; got != 0.9 {
		t.Errorf("clients=1 ratio %v, want the median 0.9", got)
	}
	if got := rep.Ratios["write-throughput tls-cost strata-tls/strata memory clients=16"]; got != 0.5 {
		t.Errorf("clients=16 ratio %v, want 0.5", got)
	}
	var j bytes.Buffer
	if err := rep.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Config map[string]map[string]any `json:"config"`
	}
	if err := json.Unmarshal(j.Bytes(), &obj); err != nil || obj.Config["strata"] == nil || obj.Config["strata-tls"] == nil {
		t.Fatalf("config of both sides missing from the JSON: %v\n%s", err, j.String())
	}
	var b bytes.Buffer
	PrintTLSCost(&b, rep, rows)
	if !strings.Contains(b.String(), "write-throughput tls-cost strata-tls/strata memory clients=1") || !strings.Contains(b.String(), "0.900") {
		t.Errorf("printed report lacks the ratio:\n%s", b.String())
	}
}
