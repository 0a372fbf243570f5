// Package stackmetrics exports the per-layer counters of running stacks as
// Prometheus metrics: strata_stack_layer_total{node, layer, counter}.
// Values are read from a consistent per-node snapshot at scrape time, so
// the hot path pays nothing for them.
package stackmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"strata/stack"
)

var desc = prometheus.NewDesc("strata_stack_layer_total",
	"Per-layer event counters of a protocol stack (messages, retransmissions, drops, window stalls, ...).",
	[]string{"node", "layer", "counter"}, nil)

// Collector is a prometheus.Collector over a set of nodes.
type Collector struct {
	mu    sync.Mutex
	nodes map[string]*stack.Node
}

// New returns an empty collector; register it once and Add nodes to it.
func New() *Collector { return &Collector{nodes: map[string]*stack.Node{}} }

// Add starts exporting n's counters under the label node=name.
func (c *Collector) Add(name string, n *stack.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[name] = n
}

// Remove stops exporting a node.
func (c *Collector) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- desc }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	nodes := make(map[string]*stack.Node, len(c.nodes))
	for k, v := range c.nodes {
		nodes[k] = v
	}
	c.mu.Unlock()
	for name, n := range nodes {
		for _, lc := range n.Counters() {
			for _, ctr := range lc.Counters {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(ctr.Value), name, lc.Layer, ctr.Name)
			}
		}
	}
}
