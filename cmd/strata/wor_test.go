package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"strata/wor"
)

// The client commands over five real wormservers with --engine ec: the
// default plan, --ec-k and a --plan file as strata geo plan --json
// prints it all read what was written; a plan that breaks a quorum rule,
// and ec flags without --engine ec, are refused with the reason.
func TestWorECCommandLine(t *testing.T) {
	dir := t.TempDir()
	servers := fiveWormservers(t, dir)
	good := filepath.Join(dir, "plan.json")
	os.WriteFile(good, []byte(`{"protocol": "pando", "f": 1, "sites": ["a", "b", "c", "d", "e"], "k": 2, "r": 3, "q1a": 2, "q1b": 3, "q2": 4, "read_ms": 1}`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"k": 3, "r": 2, "q1a": 3, "q1b": 3, "q2": 4}`), 0o644)
	ec := func(extra ...string) []string {
		return append(append([]string{"wor", "--engine", "ec"}, extra...), "--servers", servers, "--timeout", "2s")
	}
	// One segment per plan: splits of one plan are not splits of
	// another (a read under the wrong plan refuses them).
	for i, flags := range [][]string{nil, {"--ec-k", "3"}, {"--ec-k", "1"}, {"--plan", good}} {
		seg := fmt.Sprint(i + 1)
		if out, err := run(t, append(ec("alloc", seg), flags...)...); err != nil {
			t.Fatalf("alloc with %v: %v\n%s", flags, err, out)
		}
		if out, err := run(t, append(ec("put", seg, "0", "value-"+seg), flags...)...); err != nil {
			t.Fatalf("put with %v: %v\n%s", flags, err, out)
		}
		out, err := run(t, append(ec("get", seg, "0"), flags...)...)
		if err != nil || !strings.Contains(out, "value-"+seg) {
			t.Fatalf("get with %v: %v\n%s", flags, err, out)
		}
	}
	// Read under the wrong plan: the splits are refused, and the error
	// says so.
	if _, err := run(t, append(ec("get", "1", "0"), "--ec-k", "1")...); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a read under another plan: %v", err)
	}
	if _, err := run(t, append(ec("get", "1", "0"), "--plan", bad)...); err == nil || !strings.Contains(err.Error(), "q1b+q2>=n+k") {
		t.Fatalf("a plan breaking q1b+q2>=n+k: %v", err)
	}
	if _, err := run(t, append(ec("get", "1", "0"), "--ec-k", "6")...); err == nil {
		t.Fatal("--ec-k 6 over 5 servers accepted")
	}
	if _, err := run(t, "wor", "--engine", "paxos", "--ec-k", "3", "get", "1", "0", "--servers", servers); err == nil || !strings.Contains(err.Error(), "--engine ec") {
		t.Fatalf("--ec-k with paxos: %v", err)
	}
}

// strata wor ec-leader serves the leader fallback: clients started with
// --ec-leader still write and read (the leader is only used on a
// conflict, which wor's TestECLeaderFallback forces); --ec-leader
// without --engine ec is refused.
func TestWorECLeaderCommand(t *testing.T) {
	dir := t.TempDir()
	servers := fiveWormservers(t, dir)
	p := exec.Command(os.Args[0], "wor", "ec-leader", "--listen", "udp:127.0.0.1:0", "--servers", servers)
	p.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out, err := p.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on ") {
		t.Fatalf("leader did not start: %q %v", line, err)
	}
	leader := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	ec := func(extra ...string) []string {
		return append(append([]string{"wor", "--engine", "ec", "--ec-leader", leader}, extra...), "--servers", servers)
	}
	for _, args := range [][]string{ec("alloc", "1"), ec("put", "1", "0", "led"), ec("get", "1", "0")} {
		if out, err := run(t, args...); err != nil {
			t.Fatalf("strata %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, _ := run(t, ec("get", "1", "0")...); !strings.Contains(out, "led") {
		t.Fatalf("get: %s", out)
	}
	if _, err := run(t, "wor", "--ec-leader", leader, "get", "1", "0", "--servers", servers); err == nil || !strings.Contains(err.Error(), "--engine ec") {
		t.Fatalf("--ec-leader with paxos: %v", err)
	}
	// The same process is a delegate: a put through it is chosen, and a
	// second put of another value finds the first. A delegate that does
	// not answer costs a timeout, then the client writes itself.
	del := func(to string, extra ...string) []string {
		return append(append([]string{"wor", "--engine", "ec", "--ec-delegate", to}, extra...), "--servers", servers)
	}
	if out, err := run(t, del(leader, "put", "1", "1", "delegated")...); err != nil || !strings.Contains(out, "wrote 1/1") {
		t.Fatalf("delegated put: %v\n%s", err, out)
	}
	if out, err := run(t, del(leader, "put", "1", "1", "other")...); !errors.Is(err, wor.ErrWritten) || !strings.Contains(out, `"delegated"`) {
		t.Fatalf("second delegated put: %v\n%s", err, out)
	}
	if out, err := run(t, del("udp:127.0.0.1:9", "put", "1", "2", "fallback", "--timeout", "300ms")...); err != nil {
		t.Fatalf("put with a dead delegate: %v\n%s", err, out)
	}
	if out, _ := run(t, ec("get", "1", "2")...); !strings.Contains(out, "fallback") {
		t.Fatalf("get after the fallback: %s", out)
	}
	if _, err := run(t, "wor", "--ec-delegate", leader, "get", "1", "0", "--servers", servers); err == nil || !strings.Contains(err.Error(), "--engine ec") {
		t.Fatalf("--ec-delegate with paxos: %v", err)
	}
}

// fiveWormservers starts five persistent wormservers in dir (killed when
// the test ends) and returns their addresses, comma-separated.
func fiveWormservers(t *testing.T, dir string) string {
	t.Helper()
	var addrs []string
	for i := range 5 {
		p, a := startServe(t, "udp:127.0.0.1:0", filepath.Join(dir, fmt.Sprint(i)))
		t.Cleanup(func() { p.Process.Kill(); p.Wait() })
		addrs = append(addrs, a)
	}
	return strings.Join(addrs, ",")
}
