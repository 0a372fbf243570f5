package wor

import (
	"strings"
	"testing"

	"strata/internal/testseed"
)

// TestECLinearizableUnderFaults runs the linearizability campaign of
// TestLinearizableUnderFaults (loss, duplication, reordering, a
// partition; in the persistent variant a crash and recovery) over the ec
// engine with several plans, and with one server whose replies carry a
// damaged split (a flipped byte, a wrong index or a truncation): reads
// and captures must ignore it and still return only chosen values.
func TestECLinearizableUnderFaults(t *testing.T) {
	k3 := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 4, Q2: 4}
	for _, v := range []struct {
		name       string
		plan       ECPlan
		persistent bool
		corrupt    bool
		seeds      int
	}{
		{"ec-k3", k3, false, false, 200},
		{"ec-k2", ECPlan{K: 2, R: 3, Q1a: 2, Q1b: 3, Q2: 4}, false, false, 150},
		{"ec-k1", ECPlan{K: 1, R: 2, Q1a: 2, Q1b: 2, Q2: 2}, false, false, 100},
		{"ec-persistent", k3, true, false, 100},
		{"ec-corrupt", k3, false, true, 150},
	} {
		t.Run(v.name, func(t *testing.T) {
			total := 0
			outcomes := map[string]int{}
			for seed := range testseed.Each(t, testseed.Fresh(v.seeds)...) {
				o := linOpts{engine: "ec", persistent: v.persistent, plan: v.plan, corrupt: -1, outcomes: outcomes}
				if v.corrupt {
					o.corrupt = int(seed % uint64(v.plan.N()))
				}
				n, err := linRunWith(t, seed, o)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				total += n
			}
			t.Logf("%s: %d operations checked: %v", v.name, total, outcomes)
			// A campaign where nothing is read back or written proves
			// nothing: require each kind of outcome.
			for _, k := range []string{"ok", "value", "unwritten", "written"} {
				if outcomes[k] == 0 {
					t.Errorf("no operation ended %q", k)
				}
			}
		})
	}
}

// TestECCampaignCatchesBrokenPlan shows that the campaign detects a plan
// whose Phase 1b and Phase 2 quorums share fewer than K servers: with
// q1b=2, q2=3 over five servers and K=3 (Q1b+Q2 = 5 < n+K = 8; built
// without Validate), a capture can miss a chosen value's splits and
// choose another, and some seed must show it.
func TestECCampaignCatchesBrokenPlan(t *testing.T) {
	bad := ECPlan{K: 3, R: 2, Q1a: 3, Q1b: 2, Q2: 3}
	if err := bad.Validate(5); err == nil {
		t.Fatal("the broken plan passes Validate")
	}
	for seed := range uint64(40) {
		_, err := linRunWith(t, seed, linOpts{engine: "ec", plan: bad, unchecked: true, corrupt: -1})
		if err != nil {
			if !strings.Contains(err.Error(), "linearizable") && !strings.Contains(err.Error(), "two values") {
				t.Fatalf("seed %d: not a safety violation: %v", seed, err)
			}
			t.Logf("seed %d caught the broken plan: %.200s", seed, err)
			return
		}
	}
	t.Fatal("no seed of 40 caught a plan that breaks q1b+q2>=n+k")
}
