package wan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"strata/geo"
	"strata/stack"
	"strata/stack/transport"
)

func noMatrix(string) (*geo.Matrix, error) { return nil, errors.New("no matrix here") }

// oneWay is the embedded matrix's one-way delay between two named regions.
func oneWay(t *testing.T, from, to string) time.Duration {
	t.Helper()
	m := geo.Default()
	i, j := m.Index(from), m.Index(to)
	if i < 0 || j < 0 {
		t.Fatalf("no region %s or %s", from, to)
	}
	return time.Duration(m.RTT[i][j] / 2 * float64(time.Millisecond))
}

func TestParseSitesAndDelays(t *testing.T) {
	c, err := Parse([]byte(`{"sites": {"udp:127.0.0.1:7001": "az_eastus", "tcp:[::1]:7002": "az_westeurope",
		"127.0.0.3": "az_japaneast", "::1": "az_eastus"}, "jitter_ms": 2.5, "seed": 9}`), noMatrix)
	if err != nil {
		t.Fatal(err)
	}
	if c.Jitter != 2500*time.Microsecond || c.Seed != 9 {
		t.Errorf("jitter %v seed %d", c.Jitter, c.Seed)
	}
	m := geo.Default()
	for addr, want := range map[stack.Addr]string{
		"udp:127.0.0.1:7001": "az_eastus",
		"tcp:[::1]:7002":     "az_westeurope", // its own entry wins over its host's
		"udp:[::1]:9":        "az_eastus",
		"udp:127.0.0.3:1234": "az_japaneast",
		"tcp:127.0.0.3:5":    "az_japaneast",
	} {
		i, ok := c.SiteOf(addr)
		if !ok || m.Names[i] != want {
			t.Errorf("SiteOf(%s) = %v %v, want %s", addr, i, ok, want)
		}
	}
	if _, ok := c.SiteOf("udp:127.0.0.1:7003"); ok {
		t.Error("an unlisted address on an unlisted host has a site")
	}
	d := c.delayFrom(m.Index("az_eastus"))
	if got, want := d("tcp:[::1]:7002"), oneWay(t, "az_eastus", "az_westeurope"); got != want || got == 0 {
		t.Errorf("eastus -> westeurope: %v, want %v", got, want)
	}
	if got := d("udp:[::1]:9"); got != 0 {
		t.Errorf("within a site: %v, want 0", got)
	}
	if got := d("udp:10.0.0.1:9"); got != 0 {
		t.Errorf("to an address in no site: %v, want 0", got)
	}
	if got := c.Sites(); len(got) != 3 {
		t.Errorf("Sites() = %v, want 3", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"sites": {"udp:127.0.0.1:1": "eastus"}}`, "did you mean az_eastus?"},
		{`{"sites": {"udp:127.0.0.1:1": "atlantis"}}`, "strata wan regions"},
		{`{"sites": {"udp:127.0.0.1": "az_eastus"}}`, "127.0.0.1"},
		{`{"sites": {"sctp:127.0.0.1:1": "az_eastus"}}`, "unknown network"},
		{`{"sites": {"udp:127.0.0.1:99999": "az_eastus"}}`, "bad port"},
		{`{"sites": {"not a host!": "az_eastus"}}`, "neither"},
		{`{"sites": {}}`, "no address"},
		{`{}`, "no address"},
		{`{"sites": {"udp:127.0.0.1:1": "az_eastus"}, "jitter_ms": -1}`, "jitter_ms"},
		{`{"sites": {"udp:127.0.0.1:1": "az_eastus"}, "jiter_ms": 1}`, "unknown field"},
		{`{"sites": {"udp:127.0.0.1:1": "az_eastus"}, "matrix": "x"}`, "no matrix here"},
		{`{"sites": ["udp:127.0.0.1:1"]}`, "bad JSON"},
		{`{"sites": {"udp:127.0.0.1:1": "az_eastus"}} {}`, "more after"},
		{`{"sites": {"udp:127.0.0.1:1": "az_eastus"`, "bad JSON"},
		{``, "bad JSON"},
	} {
		_, err := Parse([]byte(tc.json), noMatrix)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): %v, want an error containing %q", tc.json, err, tc.want)
		}
	}
}

// A "matrix" folder is read relative to the WAN file; a pair it has no
// latency for is refused.
func TestLoadMatrixDir(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "m"), 0o755)
	os.WriteFile(filepath.Join(dir, "m", "loc-index-map.txt"), []byte("a 0\nb 1\nc 2\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m", "net-only-latency.txt"), []byte("0 1 GET 50 100\n1 0 GET 50 60\n"), 0o644)
	path := filepath.Join(dir, "wan.json")
	os.WriteFile(path, []byte(`{"matrix": "m", "sites": {"udp:127.0.0.1:1": "a", "udp:127.0.0.1:2": "b"}}`), 0o644)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.OneWay(0, 1); got != 50*time.Millisecond {
		t.Errorf("a -> b: %v, want 50ms", got)
	}
	if got := c.OneWay(1, 0); got != 30*time.Millisecond {
		t.Errorf("b -> a: %v, want 30ms", got)
	}
	os.WriteFile(path, []byte(`{"matrix": "m", "sites": {"udp:127.0.0.1:1": "a", "udp:127.0.0.1:3": "c"}}`), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "no latency from a to c") {
		t.Errorf("a pair without latency: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file loaded")
	}
}

// Wrap finds the process's site from its address or from the name it is
// given, and refuses a process in no site.
func TestWrap(t *testing.T) {
	tr, err := transport.Listen("udp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]byte(`{"sites": {"`+string(tr.Local())+`": "az_eastus", "udp:127.0.0.1:1": "az_westus"}}`), noMatrix)
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Wrap("")(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.(*transport.DelayTransport); !ok {
		t.Fatalf("Wrap returned %T", w)
	}
	w.Close()
	tr2, err := transport.Listen("udp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if _, err := c.Wrap("")(tr2); err == nil || !strings.Contains(err.Error(), "--wan-site") {
		t.Errorf("a process in no site: %v", err)
	}
	if _, err := c.Wrap("westus")(tr2); err == nil || !strings.Contains(err.Error(), "az_westus") {
		t.Errorf("a misspelt --wan-site: %v", err)
	}
	if w, err := c.Wrap("az_westus")(tr2); err != nil || w.Local() != tr2.Local() {
		t.Errorf("--wan-site az_westus: %v", err)
	}
}

// The parser returns a configuration or an error for any input, never
// panics, and what it accepts answers SiteOf and OneWay for its sites.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"sites": {"udp:127.0.0.1:7001": "az_eastus", "127.0.0.2": "az_westus"}, "jitter_ms": 2}`))
	f.Add([]byte(`{"sites": {"tcp:[::1]:1": "aws_us-east-1", "::1": "gcp_us-east1"}, "seed": 3}`))
	f.Add([]byte(`{"sites": {"x:y": "z"}, "matrix": "m"}`))
	f.Add([]byte(`{"sites": {"udp:127.0.0.1:1": "az_eastus"}, "jitter_ms": 1e308}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, noMatrix)
		if err != nil {
			return
		}
		for _, i := range c.Sites() {
			for _, j := range c.Sites() {
				if d := c.OneWay(i, j); d < 0 {
					t.Fatalf("negative delay %v", d)
				}
			}
			for _, a := range c.Members(i) {
				if strings.HasPrefix(a, "udp:") || strings.HasPrefix(a, "tcp:") {
					if got, ok := c.SiteOf(stack.Addr(a)); !ok || got != i {
						t.Fatalf("SiteOf(%s) = %d %v, want %d", a, got, ok, i)
					}
				}
			}
		}
	})
}
