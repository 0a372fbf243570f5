package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/internal/stackbench"
)

// summarizeStack against a direct computation on random rounds: each
// figure is the difference (or ratio) of per-system medians over rounds,
// and a peer without results (JGroups failed every round) gives no ratio.
func TestSummarizeStack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rep := &stackReport{Ratios: map[string]float64{}, Extra: map[string]float64{}, ExtraP50: map[string]float64{}}
	type cell struct{ avg, p50, rps []float64 }
	cells := map[string]*cell{}
	for _, sys := range []string{"strata", "strata-event", "raw"} {
		c := &cell{}
		for range 5 {
			r := stackbench.RTTResult{System: sys, Transport: "udp", Callers: 1,
				AvgUs: 5 + 10*rng.Float64(), P50Us: 4 + 10*rng.Float64(), ReqPerSec: 1e5 * rng.Float64()}
			rep.Results = append(rep.Results, r)
			c.avg, c.p50, c.rps = append(c.avg, r.AvgUs), append(c.p50, r.P50Us), append(c.rps, r.ReqPerSec)
		}
		cells[sys] = c
	}
	med := func(xs []float64) float64 { ys := slices.Clone(xs); slices.Sort(ys); return ys[len(ys)/2] }
	summarizeStack(rep, []string{"udp"}, []int{1}, true)
	for sys, api := range map[string]string{"strata": "blocking", "strata-event": "event"} {
		key := "strata-raw udp callers=1 api=" + api
		if want := med(cells[sys].avg) - med(cells["raw"].avg); math.Abs(rep.Extra[key]-want) > 5e-4 {
			t.Errorf("%s mean: %v, want %v", key, rep.Extra[key], want)
		}
		if want := med(cells[sys].p50) - med(cells["raw"].p50); math.Abs(rep.ExtraP50[key]-want) > 5e-4 {
			t.Errorf("%s p50: %v, want %v", key, rep.ExtraP50[key], want)
		}
		rkey := "rtt strata/raw udp callers=1 api=" + api
		if want := med(cells["raw"].avg) / med(cells[sys].avg); math.Abs(rep.Ratios[rkey]-want) > 5e-4 {
			t.Errorf("%s: %v, want %v", rkey, rep.Ratios[rkey], want)
		}
		if _, ok := rep.Ratios["rtt strata/jgroups udp callers=1 api="+api]; ok {
			t.Errorf("a JGroups ratio without JGroups results")
		}
	}
}
