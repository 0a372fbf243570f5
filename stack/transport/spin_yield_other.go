//go:build unix && !linux

package transport

// osYield: not offered here; the poller yields only to goroutines.
func osYield() {}
