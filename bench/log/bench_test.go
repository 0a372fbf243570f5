package log

import (
	"strings"
	"testing"
)

// The summary line of Kafka's ProducerPerformance, as it prints it after
// its periodic progress lines.
func TestParseProducerSummary(t *testing.T) {
	out := `49966 records sent, 9993.2 records/sec (9.76 MB/sec), 2.1 ms avg latency, 193.0 ms max latency.
100000 records sent, 9930.1 records/sec (9.70 MB/sec), 2845.33 ms avg latency, 4041.00 ms max latency, 2919 ms 50th, 3932 ms 95th, 4012 ms 99th, 4038 ms 99.9th.
`
	r, err := parseProducerSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Appends != 100000 || r.PerSec != 9930.1 || r.P50us != 2919000 || r.P99us != 4012000 {
		t.Fatalf("parsed %+v", r)
	}
	// With --warmup-records, the steady state's line (after the whole
	// run's) is the result.
	warm := out + "Warmup first 10000 records. Steady state results will print after the complete test summary.\n" +
		"90000 steady state records sent, 10500.5 records/sec (10.25 MB/sec), 2000.00 ms avg latency, 3000.00 ms max latency, 1900 ms 50th, 2800 ms 95th, 2950 ms 99th, 2990 ms 99.9th.\n"
	if r, err := parseProducerSummary(warm); err != nil || r.Appends != 90000 || r.PerSec != 10500.5 || r.P50us != 1900000 || r.P99us != 2950000 {
		t.Fatalf("steady state parsed %+v, %v", r, err)
	}
	if _, err := parseProducerSummary("Exception in thread main\n"); err == nil || !strings.Contains(err.Error(), "no summary") {
		t.Fatalf("output without a summary: %v", err)
	}
}

func TestConfigCheck(t *testing.T) {
	ok := Config{Records: 1000, Latency: 100, ValueSize: 1024, Appenders: 8, Rounds: 1, Strata: "/bin/true"}
	if err := ok.check(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Config{
		"few records": {Records: 10, Latency: 100, ValueSize: 1024, Appenders: 8, Rounds: 1},
		"no rounds":   {Records: 1000, Latency: 100, ValueSize: 1024, Appenders: 8},
		"huge values": {Records: 1000, Latency: 100, ValueSize: 1 << 20, Appenders: 8, Rounds: 1},
	} {
		if err := c.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
