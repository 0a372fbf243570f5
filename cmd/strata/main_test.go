package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"strata/wor"
)

// The demo re-executes its own binary; under `go test` that binary is this
// test, so TestMain acts as the CLI when asked to.
func TestMain(m *testing.M) {
	if os.Getenv("STRATA_TEST_AS_CLI") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	c := rootCmd()
	var out bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&out)
	c.SetArgs(args)
	err := c.Execute()
	return out.String(), err
}

func TestBadFlagsAreClearErrors(t *testing.T) {
	badCluster := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badCluster, []byte(`{"directory": ["udp:127.0.0.1:1"], "partitions": [["udp:127.0.0.1:1"]], "replicas": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := [][]string{
		{"journal", "demo", "--rounds", "0"},
		{"journal", "demo", "--goroutines", "0"},
		{"journal", "demo", "--no-such-flag"},
		{"journal", "check", filepath.Join(t.TempDir(), "missing.img")},
		{"journal", "check"},
		{"bench", "journal", "--goroutines", "1,x"},
		{"bench", "journal", "--modes", "sometimes"},
		{"bench", "journal", "--rounds", "0"},
		{"bench", "nfs", "--peers", "zfs"},
		{"bench", "nfs", "--clients", "0"},
		{"bench", "wor", "--rounds", "0", "--no-etcd"},
		{"wor", "reconfigure", "x", "udp:127.0.0.1:1"},
		{"wor", "--cluster", filepath.Join(t.TempDir(), "missing.json"), "get", "1", "0"},
		{"wor", "--cluster", badCluster, "status"},
		{"wor", "get", "1"},
		{"nfs", "fsck", filepath.Join(t.TempDir(), "missing.img")},
		{"nfs", "serve", "--disk", filepath.Join(t.TempDir(), "new.img"), "--size", "1"},
		{"stack", "call", "--to", "udp:127.0.0.1:1", "--busy-poll", "-1s", "x"},
		{"stack", "serve", "--listen", "udp:127.0.0.1:0", "--busy-poll", "-1s"},
		{"bench", "stack", "--busy-poll", "-1us", "--code-only"},
		{"stack", "chat", "g", "--heartbeat", "-1s"},
		{"stack", "chat", "g", "--suspect", "-1s"},
		{"stack", "chat", "g", "--heartbeat", "1s", "--suspect", "1500ms"},
		{"stack", "chat", "g", "--props", "Total"},
		{"nonsense"},
	}
	for _, args := range cases {
		out, err := run(t, args...)
		if err == nil {
			t.Errorf("strata %s: no error", strings.Join(args, " "))
		}
		if strings.Contains(out, "panic") || (err != nil && strings.Contains(err.Error(), "panic")) {
			t.Errorf("strata %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func TestDemoAndCheck(t *testing.T) {
	t.Setenv("STRATA_TEST_AS_CLI", "1")
	dir := t.TempDir()
	out, err := run(t, "journal", "demo", "--dir", dir, "--rounds", "2", "--goroutines", "3")
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if !strings.Contains(out, "OK: 2 rounds of SIGKILL and recovery") {
		t.Fatalf("demo output lacks its verdict:\n%s", out)
	}
	out, err = run(t, "journal", "check", filepath.Join(dir, "journal.img"))
	if err != nil || !strings.Contains(out, "journal OK") {
		t.Fatalf("check: %v\n%s", err, out)
	}
	// A file that is not a journal is reported, not trusted.
	junk := filepath.Join(dir, "junk.img")
	os.WriteFile(junk, bytes.Repeat([]byte{0xAB}, 64*4096), 0o644)
	if _, err := run(t, "journal", "check", junk); err == nil {
		t.Fatal("check accepted a file of junk")
	}
}

// The trace is deterministic for a seed, shows every layer, and the
// message and the RPC arrive even on a lossy link.
func TestStackTrace(t *testing.T) {
	args := []string{"stack", "trace", "--size", "3000", "--loss", "0.2", "--seed", "7"}
	out1, err := run(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := run(t, args...)
	if out1 != out2 {
		t.Fatal("same seed, different traces")
	}
	for _, want := range []string{"↓ frag", "↑ pt2pt", "↑ app      Deliver sim:a len=3000", `reply: "re:ping" <nil>`, "delivered 1 message(s)"} {
		if !strings.Contains(out1, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
	fn, _ := run(t, append(args, "--functional")...)
	if strings.Count(fn, "↓ network") != strings.Count(out1, "↓ network") {
		t.Error("functional composition sent a different number of datagrams")
	}
	if _, err := run(t, "stack", "show", "Reliable,Telepathy"); err == nil {
		t.Error("unknown property accepted")
	}
}

// startServe runs "strata wor serve" as a child process (this test binary
// acting as the CLI) and returns it with the address it listens on.
func startServe(t *testing.T, listen, dir string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	p := exec.Command(os.Args[0], append([]string{"wor", "serve", "--listen", listen, "--dir", dir, "--blocks", "8192"}, extra...)...)
	p.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out, err := p.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on ") {
		p.Process.Kill()
		t.Fatalf("server did not start: %q %v", line, err)
	}
	return p, strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
}

// Three real wormserver processes with persistent state: one is killed
// with SIGKILL mid-run and restarted on its data, later a second one, and
// then the third is killed for good; every acknowledged write is readable
// from the two restarted servers, with the value first written.
func TestWorRealProcesses(t *testing.T) {
	dir := t.TempDir()
	var procs [3]*exec.Cmd
	var addrs [3]string
	for i := range procs {
		procs[i], addrs[i] = startServe(t, "udp:127.0.0.1:0", filepath.Join(dir, fmt.Sprint(i)))
	}
	defer func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
	}()
	servers := strings.Join(addrs[:], ",")
	c, n, err := worClient("", servers, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Alloc(ctx, 1, []byte("test")); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]string{}
	put := func(addr uint64, v string) {
		for attempt := 0; attempt < 20; attempt++ {
			cid, err := c.Capture(ctx, 1, addr)
			if err == nil {
				err = c.Write(ctx, 1, addr, []byte(v), cid)
			}
			var we *wor.WrittenError
			switch {
			case err == nil:
				acked[addr] = v
				return
			case errors.As(err, &we):
				acked[addr] = string(we.Value)
				return
			}
		}
		t.Fatalf("put %d never succeeded", addr)
	}
	for a := uint64(0); a < 40; a++ {
		put(a, fmt.Sprintf("v%d", a))
		if a == 20 {
			procs[1].Process.Signal(syscall.SIGKILL)
			procs[1].Wait()
		}
	}
	procs[1], _ = startServe(t, addrs[1], filepath.Join(dir, "1"))
	// Writes that find the register already written must keep the first value.
	for a := uint64(0); a < 40; a += 7 {
		put(a, "late")
	}
	// Kill and restart server 0 as well, then take server 2 away: the
	// only majority left is the two servers that came back from their
	// journals, so every value must have survived on disk.
	procs[0].Process.Signal(syscall.SIGKILL)
	procs[0].Wait()
	procs[0], _ = startServe(t, addrs[0], filepath.Join(dir, "0"))
	procs[2].Process.Signal(syscall.SIGKILL)
	procs[2].Wait()
	for a, want := range acked {
		got, err := c.Read(ctx, 1, a)
		if err != nil || string(got) != want {
			t.Fatalf("register %d: read %q, %v; acknowledged %q", a, got, err, want)
		}
	}
}

// TestWorReconfigureRealProcesses: three wormserver processes and a cluster
// file; a client keeps writing while one server is SIGKILLed and restarted,
// then SIGKILLed for good; a new one starts with --join and "strata wor reconfigure" (another process)
// replaces the dead one. Then a second old server is killed, so that the
// only majority left includes the new server: every acknowledged write
// must be readable, so the state moved to it; and a client started from
// the rewritten cluster file goes straight to the new configuration.
func TestWorReconfigureRealProcesses(t *testing.T) {
	dir := t.TempDir()
	var procs [4]*exec.Cmd
	var addrs [4]string
	for i := 0; i < 3; i++ {
		procs[i], addrs[i] = startServe(t, "udp:127.0.0.1:0", filepath.Join(dir, fmt.Sprint(i)))
	}
	procs[3], addrs[3] = startServe(t, "udp:127.0.0.1:0", filepath.Join(dir, "3"), "--join")
	defer func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
	}()
	file := filepath.Join(dir, "cluster.json")
	if err := writeClusterFile(file, &wor.ClusterConfig{Directory: addrs[:3], Partitions: [][]string{addrs[:3]}}); err != nil {
		t.Fatal(err)
	}
	c, n, err := worClient(file, "", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Alloc(ctx, 1, []byte("test")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[uint64]string{}
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for a := uint64(0); ; a++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			cid, err := c.Capture(ctx, 1, a)
			if err == nil {
				err = c.Write(ctx, 1, a, []byte(fmt.Sprintf("v%d", a)), cid)
			}
			if err == nil {
				mu.Lock()
				acked[a] = fmt.Sprintf("v%d", a)
				mu.Unlock()
			}
			if ctx.Err() != nil {
				writerDone <- ctx.Err()
				return
			}
		}
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitAcked := func(n int) {
		for count() < n {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitAcked(20)
	// Server 2 is killed and restarted from its journal while the client
	// writes; then it dies for good and is replaced.
	procs[2].Process.Signal(syscall.SIGKILL)
	procs[2].Wait()
	waitAcked(count() + 10)
	procs[2], _ = startServe(t, addrs[2], filepath.Join(dir, "2"))
	waitAcked(count() + 10)
	procs[2].Process.Signal(syscall.SIGKILL)
	procs[2].Wait()
	before := count()
	rc := exec.Command(os.Args[0], "wor", "reconfigure", "0", strings.Join([]string{addrs[0], addrs[1], addrs[3]}, ","), "--cluster", file, "--timeout", "500ms")
	rc.Env = append(os.Environ(), "STRATA_TEST_AS_CLI=1")
	out, err := rc.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "partition 0 is at epoch 1") {
		t.Fatalf("reconfigure: %v\n%s", err, out)
	}
	waitAcked(before + 20) // the client kept writing through the change
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	procs[1].Process.Signal(syscall.SIGKILL)
	procs[1].Wait()
	c2, n2, err := worClient(file, "", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	mu.Lock()
	defer mu.Unlock()
	for a, want := range acked {
		got, err := c2.Read(ctx, 1, a)
		if err != nil || string(got) != want {
			t.Fatalf("register %d: read %q, %v; acknowledged %q", a, got, err, want)
		}
	}
	t.Logf("%d acknowledged writes, %d before the reconfiguration", len(acked), before)
}
