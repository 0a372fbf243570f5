package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/internal/certs"
	"strata/kv"
	"strata/wor"
)

// writeJSON writes v as JSON to path (mode 0644: cluster and servers
// files are not secret).
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSecurityFromClusterFile: a cluster file's security section names
// the key file, relative to the cluster file's directory, and a client
// given the file seals with it; --key-file and STRATA_KEY_FILE override it
// (either way round); without it the client gets no answer and its error
// says the servers require sealed links; a missing key file, one readable
// by others, or an empty section are clear errors naming the cluster
// file. A servers file's section is checked the same way.
func TestSecurityFromClusterFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	key, other := filepath.Join(conf, "keys", "cluster.key"), filepath.Join(dir, "other.key")
	if err := os.MkdirAll(filepath.Dir(key), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{key, other} {
		if _, err := run(t, "keys", "new", f); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(keyFileEnv, key) // the server inherits it
	p, addr := startServe(t, "udp:127.0.0.1:0", filepath.Join(dir, "srv"))
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	t.Setenv(keyFileEnv, "")
	cluster := func(name string, sec *wor.Security) string {
		path := filepath.Join(conf, name)
		writeJSON(t, path, wor.ClusterConfig{Directory: []string{addr}, Partitions: [][]string{{addr}}, Security: sec})
		return path
	}
	good := cluster("cluster.json", &wor.Security{KeyFile: "keys/cluster.key"})
	wr := func(file string, args ...string) (string, error) {
		return run(t, append([]string{"wor", "--cluster", file}, append(args, "--timeout", "400ms")...)...)
	}
	if out, err := wr(good, "alloc", "1"); err != nil {
		t.Fatalf("alloc through the cluster file's key: %v\n%s", err, out)
	}
	if out, err := wr(good, "put", "1", "0", "named"); err != nil {
		t.Fatalf("put through the cluster file's key: %v\n%s", err, out)
	}
	// Overrides: a flag or the environment wins over the file.
	if out, err := run(t, "wor", "--cluster", good, "--key-file", other, "get", "1", "0", "--timeout", "400ms"); err == nil {
		t.Fatalf("--key-file with another key did not override the file's: %s", out)
	}
	t.Setenv(keyFileEnv, other)
	if out, err := wr(good, "get", "1", "0"); err == nil {
		t.Fatalf("%s with another key did not override the file's: %s", keyFileEnv, out)
	}
	otherFile := cluster("other.json", &wor.Security{KeyFile: other})
	t.Setenv(keyFileEnv, key)
	if out, err := wr(otherFile, "get", "1", "0"); err != nil || !strings.Contains(out, "named") {
		t.Fatalf("%s did not override the file's key: %v\n%s", keyFileEnv, err, out)
	}
	t.Setenv(keyFileEnv, "")
	if out, err := wr(otherFile, "get", "1", "0"); err == nil {
		t.Fatalf("the file's other key was answered: %s", out)
	}
	// No key: no answer, and the error says why.
	plain := cluster("plain.json", nil)
	if _, err := wr(plain, "get", "1", "0"); err == nil || !strings.Contains(err.Error(), addr+" require sealed links: give --key-file") {
		t.Fatalf("a client without the key: %v", err)
	}
	// Bad files, each named in the error.
	missing := cluster("missing.json", &wor.Security{KeyFile: "nope.key"})
	if _, err := wr(missing, "get", "1", "0"); err == nil || !strings.Contains(err.Error(), missing+" names key_file nope.key") || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("a missing key file: %v", err)
	}
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := wr(good, "get", "1", "0"); err == nil || !strings.Contains(err.Error(), good+" names key_file") || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a key file readable by its group: %v", err)
	}
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := cluster("empty.json", &wor.Security{})
	if _, err := wr(empty, "get", "1", "0"); err == nil || !strings.Contains(err.Error(), "security names no file") {
		t.Fatalf("an empty security section: %v", err)
	}
	if err := os.WriteFile(filepath.Join(conf, "unreadable.key"), []byte("{}"), 0o200); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root reads anything
		unreadable := cluster("unreadable.json", &wor.Security{KeyFile: "unreadable.key"})
		if _, err := wr(unreadable, "get", "1", "0"); err == nil || !strings.Contains(err.Error(), "names key_file unreadable.key") {
			t.Fatalf("an unreadable key file: %v", err)
		}
	}
	// A servers file's section: the same checks, before any traffic.
	sf := filepath.Join(conf, "kv.json")
	writeJSON(t, sf, map[string]any{"servers": []string{"udp:127.0.0.1:1"}, "security": wor.Security{KeyFile: "nope.key"}})
	if _, err := run(t, "kv", "get", "k", "--servers-file", sf, "--timeout", "200ms"); err == nil || !strings.Contains(err.Error(), "servers file "+sf+" names key_file nope.key") {
		t.Fatalf("a servers file naming a missing key: %v", err)
	}
}

