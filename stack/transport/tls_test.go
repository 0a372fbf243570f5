package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/internal/certs"
	"strata/stack"
)

// testCA is a cluster CA for tests.
type testCA struct {
	ca    *certs.Authority
	caPEM []byte
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	ca, err := certs.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca: ca, caPEM: ca.CertPEM()}
}

// config issues a node certificate for hosts (and transport addresses)
// and returns its TLS configuration.
func (c *testCA) config(t testing.TB, hosts []string, addrs ...string) *tls.Config {
	t.Helper()
	n, err := c.ca.Issue("node", hosts, addrs)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := certs.Config(c.caPEM, n)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// refusals records what OnRefused is told.
type refusals struct {
	mu   sync.Mutex
	errs []error // guarded by mu
}

func (r *refusals) record(_ string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *refusals) waitFor(t *testing.T, substr string) {
	t.Helper()
	waitFor(t, "a refusal with "+substr, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, e := range r.errs {
			if strings.Contains(e.Error(), substr) {
				return true
			}
		}
		return false
	})
}

var localhost = []string{"127.0.0.1"}

// Two transports with certificates of one CA exchange frames both ways
// (each dials the other: both roles are checked), over TLS 1.3.
func TestTLSExchange(t *testing.T) {
	leakCheck(t)
	ca := newTestCA(t)
	a, ain := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost)})
	b, bin := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost)})
	sendSeq(t, a, b, 200)
	sendSeq(t, b, a, 200)
	for i := range 50 { // large frames, several TLS records each
		big := make([]byte, 200<<10)
		big[0], big[len(big)-1] = byte(i), byte(i)
		if err := a.Send(b.Local(), [][]byte{big[:7], big[7:]}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the large frames", func() bool { return bin.len() >= 250 })
	for _, r := range bin.all()[200:] {
		if len(r.data) != 200<<10 || r.from != a.Local() {
			t.Fatalf("large frame: %d bytes from %s", len(r.data), r.from)
		}
	}
	_ = ain
	for _, tr := range []*TCP{a, b} {
		tr.mu.Lock()
		for to, p := range tr.peers {
			p.mu.Lock()
			if p.oc == nil || p.oc.tc == nil {
				t.Errorf("%s → %s: not a TLS connection", tr.Local(), to)
			} else if v := p.oc.tc.ConnectionState().Version; v != tls.VersionTLS13 {
				t.Errorf("%s → %s: TLS version %x, want 1.3", tr.Local(), to, v)
			}
			p.mu.Unlock()
		}
		tr.mu.Unlock()
		if s := tr.Stats(); s.TLSRefused != 0 {
			t.Errorf("%s refused %d connections", tr.Local(), s.TLSRefused)
		}
	}
}

// A peer with a certificate of another CA, one with none, and one that
// runs no TLS cannot connect: the dialer gets an error (or, plain, the
// notice), the listener counts and reports the refusal.
func TestTLSRefusesStrangers(t *testing.T) {
	leakCheck(t)
	ca := newTestCA(t)
	var ref refusals
	srv, in := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost), OnRefused: ref.record})

	other, _ := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: newTestCA(t).config(t, localhost)})
	err := other.Send(srv.Local(), [][]byte{[]byte("x")})
	// The dialer refuses the listener's certificate (unknown authority)
	// before the listener can refuse the dialer's.
	if err == nil || !strings.Contains(err.Error(), "TLS handshake") || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("send from another CA: %v", err)
	}
	ref.waitFor(t, "TLS handshake")

	// A dialer that trusts our CA but presents another CA's certificate:
	// its handshake completes (TLS 1.3), the listener's refusal arrives
	// as an alert.
	mixed := newTestCA(t).config(t, localhost)
	mixed.RootCAs = ca.config(t, localhost).RootCAs
	m, _ := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: mixed})
	if err := m.Send(srv.Local(), [][]byte{[]byte("x")}); err == nil || !strings.Contains(err.Error(), "the listener refused") {
		t.Fatalf("send with a certificate of another CA: %v", err)
	}

	// No certificate at all.
	_, hostport, _ := Parse(srv.Local())
	c, err := tls.Dial("tcp", hostport, &tls.Config{RootCAs: mixed.RootCAs, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13})
	if err == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("a dialer without a certificate: %v", err)
	}
	ref.waitFor(t, "client didn't provide a certificate")

	// A plain Strata transport is told TLS is required.
	told := make(chan stack.Addr, 1)
	plain, _ := openTCP(t, "127.0.0.1:0", TCPOptions{OnTLSRequired: func(p stack.Addr) {
		select {
		case told <- p:
		default:
		}
	}})
	if err := plain.Send(srv.Local(), [][]byte{[]byte("x")}); err != nil {
		t.Fatal(err) // accepted by TCP; the notice comes back
	}
	select {
	case p := <-told:
		if p != srv.Local() {
			t.Fatalf("notice from %s", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the plain transport was not told that TLS is required")
	}
	ref.waitFor(t, errPlainPeer.Error())

	// A TLS dialer to a plain listener fails its handshake.
	tlsCli, _ := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost), DialTimeout: 2 * time.Second})
	if err := tlsCli.Send(plain.Local(), [][]byte{[]byte("x")}); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("TLS to a plain listener: %v", err)
	}

	waitFor(t, "the refusals counted", func() bool { return srv.Stats().TLSRefused >= 4 })
	if n := in.len(); n != 0 {
		t.Fatalf("the listener delivered %d frames from strangers", n)
	}
}

