package transport

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"strata/stack"
)

// TLS on TCP (docs/security.md, "TLS on TCP"). With TCPOptions.TLS set,
// every connection a TCP transport dials or accepts runs TLS 1.3 with
// mutual authentication: each side presents its certificate, which must
// chain to the cluster CA (RootCAs for the listener's, ClientCAs for the
// dialer's). On top of the handshake the connection starts as without
// TLS, with the dialer's hello naming the address it speaks for, and the
// identity rule (CheckPeer) binds that address to the certificate:
//
//	dialer                                   listener
//	TLS handshake (dialer verifies the listener's certificate for the
//	  host it dialed)                      verifies the dialer's chain
//	hello "STRATA-TCP/2 tcp:host:port"  →  CheckPeer(certificate, address)
//	                                    ←  tlsAck, or tlsRefused + why
//	frames both ways
//
// The acknowledgement costs one round trip per connection and lets the
// dialer fail its Send with the reason (in TLS 1.3 the dialer's handshake
// completes before the listener has checked the dialer's certificate, so
// a refusal would otherwise surface only as a dead connection).

// Acknowledgements of a TLS hello: the first frame a TLS listener sends.
const (
	tlsAck     = "STRATA-TLS/1 OK"
	tlsRefused = "STRATA-TLS/1 REFUSED: "
)

// TLSNotice is the frame a TLS listener sends, unencrypted, to a plain
// Strata peer (recognized by its hello) before closing the connection,
// so that the peer learns why it gets no answer (TCPOptions.OnTLSRequired)
// instead of timing out in silence. It says nothing else.
const TLSNotice = "STRATA-TCP/2 TLS REQUIRED"

// errPlainPeer is why a TLS listener refuses a peer that sent a plain
// hello.
var errPlainPeer = errors.New("the peer does not run TLS (a plain Strata hello)")

// tlsConfigs checks a TLS configuration and returns the two the transport
// uses: the listener's and the dialer's (ServerName set per dial). Both
// are TLS 1.3 only and require the peer's certificate whatever cfg says,
// so a configuration made elsewhere cannot weaken the link.
func tlsConfigs(cfg *tls.Config) (server, client *tls.Config, err error) {
	if len(cfg.Certificates) == 0 && cfg.GetCertificate == nil {
		return nil, nil, errors.New("TLS: no certificate to present")
	}
	if cfg.RootCAs == nil || cfg.ClientCAs == nil {
		// Nil would mean the system's roots (dialing) or no verification
		// (listening): not the cluster CA.
		return nil, nil, errors.New("TLS: RootCAs and ClientCAs must name the cluster CA")
	}
	if cfg.MaxVersion != 0 && cfg.MaxVersion < tls.VersionTLS13 {
		return nil, nil, errors.New("TLS: MaxVersion below TLS 1.3")
	}
	if cfg.InsecureSkipVerify {
		return nil, nil, errors.New("TLS: InsecureSkipVerify is refused")
	}
	server = cfg.Clone()
	server.MinVersion = tls.VersionTLS13
	server.ClientAuth = tls.RequireAndVerifyClientCert
	server.SessionTicketsDisabled = true // connections are kept, not resumed
	client = cfg.Clone()
	client.MinVersion = tls.VersionTLS13
	return server, client, nil
}

// CheckPeer is the identity rule of TLS on TCP: whether the holder of
// cert (already verified against the cluster CA) may speak for addr. If
// the certificate names transport addresses (URI SANs
// "strata:tcp:host:port"), addr must be one of them. Otherwise addr's host
// must be one the certificate is issued for (an IP address SAN, or a DNS
// name SAN for a host name, as in HTTPS); the port is not bound, so every
// process holding a host's certificate may speak for any port on that
// host. A listener applies it to the address the dialer's hello claims, a
// dialer to the address it dialed (on top of Go's host name check).
func CheckPeer(cert *x509.Certificate, addr stack.Addr) error {
	network, hostport, err := Parse(addr)
	if err != nil {
		return err
	}
	if network != "tcp" {
		return fmt.Errorf("%s is not a tcp address", addr)
	}
	var named []string
	for _, u := range cert.URIs {
		if u.Scheme == "strata" {
			if u.Opaque == string(addr) {
				return nil
			}
			named = append(named, u.String())
		}
	}
	if len(named) > 0 {
		return fmt.Errorf("certificate %q speaks for %s, not %s", cert.Subject.CommonName, strings.Join(named, ", "), addr)
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return err
	}
	if err := cert.VerifyHostname(host); err != nil {
		return fmt.Errorf("certificate %q does not cover the host of %s: %w", cert.Subject.CommonName, addr, err)
	}
	return nil
}