// TestTLSFromClusterFile: a cluster file's security section names a TLS
// directory (relative to the file) and a client given the file runs TLS
// with it against a TLS wormserver; without it the client is refused
// and told to give TLS files; a missing directory or a node key readable
// by others is an error naming the cluster file.
func TestTLSFromClusterFile(t *testing.T) {
	dir := t.TempDir()
	tlsd := filepath.Join(dir, "tls")
	if out, err := run(t, "certs", "init", tlsd, "--hosts", "127.0.0.1"); err != nil {
		t.Fatalf("certs init: %v\n%s", err, out)
	}
	t.Setenv(tlsDirEnv, tlsd)
	p, addr := startServe(t, "tcp:127.0.0.1:0", filepath.Join(dir, "srv"))
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	t.Setenv(tlsDirEnv, "")
	cluster := func(name string, sec *wor.Security) string {
		path := filepath.Join(dir, name)
		writeJSON(t, path, wor.ClusterConfig{Directory: []string{addr}, Partitions: [][]string{{addr}}, Security: sec})
		return path
	}
	wr := func(file string, args ...string) (string, error) {
		return run(t, append([]string{"wor", "--cluster", file}, append(args, "--timeout", "400ms")...)...)
	}
	good := cluster("cluster.json", &wor.Security{TLSDir: "tls"})
	if out, err := wr(good, "alloc", "1"); err != nil {
		t.Fatalf("alloc with the cluster file's TLS directory: %v\n%s", err, out)
	}
	if _, err := wr(cluster("plain.json", nil), "alloc", "2"); err == nil || !strings.Contains(err.Error(), "require TLS") {
		t.Fatalf("a client without TLS: %v", err)
	}
	missing := cluster("missing.json", &wor.Security{TLSDir: "nope"})
	if _, err := wr(missing, "alloc", "2"); err == nil || !strings.Contains(err.Error(), missing+" names TLS files") {
		t.Fatalf("a missing TLS directory: %v", err)
	}
	if _, err := wr(cluster("partial.json", &wor.Security{TLSCA: "tls/ca.pem"}), "alloc", "2"); err == nil || !strings.Contains(err.Error(), "tls_ca, tls_cert and tls_key are needed together") {
		t.Fatalf("a CA without certificate and key: %v", err)
	}
	if err := os.Chmod(filepath.Join(tlsd, certs.KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wr(good, "alloc", "2"); err == nil || !strings.Contains(err.Error(), good+" names TLS files") || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a node key readable by others: %v", err)
	}
}

// TestUpSecure: strata up --secure makes the cluster key in its data
// folder (mode 0600), names it in the cluster and servers files, and
// seals every server: kv put and get through the servers file, and a wor
// alloc through the cluster file, work with no key flag; a client without
// the key (the servers by address) gets no answer and an error saying
// they require sealed links.
func TestUpSecure(t *testing.T) { testUpSecure(t, "udp") }

// TestUpSecureTCP is TestUpSecure with --transport tcp: the links also
// run TLS with certificates up makes in DIR/tls, named in the files; a
// client with the key but without the certificates is refused and told
// to give TLS files. Another whole cluster of processes, so it runs only
// with STRATA_UP_TCP=1 (make test-long).
func TestUpSecureTCP(t *testing.T) {
	if os.Getenv("STRATA_UP_TCP") == "" {
		t.Skip("STRATA_UP_TCP=1 runs it (make test-long)")
	}
	testUpSecure(t, "tcp")
}

func testUpSecure(t *testing.T, network string) {
	dir := t.TempDir()
	up := startUp(t, dir, "--secure", "--transport", network)
	key := filepath.Join(dir, upKeyFile)
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the cluster key: %v %v", st, err)
	}
	if !strings.Contains(up.banner, "sealed links: every server seals with the cluster key "+key) {
		t.Fatalf("strata up --secure does not say how clients seal:\n%s", up.banner)
	}
	named := `"key_file": "cluster.key"`
	if network == "tcp" {
		if st, err := os.Stat(filepath.Join(dir, upTLSDir, certs.KeyFile)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("the node key: %v %v", st, err)
		}
		if !strings.Contains(up.banner, "TLS: every tcp: link runs TLS 1.3 with the certificates in "+filepath.Join(dir, upTLSDir)) {
			t.Fatalf("strata up --secure --transport tcp does not say how clients run TLS:\n%s", up.banner)
		}
		named += `,
    "tls_dir": "tls"`
	}
	for _, f := range []string{"cluster.json", "kv.json", "log.json", "tx.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.Contains(string(b), named) {
			t.Fatalf("%s does not name the files: %v\n%s", f, err, b)
		}
	}
	kvFile := filepath.Join(dir, "kv.json")
	cli := func(want string, args ...string) {
		t.Helper()
		out, code := runCLI(t, args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("strata %s: exit %d, output %q; want %q in it", strings.Join(args, " "), code, out, want)
		}
	}
	cli(`put "k": version 1`, "kv", "put", "k", "v", "--servers-file", kvFile, "--timeout", "25s")
	cli(`"k" = "v" (version 1`, "kv", "get", "k", "--servers-file", kvFile, "--timeout", "25s")
	cli("allocated segment 7", "wor", "--cluster", filepath.Join(dir, "cluster.json"), "alloc", "7")
	f, err := kv.LoadServersFile(kvFile)
	if err != nil {
		t.Fatal(err)
	}
	servers := strings.Join(f.Servers, ",")
	out, code := runCLI(t, "kv", "get", "k", "--servers", servers, "--timeout", "3s")
	want := "require sealed links: give --key-file"
	if network == "tcp" {
		want = "require TLS: give --tls-dir"
	}
	if code == 0 || !strings.Contains(out, want) {
		t.Fatalf("a client without the key: exit %d:\n%s", code, out)
	}
	if network == "tcp" { // the key alone does not do
		out, code := runCLI(t, "kv", "get", "k", "--servers", servers, "--timeout", "3s", "--key-file", key)
		if code == 0 || !strings.Contains(out, "require TLS: give --tls-dir") {
			t.Fatalf("a client with the key but no certificates: exit %d:\n%s", code, out)
		}
	}
}

// strata up refuses, before starting anything, what it cannot secure: an
// unknown transport, --secure with --geo, TLS files with UDP servers, and
// a cluster key in its folder that others may read.
func TestUpSecureRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, upKeyFile), []byte(`{"keys": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tlsd := filepath.Join(t.TempDir(), "tls")
	if _, err := run(t, "certs", "init", tlsd); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--transport", "quic"}, `--transport "quic": want udp or tcp`},
		{[]string{"--secure", "--geo", "az_eastus,az_westeurope,az_southeastasia"}, "--secure is not supported with --geo"},
		{[]string{"--tls-dir", tlsd}, "TLS is for tcp: links: give --transport tcp"},
		{[]string{"--secure"}, "readable by others"},
	} {
		_, err := run(t, append([]string{"up", "--dir", dir, "--port", "0", "--nfs-port", "0"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("up %s: %v, want an error mentioning %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("up left %d files in its folder, want only the key", len(entries))
	}
}
