package fs

import (
	"bytes"
	"testing"
)

func TestSmoke(t *testing.T) {
	f := newMemFS(t, 4096, 256, 512, Options{})
	mustCheck(t, f)
	root := f.Root()
	h, a, _, _, err := f.Create(root, "a", Guarded, SetAttr{}, 0, 1, 2, ts(1))
	if err != nil {
		t.Fatal(err)
	}
	if a.Type != TypeReg || a.Nlink != 1 || a.UID != 1 {
		t.Fatalf("attr %+v", a)
	}
	if _, _, err := f.Write(h, 10000, []byte("hello"), true, ts(2)); err != nil {
		t.Fatal(err)
	}
	data, eof, a, err := f.Read(h, 0, 20000)
	if err != nil || !eof || len(data) != 10005 || !bytes.Equal(data[10000:], []byte("hello")) || a.Used != 4096 {
		t.Fatalf("read %d %v %+v %v", len(data), eof, a, err)
	}
	d, _, _, _, err := f.Mkdir(root, "d", SetAttr{}, 0, 0, ts(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := f.Rename(root, "a", d, "b", ts(4)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.Lookup(d, "b"); err != nil {
		t.Fatal(err)
	}
	ents, eof, _, _, err := f.ReadDir(d, 0, 0, 10, true)
	if err != nil || !eof || len(ents) != 3 {
		t.Fatalf("%+v %v %v", ents, eof, err)
	}
	mustCheck(t, f)
	if _, _, err := f.Remove(d, "b", ts(5)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Rmdir(root, "d", ts(6)); err != nil {
		t.Fatal(err)
	}
	r := mustCheck(t, f)
	t.Log(r)
}