// peerCert is the verified leaf certificate of a completed handshake.
func peerCert(c *tls.Conn) (*x509.Certificate, error) {
	certs := c.ConnectionState().PeerCertificates
	if len(certs) == 0 { // cannot happen: both sides require one
		return nil, errors.New("TLS: the peer presented no certificate")
	}
	return certs[0], nil
}

// dialTLS runs the dialer's side on oc's socket: the handshake (the
// listener's certificate checked for the host dialed, and CheckPeer for
// to), the hello, and the listener's acknowledgement. It returns the
// reader frames are to be read through (it may hold frames already).
func (t *TCP) dialTLS(oc *conn, to stack.Addr, hostport string) (*bufio.Reader, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	if err := oc.c.SetDeadline(time.Now().Add(t.opt.DialTimeout)); err != nil {
		return nil, err
	}
	cfg := t.tlsClient.Clone()
	cfg.ServerName = host // Go checks the listener's certificate for it
	sock := &tlsSocket{Conn: oc.c}
	tlc := tls.Client(sock, cfg)
	if err := tlc.HandshakeContext(t.ctx); err != nil {
		return nil, fmt.Errorf("dial %s: TLS handshake: %w (does the peer run TLS, with a certificate of the same CA?)", hostport, err)
	}
	cert, err := peerCert(tlc)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", hostport, err)
	}
	if err := CheckPeer(cert, to); err != nil {
		return nil, fmt.Errorf("dial %s: TLS: the listener may not speak for %s: %w", hostport, to, err)
	}
	oc.tc = tlc
	if err := t.writeFrame(oc, net.Buffers{t.helloFrame}, t.now()); err != nil {
		return nil, fmt.Errorf("dial %s: hello: %w", hostport, err)
	}
	oc.lastWrite = t.now()
	br := bufio.NewReaderSize(&tlsReader{tc: tlc, sock: sock}, readBufSize)
	ack, err := readControl(br)
	if err != nil {
		// In TLS 1.3 the listener checks our certificate after our
		// handshake has completed: its refusal (an alert) arrives here.
		return nil, fmt.Errorf("dial %s: TLS: the listener refused the connection: %w", hostport, err)
	}
	if reason, ok := strings.CutPrefix(ack, tlsRefused); ok {
		return nil, fmt.Errorf("dial %s: TLS: the listener refused the connection: %s", hostport, reason)
	}
	if ack != tlsAck {
		return nil, fmt.Errorf("dial %s: TLS: unexpected acknowledgement %q", hostport, ack)
	}
	// Deadlines from here on are writeFrame's.
	if err := oc.c.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	oc.deadline = 0
	return br, nil
}

