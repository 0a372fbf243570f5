// Command gonfsd-peer only documents this module. The module exists to pin
// GoNFS, the NFSv3 server of the GoJournal paper (github.com/mit-pdos/go-nfsd,
// v0.6.0, the only version the module proxy serves usably), as a benchmark
// peer without making the main strata module depend on it. `go install
// ...@v0.6.0` of its commands fails; building them from this module works:
//
//	go build -o BIN/go-nfsd ./cmd/go-nfsd
//	go build -o BIN/clnt-smallfile github.com/mit-pdos/go-nfsd/cmd/clnt-smallfile
//
// ./cmd/go-nfsd serves go-nfsd's file system with WRITE data copied out of the
// pooled RPC request buffer: v0.6.0 keeps pointers into that buffer in its
// journal, so later requests overwrite file data (see that command's doc).
// The upstream server is still github.com/mit-pdos/go-nfsd/cmd/go-nfsd.
//
// The tool directives in go.mod keep those packages (and so go.sum) pinned.
// strata/bench/nfs builds and starts them (StartGoNFS, ClntSmallfile).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "this module only pins github.com/mit-pdos/go-nfsd v0.6.0; build its commands with:")
	fmt.Fprintln(os.Stderr, "  go build -o BIN/go-nfsd ./cmd/go-nfsd; go build -o BIN/clnt-smallfile github.com/mit-pdos/go-nfsd/cmd/clnt-smallfile")
	os.Exit(2)
}
