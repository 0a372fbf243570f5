package kit

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// PinSelf restricts every thread of this process to CPU cpu and sets
// GOMAXPROCS to 1; threads created later inherit the mask from their
// creator. It returns a function that restores the previous mask and
// GOMAXPROCS. The benchmark harness uses it to run its clients on one
// core while each server process runs on another.
func PinSelf(cpu int) (restore func(), err error) {
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("reading CPU affinity: %w", err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := setAll(&set); err != nil {
		setAll(&old)
		return nil, err
	}
	procs := runtime.GOMAXPROCS(1)
	return func() {
		setAll(&old)
		runtime.GOMAXPROCS(procs)
	}, nil
}

func setAll(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("listing threads: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread may exit between the listing and the call.
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("pinning thread %d: %w", tid, err)
		}
	}
	return nil
}
