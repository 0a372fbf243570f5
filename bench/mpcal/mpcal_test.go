package mpcal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"strata/bench/kit"
	"strata/mpcal"
	"strata/mpcal/tlc"
)

func tools(t *testing.T) (java, jar string) {
	t.Helper()
	jar, err := tlc.Jar()
	if err != nil {
		t.Skipf("no TLA+ tools jar: %v", err)
	}
	if java, err = exec.LookPath("java"); err != nil {
		t.Skip("no java")
	}
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("no javac")
	}
	return java, jar
}

// The driver translates in one JVM exactly what the pcal.trans command
// writes, the same every run, and survives a bad input with an error.
func TestDriverMatchesCommand(t *testing.T) {
	java, jar := tools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	classes, err := compileDriver(ctx, jar, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	src := mpcal.Synthetic(120)
	withPC, err := strataTranslate("synthetic", src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "Synthetic.tla")
	if err := os.WriteFile(in, withPC, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := startDriver(ctx, java, jar, classes)
	if err != nil {
		t.Fatal(err)
	}
	defer d.stop()
	if !strings.Contains(d.ready.Pcal, "pcal.trans") || d.ready.Java == "" {
		t.Errorf("ready line %+v lacks the versions", d.ready)
	}
	l, err := d.load("s", in)
	if err != nil {
		t.Fatal(err)
	}
	times, err := d.run("s", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 3 || times[0] <= 0 {
		t.Fatalf("run times %v", times)
	}

	// The command, on a copy.
	cli := filepath.Join(t.TempDir(), "Synthetic.tla")
	if err := os.WriteFile(cli, withPC, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, java, "-cp", jar, "pcal.trans", "-nocfg", "Synthetic.tla")
	cmd.Dir = filepath.Dir(cli)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pcal.trans: %v\n%s", err, out)
	}
	got, err := os.ReadFile(cli)
	if err != nil {
		t.Fatal(err)
	}
	if sha256Hex(got) != l.SHA256 {
		t.Fatalf("the driver's translation differs from the command's")
	}
	if l.InLines != strings.Count(string(withPC), "\n") || l.OutLines != strings.Count(string(got), "\n") {
		t.Errorf("line counts %d -> %d, want %d -> %d", l.InLines, l.OutLines, strings.Count(string(withPC), "\n"), strings.Count(string(got), "\n"))
	}

	// A PlusCal syntax error is an error answer, and the driver goes on.
	bad := filepath.Join(dir, "Bad.tla")
	if err := os.WriteFile(bad, []byte("---- MODULE Bad ----\n(* --algorithm Bad { variables x = ; { skip } } *)\n\\* BEGIN TRANSLATION\n\\* END TRANSLATION\n====\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.load("b", bad); err == nil || !strings.Contains(err.Error(), "pcal.trans failed") {
		t.Fatalf("a bad module: %v", err)
	}
	if _, err := d.run("nope", 1); err == nil || !strings.Contains(err.Error(), "not loaded") {
		t.Fatalf("run of an unknown input: %v", err)
	}
	if _, err := d.run("s", 1); err != nil {
		t.Fatalf("after errors: %v", err)
	}
}

func TestNoJavacIsAClearError(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := compileDriver(context.Background(), "/nonexistent.jar", os.Stderr)
	if !errors.Is(err, ErrNoJavac) {
		t.Fatalf("err = %v, want ErrNoJavac", err)
	}
}

// The ratios hold pcal.trans's time over Strata's: Strata's median run
// of 2 ms against pcal.trans's 10 ms is 5 (Strata faster); a round
// without the cold row adds no cold ratio.
func TestRatiosAreOriented(t *testing.T) {
	rs := kit.Ratios{}
	addRound(rs, "x", Round{StrataRunsMs: []float64{1, 2, 9}, PcalRunsMs: []float64{10, 10, 30}, StrataColdMs: 20, PcalColdMs: 10})
	addRound(rs, "y", Round{StrataRunsMs: []float64{4}, PcalRunsMs: []float64{2}})
	rep := kit.NewReport("mpcal", nil)
	rs.Summarize(rep)
	want := map[string]float64{"time strata/pcal.trans x": 5, "cold process strata/pcal.trans x": 0.5, "time strata/pcal.trans y": 0.5}
	if !reflect.DeepEqual(rep.Ratios, want) {
		t.Fatalf("ratios %v, want %v", rep.Ratios, want)
	}
}
