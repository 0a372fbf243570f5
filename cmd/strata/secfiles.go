package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"strata/internal/certs"
	"strata/internal/sealkeys"
	"strata/wor"
)

// Security files named in a cluster file or a servers file (their
// "security" section, docs/security.md): a command that reads such a file
// adopts them (useSecurity) before it opens its node, and listenNode's
// withSeal and withTLS use them when neither a flag nor the environment
// names a key file or TLS files. Precedence, for the key file and for
// TLS separately: the flag (--key-file; --tls-dir, --tls-ca, --tls-cert,
// --tls-key), else the environment variable, else the file. TLS files
// are taken from one source as a whole: a flag or variable for any of
// them makes the file's TLS files unused.
//
// Set by the running command (one per process, or one at a time in
// tests, which run many commands in one process: addKeyFileFlag, called by rootCmd, clears them).
var (
	secMu      sync.Mutex
	secKeyFile string      // guarded by secMu: the key file a cluster or servers file named (resolved against that file's directory)
	secTLS     certs.Files // guarded by secMu: the TLS files it named (likewise)
	secFrom    string      // guarded by secMu: the file that named them, for errors
)

// resetFileSecurity forgets what files named (a new command starts).
func resetFileSecurity() {
	secMu.Lock()
	defer secMu.Unlock()
	secKeyFile, secTLS, secFrom = "", certs.Files{}, ""
}

// fileSecurity returns the key file and TLS files a cluster or servers
// file named, and that file.
func fileSecurity() (key string, tls certs.Files, from string) {
	secMu.Lock()
	defer secMu.Unlock()
	return secKeyFile, secTLS, secFrom
}

// flagKeyFile is the key file a flag or the environment names, if any.
func flagKeyFile() string {
	if keyFile != "" {
		return keyFile
	}
	return envKeyFile()
}

// useSecurity adopts the files s names (s from the cluster or servers
// file at path; relative names are relative to path's directory), for
// whatever flags and the environment leave unset. It checks what it
// adopts now, so that a missing, unreadable or badly protected file is
// an error that names the file that named it: a key file must load
// (mode 0600 or stricter), and the TLS files must load as a TLS
// configuration (the private key also 0600).
func useSecurity(path string, s *wor.Security) error {
	if s == nil {
		return nil
	}
	dir := filepath.Dir(path)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	var key string
	if s.KeyFile != "" && flagKeyFile() == "" {
		key = abs(s.KeyFile)
		if _, err := sealkeys.Load(key); err != nil {
			return fmt.Errorf("%s names key_file %s: %w", path, s.KeyFile, err)
		}
	}
	var files certs.Files
	if _, on := flagTLSSettings(); !on && (s.TLSDir != "" || s.TLSCA != "" || s.TLSCert != "" || s.TLSKey != "") {
		if s.TLSDir != "" {
			files = certs.Dir(abs(s.TLSDir))
		}
		if s.TLSCA != "" {
			files.CA = abs(s.TLSCA)
		}
		if s.TLSCert != "" {
			files.Cert = abs(s.TLSCert)
		}
		if s.TLSKey != "" {
			files.Key = abs(s.TLSKey)
		}
		if _, err := certs.Load(files); err != nil {
			return fmt.Errorf("%s names TLS files (tls_dir %q): %w", path, s.TLSDir, err)
		}
	}
	secMu.Lock()
	defer secMu.Unlock()
	if key != "" {
		secKeyFile, secFrom = key, path
	}
	if files != (certs.Files{}) {
		secTLS, secFrom = files, path
	}
	return nil
}

// loadClusterFile reads a cluster file and adopts the security files it
// names.
func loadClusterFile(path string) (*wor.ClusterConfig, error) {
	cfg, err := wor.LoadClusterConfig(path)
	if err != nil {
		return nil, err
	}
	if err := useSecurity(path, cfg.Security); err != nil {
		return nil, fmt.Errorf("cluster file %w", err)
	}
	return cfg, nil
}

