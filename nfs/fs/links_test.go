package fs

import (
	"errors"
	"testing"
)

// TestLinkLimit: with the link limit lowered to 3, a fourth hard link, a
// subdirectory beyond the limit and a directory moved into a full parent
// are ErrMLink and change nothing; renaming onto an existing subdirectory
// of a full parent does not add a link and succeeds.
func TestLinkLimit(t *testing.T) {
	f := newMemFS(t, 4096, 512, 1024, Options{})
	f.linkMax = 3
	root := f.Root()
	h, _, _, _, err := f.Create(root, "file", Guarded, SetAttr{}, 0, 0, 0, ts(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"l1", "l2"} {
		if _, _, _, err := f.Link(h, root, n, ts(2)); err != nil {
			t.Fatalf("link %s: %v", n, err)
		}
	}
	if _, _, _, err := f.Link(h, root, "l3", ts(3)); !errors.Is(err, ErrMLink) {
		t.Fatalf("fourth link: %v, want ErrMLink", err)
	}
	if _, _, _, err := f.Lookup(root, "l3"); !errors.Is(err, ErrNoEnt) {
		t.Fatalf("failed link left a name: %v", err)
	}
	if a, err := f.GetAttr(h); err != nil || a.Nlink != 3 {
		t.Fatalf("nlink %d (%v), want 3", a.Nlink, err)
	}

	// A directory with nlink 2 (its entry and ".") takes one subdirectory.
	p, _, _, _, err := f.Mkdir(root, "p", SetAttr{}, 0, 0, ts(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := f.Mkdir(p, "a", SetAttr{}, 0, 0, ts(5)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := f.Mkdir(p, "b", SetAttr{}, 0, 0, ts(6)); !errors.Is(err, ErrMLink) {
		t.Fatalf("second subdirectory: %v, want ErrMLink", err)
	}
	if _, _, _, _, err := f.Mkdir(root, "q", SetAttr{}, 0, 0, ts(7)); !errors.Is(err, ErrMLink) {
		// the root has ".", "..", and p's ".." already
		t.Fatalf("root subdirectory beyond the limit: %v, want ErrMLink", err)
	}
	// Files do not count against a directory's links.
	if _, _, _, _, err := f.Create(p, "f", Guarded, SetAttr{}, 0, 0, 0, ts(8)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.Lookup(p, "b"); !errors.Is(err, ErrNoEnt) {
		t.Fatalf("failed mkdir left a name: %v", err)
	}

	// Moving a directory into a full parent: refused, unless it replaces
	// an existing subdirectory (no link is added).
	f.linkMax = 10
	r, _, _, _, err := f.Mkdir(root, "r", SetAttr{}, 0, 0, ts(9))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := f.Mkdir(r, "x", SetAttr{}, 0, 0, ts(10)); err != nil {
		t.Fatal(err)
	}
	f.linkMax = 3
	if _, _, _, _, err := f.Rename(r, "x", p, "x", ts(11)); !errors.Is(err, ErrMLink) {
		t.Fatalf("rename into a full directory: %v, want ErrMLink", err)
	}
	if _, _, _, err := f.Lookup(r, "x"); err != nil {
		t.Fatalf("failed rename lost its source: %v", err)
	}
	if _, _, _, _, err := f.Rename(r, "x", p, "a", ts(12)); err != nil {
		t.Fatalf("rename onto an existing subdirectory of a full directory: %v", err)
	}
	if a, err := f.GetAttr(p); err != nil || a.Nlink != 3 {
		t.Fatalf("parent nlink %d (%v), want 3", a.Nlink, err)
	}
	mustCheck(t, f)
}
