package main

import (
	"strings"
	"testing"
)

// Flags that would make the stack or multicast comparison unequal, or that
// make no sense, are refused before anything runs, with a message naming
// the flag.
func TestBenchStackMcastFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		// JGroups RoundTrip replies with 3 bytes: other reply sizes only without it.
		{[]string{"bench", "stack", "--reply-size", "100"}, "--reply-size"},
		{[]string{"bench", "stack", "--size", "2"}, "--size"},
		{[]string{"bench", "stack", "--transports", "udp,sctp"}, "--transports"},
		{[]string{"bench", "stack", "--jg-tcp-stack", "fast.xml"}, "--jg-tcp-stack"},
		{[]string{"bench", "stack", "--pin", "everywhere"}, "--pin"},
		{[]string{"bench", "stack", "--callers", "0"}, "--callers"},
		{[]string{"bench", "stack", "--n", "10"}, "--n"},
		// Tuning Strata alone against JGroups' defaults is refused.
		{[]string{"bench", "mcast", "--gossip", "10ms"}, "--gossip"},
		{[]string{"bench", "mcast", "--cast-window", "2000"}, "--cast-window"},
		{[]string{"bench", "mcast", "--credits", "4000000"}, "--credits"},
		{[]string{"bench", "mcast", "--transport", "sctp"}, "--transport"},
		{[]string{"bench", "mcast", "--members", "0"}, "--members"},
	} {
		_, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.want)
		}
	}
}
