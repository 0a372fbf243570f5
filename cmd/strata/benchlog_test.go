package main

import (
	"strings"
	"testing"
)

// Bad --curves flags are refused before any server starts.
func TestBenchLogCurvesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--curve-appenders", "1,x"},
		{"--curve-appenders", "0"},
		{"--curve-servers", "0"},
		{"--curve-servers", "3,16"},
		{"--curve-records", "5"},
		{"--curve-appenders", "", "--curve-servers", ""},
		{"--value-size", "0"},
	} {
		argv := append([]string{"bench", "log", "--curves", "--dir", t.TempDir(), "--plot-dir", ""}, args...)
		out, err := run(t, argv...)
		if err == nil {
			t.Errorf("strata %s: no error\n%s", strings.Join(argv, " "), out)
		}
	}
}

// The command's help names every --curves flag and the files it draws.
func TestBenchLogHelpNamesCurveFlags(t *testing.T) {
	c := benchLogCmd()
	for _, s := range []string{"--curves", "--curve-appenders", "--curve-servers", "--curve-records", "--curve-server-records", "--plot-dir",
		"wormlog-latency-throughput.png", "wormlog-latency-servers.png", "--curves --quick"} {
		if !strings.Contains(c.Long, s) {
			t.Errorf("bench log's help does not mention %s", s)
		}
	}
}
