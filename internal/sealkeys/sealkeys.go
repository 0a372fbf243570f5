// Package sealkeys reads and writes the cluster key files of Strata's
// sealed links (stack/transport's Sealed) and keeps a running process's
// keyring in step with its file, so that keys rotate without a restart
// (docs/security.md).
//
// A key file is JSON, readable by its owner only (mode 0600 or stricter;
// anything readable by group or others is refused, as ssh refuses such
// private keys):
//
//	{"keys": [{"id": 2, "key": "<base64 of 32 random bytes>"},
//	          {"id": 1, "key": "..."}]}
//
// The first key is the primary: it seals what the process sends. Every
// key listed opens what it receives. Keys come from files only, never
// from the command line (where other users could read them in the
// process list).
package sealkeys

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"strata/stack/transport"
)

// File is a key file's contents.
type File struct {
	Keys []Key `json:"keys"`
}

// Key is one key of a file.
type Key struct {
	ID  byte   `json:"id"`
	Key string `json:"key"` // base64 (standard, padded) of 32 bytes
}

// ErrPermissions is returned for a key file readable by group or others.
var ErrPermissions = errors.New("sealkeys: key file readable by others")

// Load reads and checks a key file.
func Load(path string) ([]transport.SealKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sealkeys: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %v (chmod 600 it)", ErrPermissions, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sealkeys: %w", err)
	}
	return Parse(b)
}

// Parse reads a key file's contents.
func Parse(b []byte) ([]transport.SealKey, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("sealkeys: key file: %w", err)
	}
	if len(f.Keys) == 0 {
		return nil, errors.New("sealkeys: key file lists no keys")
	}
	var out []transport.SealKey
	seen := map[byte]bool{}
	for i, k := range f.Keys {
		if seen[k.ID] {
			return nil, fmt.Errorf("sealkeys: key file: id %d twice", k.ID)
		}
		seen[k.ID] = true
		raw, err := base64.StdEncoding.DecodeString(k.Key)
		if err != nil {
			return nil, fmt.Errorf("sealkeys: key file: key %d (id %d): %w", i, k.ID, err)
		}
		var sk transport.SealKey
		if len(raw) != len(sk.Secret) {
			return nil, fmt.Errorf("sealkeys: key file: key %d (id %d) has %d bytes, want %d", i, k.ID, len(raw), len(sk.Secret))
		}
		sk.ID = k.ID
		copy(sk.Secret[:], raw)
		out = append(out, sk)
	}
	return out, nil
}

// NewKey returns a fresh random key with id.
func NewKey(id byte) (Key, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Key{}, err
	}
	return Key{ID: id, Key: base64.StdEncoding.EncodeToString(raw[:])}, nil
}

// WriteNew writes a new key file at path with one fresh random key (id
// 1), refusing to replace an existing file.
func WriteNew(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("sealkeys: %s exists", path)
	}
	k, err := NewKey(1)
	if err != nil {
		return err
	}
	return Write(path, File{Keys: []Key{k}})
}

// Write writes f to path with mode 0600, atomically (a process watching
// the file never reads half of it).
func Write(path string, f File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if _, err := Parse(b); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // WriteFile keeps an existing file's mode
		return err
	}
	return os.Rename(tmp, path)
}

// ReadFile reads a key file as written (for rotation).
func ReadFile(path string) (File, error) {
	if _, err := Load(path); err != nil {
		return File{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	var f File
	return f, json.Unmarshal(b, &f)
}

// Rotate adds a new random key as the primary, keeping the others (which
// still open): step one and two of a rotation at once for this file.
func Rotate(f File) (File, error) {
	id := byte(1)
	for _, k := range f.Keys {
		id = max(id, k.ID+1)
	}
	if id == 0 || slices.ContainsFunc(f.Keys, func(k Key) bool { return k.ID == id }) {
		return f, errors.New("sealkeys: no free key id (retire old keys first)")
	}
	k, err := NewKey(id)
	if err != nil {
		return f, err
	}
	return File{Keys: append([]Key{k}, f.Keys...)}, nil
}

// Retire keeps only the primary key.
func Retire(f File) File {
	if len(f.Keys) == 0 {
		return f
	}
	return File{Keys: f.Keys[:1]}
}

// Watch loads path into a new keyring and then checks the file every
// interval: a changed file that loads replaces the ring's keys (a file
// that does not load is logged and ignored, keeping the keys in force).
// stop ends the watching.
func Watch(path string, interval time.Duration, log *slog.Logger) (ring *transport.Keyring, stop func(), err error) {
	keys, err := Load(path)
	if err != nil {
		return nil, nil, err
	}
	ring, err = transport.NewKeyring(keys...)
	if err != nil {
		return nil, nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	mod := modTime(path)
	done := make(chan struct{})
	var once sync.Once
	go func() { // ends when stop is called
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			m := modTime(path)
			if m.Equal(mod) {
				continue
			}
			mod = m
			keys, err := Load(path)
			if err == nil {
				err = ring.SetKeys(keys...)
			}
			if err != nil {
				log.Warn("sealkeys: key file changed but does not load; keeping the keys in force", "file", path, "err", err)
				continue
			}
			log.Info("sealkeys: keys reloaded", "file", path, "ids", ring.IDs())
		}
	}()
	return ring, func() { once.Do(func() { close(done) }) }, nil
}

func modTime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}
