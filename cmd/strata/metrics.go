package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"strata/stack"
	"strata/stack/stackmetrics"
)

// serveMetrics serves reg, plus the per-layer counters of node, on addr
// until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, node *stack.Node, log *slog.Logger) (stop func(), err error) {
	if node != nil {
		col := stackmetrics.New()
		col.Add(string(node.Local()), node)
		reg.MustRegister(col)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	hs := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	return func() { hs.Close() }, nil
}
