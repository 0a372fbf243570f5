package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/kv"
)

// TestKVBadArguments: wrong arguments to the kv commands are clear
// errors, before any server is asked.
func TestKVBadArguments(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	cluster := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(cluster, []byte(`{"engine":"paxos","directory":["udp:127.0.0.1:1"],"partitions":[["udp:127.0.0.1:1"]]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "big") // one byte over kv.MaxValue
	if err := os.WriteFile(big, make([]byte, kv.MaxValue+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"kv", "put", "k"}, "no value: give it as an argument or --file"},
		{[]string{"kv", "put", "k", "v", "--file", missing}, "give one"},
		{[]string{"kv", "put", "k", "--file", missing}, "missing.json"},
		{[]string{"kv", "put", "k", "--file", big, "--servers", "udp:127.0.0.1:1"}, "value too large"},
		{[]string{"kv", "put", "k", "v", "w"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"kv", "get"}, "accepts 1 arg(s)"},
		{[]string{"kv", "delete", "a", "b"}, "accepts 1 arg(s)"},
		{[]string{"kv", "cas", "k", "x", "v"}, "VERSION \"x\""},
		{[]string{"kv", "cas", "k", "-1", "v"}, "unknown shorthand flag"},
		{[]string{"kv", "scan"}, "accepts between 1 and 2 arg(s)"},
		{[]string{"kv", "scan", "a", "--limit", "-3"}, "--limit -3"},
		{[]string{"kv", "watch"}, "needs a KEY or --prefix"},
		{[]string{"kv", "watch", "k", "--prefix", "p"}, "not both"},
		{[]string{"kv", "put", "", "v", "--servers", "udp:127.0.0.1:1"}, "empty key"},
		{[]string{"kv", "put", strings.Repeat("k", 4097), "v", "--servers", "udp:127.0.0.1:1"}, "key too large"},
		{[]string{"kv", "get", "k", "--servers", "nonsense"}, "want udp:HOST:PORT"},
		{[]string{"kv", "get", "k", "--servers-file", missing}, "missing.json"},
		{[]string{"kv", "serve", "--cluster", missing, "--id", "1"}, "missing.json"},
		{[]string{"kv", "serve", "--cluster", missing}, "--id"},
		// A wildcard listen address names no address to forward to.
		{[]string{"kv", "serve", "--cluster", cluster, "--id", "1", "--listen", "udp:0.0.0.0:0"}, "--advertise"},
	} {
		out, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strata %s: %v (output %q), want an error containing %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
}
