package stackbench

import "testing"

// The measurement really moves messages: every one is delivered, and the
// common path allocates nothing once pools are warm.
func TestCodeLatencyDelivers(t *testing.T) {
	for _, f := range []bool{false, true} {
		r := CodeLatency(100, 1000, f)
		if r.Delivered != 1000 {
			t.Fatalf("functional=%v: %d of 1000 messages delivered", f, r.Delivered)
		}
		if r.DownNs <= 0 || r.UpNs <= 0 {
			t.Fatalf("non-positive timings: %+v", r)
		}
	}
}
