// Package testseed chooses the seeds of the seeded tests and prints how to
// replay one that failed. Every seeded test in the module takes its seeds
// from here, so one pair of variables drives all of them:
//
//   - STRATA_SEED=N runs only seed N: the replay of a failure, which
//     prints the command (Command) that does it.
//   - STRATA_SEEDS=K runs K seeds instead of the test's default count
//     (soak runs): the first K of its default seeds, then fresh
//     clock-derived ones if K is larger. In a time-bound campaign
//     (Stream) it runs exactly K iterations instead of until the deadline.
//   - Otherwise a test runs its default seeds, which may be fixed (Range)
//     or derived from the clock (Fresh), new on every run.
//
// A failure under Each, Stream or One logs a line
//
//	seed N failed; replay: STRATA_SEED=N go test ./pkg -run '^TestX$/^sub$'
//
// whichever way the test failed (its own t.Fatalf, a helper's t.Fatal, a
// t.Errorf from a goroutine), with the other STRATA_ variables set (such
// as a run's length) after STRATA_SEED.
package testseed

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The two variables.
const (
	SeedVar  = "STRATA_SEED"
	SeedsVar = "STRATA_SEEDS"
)

// Replaying returns STRATA_SEED's seed and whether it is set. It fails t
// if the variable does not hold an unsigned integer.
func Replaying(t testing.TB) (uint64, bool) {
	t.Helper()
	s := os.Getenv(SeedVar)
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", SeedVar, s, err)
	}
	return v, true
}

// Chosen reports whether STRATA_SEED or STRATA_SEEDS chooses the seeds
// rather than the test's defaults (a test that checks how many seeds or
// iterations ran skips the check then).
func Chosen() bool {
	return os.Getenv(SeedVar) != "" || os.Getenv(SeedsVar) != ""
}

// count returns STRATA_SEEDS and whether it is set.
func count(t testing.TB) (int, bool) {
	t.Helper()
	s := os.Getenv(SeedsVar)
	if s == "" {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive count", SeedsVar, s)
	}
	return v, true
}

// Range returns the n fixed seeds first, first+1, ..., first+n-1.
func Range(first uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out
}

// Fresh returns n consecutive seeds from a base derived from the clock:
// new seeds on every run.
func Fresh(n int) []uint64 {
	return Range(uint64(time.Now().UnixNano()), n)
}

// Seeds returns the seeds t runs: STRATA_SEED's alone, or the first
// STRATA_SEEDS of defaults followed by fresh seeds if it asks for more,
// or defaults.
func Seeds(t testing.TB, defaults ...uint64) []uint64 {
	t.Helper()
	if s, ok := Replaying(t); ok {
		return []uint64{s}
	}
	if k, ok := count(t); ok {
		if k <= len(defaults) {
			return defaults[:k]
		}
		return append(slices.Clone(defaults), Fresh(k-len(defaults))...)
	}
	return defaults
}

// Each yields the seeds Seeds returns and, if t fails while one of them
// runs (and had not failed before), logs that seed's replay command.
func Each(t testing.TB, defaults ...uint64) iter.Seq[uint64] {
	t.Helper()
	seeds := Seeds(t, defaults...)
	return func(yield func(uint64) bool) {
		for _, s := range seeds {
			if !guard(t, s, yield) {
				return
			}
		}
	}
}

// Stream is for campaigns that run until a deadline: it yields (i, seed)
// for i = 0, 1, ... while more(i) holds, each iteration with its own seed
// (consecutive from a fresh base), so that STRATA_SEED replays the
// failing iteration alone. Under STRATA_SEED it yields that seed once;
// under STRATA_SEEDS=K, K iterations whatever more says. Like Each, it
// logs the replay command of the iteration that fails.
func Stream(t testing.TB, more func(i int) bool) iter.Seq2[int, uint64] {
	t.Helper()
	one, replay := Replaying(t)
	k, counted := count(t)
	base := uint64(time.Now().UnixNano())
	return func(yield func(int, uint64) bool) {
		for i := 0; ; i++ {
			var s uint64
			switch {
			case replay:
				if i == 1 {
					return
				}
				s = one
			case counted:
				if i == k {
					return
				}
				s = base + uint64(i)
			default:
				if !more(i) {
					return
				}
				s = base + uint64(i)
			}
			if !guard(t, s, func(s uint64) bool { return yield(i, s) }) {
				return
			}
		}
	}
}

// guard runs yield(s), logging s's replay command if t fails during it,
// even by runtime.Goexit (t.Fatal) or a panic.
func guard(t testing.TB, s uint64, yield func(uint64) bool) bool {
	failed := t.Failed()
	defer func() {
		if !failed && t.Failed() {
			t.Log(Failed(t, s))
		}
	}()
	return yield(s)
}

// One returns the seed of a test that runs one: STRATA_SEED's, or a fresh
// one. If t fails, a cleanup logs the replay command. It does not heed
// STRATA_SEEDS (such a test is not a campaign over seeds).
func One(t testing.TB) uint64 {
	t.Helper()
	s, ok := Replaying(t)
	if !ok {
		s = Fresh(1)[0]
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(Failed(t, s))
		}
	})
	return s
}

// Failed returns the line a failure of seed s logs.
func Failed(t testing.TB, s uint64) string {
	return fmt.Sprintf("seed %d failed; replay: %s", s, Command(t, s))
}

// Command returns the shell command that runs t again with seed s alone:
//
//	STRATA_SEED=s go test ./pkg -run '^TestX$/^sub$'
//
// with pkg the package directory relative to the module root (the test
// runs in its package's directory) and one anchored pattern per level of
// t.Name(), so that it selects t alone. The other STRATA_ variables set
// (a run's length, say) follow STRATA_SEED, so that the replay runs in
// the same configuration.
func Command(t testing.TB, s uint64) string {
	words := []string{fmt.Sprintf("%s=%d", SeedVar, s)}
	var conf []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "STRATA_") && k != SeedVar && k != SeedsVar && v != "" {
			conf = append(conf, k+"="+shellWord(v))
		}
	}
	slices.Sort(conf)
	words = append(words, conf...)
	words = append(words, "go", "test", Package(), "-run", shellQuote(RunPattern(t.Name())))
	return strings.Join(words, " ")
}

// RunPattern returns the -run pattern that selects the test or subtest
// named name (as t.Name() spells it) and nothing else: each level
// anchored and quoted.
func RunPattern(name string) string {
	levels := strings.Split(name, "/")
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(levels, "/")
}

// Package returns "./" and the current directory's path relative to the
// root of its module ("." at the root), or the directory itself if no
// go.mod is found above it.
func Package() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return wd
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return wd
	}
	if rel == "." {
		return "."
	}
	return "./" + filepath.ToSlash(rel)
}

func moduleRoot(dir string) (string, error) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod")
		}
		dir = up
	}
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:,+=@%-]+$`)

// shellWord returns s as one word of a POSIX shell command, quoted only if
// it must be.
func shellWord(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return shellQuote(s)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
