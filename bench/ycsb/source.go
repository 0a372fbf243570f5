package ycsb

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"slices"
	"strings"
)

// source is this package's own code, embedded so that a binary can say
// which generator it was built with: the etcd peer is built from its own
// module (bench/etcd) into a cache keyed by that module's files only, and
// the harness compares SourceHash with the peer's to rebuild a peer whose
// generator is stale.
//
//go:embed *.go
var source embed.FS

// SourceHash is a hash of the package's non-test Go files.
func SourceHash() string {
	names, _ := fs.Glob(source, "*.go")
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, _ := source.ReadFile(n)
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
