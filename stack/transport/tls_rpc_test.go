package transport_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	"strata/internal/certs"
	"strata/stack"
	"strata/stack/layers"
	"strata/stack/transport"
)

func nodeTLS(t testing.TB, ca *certs.Authority) *tls.Config {
	t.Helper()
	n, err := ca.Issue("node", []string{"127.0.0.1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := certs.Config(ca.CertPEM(), n)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// RPC nodes (stack/layers) over TLS: calls between nodes with
// certificates of one CA succeed and take the bypass as without TLS; a
// caller with a certificate of another CA gets no answer.
func TestTLSRPC(t *testing.T) {
	ca, err := certs.NewCA("rpc CA")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := layers.ListenOpts("tcp:127.0.0.1:0", "RPC", transport.Options{TLS: nodeTLS(t, ca)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.Handle(func(_ stack.Addr, req []byte) []byte { return append([]byte("re:"), req...) })
	cli, err := layers.ListenOpts("tcp:127.0.0.1:0", "RPC", transport.Options{TLS: nodeTLS(t, ca)})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 200 {
		resp, err := cli.Call(ctx, srv.Local(), fmt.Appendf(nil, "%d", i), time.Second)
		if err != nil || string(resp) != fmt.Sprintf("re:%d", i) {
			t.Fatalf("call %d: %q %v", i, resp, err)
		}
	}
	hits := uint64(0)
	for _, lc := range cli.Counters() {
		for _, c := range lc.Counters {
			if lc.Layer == "bypass" && strings.HasSuffix(c.Name, "_hits") {
				hits += c.Value
			}
		}
	}
	if hits == 0 {
		t.Fatal("the bypass was never taken over TLS")
	}
	other, err := certs.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := layers.ListenOpts("tcp:127.0.0.1:0", "RPC", transport.Options{TLS: nodeTLS(t, other)})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	bctx, bcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer bcancel()
	if _, err := bad.Call(bctx, srv.Local(), []byte("x"), 300*time.Millisecond); err == nil {
		t.Fatal("a caller with a certificate of another CA was answered")
	}
	if _, err := layers.ListenOpts("udp:127.0.0.1:0", "RPC", transport.Options{TLS: nodeTLS(t, ca)}); err == nil {
		t.Fatal("a UDP node with TLS was opened")
	}
}

// Round trips of 100-byte frames between two TCP transports, plain and
// over TLS: what TLS costs a request (go test -bench TCPRoundTrip).
func BenchmarkTCPRoundTrip(b *testing.B) {
	ca, err := certs.NewCA("bench CA")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"plain", "tls"} {
		b.Run(mode, func(b *testing.B) {
			var sopt, copt transport.TCPOptions
			if mode == "tls" {
				sopt.TLS, copt.TLS = nodeTLS(b, ca), nodeTLS(b, ca)
			}
			srv, err := transport.ListenTCPOpts("127.0.0.1:0", sopt)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			srv.SetReceiver(func(from stack.Addr, data []byte) { srv.Send(from, [][]byte{data}) })
			cli, err := transport.ListenTCPOpts("127.0.0.1:0", copt)
			if err != nil {
				b.Fatal(err)
			}
			defer cli.Close()
			got := make(chan struct{}, 1)
			cli.SetReceiver(func(stack.Addr, []byte) { got <- struct{}{} })
			req := make([]byte, 100)
			b.SetBytes(int64(len(req)))
			b.ResetTimer()
			for range b.N {
				if err := cli.Send(srv.Local(), [][]byte{req}); err != nil {
					b.Fatal(err)
				}
				<-got
			}
		})
	}
}
