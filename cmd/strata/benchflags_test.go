package main

import (
	"errors"
	"testing"

	"strata/bench/kit"
)

// TestFailedCells: a report with a failed cell makes the command fail,
// one without does not, and an error of the run passes through.
func TestFailedCells(t *testing.T) {
	rep := kit.NewReport("x", kit.Settings{})
	if err := failedCells(rep, nil); err != nil {
		t.Fatalf("complete report: %v", err)
	}
	rep.Fail("round 1 etcd A clients=1: exit status 1")
	if err := failedCells(rep, nil); err == nil {
		t.Fatal("a report with a failed cell gave no error")
	}
	run := errors.New("run failed")
	if err := failedCells(rep, run); err != run {
		t.Fatalf("error %v, want the run's", err)
	}
}
