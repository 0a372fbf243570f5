package wormtx

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The file store keeps what it was told across a reopen (and the
// compaction it makes then), drops a torn last line, and refuses damage.
func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	p1 := Prepared{Tx: 1, Seg: 5, Base: 3, Parts: []uint32{0, 1}, Vote: []byte("v1"), Yes: true, Writes: map[string]int64{"a": 90}, Reads: []string{"b"}, By: 7}
	p2 := Prepared{Tx: 2, Seg: 5, Base: 6, Parts: []uint32{0}, Vote: []byte("v2"), Yes: true, Writes: map[string]int64{"a": 80}, By: 7}
	p3 := Prepared{Tx: 3, Vote: []byte("no"), Done: true, By: 7}
	for _, p := range []Prepared{p1, p2, p3} {
		if err := s.Prepare(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Finish(1, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(3); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A torn append.
	f, err := os.OpenFile(filepath.Join(dir, "votes.log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"op":"fini`)
	f.Close()
	for range 2 { // the second open reads the compacted log
		s, err = OpenFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Balances(); !reflect.DeepEqual(got, map[string]int64{"a": 90}) {
			t.Fatalf("balances %v", got)
		}
		p1.Done = true
		if got := s.Votes(); len(got) != 2 || !reflect.DeepEqual(got[0], p1) || !reflect.DeepEqual(got[1], p2) {
			t.Fatalf("votes %+v", got)
		}
		s.Close()
	}
	if err := os.WriteFile(filepath.Join(dir, "votes.log"), []byte("garbage\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileStore(dir); err == nil {
		t.Fatal("a damaged log opened")
	}
}

// Syncs answer once their records are on disk, many at a time; a Sync
// after Close is answered with ErrClosed, never left hanging.
func TestFileStoreSync(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make(chan error, n)
	for i := range n {
		if err := s.Prepare(Prepared{Tx: uint64(i + 1), Vote: []byte("no"), Done: true}); err != nil {
			t.Fatal(err)
		}
		s.Sync(func(err error) { errs <- err })
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// What the Syncs covered is in the file now, whatever Close does.
	b, err := os.ReadFile(filepath.Join(dir, "votes.log"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(b, []byte("\n")); lines != n+1 {
		t.Fatalf("%d lines in the log, want %d", lines, n+1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.Sync(func(err error) { errs <- err })
	if err := <-errs; !errors.Is(err, ErrClosed) {
		t.Fatalf("a Sync after Close: %v, want ErrClosed", err)
	}
}
