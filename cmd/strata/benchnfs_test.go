package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Bad flags of bench nfs are errors that name the flag and what it takes.
func TestBenchNFSBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--peers", "zfs"}, `--peers: unknown peer "zfs" (want ganesha, gonfs`},
		{[]string{"--clients", "0"}, "--clients"},
		{[]string{"--rounds", "0"}, "--rounds 0"},
		{[]string{"--large-mb", "0"}, "--large-mb 0"},
		{[]string{"--duration", "0s"}, "--duration 0s"},
		{[]string{"--cell-timeout", "-1s"}, "--cell-timeout -1s"},
		{[]string{"--app-src", filepath.Join(t.TempDir(), "missing")}, "--app-src"},
	} {
		_, err := run(t, append([]string{"bench", "nfs"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bench nfs %s: %v, want an error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// bench nfs without peers runs Strata's server and the null server as
// child processes of this binary (TestMain acts as the CLI for them) and
// prints one JSON report with Strata's largefile as a fraction of the
// null server's and no smallfile on the null server.
func TestBenchNFSStrataAndNull(t *testing.T) {
	if testing.Short() {
		t.Skip("formats a 4 GiB journal file and runs two servers")
	}
	t.Setenv("STRATA_TEST_AS_CLI", "1")
	out, err := run(t, "bench", "nfs", "--no-peers", "--async=false", "--fio=false", "--clients", "1", "--duration", "200ms",
		"--rounds", "1", "--large-mb", "2", "--app-src", "none", "--plot", "", "--dir", t.TempDir(), "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The progress lines share out with the JSON: the report is the
	// last line.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep struct {
		Bench   string                    `json:"bench"`
		Config  map[string]map[string]any `json:"config"`
		Ratios  map[string]float64        `json:"ratios"`
		Results struct {
			Runs []struct {
				Server, Workload string
			} `json:"runs"`
			Targets []struct {
				Ratio string `json:"ratio"`
			} `json:"targets"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Bench != "nfs" || rep.Config["strata"]["durability"] == nil || rep.Config["null"] == nil || rep.Config["run"] == nil {
		t.Errorf("report %+v lacks the systems' settings", rep.Config)
	}
	for _, k := range []string{"largefile-write strata/null", "largefile-read strata/null"} {
		if rep.Ratios[k] <= 0 {
			t.Errorf("no ratio %s: %v", k, rep.Ratios)
		}
	}
	ran := map[string]bool{}
	for _, r := range rep.Results.Runs {
		ran[r.Server+" "+r.Workload] = true
	}
	for _, want := range []string{"strata smallfile", "strata largefile-write", "null largefile-read"} {
		if !ran[want] {
			t.Errorf("no %s result: %v", want, ran)
		}
	}
	if ran["null smallfile"] {
		t.Error("the null server ran smallfile")
	}
	if len(rep.Results.Targets) == 0 {
		t.Error("no targets in the report")
	}
}
