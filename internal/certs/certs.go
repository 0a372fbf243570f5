// Package certs makes and loads the certificates of Strata's TLS on TCP
// (docs/security.md, "TLS on TCP"): a small certificate authority for a
// cluster (ECDSA P-256), node certificates it signs (good for both server
// and client authentication, so one file serves a process that listens and
// dials), and the *tls.Config a process runs with.
//
// A TLS directory (--tls-dir) holds three files: ca.pem (the cluster CA's
// certificate), node.pem (this process's certificate) and node-key.pem
// (its private key, mode 0600: a key file readable by group or others is
// refused, as sealkeys refuses such key files). Init also leaves the CA's
// key, ca-key.pem, in the directory it makes, for signing more nodes; copy
// only the other three to a host that runs nodes.
//
// Keys come from files only, never from the command line.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names in a TLS directory.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
	CertFile  = "node.pem"
	KeyFile   = "node-key.pem"
)

// Validity of what Init and Issue make.
const (
	CAValidity   = 365 * 24 * time.Hour
	NodeValidity = 365 * 24 * time.Hour
)

// URIScheme is the scheme of the URI SANs that bind a certificate to
// transport addresses ("strata:tcp:10.0.0.1:7101"): a certificate that
// has any may speak only for the addresses they name (see
// stack/transport's CheckPeer).
const URIScheme = "strata"

// ErrPermissions is returned for a private key file readable by group or
// others.
var ErrPermissions = errors.New("certs: private key file readable by others")

// Files names the three files a process's TLS configuration comes from.
type Files struct {
	CA, Cert, Key string
}

// Dir names the files of a TLS directory.
func Dir(dir string) Files {
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, CertFile), Key: filepath.Join(dir, KeyFile)}
}

// Authority is a CA that signs node certificates.
type Authority struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named name, valid for CAValidity.
func NewCA(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Strata"}},
		NotBefore:             now.Add(-time.Hour), // tolerate clocks a little behind
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // signs node certificates only
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	return &Authority{Cert: cert, Key: key}, nil
}

// Node is an issued certificate and its key, PEM-encoded.
type Node struct {
	CertPEM, KeyPEM []byte
}

// Issue signs a node certificate named name for hosts (IP addresses or
// DNS names; at least one) and the transport addresses in addrs (URI
// SANs "strata:tcp:host:port"; optional), valid for NodeValidity, for
// both server and client authentication.
func (ca *Authority) Issue(name string, hosts, addrs []string) (Node, error) {
	if len(hosts) == 0 {
		return Node{}, errors.New("certs: a node certificate needs at least one host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Node{}, fmt.Errorf("certs: node key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return Node{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Strata"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(NodeValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
			return Node{}, errors.New("certs: empty host")
		case net.ParseIP(h) != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(h))
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	for _, a := range addrs {
		u, err := url.Parse(URIScheme + ":" + strings.TrimSpace(a))
		if err != nil || !strings.HasPrefix(u.Opaque, "tcp:") {
			return Node{}, fmt.Errorf("certs: address %q: want tcp:host:port", a)
		}
		tmpl.URIs = append(tmpl.URIs, u)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Node{}, fmt.Errorf("certs: node certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Node{}, fmt.Errorf("certs: node key: %w", err)
	}
	return Node{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}, nil
}

// CertPEM is the CA's certificate, PEM-encoded.
func (ca *Authority) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// KeyPEM is the CA's key, PEM-encoded.
func (ca *Authority) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return n, nil
}

// Init makes a new CA and a node certificate for hosts in dir (created
// if missing, mode 0700): ca.pem, ca-key.pem, node.pem and node-key.pem,
// so that dir itself is a TLS directory for every process on these
// hosts. It refuses a dir that already holds a CA. It returns the files
// written.
func Init(dir string, hosts []string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, CAFile)); err == nil {
		return nil, fmt.Errorf("certs: %s already holds a CA (%s): add nodes to it instead", dir, CAFile)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	ca, err := NewCA("Strata cluster CA")
	if err != nil {
		return nil, err
	}
	kp, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, CAKeyFile), kp, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(dir, CAFile), ca.CertPEM(), 0o644); err != nil {
		return nil, err
	}
	n, err := ca.Issue("node", hosts, nil)
	if err != nil {
		return nil, err
	}
	if err := writeNode(dir, n); err != nil {
		return nil, err
	}
	f := Dir(dir)
	return []string{f.CA, filepath.Join(dir, CAKeyFile), f.Cert, f.Key}, nil
}

