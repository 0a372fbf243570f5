package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"strata/internal/certs"
	"strata/internal/freeport"
	"strata/wor"
)

// TLS on TCP end to end: `strata certs init` makes a CA and a node
// certificate; three wormserver processes started with the directory
// (through the environment, as strata up passes it) on tcp: addresses
// serve clients given the same directory, and refuse a client without it
// (whose error names TLS) or with another CA's certificates. A key file
// readable by others, and TLS on a udp: address, are refused.
func TestTLSCluster(t *testing.T) {
	dir := t.TempDir()
	tlsd, other := filepath.Join(dir, "tls"), filepath.Join(dir, "other")
	for _, d := range []string{tlsd, other} {
		if out, err := run(t, "certs", "init", d, "--hosts", "127.0.0.1,localhost", "--nodes", "1"); err != nil || !strings.Contains(out, "node-1") {
			t.Fatalf("certs init: %v\n%s", err, out)
		}
	}
	if _, err := run(t, "certs", "init", tlsd); err == nil || !strings.Contains(err.Error(), "already holds a CA") {
		t.Fatalf("certs init over a CA: %v", err)
	}
	if out, err := run(t, "certs", "node", tlsd, "client", "--hosts", "127.0.0.1"); err != nil || !strings.Contains(out, filepath.Join(tlsd, "client")) {
		t.Fatalf("certs node: %v\n%s", err, out)
	}
	for _, k := range []string{certs.KeyFile, certs.CAKeyFile, filepath.Join("client", certs.KeyFile), filepath.Join("node-1", certs.KeyFile)} {
		if st, err := os.Stat(filepath.Join(tlsd, k)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", k, st.Mode(), err)
		}
	}

	t.Setenv(tlsDirEnv, filepath.Join(tlsd, "node-1")) // the servers inherit it
	var addrs []string
	for i := range 3 {
		p, a := startServe(t, "tcp:127.0.0.1:0", filepath.Join(dir, string(rune('a'+i))))
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
		addrs = append(addrs, a)
	}
	t.Setenv(tlsDirEnv, "")
	servers := strings.Join(addrs, ",")
	wor := func(tlsDir string, args ...string) (string, error) {
		all := []string{"wor"}
		if tlsDir != "" {
			all = append(all, "--tls-dir", tlsDir)
		}
		return run(t, append(append(all, args...), "--servers", servers, "--timeout", "400ms")...)
	}
	if out, err := wor(tlsd, "alloc", "1"); err != nil {
		t.Fatalf("alloc with TLS: %v\n%s", err, out)
	}
	if out, err := wor(tlsd, "put", "1", "0", "over-tls"); err != nil {
		t.Fatalf("put with TLS: %v\n%s", err, out)
	}
	if out, err := wor(filepath.Join(tlsd, "client"), "get", "1", "0"); err != nil || !strings.Contains(out, "over-tls") {
		t.Fatalf("get with another node's certificate of the CA: %v\n%s", err, out)
	}
	if out, err := wor("", "get", "1", "0"); err == nil || !strings.Contains(err.Error(), "require TLS") {
		t.Fatalf("get without TLS: %v\n%s", err, out)
	}
	if out, err := wor(other, "get", "1", "0"); err == nil {
		t.Fatalf("get with another CA's certificates answered: %s", out)
	}
	if _, err := run(t, "wor", "--tls-dir", tlsd, "get", "1", "0", "--servers", "udp:127.0.0.1:1", "--timeout", "100ms"); err == nil || !strings.Contains(err.Error(), "TLS is for tcp") {
		t.Fatalf("TLS on udp: %v", err)
	}
	if err := os.Chmod(filepath.Join(tlsd, certs.KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wor(tlsd, "get", "1", "0"); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a world-readable key: %v", err)
	}
}

// The key-value service over TLS: wormservers and kv servers on tcp
// addresses with a TLS directory (inherited through the environment);
// a kv client with the directory writes and reads, one without it is
// refused with an error naming TLS.
func TestTLSKV(t *testing.T) {
	dir := t.TempDir()
	tlsd := filepath.Join(dir, "tls")
	if _, err := run(t, "certs", "init", tlsd, "--hosts", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	t.Setenv(tlsDirEnv, tlsd)
	var worAddrs []string
	for i := range 3 {
		p, a := startServe(t, "tcp:127.0.0.1:0", filepath.Join(dir, fmt.Sprint("wor", i)))
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
		worAddrs = append(worAddrs, a)
	}
	cluster := filepath.Join(dir, "cluster.json")
	if err := writeClusterFile(cluster, &wor.ClusterConfig{Engine: "paxos", Directory: worAddrs, Partitions: [][]string{worAddrs}}); err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.TCP(3)
	if err != nil {
		t.Fatal(err)
	}
	var kvAddrs []string
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, port := range ports {
		addr := fmt.Sprintf("tcp:127.0.0.1:%d", port)
		kvAddrs = append(kvAddrs, addr)
		p := &strataProc{name: fmt.Sprintf("kv server %d", i+1), logPath: filepath.Join(dir, fmt.Sprintf("kv-%d.log", i+1)),
			args: []string{"kv", "serve", "--listen", addr, "--cluster", cluster, "--id", fmt.Sprint(i + 1)}}
		t.Cleanup(p.kill)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.start()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Setenv(tlsDirEnv, "")
	servers := strings.Join(kvAddrs, ",")
	if out, err := run(t, "kv", "--tls-dir", tlsd, "put", "k", "over-tls", "--servers", servers); err != nil {
		t.Fatalf("kv put with TLS: %v\n%s", err, out)
	}
	if out, err := run(t, "kv", "--tls-dir", tlsd, "get", "k", "--servers", servers); err != nil || !strings.Contains(out, "over-tls") {
		t.Fatalf("kv get with TLS: %v\n%s", err, out)
	}
	if out, err := run(t, "kv", "get", "k", "--servers", servers, "--timeout", "1s"); err == nil || !strings.Contains(err.Error(), "require TLS") {
		t.Fatalf("kv get without TLS: %v\n%s", err, out)
	}
}
