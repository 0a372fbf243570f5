package models

import (
	"context"
	"os"
	"strings"
	"testing"

	"strata/mpcal"
	"strata/mpcal/tlc"
)

// The Raft KV model (raftkv/RaftKV.tla, issue 30). RaftKV.cfg itself is
// checked by TestMPCalModelsMatchPlusCal with the other MPCal models.

// raftLong is set for the configurations too slow for make test (minutes
// under load): make test-long sets it.
var raftLong = os.Getenv("STRATA_RAFTKV_TLC_LONG") == "1"

func checkRaftKV(t *testing.T, cfgPath string) *tlc.Result {
	t.Helper()
	const spec = "raftkv/RaftKV.tla"
	src, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mpcal.ParseFile(spec, src)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := mpcal.ModelCheck(context.Background(), f, cfg, t.TempDir(), tlc.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %v %s, %d distinct / %d generated states, depth %d, %v",
		cfgPath, res.Outcome, res.Name, res.Distinct, res.Generated, res.Depth, res.Wall.Round(100e6))
	return res
}

// TestRaftKVElections: two servers may each start an election (no
// client); every invariant holds. Long: STRATA_RAFTKV_TLC_LONG=1.
func TestRaftKVElections(t *testing.T) {
	if !raftLong {
		t.Skip("about a minute of TLC: set STRATA_RAFTKV_TLC_LONG=1 (make test-long)")
	}
	res := checkRaftKV(t, "raftkv/RaftKV_Elections.cfg")
	if res.Outcome != tlc.OK {
		var b strings.Builder
		_ = tlc.Render(&b, res, nil)
		t.Fatalf("TLC found a problem:\n%s", b.String())
	}
	if res.Distinct != 26055 {
		t.Errorf("%d distinct states, want 26055 (the count recorded for these bounds)", res.Distinct)
	}
}

// TestRaftKVMutants: each mutant makes TLC report the violation of an
// expected invariant, with a trace. The log-check mutant needs a trace of
// about 30 steps (minutes of TLC) and runs with STRATA_RAFTKV_TLC_LONG=1.
func TestRaftKVMutants(t *testing.T) {
	mutants := []struct {
		cfg  string
		want []string
		long bool
	}{
		// A server votes twice in one term: two leaders in term 1.
		{"raftkv/RaftKV_BugDoubleVote.cfg", []string{"ElectionSafety"}, false},
		// Votes without the up-to-date log check: a server without the
		// committed put is elected and commits another entry at its index.
		{"raftkv/RaftKV_BugVoteAnyLog.cfg", []string{"StateMachineSafety", "GetSeesAckedPut", "LogMatching"}, true},
	}
	for _, m := range mutants {
		t.Run(strings.TrimPrefix(m.cfg, "raftkv/"), func(t *testing.T) {
			if m.long && !raftLong {
				t.Skip("minutes of TLC: set STRATA_RAFTKV_TLC_LONG=1 (make test-long)")
			}
			res := checkRaftKV(t, m.cfg)
			if res.Outcome != tlc.InvariantViolated {
				t.Fatalf("outcome %v (%s), want one of %v violated", res.Outcome, res.Message, m.want)
			}
			found := false
			for _, w := range m.want {
				found = found || res.Name == w
			}
			if !found {
				t.Errorf("invariant %q violated, want one of %v", res.Name, m.want)
			}
			if len(res.Trace) < 2 {
				t.Errorf("trace of %d states", len(res.Trace))
			}
		})
	}
}
