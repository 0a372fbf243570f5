// Command strata is the single binary of the Strata storage system.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"strata/internal/memlimit"
)

func main() {
	tuneGC()
	stop := startProfile(os.Getenv("STRATA_CPUPROFILE"))
	defer writeHeapProfile(os.Getenv("STRATA_MEMPROFILE"))
	err := rootCmd().Execute()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata:", err)
		os.Exit(1)
	}
}

// tuneGC sets the garbage collector for Strata's servers, unless the user
// set GOGC or GOMEMLIMIT. They keep a small live heap and allocate per
// message, so with Go's default (collect when the heap doubles) a busy
// group member spent about a quarter of its CPU collecting. Strata lets
// the heap grow to five times the live heap (GOGC=400) under a soft limit
// of a quarter of the machine's memory (the JVM's default maximum heap),
// near which the collector runs as often as it must. A parent that starts
// several servers on one machine (up, the benchmarks) gives each its
// share instead, in GOMEMLIMIT (internal/memlimit).
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := memlimit.Total(); total > 0 {
			debug.SetMemoryLimit(int64(total / 4))
		}
	}
}

// createProfile creates a profile's file: path with "%p" replaced by the
// process id, so that the servers a benchmark starts each write their own.
func createProfile(path string) (*os.File, error) {
	return os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
}

// writeHeapProfile writes a heap profile of this process to path ("%p"
// as for startProfile) as the command returns; an empty path does
// nothing.
func writeHeapProfile(path string) {
	if path == "" {
		return
	}
	f, err := createProfile(path)
	if err == nil {
		err = pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata: STRATA_MEMPROFILE:", err)
	}
}

// startProfile writes a CPU profile of this process to path ("%p" as for
// createProfile) until the command returns. For finding where time goes;
// an empty path does nothing.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := createProfile(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "strata: STRATA_CPUPROFILE:", err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "strata",
		Short: "Strata: a crash-safe, replicated, geo-aware storage system",
		Long: `Strata is one storage system built from the designs of five papers:
a crash-safe concurrent journal (GoJournal), layered protocol stacks
(Ensemble), write-once registers (WormSpace), erasure-coded geo storage
(Pando) and a Modular PlusCal compiler (PGo).

Start with:  strata up`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(upCmd(), journalCmd(), stackCmd(), worCmd(), kvCmd(), logCmd(), txCmd(), nfsCmd(), mpcalCmd(), raftkvCmd(), pbkvCmd(), crdtCmd(), benchCmd(), geoCmd(), wanCmd(), keysCmd(), certsCmd())
	addKeyFileFlag(root)
	addTLSFlags(root)
	withTLSHint(root)
	return root
}
