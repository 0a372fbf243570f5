package stackmetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"strata/stack"
	"strata/stack/layers"
	"strata/stack/sim"
)

// Counters of a running stack appear as metrics with the values the layers
// hold, including retransmissions caused by a lossy link.
func TestCollectorExportsLayerCounters(t *testing.T) {
	net := sim.New(1)
	net.SetDefault(sim.Link{Delay: time.Millisecond, Loss: 0.3})
	ch, err := layers.Configure([]stack.Prop{stack.Reliable})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(a stack.Addr) *stack.Node {
		tr, err := net.Endpoint(a)
		if err != nil {
			t.Fatal(err)
		}
		return stack.NewNode(tr, net.Clock(), layers.Build(ch.Specs, stack.Config{Local: a, Epoch: 1}), stack.NodeOptions{})
	}
	a, b := mk("sim:a"), mk("sim:b")
	n := 0
	b.OnDeliver(func(stack.Addr, []byte) { n++ })
	for i := 0; i < 50; i++ {
		a.Send("sim:b", []byte("x"))
	}
	net.RunUntil(func() bool { return n == 50 }, time.Minute)
	c := New()
	c.Add("a", a)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var retrans uint64
	for _, lc := range a.Counters() {
		for _, ctr := range lc.Counters {
			if lc.Layer == "pt2pt" && ctr.Name == "retransmissions" {
				retrans = ctr.Value
			}
		}
	}
	if retrans == 0 {
		t.Fatal("no retransmissions on a lossy link: the test is vacuous")
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			got[key] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"counter=data_sent layer=pt2pt node=a ":       50,
		"counter=retransmissions layer=pt2pt node=a ": float64(retrans),
		"counter=sent layer=bottom node=a ":           float64(50 + retrans),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("metric {%s} = %v, want %v", k, got[k], v)
		}
	}
}
