package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if got := percentile(d, 0.50); got != 50 {
		t.Fatalf("p50 = %v, want 50", got)
	}
	if got := percentile(d, 0.99); got != 99 {
		t.Fatalf("p99 = %v, want 99", got)
	}
	if got := percentile(d[:1], 0.99); got != 1 {
		t.Fatalf("p99 of one = %v, want 1", got)
	}
}

// TestCluster builds the binary, starts three members as separate
// processes (checking the settings each prints on its ready line: fsync
// on, etcd 3.6.16, its default snapshot count) on loopback ports 23791-23793 (client) / 23801-23803 (peer),
// runs put and get with 1 and 16 clients and 8 and 1024 byte values for
// 3 s each, and logs the JSON lines (go test -v -run TestCluster).
// Set ETCDPEER_BIN to use an already built binary.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster; skipped with -short")
	}
	tmp := t.TempDir()
	bin := os.Getenv("ETCDPEER_BIN")
	if bin == "" {
		bin = filepath.Join(tmp, "etcdpeer")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}

	const n = 3
	var cluster, endpoints []string
	for i := 1; i <= n; i++ {
		cluster = append(cluster, fmt.Sprintf("n%d=http://127.0.0.1:%d", i, 23800+i))
		endpoints = append(endpoints, fmt.Sprintf("http://127.0.0.1:%d", 23790+i))
	}

	ready := make(chan error, n)
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = p.Process.Kill()
				<-done
			}
		}
	})
	for i := 1; i <= n; i++ {
		cmd := exec.Command(bin, "member",
			"-name", fmt.Sprintf("n%d", i),
			"-dir", filepath.Join(tmp, fmt.Sprintf("n%d.etcd", i)),
			"-client-port", fmt.Sprint(23790+i),
			"-peer-port", fmt.Sprint(23800+i),
			"-cluster", strings.Join(cluster, ","))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, cmd)
		go func(i int) {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if js, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
					// The settings read back from the running member: the
					// benchmark prints them as etcd's config.
					var set map[string]any
					err := json.Unmarshal([]byte(js), &set)
					if err == nil && (set["unsafe_no_fsync"] != false || set["version"] != "3.6.16" || set["snapshot_count"] != float64(10000)) {
						err = fmt.Errorf("member n%d runs with unexpected settings %s", i, js)
					}
					ready <- err
					for sc.Scan() {
					}
					return
				}
			}
			ready <- fmt.Errorf("member n%d exited before ready", i)
		}(i)
	}
	timeout := time.After(60 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatal(err)
			}
		case <-timeout:
			t.Fatal("members not ready after 60s")
		}
	}

	run := 0
	for _, op := range []string{"create", "get"} {
		for _, clients := range []int{1, 16} {
			for _, size := range []int{8, 1024} {
				run++
				cmd := exec.Command(bin, "bench",
					"-endpoints", strings.Join(endpoints, ","),
					"-op", op, "-warmup", "500ms", "-clients", fmt.Sprint(clients),
					"-duration", "3s", "-size", fmt.Sprint(size),
					"-prefix", fmt.Sprintf("t%d", run))
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("bench %s c=%d s=%d: %v\n%s", op, clients, size, err, stderr.String())
				}
				line := strings.TrimSpace(string(out))
				if strings.Contains(line, "\n") {
					t.Fatalf("bench printed more than one line: %q", line)
				}
				var r result
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("bench output %q: %v", line, err)
				}
				if r.System != "etcd" || r.Op != op || r.Clients != clients || r.Size != size || r.Ops <= 0 || r.OpsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
					t.Fatalf("implausible result %q", line)
				}
				// fsync is on: every create is synced by a majority.
				if op == "create" && r.Syncs < uint64(r.OpsTotal)/uint64(clients) {
					t.Fatalf("%d disk syncs for %d creates by %d clients: fewer than one per round of requests", r.Syncs, r.OpsTotal, clients)
				}
				t.Log(line)
			}
		}
	}
}
