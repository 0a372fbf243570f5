package models

import (
	"context"
	"os"
	"testing"

	"strata/mpcal"
	"strata/mpcal/tlc"
)

// TestPBKVMutant: the primary-backup model (pbkv/PBKV.tla, which
// TestMPCalModelsMatchPlusCal checks with pbkv/PBKV.cfg) with BugAckEarly
// switched on (the primary answers a client before its backups
// acknowledged the pushed state) makes TLC report a violation of one of
// the model's client-visible invariants, with a trace.
func TestPBKVMutant(t *testing.T) {
	r := checkPBKV(t, "pbkv/PBKV_BugAckEarly.cfg")
	if r.Outcome != tlc.InvariantViolated {
		t.Fatalf("outcome %v (%s), want an invariant violated", r.Outcome, r.Message)
	}
	if r.Name != "AckedNotLost" && r.Name != "ReadSeesLastAcked" {
		t.Errorf("invariant %q violated, want AckedNotLost or ReadSeesLastAcked", r.Name)
	}
	if len(r.Trace) < 2 {
		t.Errorf("trace of %d states", len(r.Trace))
	}
}

// TestPBKVLong checks the model with two clients, each a put of its own
// key and a get of it (pbkv/PBKV2.cfg: 293,956 distinct states,
// 82 s with one worker on a loaded machine), when STRATA_PBKV_LONG is set
// (make test-long).
func TestPBKVLong(t *testing.T) {
	if os.Getenv("STRATA_PBKV_LONG") == "" {
		t.Skip("set STRATA_PBKV_LONG=1 (make test-long) to check PBKV2.cfg")
	}
	r := checkPBKV(t, "pbkv/PBKV2.cfg")
	if r.Outcome != tlc.OK {
		t.Fatalf("TLC on PBKV2.cfg: %v %s %s", r.Outcome, r.Name, r.Message)
	}
}

func checkPBKV(t *testing.T, cfgPath string) *tlc.Result {
	t.Helper()
	src, err := os.ReadFile("pbkv/PBKV.tla")
	if err != nil {
		t.Fatal(err)
	}
	f, err := mpcal.ParseFile("pbkv/PBKV.tla", src)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := mpcal.ModelCheck(context.Background(), f, cfg, t.TempDir(), tlc.Options{Workers: 1})
	if err != nil {
		t.Fatalf("TLC on %s: %v", cfgPath, err)
	}
	t.Logf("%s: %v %s, %d distinct / %d generated states, depth %d", cfgPath, r.Outcome, r.Name, r.Distinct, r.Generated, r.Depth)
	return r
}
