package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Sealed links end to end: three wormserver processes started with a key
// file (through the environment, as strata up passes it) serve clients
// given the same file; a client with another key, or with none, gets no
// answer. The keys rotate while the servers run (they reload the file):
// a new primary, then the old key retired, and the cluster keeps serving.
// The key commands refuse what they must: an existing file for new, a
// file readable by others, a key on the command line (there is no flag
// for it).
func TestSealedCluster(t *testing.T) {
	dir := t.TempDir()
	keys, other := filepath.Join(dir, "cluster.key"), filepath.Join(dir, "other.key")
	for _, f := range []string{keys, other} {
		if out, err := run(t, "keys", "new", f); err != nil || !strings.Contains(out, "mode 0600") {
			t.Fatalf("keys new: %v\n%s", err, out)
		}
	}
	if _, err := run(t, "keys", "new", keys); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("keys new over an existing file: %v", err)
	}
	t.Setenv(keyFileEnv, keys) // the servers inherit it
	var addrs []string
	for i := range 3 {
		p, a := startServe(t, "udp:127.0.0.1:0", filepath.Join(dir, string(rune('a'+i))))
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
		addrs = append(addrs, a)
	}
	t.Setenv(keyFileEnv, "")
	servers := strings.Join(addrs, ",")
	wor := func(key string, args ...string) (string, error) {
		all := []string{"wor"}
		if key != "" {
			all = append(all, "--key-file", key)
		}
		return run(t, append(append(all, args...), "--servers", servers, "--timeout", "400ms")...)
	}
	if out, err := wor(keys, "alloc", "1"); err != nil {
		t.Fatalf("alloc with the key: %v\n%s", err, out)
	}
	if out, err := wor(keys, "put", "1", "0", "sealed"); err != nil {
		t.Fatalf("put with the key: %v\n%s", err, out)
	}
	for _, k := range []string{other, ""} {
		if out, err := wor(k, "get", "1", "0"); err == nil {
			t.Fatalf("get with key file %q answered: %s", k, out)
		}
	}
	// Rotation while the servers run.
	if out, err := run(t, "keys", "rotate", keys); err != nil || !strings.Contains(out, "primary key 2, 2 key(s)") {
		t.Fatalf("rotate: %v\n%s", err, out)
	}
	time.Sleep(2*keyReload + 500*time.Millisecond) // the servers reload it
	if out, err := wor(keys, "put", "1", "1", "rotated"); err != nil {
		t.Fatalf("put after the rotation: %v\n%s", err, out)
	}
	if out, err := run(t, "keys", "retire", keys); err != nil || !strings.Contains(out, "1 key(s)") {
		t.Fatalf("retire: %v\n%s", err, out)
	}
	time.Sleep(2*keyReload + 500*time.Millisecond)
	if out, err := wor(keys, "get", "1", "0"); err != nil || !strings.Contains(out, "sealed") {
		t.Fatalf("get after retiring the old key: %v\n%s", err, out)
	}
	if out, err := run(t, "keys", "show", keys); err != nil || !strings.Contains(out, "key 2 (primary") || strings.Contains(out, "key 1") {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if err := os.Chmod(keys, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "keys", "show", keys); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a world-readable key file: %v", err)
	}
	if _, err := wor(keys, "get", "1", "0"); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a client with a world-readable key file: %v", err)
	}
}
