package sbench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRawRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		network string
		poll    time.Duration
	}{{"udp", 0}, {"tcp", 0}, {"udp", 50 * time.Microsecond}, {"tcp", 50 * time.Microsecond}} {
		network := tc.network
		t.Run(fmt.Sprintf("%s/busypoll=%v", network, tc.poll), func(t *testing.T) {
			stop, addr, err := RawEchoServer(network, "127.0.0.1:0", tc.poll)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			for _, callers := range []int{1, 8} {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := RawRoundTrip(ctx, network, addr, 100, 400, callers, tc.poll)
				cancel()
				if err != nil {
					t.Fatalf("%d callers: %v", callers, err)
				}
				t.Logf("%s %d callers: %+v", network, callers, res)
				if res.N != 400 || res.AvgUs <= 0 || res.P50Us <= 0 || res.P99Us < res.P50Us || res.ReqPerSec <= 0 {
					t.Errorf("%d callers: implausible result %+v", callers, res)
				}
			}
		})
	}
}

func TestRawEchoEdgeCases(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		for _, poll := range []time.Duration{0, 20 * time.Microsecond} {
			stop, addr, err := RawEchoServer(network, "127.0.0.1:0", poll)
			if err != nil {
				t.Fatal(err)
			}
			// Zero-byte and larger requests, then a second stop is a no-op.
			for _, size := range []int{0, 1, 9000} {
				if _, err := RawRoundTrip(context.Background(), network, addr, size, 20, 2, poll); err != nil {
					t.Errorf("%s busy poll %v size %d: %v", network, poll, size, err)
				}
			}
			stop()
			stop()
		}
	}
	if _, _, err := RawEchoServer("unix", "x", 0); err == nil {
		t.Error("unix network accepted")
	}
	if _, err := RawRoundTrip(context.Background(), "udp", "127.0.0.1:1", 70000, 1, 1, 0); err == nil {
		t.Error("oversized UDP request accepted")
	}
}

func TestRawRoundTripCancel(t *testing.T) {
	stop, addr, err := RawEchoServer("tcp", "127.0.0.1:0", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := RawRoundTrip(ctx, "tcp", addr, 100, 1<<40, 4, 30*time.Microsecond); err == nil {
		t.Error("no error after cancellation")
	}
}

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

func TestJGroupsStack(t *testing.T) {
	jgroupsEnabled(t)
	jar, err := EnsureJGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	xml, err := LowLatencyStack(jar, []int{7800, 7801})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`<TCPPING initial_hosts="127.0.0.1[7800],127.0.0.1[7801]" port_range="0"/>`,
		`bind_port="${sbench.bind_port}"`, `tcp_nodelay="true"`, `bundler_type="no-bundler"`, "<UNICAST3"} {
		if !strings.Contains(xml, s) {
			t.Errorf("stack lacks %s:\n%s", s, xml)
		}
	}
	for _, s := range []string{"<MPING", "<include", `bind_port="7800"`} {
		if strings.Contains(xml, s) {
			t.Errorf("stack still has %s:\n%s", s, xml)
		}
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
	for _, s := range senders {
		res, err := JGroupsRoundTrip(ctx, JGConfig{Jar: jar, Messages: 2000, Size: 100, Senders: s, Timeout: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("senders %d: rate-implied mean %.2f µs, printed avg %.2f µs, min %.2f µs, max %.2f µs, %.0f req/s (warm-up avg %.2f µs, %.0f req/s)",
			s, res.RateAvgUs, res.AvgUs, res.MinUs, res.MaxUs, res.ReqPerSec, res.WarmupAvgUs, res.WarmupReqPerSec)
		t.Logf("commands:\n%s\nstdin: %s\nraw:\n%s", strings.Join(res.Commands, "\n"), res.Stdin, res.Raw)
		if res.AvgUs <= 0 || res.MinUs <= 0 || res.ReqPerSec <= 0 || res.RateAvgUs <= 0 || len(res.Commands) != 2 || res.StackXML == "" {
			t.Errorf("implausible result %+v", res)
		}
	}
}
