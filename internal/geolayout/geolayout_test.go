package geolayout

import (
	"errors"
	"path/filepath"
	"testing"

	"strata/geo"
	"strata/internal/wan"
	"strata/wor"
)

func TestNewAndWAN(t *testing.T) {
	pl := geo.Plan{Protocol: geo.Pando, F: 1, Sites: []string{"az_eastus", "az_westus", "az_centralus"}, K: 1, R: 2, Q1a: 2, Q1b: 2, Q2: 2,
		FrontEnds: []geo.FrontEnd{{Name: "az_eastus", ReadMs: 10}, {Name: "az_westeurope", ReadMs: 80}}}
	l, err := New(pl, []string{"az_eastus", "az_westeurope"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"az_eastus": "127.0.1.1", "az_westus": "127.0.1.2", "az_centralus": "127.0.1.3", "az_westeurope": "127.0.1.4"}
	for s, h := range want {
		if l.Hosts[s] != h {
			t.Errorf("host of %s = %q, want %q", s, l.Hosts[s], h)
		}
	}
	if l.EC != (wor.ECPlan{K: 1, R: 2, Q1a: 2, Q1b: 2, Q2: 2}) {
		t.Errorf("ec plan %+v", l.EC)
	}
	if fe, ok := l.FrontEnd("az_westeurope"); !ok || fe.ReadMs != 80 {
		t.Errorf("FrontEnd = %+v, %v", fe, ok)
	}
	path := filepath.Join(t.TempDir(), "wan.json")
	if err := l.WriteWAN(path); err != nil {
		t.Fatal(err)
	}
	c, err := wan.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	i, _ := c.Site("az_eastus")
	j, _ := c.Site("az_westeurope")
	if got, ok := c.SiteOf("udp:127.0.1.4:9000"); !ok || got != j {
		t.Errorf("SiteOf(127.0.1.4) = %d, %v; want %d", got, ok, j)
	}
	if c.OneWay(i, j) <= 0 {
		t.Errorf("no delay between eastus and westeurope")
	}
	pl.Q2 = 1 // breaks 2*q2 >= n+k
	if _, err := New(pl, []string{"az_eastus"}); !errors.Is(err, wor.ErrBadPlan) {
		t.Errorf("bad plan: err = %v", err)
	}
}