// readControl reads a small frame: a TLS acknowledgement.
func readControl(br *bufio.Reader) (string, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return "", err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > uint32(maxHello) {
		return "", fmt.Errorf("control frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// writeControl writes payload as one frame (one write, so one TLS record).
func writeControl(w io.Writer, payload string) error {
	b := make([]byte, 4, 4+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

// acceptTLS runs the listener's side of the handshake on c (under the
// hello deadline the caller set). A plain Strata peer, recognized by its
// hello, is told (TLSNotice) and refused.
func (t *TCP) acceptTLS(c *net.TCPConn) (*tls.Conn, io.Reader, error) {
	// A TLS ClientHello is longer than this, so reading it cannot wait
	// for bytes a TLS peer will not send.
	var first [4 + len(helloMagic)]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return nil, nil, fmt.Errorf("reading the first bytes: %w", err)
	}
	if string(first[4:]) == helloMagic {
		t.tellPlain(c)
		return nil, nil, errPlainPeer
	}
	sock := &tlsSocket{Conn: &prefixConn{TCPConn: c, prefix: first[:]}}
	tlc := tls.Server(sock, t.tlsServer)
	if err := tlc.HandshakeContext(t.ctx); err != nil {
		return nil, nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tlc, &tlsReader{tc: tlc, sock: sock}, nil
}

// tlsSocket is the socket under a TLS connection. While noWait is set
// its Read fails at once (a temporary error, which leaves the TLS
// connection usable) instead of reading the socket: a tlsReader sets it
// to take from the TLS connection only the records it has already read.
// Only the connection's reader reads it (the handshake's, then the
// frame reader's), so noWait needs no lock.
type tlsSocket struct {
	net.Conn
	noWait bool
}

func (s *tlsSocket) Read(b []byte) (int, error) {
	if s.noWait {
		return 0, errNoRecord
	}
	return s.Conn.Read(b)
}

// errNoRecord is tlsSocket's "nothing without reading the socket": a
// net.Error that is temporary, so the TLS connection does not keep it.
var errNoRecord net.Error = noRecord{}

type noRecord struct{}

func (noRecord) Error() string   { return "transport: no TLS record buffered" }
func (noRecord) Timeout() bool   { return true }
func (noRecord) Temporary() bool { return true }

// tlsReader reads a TLS connection for the frame reader: what the first
// read waits for, then every further record already read from the socket
// (a TLS read returns one record's data), so that the frames that came
// in together are buffered together and delivered in one batch, as
// without TLS (TestTLSBatcher; docs/security.md has what it saved on
// WOR writes).
type tlsReader struct {
	tc   *tls.Conn
	sock *tlsSocket
}

func (r *tlsReader) Read(p []byte) (int, error) {
	n, err := r.tc.Read(p)
	if err != nil {
		return n, err
	}
	r.sock.noWait = true
	for n < len(p) {
		m, err := r.tc.Read(p[n:])
		n += m
		if err != nil || m == 0 {
			// errNoRecord, or an error the connection keeps and its next
			// Read returns again
			break
		}
	}
	r.sock.noWait = false
	return n, nil
}

// tellPlain sends TLSNotice to a plain peer, then closes our side and
// reads what it sent until it closes its own (or a second passes):
// closing a socket with unread bytes resets the connection, and the peer
// could lose the notice.
func (t *TCP) tellPlain(c *net.TCPConn) {
	if writeControl(c, TLSNotice) != nil || c.CloseWrite() != nil {
		return
	}
	if c.SetReadDeadline(time.Now().Add(time.Second)) == nil {
		io.CopyN(io.Discard, c, 1<<20)
	}
}

// refuse counts an inbound connection refused for TLS and tells
// OnRefused, unless the transport is closing (then the failure is ours).
func (t *TCP) refuse(c *net.TCPConn, err error) {
	if t.closing.Load() {
		return
	}
	t.stats.tlsRefused.Add(1)
	if f := t.opt.OnRefused; f != nil {
		f(c.RemoteAddr().String(), err)
	}
}

// prefixConn is a socket whose first bytes were read already: Read
// returns them first. Only the handshake's reader reads it (one goroutine
// at a time, serialized by the tls.Conn), so prefix needs no lock.
type prefixConn struct {
	*net.TCPConn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.TCPConn.Read(b)
}

// tlsRequired reports whether data is a TLS listener's notice to a plain
// peer, telling OnTLSRequired if so (a plain transport only).
func (t *TCP) tlsRequired(from stack.Addr, data []byte) bool {
	if len(data) != len(TLSNotice) || t.tlsServer != nil || string(data) != TLSNotice {
		return false
	}
	if f := t.opt.OnTLSRequired; f != nil {
		f(from)
	}
	return true
}

// checkHello applies the identity rule to the address a TLS dialer's
// hello claims and answers the hello: the acknowledgement, or the refusal
// with its reason (the dialer is authenticated: it may learn why).
func (t *TCP) checkHello(tlc *tls.Conn, from stack.Addr) error {
	cert, err := peerCert(tlc)
	if err == nil {
		err = CheckPeer(cert, from)
	}
	if err != nil {
		err = fmt.Errorf("hello from %s: %w", from, err)
		writeControl(tlc, tlsRefused+err.Error())
		return err
	}
	if err := writeControl(tlc, tlsAck); err != nil {
		return fmt.Errorf("acknowledging the hello of %s: %w", from, err)
	}
	return nil
}
