package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"strata/internal/sealkeys"
	"strata/stack"
	"strata/stack/transport"
)

// Sealed links (docs/security.md): with --key-file FILE (or
// STRATA_KEY_FILE) every node this process opens seals what it sends and
// opens only what the cluster key sealed. Set by flag parsing, read by
// listenNode. The servers `strata up` starts inherit it (sealChildEnv).
var keyFile string

const keyFileEnv = "STRATA_KEY_FILE"

// keyReload is how often a running process looks at its key file for a
// rotation.
const keyReload = 2 * time.Second

// addKeyFileFlag gives the root command --key-file, for every
// subcommand. A new root command is a new command line: nothing adopted
// from a cluster or servers file yet (secfiles.go).
func addKeyFileFlag(c *cobra.Command) {
	resetFileSecurity()
	c.PersistentFlags().StringVar(&keyFile, "key-file", "", "seal every link of this process with the cluster key in this file (JSON, mode 0600; 'strata keys new'; default $"+keyFileEnv+"; docs/security.md)")
}

// keySettings is the key file in force: the flag's, else the
// environment's, else the one the cluster or servers file the command
// read names (secfiles.go).
func keySettings() string {
	if f := flagKeyFile(); f != "" {
		return f
	}
	f, _, _ := fileSecurity()
	return f
}

func envKeyFile() string { return os.Getenv(keyFileEnv) }

// keySource says where the key file in force was named, for errors.
func keySource() string {
	switch {
	case keyFile != "":
		return "--key-file"
	case envKeyFile() != "":
		return keyFileEnv
	}
	_, _, from := fileSecurity()
	return "key_file of " + from
}

// The process's keyrings, one per key file, each loaded once and kept in
// step with its file (a process normally has one; tests run many
// commands in one process).
var (
	ringMu sync.Mutex
	rings  = map[string]*transport.Keyring{} // guarded by ringMu
)

func processKeyring(path string) (*transport.Keyring, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	ringMu.Lock()
	defer ringMu.Unlock()
	if r := rings[abs]; r != nil {
		// Still a file we may use (the watcher keeps the keys in force
		// when a change does not load; a node opened now must not).
		if _, err := sealkeys.Load(abs); err != nil {
			return nil, err
		}
		return r, nil
	}
	r, _, err := sealkeys.Watch(abs, keyReload, nil) // watched as long as the process runs
	if err != nil {
		return nil, err
	}
	rings[abs] = r
	return r, nil
}

// withSeal adds sealing, if a key file is in force, to transport options
// (outermost: it wraps whatever Wrap already makes, e.g. the WAN).
func withSeal(o transport.Options) (transport.Options, error) {
	path := keySettings()
	if path == "" {
		// Unsealed: say so when a sealed peer tells us it needs a key
		// (it answers nothing else), once a minute per peer.
		inner := o.Wrap
		var mu sync.Mutex
		told := map[stack.Addr]time.Time{} // guarded by mu
		o.Wrap = func(tr stack.Transport) (stack.Transport, error) {
			if inner != nil {
				var err error
				if tr, err = inner(tr); err != nil {
					return nil, err
				}
			}
			return transport.Plain(tr, func(from stack.Addr) {
				noteSealRequired(from)
				mu.Lock()
				defer mu.Unlock()
				if time.Since(told[from]) < time.Minute {
					return
				}
				told[from] = time.Now()
				slog.Error("strata: the peer requires sealed links and will not answer: give --key-file (or "+keyFileEnv+") with the cluster's key file", "peer", from)
			}), nil
		}
		return o, nil
	}
	r, err := processKeyring(path)
	if err != nil {
		return o, fmt.Errorf("%s: %w", keySource(), err)
	}
	inner := o.Wrap
	o.Wrap = func(tr stack.Transport) (stack.Transport, error) {
		if inner != nil {
			var err error
			if tr, err = inner(tr); err != nil {
				return nil, err
			}
		}
		return transport.Sealed(tr, r)
	}
	return o, nil
}

// Peers that told this process, since the current command began (reset
// by withTLSHint's wrapper), that they require sealed links: the
// command's error names them.
var (
	sealReqMu sync.Mutex
	sealReqBy = map[stack.Addr]bool{} // guarded by sealReqMu
)

func noteSealRequired(peer stack.Addr) {
	sealReqMu.Lock()
	defer sealReqMu.Unlock()
	sealReqBy[peer] = true
}

// sealHint returns the peers that required sealed links since the
// command began, sorted, and forgets them.
func sealHint() []string {
	sealReqMu.Lock()
	defer sealReqMu.Unlock()
	var peers []string
	for p := range sealReqBy {
		peers = append(peers, string(p))
	}
	clear(sealReqBy)
	slices.Sort(peers)
	return peers
}

// sealChildEnv passes the key file in force (absolute) to a child.
func sealChildEnv() []string {
	path := keySettings()
	if path == "" {
		return nil
	}
	if p, err := filepath.Abs(path); err == nil {
		path = p
	}
	return []string{keyFileEnv + "=" + path}
}

func keysCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "keys",
		Short: "Cluster key files for sealed links: new, rotate, retire, show",
		Long: `A cluster key file holds the keys that seal (encrypt and authenticate)
every datagram between Strata processes run with --key-file FILE (or
STRATA_KEY_FILE=FILE): the first key seals, every key listed opens. The file
is JSON with mode 0600; a file readable by others is refused.

Rotating without downtime: run 'strata keys rotate' on a copy of the file,
copy it to every host (running processes reload it within a few seconds:
the new key seals, the old still opens), then 'strata keys retire' and copy
again. Between the copies, a process that already seals with the new key is
understood only by those that reloaded: copy to every host before the next
step. See docs/security.md.`,
	}
	c.AddCommand(&cobra.Command{
		Use:   "new FILE",
		Short: "Write a new key file with one random key (refuses to overwrite)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(args[0]); err == nil {
				return fmt.Errorf("%s exists: rotate it instead ('strata keys rotate')", args[0])
			}
			if err := sealkeys.WriteNew(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: key 1 (mode 0600)\n", args[0])
			return nil
		},
	}, &cobra.Command{
		Use:   "rotate FILE",
		Short: "Add a new random key as the primary; the others still open",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editKeys(cmd, args[0], sealkeys.Rotate)
		},
	}, &cobra.Command{
		Use:   "retire FILE",
		Short: "Drop every key but the primary",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editKeys(cmd, args[0], func(f sealkeys.File) (sealkeys.File, error) { return sealkeys.Retire(f), nil })
		},
	}, &cobra.Command{
		Use:   "show FILE",
		Short: "Check a key file and print its key ids (not the keys)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := sealkeys.Load(args[0])
			if err != nil {
				return err
			}
			for i, k := range keys {
				role := "opens"
				if i == 0 {
					role = "primary: seals and opens"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "key %d (%s)\n", k.ID, role)
			}
			return nil
		},
	})
	return c
}

func editKeys(cmd *cobra.Command, path string, edit func(sealkeys.File) (sealkeys.File, error)) error {
	f, err := sealkeys.ReadFile(path)
	if err != nil {
		return err
	}
	if f, err = edit(f); err != nil {
		return err
	}
	if len(f.Keys) == 0 {
		return errors.New("no keys left")
	}
	if err := sealkeys.Write(path, f); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: primary key %d, %d key(s) in all\n", path, f.Keys[0].ID, len(f.Keys))
	return nil
}
