package models

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"strata/mpcal/tlc"
)

// Models of Strata's own protocols (issue 31): plain TLA+ specs, each
// checked with its configuration X.cfg, and mutants X_BugY.cfg that switch
// on one deliberate mistake (a Bug* constant of the spec) and must make TLC
// report a violation of the named invariant.

type ownModel struct {
	spec     string // path of the .tla
	cfg      string // its configuration ("": the spec's X.cfg)
	distinct int64  // distinct states TLC 2.18 finds with cfg (1 worker)
	// mutants: config file -> the invariants (or temporal properties)
	// TLC may report as violated (the first one found depends on the
	// search order).
	mutants map[string][]string
	// long: larger configurations, checked only by TestOwnModelsLong
	// (make test-long), each expected to pass.
	long []string
	// longMutants: mutants too costly for make test (as mutants), checked
	// by TestOwnModelsLong.
	longMutants map[string][]string
}

var ownModels = []ownModel{
	{
		spec:     "journal/JournalWAL.tla",
		distinct: 17042,
		mutants: map[string][]string{
			// The logger advances diskEnd (Flush returns) before its barrier:
			// a crash drops the record of an acknowledged operation.
			"journal/JournalWAL_BugAckBeforeBarrier.cfg": {"AckedDurable"},
			// The installer writes the start header without a barrier after
			// the home writes: a crash keeps the new start and loses them.
			"journal/JournalWAL_BugNoInstallBarrier.cfg": {"RecoveredPrefix", "AckedDurable"},
			// The logger header names the end of the record being written:
			// a crash keeps the header and tears the record.
			"journal/JournalWAL_BugEndHeaderAhead.cfg": {"NoCorruption"},
			// Absorption into frozen updates (GoJournal §8.6): a record or an
			// installation mixes operations.
			"journal/JournalWAL_BugAbsorbFrozen.cfg": {"RecoveredPrefix", "AckedDurable"},
		},
	},
	{
		spec:     "wor/WORPaxos.tla",
		distinct: 30070,
		mutants: map[string][]string{
			// An acceptor accepts a ballot below its promise: a capture's
			// promise no longer keeps an older ballot from choosing another
			// value after the capture found nothing.
			"wor/WORPaxos_BugAcceptBelowPromise.cfg": {"WriteOnce", "Agreement", "ReturnsChosen"},
		},
	},
	{
		spec:     "wor/WORPaxos.tla",
		cfg:      "wor/WORPaxosTrim.cfg",
		distinct: 50920,
		mutants: map[string][]string{
			// A trim forgets the registers but the server keeps answering:
			// a later capture there finds nothing and writes its own value.
			"wor/WORPaxosTrim_BugTrimForgets.cfg": {"WriteOnce", "Agreement", "ReturnsChosen"},
		},
	},
	{
		spec:     "wor/WORPaxos.tla",
		cfg:      "wor/WORPaxosSeg.cfg",
		distinct: 29979,
	},
	{
		spec:     "wor/WORPaxos.tla",
		cfg:      "wor/WORPaxosReconfig.cfg",
		distinct: 213622,
		mutants: map[string][]string{
			// The reconfiguration dumps the old servers without sealing
			// them: a value chosen in the old epoch after the dump is missing
			// from the new servers, which let another value be chosen.
			"wor/WORPaxosReconfig_BugNoSeal.cfg": {"WriteOnce", "Agreement", "ReturnsChosen"},
		},
	},
	{
		spec:     "chain/WORChain.tla",
		distinct: 15775,
		mutants: map[string][]string{
			// Write ignores what the capture found at the head: a second
			// writer replaces a value already returned.
			"chain/WORChain_BugWriteOwn.cfg": {"WriteOnce"},
			// Reads at the head: a value returned before it reached the
			// rest of the chain would not survive the head's loss.
			"chain/WORChain_BugReadAtHead.cfg": {"Durable"},
			// A server restarts without its registers: the head forgets the
			// value and accepts another one.
			"chain/WORChain_BugRestartEmpty.cfg": {"WriteOnce"},
		},
		long: []string{"chain/WORChainLong.cfg"},
	},
	{
		spec:     "ec/WOREC.tla",
		distinct: 9524,
		mutants: map[string][]string{
			// A plan whose Phase 2 quorum breaks Q1b + Q2 >= N + K: a Phase
			// 1b quorum holds one split of a chosen value, recovers nothing
			// and lets another value be chosen.
			"ec/WOREC_BugQ2.cfg": {"WriteOnce", "Agreement", "ReturnsChosen", "Q1bRebuilds"},
		},
		// WORECDelegate.cfg (partial delegation: 17,175 states, about 17 s)
		// is here to keep make test within its budget.
		long: []string{"ec/WORECDelegate.cfg", "ec/WORECLong.cfg", "ec/WORECLong3.cfg"},
		longMutants: map[string][]string{
			// Recovery counts splits per ballot, not per value: a value
			// chosen at one ballot and partly rewritten at a higher one
			// has too few splits at each, and a read answers unwritten
			// (255,603 states to the violation, depth 17).
			"ec/WORECCount_BugCountByBallot.cfg": {"ReadsSeeChosen", "WriteOnce", "Agreement"},
		},
	},
	{
		spec:     "ec/WOREC.tla",
		cfg:      "ec/WORECRead.cfg",
		distinct: 8410,
		mutants: map[string][]string{
			// A read returns the value it recovered from a Phase 1b quorum
			// without writing it back: a value not chosen is returned.
			"ec/WORECRead_BugReadNoWriteBack.cfg": {"ReturnsChosen", "WriteOnce", "ReadsSeeChosen"},
		},
	},
	{
		spec:     "wormtx/WormTXE3.tla",
		distinct: 4339,
		mutants: map[string][]string{
			// A peer commits on its own yes without the others' votes.
			"wormtx/WormTXE3_BugPartialVotes.cfg": {"CommitOnlyIfAllYes", "Atomicity"},
			// Resolving only reads the silent participant's register: a
			// participant that crashed before its vote landed blocks the
			// others for ever.
			"wormtx/WormTXE3_BugReadOnlyResolve.cfg": {"Termination"},
		},
		long: []string{"wormtx/WormTXE3Long.cfg"},
	},
}

