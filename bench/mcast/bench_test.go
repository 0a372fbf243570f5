package mcast

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// By default neither system is tuned: Strata's members get no stack flags
// (the stack's defaults apply) and JGroups' stack file is the jar's; with
// Tuned both get the same flow-control budget, and the ratio key says so.
func TestTuningIsEqualOrAbsent(t *testing.T) {
	def := Config{Size: 1000, Credits: 2_000_000, Transport: "tcp"}
	flags, st := tuning(def)
	if flags != nil {
		t.Errorf("default run passes Strata flags %v", flags)
	}
	if st["cast_window"] != 4096 || st["cast_bytes"] != 4_000_000 || st["window"] != 1024 || st["gossip"] != "50ms" || st["rto"] != "20ms" {
		t.Errorf("default settings %v, want the stack's defaults", st)
	}
	if spec := jgStack(def); spec.Base != "tcp.xml" || spec.Set != nil {
		t.Errorf("default JGroups stack %+v, want tcp.xml unchanged", spec)
	}
	if k := ratioKey(def, 3); strings.Contains(k, "tuned") || !strings.Contains(k, "tcp members=3") {
		t.Errorf("default ratio key %q", k)
	}

	tuned := def
	tuned.Tuned = true
	flags, st = tuning(tuned)
	if want := []string{"--cast-window", "2000", "--cast-bytes", "2000000", "--window", "2000", "--gossip", "10ms", "--rto", "200ms"}; !slices.Equal(flags, want) {
		t.Errorf("tuned flags %v, want %v", flags, want)
	}
	if st["cast_window"] != 2000 || st["cast_bytes"] != 2_000_000 {
		t.Errorf("tuned settings %v", st)
	}
	spec := jgStack(tuned)
	if spec.Set["MFC"]["max_credits"] != "2000000" || spec.Set["UFC"]["max_credits"] != "2000000" {
		t.Errorf("tuned JGroups stack %+v, want MFC and UFC max_credits 2000000", spec)
	}
	if k := ratioKey(tuned, 2); !strings.HasSuffix(k, " tuned") {
		t.Errorf("tuned ratio key %q does not say so", k)
	}

	// A tuned value the user overrides is what the members get.
	tuned.Gossip = 5 * time.Millisecond
	if flags, _ = tuning(tuned); !slices.Contains(flags, "5ms") {
		t.Errorf("override lost: %v", flags)
	}
	// Strata alone (no JGroups) with one flag: that flag, the rest the
	// stack's defaults.
	custom := def
	custom.Window = 4096
	if flags, _ = tuning(custom); !slices.Equal(flags, []string{"--cast-window", "4096", "--cast-bytes", "4000000", "--window", "4096", "--gossip", "50ms", "--rto", "20ms"}) {
		t.Errorf("custom flags %v", flags)
	}
	// Over UDP both run UDP.
	udp := def
	udp.Transport = "udp"
	if jgStack(udp).Base != "udp.xml" || !strings.Contains(ratioKey(udp, 2), "udp") {
		t.Errorf("udp run: JGroups stack %q, key %q", jgStack(udp).Base, ratioKey(udp, 2))
	}
}
