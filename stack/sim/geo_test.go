package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"strata/stack"
)

// writeGeo writes a geo directory with the given file contents.
func writeGeo(t *testing.T, sites, latency string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{GeoSitesFile: sites, GeoLatencyFile: latency} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A synthetic fixture in the real format: indices out of order, an
// asymmetric pair, a pair measured one way only, a pair not measured at
// all, PUT lines and another percentile that must not be used.
const (
	fixtureSites = `aws_x 0
# a comment
gcp_z 2

az_y 1
az_w 3
`
	fixtureLatency = `0 0 GET 50 0
0 1 GET 50 35.000000
0 1 PUT 50 99.000000
1 0 GET 50 37.5
0 2 GET 50 100
0 2 GET 99 500
2 1 GET 50 0.4
1 1 PUT 50 0
`
)

func TestLoadGeoSynthetic(t *testing.T) {
	g, err := LoadGeo(writeGeo(t, fixtureSites, fixtureLatency))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"aws_x", "az_y", "gcp_z", "az_w"}; !slices.Equal(g.Sites(), want) {
		t.Fatalf("Sites = %v, want %v (index order)", g.Sites(), want)
	}
	for _, c := range []struct {
		a, b string
		rtt  time.Duration
		ok   bool
	}{
		{"aws_x", "az_y", 35 * time.Millisecond, true},    // GET, not PUT
		{"az_y", "aws_x", 37500 * time.Microsecond, true}, // asymmetric
		{"aws_x", "gcp_z", 100 * time.Millisecond, true},  // median, not p99
		{"gcp_z", "aws_x", 100 * time.Millisecond, true},  // reverse fallback
		{"az_y", "gcp_z", 400 * time.Microsecond, true},   // reverse fallback, fractional
		{"aws_x", "aws_x", 0, true},                       // listed
		{"az_y", "az_y", 0, true},                         // PUT only: itself is 0
		{"aws_x", "az_w", 0, false},                       // not measured
		{"aws_x", "nowhere", 0, false},                    // unknown site
	} {
		rtt, ok := g.RTT(c.a, c.b)
		if rtt != c.rtt || ok != c.ok {
			t.Errorf("RTT(%s, %s) = %v, %v; want %v, %v", c.a, c.b, rtt, ok, c.rtt, c.ok)
		}
	}
	if g.SameSite != DefaultSameSite {
		t.Errorf("SameSite = %v", g.SameSite)
	}
	// ParseGeo reads the same thing from readers.
	g2, err := ParseGeo(strings.NewReader(fixtureSites), strings.NewReader(fixtureLatency))
	if err != nil || !slices.Equal(g2.Sites(), g.Sites()) {
		t.Fatalf("ParseGeo: %v %v", g2, err)
	}
}

func TestLoadGeoErrors(t *testing.T) {
	for _, c := range []struct {
		name, sites, latency, want string
	}{
		{"sites fields", "aws_x 0\naws_y\n", "", GeoSitesFile + ":2: "},
		{"sites index", "aws_x 0\n\naws_y one\n", "", GeoSitesFile + ":3: bad index"},
		{"sites negative", "aws_x -1\n", "", GeoSitesFile + ":1: bad index"},
		{"sites dup name", "aws_x 0\naws_x 1\n", "", "listed twice"},
		{"sites dup index", "aws_x 0\naws_y 0\n", "", "index 0 already used"},
		{"sites empty", "# nothing\n", "", "no sites"},
		{"lat fields", "a 0\nb 1\n", "0 1 GET 50 3\n0 1 GET 50\n", GeoLatencyFile + ":2: "},
		{"lat index", "a 0\nb 1\n", "0 x GET 50 3\n", GeoLatencyFile + ":1: bad site index"},
		{"lat unknown", "a 0\nb 1\n", "0 7 GET 50 3\n", "site index 7 not in"},
		{"lat method", "a 0\nb 1\n", "0 1 POST 50 3\n", GeoLatencyFile + ":1: want GET or PUT"},
		{"lat pct", "a 0\nb 1\n", "0 1 GET p50 3\n", "bad percentile"},
		{"lat ms", "a 0\nb 1\n", "\n\n0 1 GET 50 fast\n", GeoLatencyFile + ":3: bad latency"},
		{"lat neg", "a 0\nb 1\n", "0 1 GET 50 -3\n", "bad latency"},
		{"lat nan", "a 0\nb 1\n", "0 1 GET 50 NaN\n", "bad latency"},
		{"lat dup", "a 0\nb 1\n", "0 1 GET 50 3\n0 1 GET 50 4\n", GeoLatencyFile + ":2: GET median from 0 to 1 listed twice"},
	} {
		_, err := LoadGeo(writeGeo(t, c.sites, c.latency))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := LoadGeo(t.TempDir()); err == nil {
		t.Error("empty directory accepted")
	}
}

func TestApplyGeo(t *testing.T) {
	g, err := ParseGeo(strings.NewReader(fixtureSites), strings.NewReader(fixtureLatency))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, 1, "sim:x1", "sim:x2", "sim:y", "sim:z")
	w.n.SetDefault(Link{Delay: time.Second, Bandwidth: 1e6})
	if err := w.n.ApplyGeo(g, map[stack.Addr]string{
		"sim:x1": "aws_x", "sim:x2": "aws_x", "sim:y": "az_y", "sim:z": "gcp_z",
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to stack.Addr
		delay    time.Duration
	}{
		{"sim:x1", "sim:y", 17500 * time.Microsecond},
		{"sim:y", "sim:x1", 18750 * time.Microsecond}, // the other direction's own measurement
		{"sim:x2", "sim:z", 50 * time.Millisecond},
		{"sim:z", "sim:y", 200 * time.Microsecond},
		{"sim:x1", "sim:x2", DefaultSameSite},
	} {
		l := w.n.LinkOf(c.from, c.to)
		if l.Delay != c.delay || l.Bandwidth != 1e6 {
			t.Errorf("%s→%s: %+v, want delay %v and the default's bandwidth", c.from, c.to, l, c.delay)
		}
	}
	// A datagram really takes that long (plus 8µs of transmission).
	w.send("sim:x1", "sim:y", 1, 8)
	w.n.Run(time.Second)
	if len(w.log) != 1 || w.log[0].at != 17508*time.Microsecond {
		t.Fatalf("arrivals %+v", w.log)
	}

	// Errors change nothing.
	w.n.SetLink("sim:x1", "sim:y", Link{Delay: 42})
	err = w.n.ApplyGeo(g, map[stack.Addr]string{"sim:x1": "aws_x", "sim:y": "az_w"})
	if err == nil || !strings.Contains(err.Error(), "no measurement") {
		t.Fatalf("unmeasured pair: %v", err)
	}
	err = w.n.ApplyGeo(g, map[stack.Addr]string{"sim:x1": "aws_x", "sim:y": "mars"})
	if err == nil || !strings.Contains(err.Error(), `unknown site "mars"`) {
		t.Fatalf("unknown site: %v", err)
	}
	if w.n.LinkOf("sim:x1", "sim:y").Delay != 42 {
		t.Fatal("a failed ApplyGeo changed links")
	}
}

// realGeoDir finds shared/data/geo next to the repository by walking up
// from the package directory (the tests run in stack/sim).
func realGeoDir(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		cand := filepath.Join(dir, "shared", "data", "geo")
		if _, err := os.Stat(filepath.Join(cand, GeoSitesFile)); err == nil {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/data/geo not found above the working directory")
		}
		dir = parent
	}
}

