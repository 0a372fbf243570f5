package main

import (
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
// tests, which run many commands in one process: rootCmd clears them).
var (
	secMu      sync.Mutex
	secKeyFile string      // guarded by secMu: the key file a cluster or servers file named (absolute)
	secTLS     certs.Files // guarded by secMu: the TLS files it named (absolute)
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

// upSecurity prepares the security of the cluster `strata up` starts with
// its data in dir, and returns what its cluster and servers files name
// (nil: nothing) and the key file in force ("" : none).
//
// A key file a flag or the environment names seals the servers, secure or
// not (they inherit it), and the files name it by its absolute path, so
// that their clients seal too. Otherwise, with secure, the cluster key is
// dir/cluster.key, made the first time (mode 0600) and kept: a later
// `up --secure` on the folder seals with the same key, so clients keep
// theirs. Without either, links are not sealed.
func upSecurity(dir string, secure bool) (*wor.Security, string, error) {
	if key := flagKeyFile(); key != "" {
		abs, err := filepath.Abs(key)
		if err != nil {
			return nil, "", err
		}
		if _, err := sealkeys.Load(abs); err != nil {
			return nil, "", fmt.Errorf("%s: %w", keySource(), err)
		}
		return &wor.Security{KeyFile: abs}, abs, nil
	}
	if !secure {
		return nil, "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, upKeyFile)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := sealkeys.WriteNew(path); err != nil {
			return nil, "", fmt.Errorf("--secure: %w", err)
		}
	} else if err != nil {
		return nil, "", fmt.Errorf("--secure: %w", err)
	}
	sec := &wor.Security{KeyFile: upKeyFile}
	// Adopted as a cluster file's: the servers inherit it (sealChildEnv),
	// and a key file that does not load (another mode, damaged) stops up
	// here with the reason.
	if err := useSecurity(filepath.Join(dir, "cluster.json"), sec); err != nil {
		return nil, "", fmt.Errorf("--secure: %w", err)
	}
	return sec, path, nil
}
