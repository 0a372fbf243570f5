package kv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/stack"
)

// TestTryTimeout: the try timeout starts at 1 s, then follows the
// measured round trips within its bounds, doubling per failed try.
func TestTryTimeout(t *testing.T) {
	c, err := NewClient(ClientConfig{Node: loopbackNode(t), Servers: []stack.Addr{"udp:127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.tryTimeout(0); got != initialAttemptTimeout {
		t.Fatalf("before any reply: %v, want %v", got, initialAttemptTimeout)
	}
	for range 50 {
		c.observe(time.Millisecond)
	}
	if got := c.tryTimeout(0); got != DefaultMinAttemptTimeout {
		t.Fatalf("after fast replies: %v, want the minimum %v", got, DefaultMinAttemptTimeout)
	}
	if got := c.tryTimeout(2); got != 4*DefaultMinAttemptTimeout {
		t.Fatalf("third try: %v, want %v", got, 4*DefaultMinAttemptTimeout)
	}
	if got := c.tryTimeout(20); got != DefaultAttemptTimeout {
		t.Fatalf("many tries: %v, want the maximum %v", got, DefaultAttemptTimeout)
	}
	for range 50 {
		c.observe(300 * time.Millisecond)
	}
	if got := c.tryTimeout(0); got < 300*time.Millisecond || got > DefaultAttemptTimeout {
		t.Fatalf("after 300 ms replies: %v", got)
	}
	if _, err := NewClient(ClientConfig{Node: loopbackNode(t)}); err != ErrNoServers {
		t.Fatalf("no servers: %v", err)
	}
}

// A servers file may name the files securing the links to its servers;
// an empty or half TLS section is refused with the file's name.
func TestServersFileSecurity(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "kv.json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f, err := LoadServersFile(write(`{"servers": ["udp:127.0.0.1:1"], "security": {"key_file": "cluster.key"}}`))
	if err != nil || len(f.Servers) != 1 || f.Security == nil || f.Security.KeyFile != "cluster.key" {
		t.Fatalf("a servers file with a key: %+v %v", f, err)
	}
	if f, err := LoadServersFile(write(`{"servers": ["udp:127.0.0.1:1"]}`)); err != nil || f.Security != nil {
		t.Fatalf("a servers file without security: %+v %v", f, err)
	}
	for body, want := range map[string]string{
		`{"servers": ["udp:127.0.0.1:1"], "security": {}}`:                   "security names no file",
		`{"servers": ["udp:127.0.0.1:1"], "security": {"tls_key": "k.pem"}}`: "needed together",
		`{"servers": [], "security": {"key_file": "k"}}`:                     ErrNoServers.Error(),
	} {
		p := write(body)
		if _, err := LoadServersFile(p); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want an error naming %s and %q", body, err, p, want)
		}
	}
}
