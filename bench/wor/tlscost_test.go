package wor

import (
	"bytes"
	"strings"
	"testing"
)

// The TLS cost line is the median over rounds of TLS over plain
// throughput, per mode and client count.
func TestPrintTLSCost(t *testing.T) {
	row := func(mode string, clients, round int, plain, tls float64) TLSCostRow {
		return TLSCostRow{Mode: mode, Clients: clients, Size: 8, Round: round,
			Plain: Result{OpsPerSec: plain}, TLS: Result{OpsPerSec: tls}}
	}
	var b bytes.Buffer
	PrintTLSCost(&b, []TLSCostRow{
		row("memory", 1, 1, 1000, 900),
		row("memory", 16, 1, 1000, 500),
		row("memory", 1, 2, 1000, 800),
		row("memory", 1, 3, 1000, 1000),
	})
	for _, want := range []string{
		"write-throughput tls-cost strata-tls/strata memory clients=1: 0.900 (median of 3 rounds, range 0.800–1.000",
		"write-throughput tls-cost strata-tls/strata memory clients=16: 0.500 (median of 1 rounds",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}
