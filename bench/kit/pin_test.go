package kit

import (
	"slices"
	"testing"
)

func TestPinned(t *testing.T) {
	argv := []string{"/bin/true", "x"}
	got, err := Pinned(-1, argv)
	if err != nil || !slices.Equal(got, argv) {
		t.Fatalf("Pinned(-1) = %v, %v; want argv unchanged", got, err)
	}
	got, err = Pinned(1, argv)
	if err != nil {
		t.Fatalf("Pinned(1): %v (taskset is in Debian util-linux)", err)
	}
	if len(got) != 5 || got[1] != "-c" || got[2] != "1" || !slices.Equal(got[3:], argv) {
		t.Fatalf("Pinned(1) = %v", got)
	}
}
