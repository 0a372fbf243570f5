package circular

import (
	"testing"

	"strata/journal/disk"
)

// Append refuses records recovery could not read back, instead of writing
// a record that would hide every later one, or spilling past the ring.
func TestAppendRejectsEmptyAndOversizedRecords(t *testing.T) {
	d := disk.NewMemDisk(2 + 16 + 32)
	h, err := Format(d, 16, 9)
	if err != nil {
		t.Fatal(err)
	}
	l := newLog(d, h)
	if _, err := l.Append(0, nil); err == nil {
		t.Error("empty record accepted")
	}
	ups := make([]Update, 40)
	for i := range ups {
		ups[i] = Update{Addr: h.DataStart() + uint64(i%20), Data: make([]byte, disk.BlockSize)}
	}
	if _, err := l.Append(0, ups); err == nil {
		t.Error("record larger than the ring accepted")
	}
	buf := make([]byte, disk.BlockSize)
	for b := h.DataStart(); b < d.Size(); b++ {
		d.Read(b, buf)
		for _, c := range buf {
			if c != 0 {
				t.Fatalf("rejected Append wrote data block %d", b)
			}
		}
	}
}
