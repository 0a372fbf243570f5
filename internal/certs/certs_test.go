package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Init writes a CA and a node certificate (keys 0600) that Load turns
// into a TLS 1.3 configuration requiring and verifying peer certificates;
// AddNode signs another with the same CA; a key readable by others, a
// certificate from another CA and an existing CA are refused.
func TestInitLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	files, err := Init(dir, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("files: %v", files)
	}
	for _, f := range []string{KeyFile, CAKeyFile} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v %v", f, st.Mode().Perm(), err)
		}
	}
	cfg, err := Load(Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS13 || cfg.ClientAuth != tls.RequireAndVerifyClientCert || cfg.RootCAs == nil || cfg.ClientCAs == nil {
		t.Fatalf("config: %+v", cfg)
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.VerifyHostname("127.0.0.1") != nil || leaf.VerifyHostname("localhost") != nil || leaf.VerifyHostname("10.0.0.1") == nil {
		t.Fatalf("node certificate hosts: %v %v", leaf.IPAddresses, leaf.DNSNames)
	}
	if _, err := Init(dir, []string{"127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "already holds a CA") {
		t.Fatalf("init over a CA: %v", err)
	}

	nd, err := AddNode(dir, "n2", []string{"10.0.0.2"}, []string{"tcp:10.0.0.2:7101"})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Load(Dir(nd))
	if err != nil {
		t.Fatal(err)
	}
	l2, _ := x509.ParseCertificate(c2.Certificates[0].Certificate[0])
	if len(l2.URIs) != 1 || l2.URIs[0].String() != "strata:tcp:10.0.0.2:7101" {
		t.Fatalf("URIs: %v", l2.URIs)
	}
	if _, err := AddNode(dir, "n2", []string{"10.0.0.2"}, nil); err == nil {
		t.Fatal("AddNode over an existing node")
	}
	if _, err := AddNode(dir, "../x", []string{"10.0.0.2"}, nil); err == nil {
		t.Fatal("AddNode with a path for a name")
	}
	if _, err := AddNode(dir, "n3", nil, nil); err == nil {
		t.Fatal("AddNode without hosts")
	}

	// A certificate from another CA beside this CA.
	other := filepath.Join(t.TempDir(), "other")
	if _, err := Init(other, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	mixed := Dir(dir)
	mixed.Cert, mixed.Key = filepath.Join(other, CertFile), filepath.Join(other, KeyFile)
	if _, err := Load(mixed); err == nil || !strings.Contains(err.Error(), "not signed by the CA") {
		t.Fatalf("a certificate of another CA: %v", err)
	}

	if err := os.Chmod(filepath.Join(dir, KeyFile), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Dir(dir)); !errors.Is(err, ErrPermissions) {
		t.Fatalf("a key readable by group: %v", err)
	}
	if _, err := Load(Files{CA: Dir(dir).CA}); err == nil {
		t.Fatal("Load without certificate and key")
	}
}