// upKeyFile is the cluster key `strata up --secure` makes in its data
// folder.
const upKeyFile = "cluster.key"

// upTLSDir is the TLS directory `strata up --secure --transport tcp`
// makes in its data folder.
const upTLSDir = "tls"

// upSecurity prepares the security of the cluster `strata up` starts with
// its data in dir on transport kind ("udp" or "tcp"), and returns what
// its cluster and servers files name (nil: nothing), the key file in
// force and the TLS directory it made ("" : none).
//
// A key file a flag or the environment names seals the servers, secure or
// not (they inherit it), and the files name it by its absolute path, so
// that their clients seal too; TLS files named so are likewise named.
// Otherwise, with secure, the cluster key is dir/cluster.key, and on tcp
// the TLS directory dir/tls (a CA and a node certificate for 127.0.0.1
// and localhost), each made the first time and kept: a later
// `up --secure` on the folder uses the same, so clients keep theirs.
// Without either, links are neither sealed nor TLS.
func upSecurity(dir string, secure bool, kind string) (sec *wor.Security, keyPath, tlsPath string, err error) {
	sec = &wor.Security{}
	if key := flagKeyFile(); key != "" {
		abs, err := filepath.Abs(key)
		if err != nil {
			return nil, "", "", err
		}
		if _, err := sealkeys.Load(abs); err != nil {
			return nil, "", "", fmt.Errorf("%s: %w", keySource(), err)
		}
		sec.KeyFile, keyPath = abs, abs
	}
	if f, on := flagTLSSettings(); on {
		if kind != "tcp" {
			return nil, "", "", fmt.Errorf("TLS files are given (--tls-dir or %s), but TLS is for tcp: links: give --transport tcp", tlsDirEnv)
		}
		for _, p := range []*string{&f.CA, &f.Cert, &f.Key} {
			if *p, err = filepath.Abs(*p); err != nil {
				return nil, "", "", err
			}
		}
		if _, err := certs.Load(f); err != nil {
			return nil, "", "", fmt.Errorf("--tls-dir: %w", err)
		}
		sec.TLSCA, sec.TLSCert, sec.TLSKey = f.CA, f.Cert, f.Key
	}
	if secure {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, "", "", err
		}
		made := &wor.Security{}
		if sec.KeyFile == "" {
			path := filepath.Join(dir, upKeyFile)
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				if err := sealkeys.WriteNew(path); err != nil {
					return nil, "", "", fmt.Errorf("--secure: %w", err)
				}
			} else if err != nil {
				return nil, "", "", fmt.Errorf("--secure: %w", err)
			}
			made.KeyFile, keyPath = upKeyFile, path
		}
		if kind == "tcp" && sec.TLSCert == "" {
			path := filepath.Join(dir, upTLSDir)
			if _, err := os.Lstat(filepath.Join(path, certs.CAFile)); errors.Is(err, fs.ErrNotExist) {
				if _, err := certs.Init(path, []string{"127.0.0.1", "localhost"}); err != nil {
					return nil, "", "", fmt.Errorf("--secure: %w", err)
				}
			} else if err != nil {
				return nil, "", "", fmt.Errorf("--secure: %w", err)
			}
			made.TLSDir, tlsPath = upTLSDir, path
		}
		// Adopted as a cluster file's: the servers inherit them
		// (sealChildEnv, tlsChildEnv), and files that do not load
		// (another mode, damaged) stop up here with the reason.
		if *made != (wor.Security{}) {
			if err := useSecurity(filepath.Join(dir, "cluster.json"), made); err != nil {
				return nil, "", "", fmt.Errorf("--secure: %w", err)
			}
		}
		sec.KeyFile = cmp.Or(sec.KeyFile, made.KeyFile)
		sec.TLSDir = made.TLSDir
	}
	if *sec == (wor.Security{}) {
		return nil, "", "", nil
	}
	return sec, keyPath, tlsPath, nil
}
