package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"strata/geo"
)

func TestGeoPlanTableAndJSON(t *testing.T) {
	args := []string{"geo", "plan", "--access-set", "az_eastus,az_westeurope,az_southeastasia", "--f", "1", "--read", "100ms", "--storage", "3"}
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"protocol pando", "k = ", "quorums 1a/1b/2", "az_southeastasia", "delegate", "optimal write"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var pl geo.Plan
	if err := json.Unmarshal([]byte(out), &pl); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	// The JSON plan is complete enough to be checked on its own.
	p := geo.Problem{Access: []string{"az_eastus", "az_westeurope", "az_southeastasia"}, F: 1, ReadBound: 100, StorageBound: 3,
		Protocol: geo.Pando, Objective: geo.MinWrite}
	if err := pl.Check(p); err != nil {
		t.Errorf("plan from JSON fails its check: %v", err)
	}
	if pl.ReadMs > 100 || pl.Storage > 3 {
		t.Errorf("plan breaks the bounds: %+v", pl)
	}
}

func TestGeoBadFlags(t *testing.T) {
	cases := [][]string{
		{"geo", "plan", "--read", "100ms", "--storage", "3"},                                                    // no access set
		{"geo", "plan", "--access-set", "az_eastus,az_mars", "--read", "100ms", "--storage", "3"},               // unknown region
		{"geo", "plan", "--access-set", "az_eastus", "--read", "100ms", "--write", "1s", "--storage", "3"},      // three bounds
		{"geo", "plan", "--access-set", "az_eastus", "--read", "100ms"},                                         // one bound
		{"geo", "plan", "--access-set", "az_eastus", "--read", "fast", "--storage", "3"},                        // bad duration
		{"geo", "plan", "--access-set", "az_eastus", "--read", "-5", "--storage", "3"},                          // negative
		{"geo", "plan", "--access-set", "az_eastus", "--read", "100ms", "--storage", "0.5"},                     // storage < 1
		{"geo", "plan", "--access-set", "az_eastus", "--read", "100ms", "--storage", "3", "--f", "20"},          // f too big
		{"geo", "plan", "--access-set", "az_eastus", "--read", "100ms", "--storage", "3", "--protocol", "raft"}, // protocol
		{"geo", "plan", "--access-set", "az_eastus", "--read", "1ms", "--storage", "3"},                         // infeasible
		{"geo", "plan", "--access-set", "az_eastus", "--minimize", "cost", "--read", "100ms"},                   // no object size
		{"geo", "plan", "--access-set", "az_eastus", "--read", "100ms", "--storage", "3", "--matrix", "/nonexistent"},
		{"geo", "gapvolume", "--types", "EU"},
		{"geo", "gapvolume", "--sets", "0"},
		{"geo", "tradeoffs", "--access-set", "az_eastus", "--from", "200ms", "--to", "100ms"},
	}
	for _, c := range cases {
		out, err := run(t, c...)
		if err == nil {
			t.Errorf("%v: no error\n%s", c, out)
			continue
		}
		if strings.Contains(err.Error(), "panic") {
			t.Errorf("%v: %v", c, err)
		}
	}
}

func TestGeoTradeoffsPlotAndGap(t *testing.T) {
	png := filepath.Join(t.TempDir(), "fig2.png")
	out, err := run(t, "geo", "tradeoffs", "--access-set", "az_centralus,az_eastus,az_westus", "--from", "60ms", "--to", "100ms", "--step", "20ms", "--plot", png)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "(a) pando") || strings.Count(out, "\n") < 4 {
		t.Errorf("tradeoffs table:\n%s", out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Errorf("plot: %v", err)
	}
	out, err = run(t, "geo", "gapvolume", "--access-set", "az_centralus,az_eastus,az_westus", "--grid", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, a := range []string{"pando", "epaxos", "rspaxos", "ep∪rsp"} {
		if !strings.Contains(out, a) {
			t.Errorf("gapvolume output lacks %s:\n%s", a, out)
		}
	}
}
