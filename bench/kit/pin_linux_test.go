package kit

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPinSelfRestores(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	restore, err := PinSelf(0)
	if err != nil {
		t.Fatal(err)
	}
	var during unix.CPUSet
	if err := unix.SchedGetaffinity(0, &during); err != nil {
		t.Fatal(err)
	}
	if during.Count() != 1 || !during.IsSet(0) || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("pinned: mask has %d CPUs (CPU 0 set: %v), GOMAXPROCS %d; want only CPU 0 and 1", during.Count(), during.IsSet(0), runtime.GOMAXPROCS(0))
	}
	restore()
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("after restore: mask %v (was %v), GOMAXPROCS %d (was %d)", after, before, runtime.GOMAXPROCS(0), procs)
	}
}
