// Package stats has the small summaries benchmarks report: medians and
// spreads of repeated measurements.
package stats

import "slices"

// Median returns the median of xs (the mean of the two middle values for
// an even count), or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}

// Range returns the smallest and largest of xs (0, 0 for none).
func Range(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}
