package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"strata/internal/certs"
	"strata/stack"
	"strata/stack/transport"
)

// TLS on TCP (docs/security.md): with --tls-dir DIR (ca.pem, node.pem,
// node-key.pem), or --tls-ca/--tls-cert/--tls-key naming the files one
// by one (each overrides the directory's), or the environment variables
// below when no flag is given, every TCP node this process opens runs TLS
// 1.3 with mutual authentication. Set by flag parsing, read by
// listenNode; the servers `strata up` starts inherit the files
// (tlsChildEnv). Only file names are given: keys never appear on the
// command line.
var tlsDir, tlsCA, tlsCert, tlsKey string

const (
	tlsDirEnv  = "STRATA_TLS_DIR"
	tlsCAEnv   = "STRATA_TLS_CA"
	tlsCertEnv = "STRATA_TLS_CERT"
	tlsKeyEnv  = "STRATA_TLS_KEY"
)

// addTLSFlags gives the root command the TLS flags, for every subcommand.
func addTLSFlags(c *cobra.Command) {
	f := c.PersistentFlags()
	f.StringVar(&tlsDir, "tls-dir", "", "run every TCP link of this process over TLS 1.3 with the certificates in this directory: ca.pem, node.pem, node-key.pem ('strata certs init'; default $"+tlsDirEnv+"; docs/security.md)")
	f.StringVar(&tlsCA, "tls-ca", "", "the cluster CA's certificate file for TLS (overrides --tls-dir's; default $"+tlsCAEnv+")")
	f.StringVar(&tlsCert, "tls-cert", "", "this process's certificate file for TLS (overrides --tls-dir's; default $"+tlsCertEnv+")")
	f.StringVar(&tlsKey, "tls-key", "", "this process's private key file for TLS, mode 0600 (overrides --tls-dir's; default $"+tlsKeyEnv+")")
}

// tlsSettings returns the TLS files in force and whether TLS is on: those
// flags and the environment name (flagTLSSettings), else those the
// cluster or servers file the command read names (secfiles.go).
func tlsSettings() (certs.Files, bool) {
	if f, on := flagTLSSettings(); on {
		return f, true
	}
	_, f, _ := fileSecurity()
	return f, f != certs.Files{}
}

// flagTLSSettings returns the TLS files flags and the environment name,
// and whether they name any: a flag, else its environment variable; the
// directory gives each file not named on its own.
func flagTLSSettings() (certs.Files, bool) {
	pick := func(flag, env string) string {
		if flag != "" {
			return flag
		}
		return os.Getenv(env)
	}
	var f certs.Files
	if dir := pick(tlsDir, tlsDirEnv); dir != "" {
		f = certs.Dir(dir)
	}
	if s := pick(tlsCA, tlsCAEnv); s != "" {
		f.CA = s
	}
	if s := pick(tlsCert, tlsCertEnv); s != "" {
		f.Cert = s
	}
	if s := pick(tlsKey, tlsKeyEnv); s != "" {
		f.Key = s
	}
	return f, f != certs.Files{}
}

// withTLS adds TLS, if it is on, to transport options; without it, a
// peer that requires TLS is logged and remembered for the command's error
// (tlsHint).
func withTLS(o transport.Options) (transport.Options, error) {
	f, on := tlsSettings()
	if !on {
		o.OnTLSRequired = noteTLSRequired
		return o, nil
	}
	cfg, err := certs.Load(f)
	if err != nil {
		if _, flagged := flagTLSSettings(); !flagged {
			_, _, from := fileSecurity()
			return o, fmt.Errorf("TLS files of %s: %w", from, err)
		}
		return o, fmt.Errorf("--tls-dir: %w", err)
	}
	o.TLS = cfg
	o.OnTLSRefused = logTLSRefused
	return o, nil
}

// Peers that refused this process's plain connections because they
// require TLS, since the current command began (reset by tlsHint's
// wrapper), and when each was last logged.
var (
	tlsReqMu  sync.Mutex
	tlsReqBy  = map[stack.Addr]time.Time{} // guarded by tlsReqMu
	tlsLogged = map[string]time.Time{}     // refusals logged, by remote host; guarded by tlsReqMu
)

func noteTLSRequired(peer stack.Addr) {
	tlsReqMu.Lock()
	defer tlsReqMu.Unlock()
	last, seen := tlsReqBy[peer]
	tlsReqBy[peer] = time.Now()
	if seen && time.Since(last) < time.Minute {
		return
	}
	slog.Error("strata: the peer requires TLS and refused the connection: give --tls-dir (or "+tlsDirEnv+") with the cluster's certificates", "peer", peer)
}

