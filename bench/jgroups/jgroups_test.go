package jgroups

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseRoundTrip(t *testing.T) {
	rep := "-- sending 20,000 messages to B\n..........\n0: round-trip = 1us/2us/3us\n\x1b[1m\n\nreqs/sec          = 5434.09\n" +
		"round-trip        = 32.49us/166.08us/25.05ms\nreq-send-time     = 6.35us/30.26us/7.38ms\nrsp-delivery-time = 70ns/15.88us/6.46ms\n\n\x1b[0m"
	st, err := parseRoundTrip(stripANSI(rep))
	if err != nil {
		t.Fatal(err)
	}
	want := rtStats{AvgUs: 166.08, MinUs: 32.49, MaxUs: 25050, ReqPerSec: 5434.09}
	if st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	for in, want := range map[string]float64{"89ns": 0.089, "1.5s": 1.5e6, "1,234.5us": 1234.5} {
		if got, err := parseMicros(in); err != nil || got != want {
			t.Errorf("parseMicros(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseRoundTrip("nothing"); err == nil {
		t.Error("empty report parsed")
	}
}

// The warm-up ends once two passes in a row fail to beat the best rate
// before them by 10%, not at the first slow pass.
func TestWarmedUp(t *testing.T) {
	for _, c := range []struct {
		rates []float64
		warm  bool
	}{
		{nil, false},
		{[]float64{1000, 1000}, false},             // at least three passes
		{[]float64{1000, 1050, 1040}, true},        // flat
		{[]float64{3431, 3760, 4000}, true},        // 3760 and 4000 both under 1.1x 3431 and 3760
		{[]float64{1000, 900, 2000}, false},        // the last pass beat the best by 2x
		{[]float64{1000, 2000, 1900, 2500}, false}, // 1900 did not, 2500 did
		{[]float64{1000, 2000, 1900, 2100}, true},
		{[]float64{1907, 2270, 3010, 8695, 7101}, false}, // still climbing: 8695
		{[]float64{1907, 2270, 3010, 8695, 7101, 8800}, true},
	} {
		if got := warmedUp(c.rates); got != c.warm {
			t.Errorf("warmedUp(%v) = %v, want %v", c.rates, got, c.warm)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"java", "-Dx=1", "a b", "it's", ""})
	if want := `java -Dx=1 'a b' 'it'\''s' ''`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func jgroupsEnabled(t *testing.T) {
	t.Helper()
	if os.Getenv("STRATA_JGROUPS_TEST") != "1" {
		t.Skip("set STRATA_JGROUPS_TEST=1 to fetch JGroups with Maven and run two JVMs")
	}
}

// The stacks the benchmarks run, built from the jar's files: the transport
// inlined with the member's port, discovery by TCPPING listing the
// members, UDP without IP multicast, and the attributes a run sets.
func TestBuildStack(t *testing.T) {
	jgroupsEnabled(t)
	jar, err := EnsureJGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hosts := `initial_hosts="127.0.0.1[7800],127.0.0.1[7801]"`
	for _, c := range []struct {
		spec      StackSpec
		want, not []string
		effective [][3]string // element, attribute, value
	}{
		{StackSpec{Base: LowLatencyTCP}, []string{"<TCPPING", hosts, `bind_port="${strata.jgroups.bind_port}"`, `tcp_nodelay="true"`, "<UNICAST3"},
			[]string{"<MPING", "<include", `bind_port="7800"`, "<UDP"},
			[][3]string{{"TCP", "bundler_type", "no-bundler"}, {"TCP", "message_processing_policy", "all-direct"}}},
		{StackSpec{Base: DefaultTCP}, []string{"<TCPPING", hosts, `async_discovery="true"`, "<MFC"},
			[]string{"<include", "localhost[7800]"},
			[][3]string{{"TCP", "bundler_type", "pd"}, {"MFC", "max_credits", "2M"}}},
		{StackSpec{Base: DefaultUDP}, []string{"<UDP", "<TCPPING", hosts, `ip_mcast="false"`, "ip_mcast=false"},
			[]string{"<PING", "<include", "<TCP\n"},
			[][3]string{{"UDP", "bundler_type", "pd"}, {"UDP", "ip_mcast", "false"}}},
		{StackSpec{Base: DefaultTCP, Set: map[string]map[string]string{"MFC": {"max_credits": "4M"}, "UFC": {"max_credits": "4M"}, "NAKACK2": {"xmit_interval": "200ms"}}},
			[]string{"Set: MFC.max_credits=4M, NAKACK2.xmit_interval=200ms, UFC.max_credits=4M", "<pbcast.NAKACK2"}, nil,
			[][3]string{{"MFC", "max_credits", "4M"}, {"UFC", "max_credits", "4M"}, {"NAKACK2", "xmit_interval", "200ms"}, {"NAKACK2", "use_mcast_xmit", "false"}}},
	} {
		xml, err := BuildStack(jar, c.spec, []int{7800, 7801})
		if err != nil {
			t.Fatalf("%s: %v", c.spec.Base, err)
		}
		for _, s := range c.want {
			if !strings.Contains(xml, s) {
				t.Errorf("%s lacks %s:\n%s", c.spec.Base, s, xml)
			}
		}
		for _, s := range c.not {
			if strings.Contains(xml, s) {
				t.Errorf("%s still has %s:\n%s", c.spec.Base, s, xml)
			}
		}
		for _, e := range c.effective {
			if got := Effective(xml, e[0], e[1]); got != e[2] {
				t.Errorf("%s: %s %s = %q, want %q", c.spec.Base, e[0], e[1], got, e[2])
			}
		}
	}
	if _, err := BuildStack(jar, StackSpec{Base: DefaultTCP, Set: map[string]map[string]string{"NOSUCH": {"a": "b"}}}, []int{1}); err == nil {
		t.Error("setting an attribute of a protocol the stack lacks succeeded")
	}
}

func TestJGroupsRoundTrip(t *testing.T) {
	jgroupsEnabled(t)
	ctx := context.Background()
	jar, err := EnsureJGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	senders := []int{1}
	if os.Getenv("STRATA_JGROUPS_SENDERS8") == "1" {
		senders = append(senders, 8)
	}
	// Over UDP without IP multicast too: RoundTrip's requests and replies
	// are unicasts; the view and EXIT go as one unicast per member.
	for _, base := range []string{LowLatencyTCP, DefaultUDP} {
		for _, s := range senders {
			res, err := RoundTrip(ctx, RTConfig{Jar: jar, Stack: StackSpec{Base: base}, Messages: 2000, Size: 97, Senders: s, Timeout: 2 * time.Minute})
			if err != nil {
				t.Fatalf("%s: %v", base, err)
			}
			t.Logf("%s senders %d: rate-implied mean %.2f µs, printed avg %.2f µs, min %.2f µs, max %.2f µs, %.0f req/s, CPU %.1f µs/call (warm-up passes %.0f req/s)",
				base, s, res.RateAvgUs, res.AvgUs, res.MinUs, res.MaxUs, res.ReqPerSec, res.CPUPerCallUs, res.WarmupReqPerSec)
			t.Logf("commands:\n%s\nstdin: %s\nraw:\n%s", strings.Join(res.Commands, "\n"), res.Stdin, res.Raw)
			if res.AvgUs <= 0 || res.MinUs <= 0 || res.ReqPerSec <= 0 || len(res.Commands) != 2 || res.StackXML == "" || res.CPUPerCallUs <= 0 {
				t.Errorf("implausible result %+v", res)
			}
			if want := float64(s) * 1e6 / res.ReqPerSec; res.RateAvgUs != want {
				t.Errorf("rate-implied mean %v, want senders/rate = %v", res.RateAvgUs, want)
			}
			// Warm-up passes until the rate settles, at most MaxWarmupPasses.
			w := res.WarmupReqPerSec
			if len(w) < 3 || len(w) > MaxWarmupPasses || len(w) < MaxWarmupPasses && !warmedUp(w) {
				t.Errorf("warm-up passes %v: want 3 to %d, ending when warm", w, MaxWarmupPasses)
			}
			for i := 1; i < len(w); i++ {
				if warmedUp(w[:i]) {
					t.Errorf("warm-up passes %v went on after the first %d were warm", w, i)
				}
			}
		}
	}
}
