package kv

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"strata/bench/kit"
)

// startGroup starts a shell that starts a sleep in its process group, as
// a server may start helpers, and returns it with the sleep's pid.
func startGroup(t *testing.T, marker string) (*kit.Proc, int) {
	t.Helper()
	p, err := kit.Start(context.Background(), kit.Cmd{Name: marker, Argv: []string{"sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!; wait", marker},
		Ready: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	child, err := strconv.Atoi(strings.TrimSpace(p.Ready))
	if err != nil {
		t.Fatalf("child pid %q: %v", p.Ready, err)
	}
	return p, child
}

func states(t *testing.T, pids ...int) string {
	t.Helper()
	var b []byte
	for _, pid := range pids {
		st, err := procState(pid)
		if err != nil {
			t.Fatalf("state of %d: %v", pid, err)
		}
		b = append(b, st)
	}
	return string(b)
}

// Pause stops every process of every group (the server and what it
// started), Resume runs them again, and Stop of a paused system resumes
// it first, so that it ends at once rather than after its grace period.
func TestPauseStopsWholeGroupsAndStopResumes(t *testing.T) {
	p1, c1 := startGroup(t, "bench-kv-pause-test-1")
	p2, c2 := startGroup(t, "bench-kv-pause-test-2")
	// Found among this process's children by command line, as etcd's
	// members are.
	found, err := childProcesses(func(argv []string) bool {
		return len(argv) == 4 && argv[0] == "sh" && strings.HasPrefix(argv[3], "bench-kv-pause-test-")
	})
	if err != nil || len(found) != 2 || !(found[0] == p1.Pid() && found[1] == p2.Pid() || found[0] == p2.Pid() && found[1] == p1.Pid()) {
		t.Fatalf("childProcesses = %v, %v; want %d and %d", found, err, p1.Pid(), p2.Pid())
	}
	s := &strataSystem{wor: []*kit.Proc{p1, p2}}
	ctx := context.Background()
	all := []int{p1.Pid(), c1, p2.Pid(), c2}
	if got := states(t, all...); strings.Contains(got, "T") {
		t.Fatalf("states before the pause %q", got)
	}
	if err := s.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	// The children are stopped with their leaders (waitState checks only
	// the leaders): give the signal a moment to reach them.
	deadline := time.Now().Add(5 * time.Second)
	for states(t, all...) != "TTTT" {
		if time.Now().After(deadline) {
			t.Fatalf("states after the pause %q, want TTTT", states(t, all...))
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for strings.Contains(states(t, all...), "T") {
		if time.Now().After(deadline) {
			t.Fatalf("states after the resume %q", states(t, all...))
		}
		time.Sleep(time.Millisecond)
	}
	if err := s.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	s.Stop()
	// A stopped shell would keep its SIGTERM pending for the 15 s grace.
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Stop of a paused system took %v", d)
	}
	for _, p := range []*kit.Proc{p1, p2} {
		select {
		case <-p.Exited():
		default:
			t.Errorf("process %d still runs after Stop", p.Pid())
		}
	}
}

// A group that is gone is not an error: a dead server uses nothing.
func TestSignalGoneGroup(t *testing.T) {
	p, _ := startGroup(t, "bench-kv-pause-test-gone")
	p.Stop()
	if err := stopGroups(context.Background(), []int{p.Pid()}); err != nil {
		t.Fatal(err)
	}
}

func TestParseStat(t *testing.T) {
	st, ppid, err := parseStat([]byte("123 (a) b (c)) T 45 6 7\n"))
	if err != nil || st != 'T' || ppid != 45 {
		t.Errorf("parseStat = %c %d %v", st, ppid, err)
	}
	for _, bad := range []string{"", "123 (x", "123 (x) TT 4", "123 (x) T x"} {
		if _, _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestIsMember(t *testing.T) {
	for argv, want := range map[string]bool{
		"peer member -name n1 -dir /d/etcd/n1 -client-port 1":  true,
		"peer member -name n1 -dir /d/etcd/n1/ -client-port 1": true,
		"peer member -name n1 -dir /d/etcd2/n1":                false,
		"peer bench -dir /d/etcd/n1":                           false,
		"peer member -dir":                                     false,
	} {
		if got := isMember(strings.Fields(argv), "/d/etcd"); got != want {
			t.Errorf("isMember(%q) = %v", argv, got)
		}
	}
}