// logTLSRefused logs an inbound connection refused for TLS, at most every
// ten seconds per remote host (a stranger may try often).
func logTLSRefused(remote string, err error) {
	host := remote
	if i := strings.LastIndexByte(remote, ':'); i > 0 {
		host = remote[:i]
	}
	tlsReqMu.Lock()
	if time.Since(tlsLogged[host]) < 10*time.Second {
		tlsReqMu.Unlock()
		return
	}
	tlsLogged[host] = time.Now()
	tlsReqMu.Unlock()
	slog.Warn("strata: refused a TLS connection", "remote", remote, "err", err)
}

// withTLSHint wraps every command under c so that a command that fails
// after a peer refused it for want of TLS, or told it that it requires
// sealed links, says so in its error.
func withTLSHint(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			tlsReqMu.Lock()
			clear(tlsReqBy)
			tlsReqMu.Unlock()
			sealHint()
			err := run(cmd, args)
			if err == nil {
				return nil
			}
			tlsReqMu.Lock()
			var peers []string
			for p := range tlsReqBy {
				peers = append(peers, string(p))
			}
			tlsReqMu.Unlock()
			if len(peers) != 0 {
				sort.Strings(peers)
				err = fmt.Errorf("%w (%s require TLS: give --tls-dir or %s with the cluster's certificates)", err, strings.Join(peers, ", "), tlsDirEnv)
			}
			if sealed := sealHint(); len(sealed) != 0 {
				err = fmt.Errorf("%w (%s require sealed links: give --key-file or %s with the cluster's key file)", err, strings.Join(sealed, ", "), keyFileEnv)
			}
			return err
		}
	}
	for _, s := range c.Commands() {
		withTLSHint(s)
	}
}

// tlsChildEnv passes the TLS files in force (absolute) to a child.
func tlsChildEnv() []string {
	f, on := tlsSettings()
	if !on {
		return nil
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil && p != "" {
			return a
		}
		return p
	}
	return []string{tlsCAEnv + "=" + abs(f.CA), tlsCertEnv + "=" + abs(f.Cert), tlsKeyEnv + "=" + abs(f.Key)}
}

func certsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "certs",
		Short: "Certificates for TLS on TCP: a cluster CA and node certificates",
		Long: `Strata runs TCP links over TLS 1.3 with mutual authentication when given
--tls-dir DIR (or STRATA_TLS_DIR=DIR): DIR holds ca.pem (the cluster CA),
node.pem and node-key.pem (this process's certificate and key, mode 0600).
Every peer must present a certificate of the same CA that covers the address
it speaks for: its host (an IP or DNS name in the certificate), or exactly
one of the transport addresses the certificate names. See docs/security.md.

  strata certs init tls --hosts 127.0.0.1,localhost   # a CA and a node certificate
  strata certs node tls host2 --hosts 10.0.0.2         # tls/host2: another node's DIR
  STRATA_TLS_DIR=$PWD/tls strata up                    # servers on tcp: addresses`,
	}
	var hosts string
	var nodes int
	initCmd := &cobra.Command{
		Use:   "init DIR",
		Short: "Make a cluster CA and a node certificate for --hosts in DIR (a --tls-dir); --nodes N adds DIR/node-1..N",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hs := splitList(hosts)
			if len(hs) == 0 {
				return fmt.Errorf("--hosts is empty")
			}
			if nodes < 0 {
				return fmt.Errorf("--nodes %d: want 0 or more", nodes)
			}
			files, err := certs.Init(args[0], hs)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "wrote %s (keys mode 0600; keep %s with the operator, copy the rest)\n", strings.Join(files, ", "), certs.CAKeyFile)
			for i := 1; i <= nodes; i++ {
				d, err := certs.AddNode(args[0], fmt.Sprintf("node-%d", i), hs, nil)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %s: a --tls-dir for one node\n", d)
			}
			return nil
		},
	}
	initCmd.Flags().StringVar(&hosts, "hosts", "127.0.0.1,localhost", "IP addresses and DNS names the node certificates are for, comma-separated")
	initCmd.Flags().IntVar(&nodes, "nodes", 0, "also write N node directories DIR/node-1..N, each with its own certificate")
	var nodeHosts, addrs string
	nodeCmd := &cobra.Command{
		Use:   "node DIR NAME",
		Short: "Sign a node certificate with DIR's CA into DIR/NAME (a --tls-dir for that node)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			hs := splitList(nodeHosts)
			if len(hs) == 0 {
				return fmt.Errorf("--hosts is required")
			}
			d, err := certs.AddNode(args[0], args[1], hs, splitList(addrs))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: ca.pem, node.pem, node-key.pem (mode 0600)\n", d)
			return nil
		},
	}
	nodeCmd.Flags().StringVar(&nodeHosts, "hosts", "", "IP addresses and DNS names the certificate is for, comma-separated")
	nodeCmd.Flags().StringVar(&addrs, "addrs", "", "bind the certificate to these transport addresses only (tcp:host:port, comma-separated): it may speak for no other")
	c.AddCommand(initCmd, nodeCmd)
	return c
}
