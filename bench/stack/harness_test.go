package stackbench

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"strata/bench/kit"
)

// overheads against a direct computation on random rounds: each figure is
// the difference of per-system medians over rounds (an odd and an even
// number of rounds, whose median is the mean of the middle two), and a
// cell without raw results gives none.
func TestOverheads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rounds := range []int{5, 4} {
		res := &Results{Overhead: map[string]float64{}, OverheadP50: map[string]float64{}}
		type cell struct{ mean, p50 []float64 }
		cells := map[string]*cell{}
		for _, sys := range []string{sysStrata, sysStrataEvent, sysRaw} {
			c := &cell{}
			for r := range rounds {
				x := RTTResult{System: sys, Transport: "udp", Callers: 1, Round: r + 1,
					MeanUs: 5 + 10*rng.Float64(), P50Us: 4 + 10*rng.Float64()}
				res.RoundTrips = append(res.RoundTrips, x)
				c.mean, c.p50 = append(c.mean, x.MeanUs), append(c.p50, x.P50Us)
			}
			cells[sys] = c
		}
		// A TCP cell of Strata alone: no overhead for it.
		res.RoundTrips = append(res.RoundTrips, RTTResult{System: sysStrata, Transport: "tcp", Callers: 1, Round: 1, MeanUs: 9})
		med := func(xs []float64) float64 {
			ys := slices.Clone(xs)
			slices.Sort(ys)
			if n := len(ys); n%2 == 0 {
				return (ys[n/2-1] + ys[n/2]) / 2
			}
			return ys[len(ys)/2]
		}
		overheads(res, Config{Transports: []string{"udp", "tcp"}, Callers: []int{1}})
		for sys, api := range map[string]string{sysStrata: "blocking", sysStrataEvent: "event"} {
			key := "strata-raw udp callers=1 api=" + api
			if want := med(cells[sys].mean) - med(cells[sysRaw].mean); math.Abs(res.Overhead[key]-want) > 5e-4 {
				t.Errorf("%d rounds, %s mean: %v, want %v", rounds, key, res.Overhead[key], want)
			}
			if want := med(cells[sys].p50) - med(cells[sysRaw].p50); math.Abs(res.OverheadP50[key]-want) > 5e-4 {
				t.Errorf("%d rounds, %s p50: %v, want %v", rounds, key, res.OverheadP50[key], want)
			}
			if _, ok := res.Overhead["strata-raw tcp callers=1 api="+api]; ok {
				t.Errorf("an overhead for a cell without raw results")
			}
		}
	}
}

// Every ratio pairs Strata with a peer of the same transport and callers
// in the same round: a JGroups TCP result never stands in for a missing
// JGroups UDP one (the mistake the issue names), nor one callers count for
// another, and each ratio is the peer's mean over Strata's (> 1: Strata
// faster), summarized per round.
func TestRatiosPairSameTransport(t *testing.T) {
	rs := kit.Ratios{}
	mk := func(sys, kind string, callers int, mean float64) RTTResult {
		return RTTResult{System: sys, Transport: kind, Callers: callers, MeanUs: mean}
	}
	// Round 1: JGroups measured only over TCP, and only for one caller.
	cellRatios(rs, []RTTResult{mk(sysStrata, "udp", 1, 10), mk(sysRaw, "udp", 1, 8)})
	cellRatios(rs, []RTTResult{mk(sysStrata, "udp", 8, 20), mk(sysStrataEvent, "udp", 8, 16), mk(sysRaw, "udp", 8, 30)})
	cellRatios(rs, []RTTResult{mk(sysStrata, "tcp", 1, 12), mk(sysRaw, "tcp", 1, 9), mk(sysJGroups, "tcp", 1, 60)})
	cellRatios(rs, []RTTResult{mk(sysStrata, "tcp", 8, 25), mk(sysStrataEvent, "tcp", 8, 20), mk(sysRaw, "tcp", 8, 40)})
	for k := range rs {
		if strings.Contains(k, "jgroups") && k != "rtt strata/jgroups tcp callers=1 api=blocking" {
			t.Errorf("ratio %q pairs Strata with a JGroups cell of another transport or callers count", k)
		}
	}
	if got := rs["rtt strata/jgroups tcp callers=1 api=blocking"]; len(got) != 1 || got[0] != 5 {
		t.Errorf("tcp callers=1 jgroups ratios %v, want [5] (60/12)", got)
	}
	if _, ok := rs["rtt strata/jgroups udp callers=1 api=blocking"]; ok {
		t.Error("a UDP Strata cell was paired with JGroups over TCP")
	}
	// Round 2: JGroups over UDP now; the UDP ratio is UDP's, the TCP
	// ratio keeps only round 1's pair.
	cellRatios(rs, []RTTResult{mk(sysStrata, "udp", 1, 10), mk(sysRaw, "udp", 1, 9), mk(sysJGroups, "udp", 1, 40)})
	if got := rs["rtt strata/jgroups udp callers=1 api=blocking"]; len(got) != 1 || got[0] != 4 {
		t.Errorf("udp callers=1 jgroups ratios %v, want [4] (40/10)", got)
	}
	if got := rs["rtt strata/jgroups tcp callers=1 api=blocking"]; len(got) != 1 {
		t.Errorf("tcp callers=1 jgroups ratios %v, want round 1's only", got)
	}
	if got := rs["rtt strata/raw udp callers=8 api=event"]; len(got) != 1 || got[0] != 30.0/16 {
		t.Errorf("udp callers=8 event raw ratios %v, want [%v]", got, 30.0/16)
	}
	if got := rs["rtt strata/raw udp callers=1 api=blocking"]; len(got) != 2 || got[0] != 0.8 || got[1] != 0.9 {
		t.Errorf("udp callers=1 raw ratios %v, want [0.8 0.9] (one per round)", got)
	}
	rep := kit.NewReport("stack", nil)
	rs.Summarize(rep)
	if got := rep.Ratios["rtt strata/raw udp callers=1 api=blocking"]; got != 0.85 {
		t.Errorf("summarized ratio %v, want the median of 0.8 and 0.9", got)
	}
}
