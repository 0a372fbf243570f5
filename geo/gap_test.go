package geo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"strata/internal/testseed"
)

// TestReducedCampaign runs two access sets of each type with a fixed seed
// (testseed: STRATA_SEED runs another, STRATA_SEEDS more) and checks what
// must hold whatever the data.
func TestReducedCampaign(t *testing.T) {
	for seed := range testseed.Each(t, 42) {
		o := CampaignOptions{Sets: 2, Seed: seed, F: 1, Gap: GapOptions{Grid: 4}}
		calls := 0
		o.Progress = func(done, total int) {
			calls++
			if done > total || total != 8 {
				t.Errorf("progress %d/%d", done, total)
			}
		}
		res, err := Campaign(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if calls != 8 {
			t.Errorf("progress called %d times, want 8", calls)
		}
		for _, typ := range AccessTypes {
			for _, r := range res.Sets[typ] {
				for k, g := range r.Gap {
					if g < -1e-9 || g > 1+1e-9 {
						t.Errorf("%s %v: gap %s = %v outside [0, 1]", typ, r.Access, k, g)
					}
				}
				if u := r.Gap[EPRSP]; u > min(r.Gap["epaxos"], r.Gap["rspaxos"])+1e-9 {
					t.Errorf("%s %v: the union's gap %v exceeds its parts' %v, %v", typ, r.Access, u, r.Gap["epaxos"], r.Gap["rspaxos"])
				}
				if r.ReadCap <= 0 || r.WriteCap < r.ReadCap/2 {
					t.Errorf("%s %v: caps %v/%v", typ, r.Access, r.ReadCap, r.WriteCap)
				}
			}
			if p, e := res.Median[typ]["pando"], res.Median[typ]["epaxos"]; p > e {
				t.Errorf("%s: median gap of Pando %.3f above EPaxos's %.3f", typ, p, e)
			}
		}
	}
	// Same seed, same access sets.
	rng1, rng2 := rand.New(rand.NewPCG(9, 1)), rand.New(rand.NewPCG(9, 1))
	for _, typ := range AccessTypes {
		a, err1 := RandomAccessSet(rng1, Default(), typ)
		b, err2 := RandomAccessSet(rng2, Default(), typ)
		if err1 != nil || err2 != nil || !slices.Equal(a, b) {
			t.Errorf("%s: %v %v vs %v %v", typ, a, err1, b, err2)
		}
	}
}

func TestAccessSetTypes(t *testing.T) {
	m := Default()
	rng := rand.New(rand.NewPCG(1, 1))
	for range 50 {
		for _, typ := range AccessTypes {
			a, err := RandomAccessSet(rng, m, typ)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) < 3 || len(a) > 5 {
				t.Errorf("%s: %d front-ends", typ, len(a))
			}
			in := func(g []string) bool {
				for _, s := range a {
					if slices.Contains(g, s) {
						return true
					}
				}
				return false
			}
			switch typ {
			case "NA":
				for _, s := range a {
					if !slices.Contains(naRegions, s) {
						t.Errorf("NA set has %s", s)
					}
				}
			case "NA-EU":
				if !in(naRegions) || !in(euRegions) {
					t.Errorf("NA-EU set %v", a)
				}
			case "NA-AS":
				if !in(naRegions) || !in(asRegions) {
					t.Errorf("NA-AS set %v", a)
				}
			}
			if typ == "NA-AS" || typ == "GL" {
				for _, x := range a {
					for _, y := range a {
						if x != y && m.RTT[m.Index(x)][m.Index(y)] < 20 {
							t.Errorf("%s set %v: %s and %s are %v ms apart", typ, a, x, y, m.RTT[m.Index(x)][m.Index(y)])
						}
					}
				}
			}
		}
	}
	if _, err := RandomAccessSet(rng, m, "EU-AS"); err == nil {
		t.Error("unknown type accepted")
	}
}

// TestGapOnMetricMatrix: with the triangle inequality, no protocol ever
// needs less storage than the bound.
func TestGapOnMetricMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	m := randomInstance(rng, 10, 3, true)
	var cands []string
	for i := range 10 {
		cands = append(cands, fmt.Sprintf("c%d", i))
	}
	r, err := GapVolume(context.Background(), Problem{Matrix: m, Access: []string{"x0", "x1", "x2"}, Candidates: cands, F: 1}, GapOptions{Grid: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.BelowBound != 0 {
		t.Errorf("%d points below the lower bound", r.BelowBound)
	}
	if len(r.Gap) != 4 {
		t.Errorf("gaps %v", r.Gap)
	}
}
