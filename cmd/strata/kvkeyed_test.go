package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"strata/internal/freeport"
	"strata/kv"
	"strata/stack"
	"strata/stack/layers"
	"strata/wor"
)

// A keyed-mode server's metrics count its requests by operation and
// status, and its malformed ones (no wormservers are needed for that:
// a scan is refused before any is asked).
func TestKeyedMetrics(t *testing.T) {
	n, err := layers.Listen("udp:127.0.0.1:0", kv.Props)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	e, err := wor.NewEngine("ec", n, []stack.Addr{"udp:127.0.0.1:9", "udp:127.0.0.1:10", "udp:127.0.0.1:11"}, 1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kv.StartKeyedServer(kv.KeyedServerConfig{Node: n, Client: wor.NewClient(e), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer ks.Close()
	ports, err := freeport.TCP(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	stop, err := serveKeyedMetrics(addr, ks, n, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ks.Serve(kv.EncodeRequest(&kv.Request{Op: kv.OpScan, Key: "a"}))
	ks.Serve([]byte("not a request"))
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`strata_kv_requests_total{op="scan",status="unsupported"} 1`, "strata_kv_malformed_total 1", "strata_kv_keyed_retries_total 0"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
