package segsearch

import (
	"context"
	"errors"
	"math/bits"
	"testing"
)

// First against a linear scan, for every boundary of small ranges and
// some of a large one, counting probes.
func TestFirst(t *testing.T) {
	check := func(limit, boundary uint64) {
		probes := 0
		got, err := First(context.Background(), limit, func(_ context.Context, i uint64) (bool, error) {
			if i >= limit {
				t.Fatalf("limit %d: probed %d", limit, i)
			}
			probes++
			return i < boundary, nil
		})
		want := min(boundary, limit)
		if err != nil || got != want {
			t.Fatalf("limit %d boundary %d: got %d, %v; want %d", limit, boundary, got, err, want)
		}
		if bound := 2*bits.Len64(want+1) + 2; probes > bound {
			t.Fatalf("limit %d boundary %d: %d probes, more than %d", limit, boundary, probes, bound)
		}
	}
	for limit := uint64(0); limit < 40; limit++ {
		for b := uint64(0); b <= limit+1; b++ {
			check(limit, b)
		}
	}
	for _, b := range []uint64{0, 1, 1000, 1 << 20, 1<<40 - 1, 1 << 40} {
		check(1<<40, b)
	}
	boom := errors.New("unreachable")
	if _, err := First(context.Background(), 10, func(context.Context, uint64) (bool, error) { return true, boom }); !errors.Is(err, boom) {
		t.Fatalf("probe error not returned: %v", err)
	}
}
