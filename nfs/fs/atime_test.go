package fs

import "testing"

// TestReadTouchRelatime: a read moves atime only when it is older than
// mtime or ctime or a day old, and the reply carries the new atime; Read
// never moves it; a read past the end moves nothing.
func TestReadTouchRelatime(t *testing.T) {
	f := newMemFS(t, 4096, 256, 512, Options{})
	h, _, _, _, err := f.Create(f.Root(), "a", Guarded, SetAttr{}, 0, 0, 0, ts(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Write(h, 0, []byte("data"), true, ts(20)); err != nil {
		t.Fatal(err)
	}
	atime := func() Time {
		t.Helper()
		a, err := f.GetAttr(h)
		if err != nil {
			t.Fatal(err)
		}
		return a.Atime
	}
	if _, _, _, err := f.Read(h, 0, 4); err != nil || atime() != ts(10) {
		t.Fatalf("Read moved atime to %v (%v)", atime(), err)
	}
	// atime (10) < mtime (20): the read records the access.
	_, _, a, err := f.ReadTouch(h, 0, 4, ts(30))
	if err != nil || a.Atime != ts(30) || atime() != ts(30) {
		t.Fatalf("first read after a write: reply atime %v, stored %v (%v), want %v", a.Atime, atime(), err, ts(30))
	}
	// Newer than mtime and ctime and less than a day old: unchanged.
	if _, _, a, err := f.ReadTouch(h, 0, 4, ts(40)); err != nil || a.Atime != ts(30) {
		t.Fatalf("second read: atime %v (%v), want %v", a.Atime, err, ts(30))
	}
	// A day later: moved again.
	day := ts(30 + 24*3600)
	if _, _, a, err := f.ReadTouch(h, 0, 4, day); err != nil || a.Atime != day {
		t.Fatalf("read a day later: atime %v (%v), want %v", a.Atime, err, day)
	}
	// A read at or past the end reads nothing and records nothing.
	if _, _, err := f.Write(h, 0, []byte("x"), true, ts(50+24*3600)); err != nil {
		t.Fatal(err)
	}
	if _, eof, a, err := f.ReadTouch(h, 100, 4, ts(60+24*3600)); err != nil || !eof || a.Atime != day {
		t.Fatalf("read past the end: atime %v eof %v (%v), want %v", a.Atime, eof, err, day)
	}
	mustCheck(t, f)
}
