package sealkeys

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRefusesBadFiles(t *testing.T) {
	good, err := NewKey(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ text, want string }{
		{`{"keys": []}`, "no keys"},
		{`{"keys": [{"id": 1, "key": "!!"}]}`, "illegal base64"},
		{`{"keys": [{"id": 1, "key": "AAAA"}]}`, "has 3 bytes, want 32"},
		{`{"keys": [{"id": 1, "key": "` + good.Key + `"}, {"id": 1, "key": "` + good.Key + `"}]}`, "id 1 twice"},
		{`{"keys": [{"id": 1, "key": "` + good.Key + `"}], "extra": 1}`, "unknown field"},
		{`{"keys": [{"id": 300, "key": "` + good.Key + `"}]}`, "cannot unmarshal"},
		{`not json`, "invalid character"},
	} {
		if _, err := Parse([]byte(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.text, err, c.want)
		}
	}
}

// Rotate puts a new primary first and keeps the others; Retire keeps
// the primary; Write makes the file 0600 even over a looser one, and
// Load refuses a file others may read.
func TestRotateRetireAndPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	k1, _ := NewKey(1)
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, File{Keys: []Key{k1}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Rotate(f)
	if err != nil || len(r.Keys) != 2 || r.Keys[0].ID != 2 || r.Keys[1] != k1 {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	if got := Retire(r); len(got.Keys) != 1 || got.Keys[0] != r.Keys[0] {
		t.Fatalf("retire: %+v", got)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrPermissions) {
		t.Fatalf("a group-readable file: %v", err)
	}
}

// Watch follows the file: a rotation written to it reaches the ring; a
// change that does not load is ignored (the keys in force stay).
func TestWatchReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	k1, _ := NewKey(1)
	if err := Write(path, File{Keys: []Key{k1}}); err != nil {
		t.Fatal(err)
	}
	ring, stop, err := Watch(path, 10*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	f, _ := ReadFile(path)
	r, _ := Rotate(f)
	time.Sleep(20 * time.Millisecond) // a new modification time
	if err := Write(path, r); err != nil {
		t.Fatal(err)
	}
	wait := func(want []int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if slices.Equal(ring.IDs(), want) {
				return
			}
		}
		t.Fatalf("ring ids %v, want %v", ring.IDs(), want)
	}
	wait([]int{2, 1})
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	wait([]int{2, 1})
}
