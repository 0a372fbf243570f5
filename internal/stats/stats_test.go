package stats

import "testing"

func TestMedianAndRange(t *testing.T) {
	for _, c := range []struct {
		in     []float64
		med    float64
		lo, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
	} {
		in := append([]float64(nil), c.in...)
		if got := Median(c.in); got != c.med {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.med)
		}
		if lo, hi := Range(c.in); lo != c.lo || hi != c.hi {
			t.Errorf("Range(%v) = %v, %v", c.in, lo, hi)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("Median modified its input")
			}
		}
	}
}
