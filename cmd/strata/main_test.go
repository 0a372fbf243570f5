package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	cases := [][]string{
		{"journal", "demo", "--rounds", "0"},
		{"journal", "demo", "--goroutines", "0"},
		{"journal", "demo", "--no-such-flag"},
		{"journal", "check", filepath.Join(t.TempDir(), "missing.img")},
		{"journal", "check"},
		{"bench", "journal", "--goroutines", "1,x"},
		{"bench", "journal", "--modes", "sometimes"},
		{"bench", "journal", "--rounds", "0"},
		{"nonsense"},
	}
	for _, args := range cases {
		if _, err := run(t, args...); err == nil {
			t.Errorf("strata %s: no error", strings.Join(args, " "))
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