// A peer with a valid certificate cannot speak for an address its
// certificate does not cover: a host not in it, or, with address SANs,
// another port. The listener's certificate is checked for the dialed
// address in the same way.
func TestTLSIdentity(t *testing.T) {
	leakCheck(t)
	ca := newTestCA(t)
	var ref refusals
	srv, in := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost), OnRefused: ref.record})

	// Certified for another host, listening (and so claiming) 127.0.0.1.
	liar, _ := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, []string{"10.1.2.3"})})
	err := liar.Send(srv.Local(), [][]byte{[]byte("x")})
	if err == nil || !strings.Contains(err.Error(), "does not cover the host") {
		t.Fatalf("send claiming a host outside the certificate: %v", err)
	}
	ref.waitFor(t, "does not cover the host")

	// Certified for one address (URI SAN), listening on another port.
	port := freePort(t)
	good := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	bound, _ := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost, good)})
	if err := bound.Send(srv.Local(), [][]byte{[]byte("x")}); err == nil || !strings.Contains(err.Error(), "speaks for strata:"+good) {
		t.Fatalf("send from a port the certificate does not name: %v", err)
	}
	// ... and on the port it names: accepted.
	ok, _ := openTCP(t, fmt.Sprintf("127.0.0.1:%d", port), TCPOptions{TLS: ca.config(t, localhost, good)})
	if err := ok.Send(srv.Local(), [][]byte{[]byte("y")}); err != nil {
		t.Fatalf("send from the address the certificate names: %v", err)
	}
	waitFor(t, "the frame from the certified address", func() bool { return in.len() == 1 })
	if r := in.all()[0]; r.from != stack.Addr(good) || string(r.data) != "y" {
		t.Fatalf("got %q from %s", r.data, r.from)
	}

	// The dialer checks the listener: a name its certificate lacks.
	_, hostport, _ := Parse(srv.Local())
	_, p, _ := net.SplitHostPort(hostport)
	if err := ok.Send(stack.Addr("tcp:localhost:"+p), [][]byte{[]byte("z")}); err == nil || !strings.Contains(err.Error(), "TLS handshake") {
		t.Fatalf("dialing a name the listener's certificate lacks: %v", err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// CheckPeer's rule on its own.
func TestCheckPeer(t *testing.T) {
	ca := newTestCA(t)
	leaf := func(hosts []string, addrs ...string) *tls.Config { return ca.config(t, hosts, addrs...) }
	for _, c := range []struct {
		cfg  *tls.Config
		addr stack.Addr
		ok   bool
	}{
		{leaf(localhost), "tcp:127.0.0.1:7101", true},
		{leaf(localhost), "tcp:127.0.0.2:7101", false},
		{leaf([]string{"node1.example"}), "tcp:node1.example:7101", true},
		{leaf([]string{"node1.example"}), "tcp:node2.example:7101", false},
		{leaf([]string{"::1"}), "tcp:[::1]:7101", true},
		{leaf(localhost, "tcp:127.0.0.1:7101"), "tcp:127.0.0.1:7101", true},
		{leaf(localhost, "tcp:127.0.0.1:7101"), "tcp:127.0.0.1:7102", false},
		{leaf(localhost), "udp:127.0.0.1:7101", false},
	} {
		cert := c.cfg.Certificates[0].Leaf
		if err := CheckPeer(cert, c.addr); (err == nil) != c.ok {
			t.Errorf("CheckPeer(%v %v %v, %s) = %v, want ok %v", cert.IPAddresses, cert.DNSNames, cert.URIs, c.addr, err, c.ok)
		}
	}
}

// TLS options refused: on UDP, and configurations that would not
// authenticate both sides with the cluster CA.
func TestTLSOptionsRefused(t *testing.T) {
	ca := newTestCA(t)
	if _, err := ListenOpts("udp:127.0.0.1:0", Options{TLS: ca.config(t, localhost)}); err == nil || !strings.Contains(err.Error(), "TLS is for tcp") {
		t.Fatalf("UDP with TLS: %v", err)
	}
	for name, edit := range map[string]func(*tls.Config){
		"no certificate": func(c *tls.Config) { c.Certificates = nil },
		"no roots":       func(c *tls.Config) { c.RootCAs = nil },
		"no client CAs":  func(c *tls.Config) { c.ClientCAs = nil },
		"TLS 1.2":        func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 },
		"skip verify":    func(c *tls.Config) { c.InsecureSkipVerify = true },
	} {
		cfg := ca.config(t, localhost)
		edit(cfg)
		if tr, err := ListenTCPOpts("127.0.0.1:0", TCPOptions{TLS: cfg}); err == nil {
			tr.Close()
			t.Errorf("%s: accepted", name)
		}
	}
	// A weaker configuration given is made strict.
	cfg := ca.config(t, localhost)
	cfg.MinVersion, cfg.ClientAuth = tls.VersionTLS12, tls.NoClientCert
	tr, err := ListenTCPOpts("127.0.0.1:0", TCPOptions{TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.tlsServer.MinVersion != tls.VersionTLS13 || tr.tlsServer.ClientAuth != tls.RequireAndVerifyClientCert || tr.tlsClient.MinVersion != tls.VersionTLS13 {
		t.Fatalf("listener %+v", tr.tlsServer)
	}
	if errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}

// Frames that arrive together over TLS are delivered together (in batch
// calls), as without TLS: the reader takes every TLS record already read
// from the socket, not one record per read.
func TestTLSBatcher(t *testing.T) {
	ca := newTestCA(t)
	a, _ := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost)})
	b, _ := openTCP(t, "127.0.0.1:0", TCPOptions{TLS: ca.config(t, localhost)})
	l := &batchLog{}
	b.SetReceiver(l.recv)
	b.SetBatcher(l.batch)
	sendSeq(t, a, b, 5000)
	l.check(t, 5000)
}
