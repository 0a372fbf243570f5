package kit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOrderRotates(t *testing.T) {
	sys := []string{"a", "b", "c"}
	first := map[string]int{}
	for r := 0; r < 6; r++ {
		o := Order(r, sys)
		if len(o) != 3 || !slices.Contains(o, "a") || !slices.Contains(o, "b") || !slices.Contains(o, "c") {
			t.Fatalf("round %d: %v is not a permutation", r, o)
		}
		first[o[0]]++
	}
	for _, s := range sys {
		if first[s] != 2 {
			t.Errorf("%s went first %d times in 6 rounds, want 2", s, first[s])
		}
	}
	if got := Order(1, []string{"strata", "peer"}); !slices.Equal(got, []string{"peer", "strata"}) {
		t.Errorf("two systems do not alternate: round 1 = %v", got)
	}
	if !slices.Equal(sys, []string{"a", "b", "c"}) {
		t.Errorf("Order changed its argument: %v", sys)
	}
}

// Ratios pair rounds: the median of per-round ratios, not the ratio of
// medians, oriented so that > 1 means Strata is better.
func TestRatiosPairPerRound(t *testing.T) {
	rs := Ratios{}
	// Throughput: Strata 10, 20, 30; peer 5, 40, 10 -> 2, 0.5, 3.
	for _, p := range [][2]float64{{10, 5}, {20, 40}, {30, 10}} {
		rs.Higher("ops", p[0], p[1])
	}
	// Latency: Strata 2 µs, peer 4 µs -> 2 (Strata better).
	rs.Lower("lat", 2, 4)
	rs.Higher("skipped", 0, 3) // a failed cell has no pair
	rep := NewReport("x", nil)
	rs.Summarize(rep)
	if rep.Ratios["ops"] != 2 || rep.Spread["ops"] != [2]float64{0.5, 3} {
		t.Errorf("ops: %v %v, want 2 (0.5-3)", rep.Ratios["ops"], rep.Spread["ops"])
	}
	if rep.Ratios["lat"] != 2 {
		t.Errorf("lat: %v, want 2", rep.Ratios["lat"])
	}
	if _, ok := rep.Ratios["skipped"]; ok {
		t.Errorf("a pair with a zero side gave a ratio")
	}
}

func TestMedianAndRound(t *testing.T) {
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("Median of an even count = %v, want 2.5", m)
	}
	if m := Median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("Median = %v, want 3", m)
	}
	if r := Round3(1.23456); math.Abs(r-1.235) > 1e-12 {
		t.Errorf("Round3 = %v", r)
	}
}

func TestReportJSONShape(t *testing.T) {
	rep := NewReport("demo", Settings{"rounds": 3})
	rep.System("strata", Settings{"durability": "fdatasync"})
	rep.System("peer", Settings{"durability": "fsync"})
	Ratios{"ops strata/peer": {1.5}}.Summarize(rep)
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bench", "config", "results", "ratios"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, buf.String())
		}
	}
	cfg := m["config"].(map[string]any)
	if cfg["run"].(map[string]any)["rounds"] != float64(3) || cfg["peer"].(map[string]any)["durability"] != "fsync" {
		t.Errorf("config: %v", cfg)
	}
	buf.Reset()
	rep.PrintConfig(&buf)
	rep.PrintRatios(&buf)
	for _, want := range []string{"durability=fdatasync", "durability=fsync", "ops strata/peer", "1.500"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestStartWaitsForReadyLine(t *testing.T) {
	ctx := context.Background()
	p, err := Start(ctx, Cmd{Name: "echoer", Argv: []string{"sh", "-c", "echo starting; echo 'listening on 1.2.3.4:5'; cat; echo bye"},
		Stdin: true, Ready: func(l string) bool { return strings.HasPrefix(l, "listening on ") }})
	if err != nil {
		t.Fatal(err)
	}
	if p.Ready != "listening on 1.2.3.4:5" {
		t.Errorf("Ready = %q", p.Ready)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop of a child that exits at its stop signal: %v", err)
	}
	if !strings.Contains(p.Tail(10), "starting") {
		t.Errorf("Tail lacks the line before the ready line: %q", p.Tail(10))
	}
	if p.Stop() != p.Stop() {
		t.Errorf("Stop is not idempotent")
	}
}

func TestStartFailsWhenChildExits(t *testing.T) {
	_, err := Start(context.Background(), Cmd{Name: "dies", Argv: []string{"sh", "-c", "echo 'cannot bind' >&2; exit 3"},
		Ready: func(l string) bool { return l == "ready" }})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "cannot bind") {
		t.Fatalf("err = %v, want an early exit with the child's stderr", err)
	}
}

func TestStartTimesOut(t *testing.T) {
	t0 := time.Now()
	_, err := Start(context.Background(), Cmd{Name: "mute", Argv: []string{"sleep", "30"},
		Ready: func(l string) bool { return true }, ReadyTimeout: 200 * time.Millisecond, Grace: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not ready after") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("timed-out start took %v", d)
	}
}

// Stop kills what the child started too (its process group), after the
// grace period when the child ignores its stop signal.
func TestStopKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild")
	script := "trap '' TERM; sleep 60 & echo $! > " + pidFile + "; echo ready; wait"
	p, err := Start(context.Background(), Cmd{Name: "stubborn", Argv: []string{"sh", "-c", script},
		Ready: func(l string) bool { return l == "ready" }, Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Stop of a child ignoring SIGTERM: %v, want a kill report", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still runs after Stop", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOutputCarriesStderr(t *testing.T) {
	out, err := Output(context.Background(), Cmd{Argv: []string{"sh", "-c", "echo one; echo '{\"x\":1}'"}})
	if err != nil || string(LastLine(out)) != `{"x":1}` {
		t.Fatalf("Output = %q, %v", out, err)
	}
	_, err = Output(context.Background(), Cmd{Name: "worker", Argv: []string{"sh", "-c", "echo 'no disk' >&2; exit 1"}})
	if err == nil || !strings.Contains(err.Error(), "no disk") || !strings.Contains(err.Error(), "worker") {
		t.Fatalf("err = %v", err)
	}
}

// The build cache key changes with any file of the module and ignores
// nested modules.
func TestHashModule(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := func() string {
		h := sha256.New()
		if err := hashModule(h, dir); err != nil {
			t.Fatal(err)
		}
		return string(h.Sum(nil))
	}
	write("go.mod", "module x\n")
	write("main.go", "package main\n")
	a := sum()
	write("nested/go.mod", "module y\n")
	write("nested/y.go", "package y\n")
	if sum() != a {
		t.Errorf("a nested module changed the hash")
	}
	write("sub/z.go", "package sub\n")
	b := sum()
	if b == a {
		t.Errorf("a new file did not change the hash")
	}
	write("main.go", "package main // changed\n")
	if sum() == b {
		t.Errorf("an edit did not change the hash")
	}
}
