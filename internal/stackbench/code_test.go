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

func TestGroupCodeLatencyDelivers(t *testing.T) {
	for _, fn := range []bool{false, true} {
		r := GroupCodeLatency(100, 3000, fn)
		// b delivers every cast (a's own delivery is not counted at b).
		if r.Delivered != 3000 {
			t.Fatalf("functional=%v: b delivered %d of 3000 casts", fn, r.Delivered)
		}
	}
}
