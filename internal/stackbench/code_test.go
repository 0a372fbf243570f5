package stackbench

import "testing"

// The measurement really moves messages: every one is delivered.
func TestCodeLatencyDelivers(t *testing.T) {
	for _, f := range []bool{false, true} {
		r := CodeLatency(100, 1000, f)
		if r.DownNs <= 0 || r.UpNs <= 0 {
			t.Fatalf("non-positive timings: %+v", r)
		}
	}
}
