package stackbench

import "testing"

// The measurement really moves messages: every one is delivered, in every
// mode, and the bypass is taken.
func TestCodeLatencyDelivers(t *testing.T) {
	for _, mode := range Modes {
		r := CodeLatency(100, 1000, mode)
		if r.Delivered != 1000 {
			t.Fatalf("%s: %d of 1000 messages delivered", mode, r.Delivered)
		}
		if r.DownNs <= 0 || r.UpNs <= 0 {
			t.Fatalf("non-positive timings: %+v", r)
		}
		if (mode == "bypass" || mode == "generic") && r.Hits < 0.5 {
			t.Fatalf("bypass taken for %.2f of the cases", r.Hits)
		}
	}
}

func TestGroupCodeLatencyDelivers(t *testing.T) {
	for _, st := range GroupStacks {
		for _, mode := range Modes {
			r := GroupCodeLatency(st, 100, 3000, mode)
			if r.Delivered != 3000 {
				t.Fatalf("%s %s: the receiver delivered %d of 3000 casts", st, mode, r.Delivered)
			}
			if (mode == "bypass" || mode == "generic") && r.Hits < 0.3 {
				t.Fatalf("%s: bypass taken for %.2f of the cases", st, r.Hits)
			}
			t.Logf("%s %s: %+v", st, mode, r)
		}
	}
}
