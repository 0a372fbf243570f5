package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Bad flags of the journal, mpcal and geo benchmarks fail before anything
// runs, naming the flag.
func TestBenchJournalMpcalGeoBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"bench", "journal", "--peer-barrier", "sync_file_range"}, "--peer-barrier"},
		{[]string{"bench", "journal", "--peer-barrier", "fdatasync,"}, "--peer-barrier"},
		{[]string{"bench", "journal", "--flush-every", "-1"}, "--flush-every"},
		{[]string{"bench", "journal", "--log-blocks", "0"}, "--log-blocks"},
		{[]string{"bench", "journal", "--goroutines", "0"}, "--goroutines"},
		{[]string{"bench", "journal", "--worker"}, "--file"},
		{[]string{"bench", "mpcal", "--runs", "0"}, "--runs"},
		{[]string{"bench", "mpcal", "--warmup", "-1"}, "--warmup"},
		{[]string{"bench", "mpcal", "--sizes", "10"}, "--sizes"},
		{[]string{"bench", "mpcal", "--rounds", "0"}, "--rounds"},
		{[]string{"bench", "geo", "--rounds", "0"}, "--rounds"},
		{[]string{"bench", "geo", "--cases", "pando/cost"}, "--cases"},
		{[]string{"bench", "geo", "--highs-time-limit", "-1"}, "--highs-time-limit"},
		{[]string{"bench", "geo", "--sets", "0"}, "--sets"},
	}
	for _, c := range cases {
		_, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("strata %s: error %v, want one naming %s", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// The hidden worker mode runs Strata's side of one journal cell and
// prints its result as JSON.
func TestBenchJournalWorker(t *testing.T) {
	out, err := run(t, "bench", "journal", "--worker", "--file", filepath.Join(t.TempDir(), "j.img"),
		"--g", "2", "--duration", "100ms", "--wait=true", "--log-blocks", "256")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res struct {
		System     string  `json:"system"`
		Goroutines int     `json:"goroutines"`
		Wait       bool    `json:"wait"`
		Ops        int     `json:"ops"`
		OpsPerSec  float64 `json:"ops_per_sec"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("worker output %q: %v", out, err)
	}
	if res.System != "strata" || res.Goroutines != 2 || !res.Wait || res.Ops == 0 || res.OpsPerSec <= 0 {
		t.Fatalf("worker result %+v", res)
	}
}
