// Package segsearch finds a boundary in a monotone sequence with few
// probes: the WOR space's segments of one log run trimmed*, allocated*,
// unallocated* (allocated in order, trimmed in order), and a metadata
// read is a round trip, so a replica or a log finds its first live or
// first free segment with an exponential then a binary search, O(log n)
// reads, rather than a scan.
package segsearch

import "context"

// First returns the least i in [0, limit) for which pred is false, given
// that pred is true on a prefix of [0, limit) and false after it; limit
// if pred is true everywhere. pred is called O(log i) times; its first
// error ends the search.
func First(ctx context.Context, limit uint64, pred func(ctx context.Context, i uint64) (bool, error)) (uint64, error) {
	if limit == 0 {
		return 0, nil
	}
	ok, err := pred(ctx, 0)
	if err != nil || !ok {
		return 0, err
	}
	// pred(lo) holds; find hi with pred(hi) false (or hi = limit).
	lo, hi := uint64(0), uint64(1)
	for hi < limit {
		ok, err := pred(ctx, hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, min(2*hi, limit)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := pred(ctx, mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}