// temporalProps are the temporal properties of the models: TLC reports a
// violated one without naming it ("Temporal properties were violated"),
// so a mutant expecting one of these accepts an unnamed temporal
// violation (its configuration checks no other temporal property).
var temporalProps = []string{"Termination"}

func runOwn(t *testing.T, spec, cfg string) *tlc.Result {
	t.Helper()
	// Read the files here so that go test's cache sees them (TLC reads
	// them in another process).
	for _, f := range []string{spec, cfg} {
		if f == "" {
			f = strings.TrimSuffix(spec, ".tla") + ".cfg"
		}
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	r, err := tlc.Check(context.Background(), tlc.Options{Spec: spec, Config: cfg, Workers: 1})
	if err != nil {
		t.Fatalf("TLC on %s with %s: %v", spec, cfg, err)
	}
	if cfg == "" {
		cfg = strings.TrimSuffix(spec, ".tla") + ".cfg"
	}
	t.Logf("%s with %s: %v %s, %d distinct / %d generated states, depth %d, %v",
		spec, filepath.Base(cfg), r.Outcome, r.Name, r.Distinct, r.Generated, r.Depth, r.Wall.Round(100e6))
	return r
}

// TestOwnModelsHold: every model passes TLC with its configuration, in the
// recorded number of distinct states.
func TestOwnModelsHold(t *testing.T) {
	for _, m := range ownModels {
		name := m.cfg
		if name == "" {
			name = strings.TrimSuffix(m.spec, ".tla") + ".cfg"
		}
		t.Run(name, func(t *testing.T) {
			r := runOwn(t, m.spec, m.cfg)
			if r.Outcome != tlc.OK {
				var b strings.Builder
				_ = tlc.Render(&b, r, nil)
				t.Fatalf("TLC found a problem in %s:\n%s", m.spec, b.String())
			}
			if r.Distinct != m.distinct {
				t.Errorf("%d distinct states, want %d (the count recorded for these bounds)", r.Distinct, m.distinct)
			}
		})
	}
}

// TestOwnModelsMutants: every mutant configuration makes TLC report a
// violation of one of the invariants expected for it, with a trace.
func TestOwnModelsMutants(t *testing.T) {
	for _, m := range ownModels {
		for cfg, want := range m.mutants {
			t.Run(filepath.Base(cfg), func(t *testing.T) { checkMutant(t, m.spec, cfg, want) })
		}
	}
}

// checkMutant runs TLC on spec with the mutant configuration cfg and
// fails unless it reports a violation of one of want, with a trace.
func checkMutant(t *testing.T, spec, cfg string, want []string) {
	t.Helper()
	r := runOwn(t, spec, cfg)
	if r.Outcome != tlc.InvariantViolated && r.Outcome != tlc.PropertyViolated {
		t.Fatalf("outcome %v (%s), want a violation of one of %v", r.Outcome, r.Message, want)
	}
	found := false
	for _, w := range want {
		found = found || r.Name == w ||
			(r.Outcome == tlc.PropertyViolated && r.Name == "" && slices.Contains(temporalProps, w))
	}
	if !found {
		t.Errorf("%v %q, want one of %v", r.Outcome, r.Name, want)
	}
	if len(r.Trace) < 2 {
		t.Errorf("trace of %d states", len(r.Trace))
	}
}

// TestOwnModelsLong checks the larger configurations of the models (minutes
// of TLC each) and the costlier mutants; it runs only with
// STRATA_MODELS_LONG=1 (make test-long).
func TestOwnModelsLong(t *testing.T) {
	if os.Getenv("STRATA_MODELS_LONG") == "" {
		t.Skip("set STRATA_MODELS_LONG=1 to check the larger model configurations (make test-long)")
	}
	for _, m := range ownModels {
		for _, cfg := range m.long {
			t.Run(filepath.Base(cfg), func(t *testing.T) {
				r := runOwn(t, m.spec, cfg)
				if r.Outcome != tlc.OK {
					var b strings.Builder
					_ = tlc.Render(&b, r, nil)
					t.Fatalf("TLC found a problem in %s with %s:\n%s", m.spec, cfg, b.String())
				}
			})
		}
		for cfg, want := range m.longMutants {
			t.Run(filepath.Base(cfg), func(t *testing.T) { checkMutant(t, m.spec, cfg, want) })
		}
	}
}
