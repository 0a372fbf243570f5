// Package memlimit chooses the Go runtime's soft memory limit
// (GOMEMLIMIT) for Strata's server processes, alone or several on one
// machine.
//
// A server runs with GOGC=400 (cmd/strata), so its heap may grow to five
// times the live heap before the collector runs; the soft limit is what
// bounds it. One server alone gets a quarter of the machine's memory.
// Processes started together by one parent (strata up, a benchmark's
// cluster) share a budget instead: each gets a fraction chosen by the
// parent, so that together they stay well under the machine's memory
// however large their data grows. A GOMEMLIMIT the user set wins: the
// children inherit it unchanged.
package memlimit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Total is the machine's physical memory in bytes (0 if unknown).
func Total() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// Env is the environment entry that gives a child process fraction of
// the machine's memory as its soft limit: "GOMEMLIMIT=<bytes>", or none
// when the user set GOMEMLIMIT (the child inherits it) or the memory size
// is unknown.
func Env(fraction float64) []string {
	if os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	total := Total()
	if total == 0 || fraction <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("GOMEMLIMIT=%d", uint64(float64(total)*min(fraction, 1)))}
}
