package main

import (
	"math/rand/v2"
	"slices"
	"testing"

	"strata/internal/nfsload"
)

// TestNFSRatios checks nfsRatios against medians computed here on random
// rounds: one ratio per cell that both systems measured, none for a cell
// the peer never finished, and the disk fraction for largefile writes.
func TestNFSRatios(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var rs []nfsload.Result
	vals := map[string][]float64{}
	add := func(server, workload string, clients int, round int) {
		v := 100 + rng.Float64()*900
		rs = append(rs, nfsload.Result{Server: server, Workload: workload, Clients: clients, Round: round, PerSec: v})
		k := server + "/" + workload + "/" + string(rune('0'+clients))
		vals[k] = append(vals[k], v)
	}
	for round := 1; round <= 3; round++ {
		for _, sys := range []string{"strata", "strata-async", "ganesha"} {
			for _, c := range []int{1, 4} {
				if sys == "ganesha" && c == 4 {
					continue // the peer never finished this cell
				}
				add(sys, "smallfile", c, round)
			}
			add(sys, "largefile-write", 1, round)
		}
		add("fio", "largefile-write", 1, round)
	}
	med := func(k string) float64 {
		xs := slices.Clone(vals[k])
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	got := nfsRatios(rs, []string{"strata", "strata-async", "ganesha"})
	want := map[string]float64{
		"smallfile strata/ganesha clients=1":       round3(med("strata/smallfile/1") / med("ganesha/smallfile/1")),
		"smallfile strata-async/ganesha clients=1": round3(med("strata-async/smallfile/1") / med("ganesha/smallfile/1")),
		"largefile-write strata/ganesha":           round3(med("strata/largefile-write/1") / med("ganesha/largefile-write/1")),
		"largefile-write strata-async/ganesha":     round3(med("strata-async/largefile-write/1") / med("ganesha/largefile-write/1")),
		"largefile-write strata/fio-disk":          round3(med("strata/largefile-write/1") / med("fio/largefile-write/1")),
	}
	if len(got) != len(want) {
		t.Errorf("got %d ratios, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
}
