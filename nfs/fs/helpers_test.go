package fs

import (
	"testing"

	"strata/journal"
	"strata/journal/disk"
)

// newMemFS makes a file system on an in-memory disk of blocks blocks (the
// journal log takes logBlocks of them; 0 for the default).
func newMemFS(t testing.TB, blocks, logBlocks, inodes uint64, opt Options) *FS {
	t.Helper()
	d := disk.NewMemDisk(blocks)
	if err := journal.Format(d, logBlocks); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(d, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	if err := Mkfs(j, inodes); err != nil {
		t.Fatal(err)
	}
	f, err := OpenOptions(j, opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustCheck(t testing.TB, f *FS) Report {
	t.Helper()
	r, err := f.Check()
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if !r.Clean() {
		t.Fatalf("check: %v", r)
	}
	return r
}

func ts(n int) Time { return Time{Sec: uint32(1_700_000_000 + n)} }

func u32p(v uint32) *uint32 { return &v }
func u64p(v uint64) *uint64 { return &v }