func TestLoadGeoRealData(t *testing.T) {
	g, err := LoadGeo(realGeoDir(t))
	if err != nil {
		t.Fatal(err)
	}
	sites := g.Sites()
	if len(sites) != 46 {
		t.Fatalf("%d sites, want 46", len(sites))
	}
	if sites[0] != "aws_ap-northeast-1" || sites[1] != "aws_ap-northeast-2" {
		t.Fatalf("first sites %v", sites[:2])
	}
	// Tokyo to Seoul, the README's example; the reverse was measured
	// separately (the data set is not symmetric).
	if rtt, ok := g.RTT("aws_ap-northeast-1", "aws_ap-northeast-2"); !ok || rtt != 35*time.Millisecond {
		t.Fatalf("RTT(Tokyo, Seoul) = %v, %v; want 35ms", rtt, ok)
	}
	if rtt, ok := g.RTT("aws_ap-northeast-2", "aws_ap-northeast-1"); !ok || rtt != 37*time.Millisecond {
		t.Fatalf("RTT(Seoul, Tokyo) = %v, %v; want 37ms", rtt, ok)
	}
	// The data set misses London to East Asia both ways.
	if _, ok := g.RTT("aws_eu-west-2", "az_eastasia"); ok {
		t.Error("aws_eu-west-2 ↔ az_eastasia is not in the data, yet RTT found it")
	}
	measured, missing := 0, 0
	for _, a := range sites {
		for _, b := range sites {
			rtt, ok := g.RTT(a, b)
			switch {
			case !ok:
				missing++
			case a != b && (rtt < time.Millisecond || rtt > 500*time.Millisecond):
				t.Errorf("RTT(%s, %s) = %v: implausible", a, b, rtt)
			default:
				measured++
			}
		}
	}
	if missing != 8 || measured != 46*46-8 {
		t.Errorf("%d pairs measured, %d missing; want 8 missing", measured, missing)
	}

	n := New(1)
	place := map[stack.Addr]string{"sim:tokyo": "aws_ap-northeast-1", "sim:seoul": "aws_ap-northeast-2", "sim:tokyo2": "aws_ap-northeast-1"}
	if err := n.ApplyGeo(g, place); err != nil {
		t.Fatal(err)
	}
	if d := n.LinkOf("sim:tokyo", "sim:seoul").Delay; d != 17500*time.Microsecond {
		t.Errorf("Tokyo→Seoul one-way %v, want 17.5ms", d)
	}
	if d := n.LinkOf("sim:seoul", "sim:tokyo").Delay; d != 18500*time.Microsecond {
		t.Errorf("Seoul→Tokyo one-way %v, want 18.5ms", d)
	}
	if d := n.LinkOf("sim:tokyo2", "sim:tokyo").Delay; d != DefaultSameSite {
		t.Errorf("same-site delay %v", d)
	}
}