// AddNode signs a node certificate named name with the CA in caDir
// (ca.pem and ca-key.pem) and writes a TLS directory for it, caDir/name
// (mode 0700; refused if it exists): a copy of ca.pem, node.pem and
// node-key.pem. It returns that directory.
func AddNode(caDir, name string, hosts, addrs []string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("certs: bad node name %q", name)
	}
	ca, err := LoadCA(filepath.Join(caDir, CAFile), filepath.Join(caDir, CAKeyFile))
	if err != nil {
		return "", err
	}
	n, err := ca.Issue(name, hosts, addrs)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(caDir, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("certs: %w", err)
	}
	if err := writeFile(filepath.Join(dir, CAFile), ca.CertPEM(), 0o644); err != nil {
		return "", err
	}
	return dir, writeNode(dir, n)
}

func writeNode(dir string, n Node) error {
	if err := writeFile(filepath.Join(dir, KeyFile), n.KeyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CertFile), n.CertPEM, 0o644)
}

// writeFile creates path with mode (refusing to overwrite: a key or CA
// lost by mistake cannot be made again).
func writeFile(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	// The umask may have narrowed mode, never widened it; Chmod makes it
	// exact, e.g. a CA certificate others may read.
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("certs: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}

// readKey reads a private key file, refusing one readable by group or
// others.
func readKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v (chmod 600 it)", ErrPermissions, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	return b, nil
}

// LoadCA reads a CA's certificate and key (to sign node certificates).
func LoadCA(certFile, keyFile string) (*Authority, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	kb, err := readKey(keyFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		return nil, fmt.Errorf("certs: CA %s, %s: %w", certFile, keyFile, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("certs: CA key %s is not an ECDSA key", keyFile)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("certs: CA %s: %w", certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certs: %s is not a CA certificate", certFile)
	}
	return &Authority{Cert: cert, Key: key}, nil
}

// Load reads f into a *tls.Config for both roles, listening and dialing:
// TLS 1.3 only, this process's certificate, and the CA as the only root
// for the peer's certificate either way (RootCAs, ClientCAs), which
// every peer must present (RequireAndVerifyClientCert).
func Load(f Files) (*tls.Config, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("certs: TLS needs a CA, a certificate and a key file (got CA %q, certificate %q, key %q)", f.CA, f.Cert, f.Key)
	}
	cab, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	cb, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	kb, err := readKey(f.Key)
	if err != nil {
		return nil, err
	}
	cfg, err := Config(cab, Node{CertPEM: cb, KeyPEM: kb})
	if err != nil {
		return nil, fmt.Errorf("%w (CA %s, certificate %s, key %s)", err, f.CA, f.Cert, f.Key)
	}
	return cfg, nil
}

// Config is Load's configuration from PEM contents: the CA's certificate
// and a node's certificate and key.
func Config(caPEM []byte, n Node) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("certs: the CA file holds no PEM certificate")
	}
	pair, err := tls.X509KeyPair(n.CertPEM, n.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	// Our own certificate must chain to the CA we trust: a mismatch
	// would otherwise show only as every peer refusing us.
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("certs: the certificate is not signed by the CA: %w", err)
	}
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{pair},
		RootCAs:                pool,
		ClientCAs:              pool,
		ClientAuth:             tls.RequireAndVerifyClientCert,
		SessionTicketsDisabled: true, // nodes keep their connections; nothing to resume
	}, nil
}
