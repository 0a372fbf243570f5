package testseed

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSeeds(t *testing.T) {
	def := Range(10, 3)
	if !slices.Equal(def, []uint64{10, 11, 12}) {
		t.Fatalf("Range(10, 3) = %v", def)
	}
	t.Setenv(SeedVar, "")
	t.Setenv(SeedsVar, "")
	if got := Seeds(t, def...); !slices.Equal(got, def) || Chosen() {
		t.Errorf("no variable: %v (chosen %v), want the defaults %v", got, Chosen(), def)
	}
	t.Setenv(SeedsVar, "2")
	if !Chosen() {
		t.Errorf("%s=2: not Chosen", SeedsVar)
	}
	if got := Seeds(t, def...); !slices.Equal(got, def[:2]) {
		t.Errorf("%s=2: %v, want %v", SeedsVar, got, def[:2])
	}
	t.Setenv(SeedsVar, "5")
	if got := Seeds(t, def...); len(got) != 5 || !slices.Equal(got[:3], def) || got[3]+1 != got[4] {
		t.Errorf("%s=5: %v, want the defaults then two consecutive fresh seeds", SeedsVar, got)
	}
	t.Setenv(SeedVar, "77")
	if got := Seeds(t, def...); !slices.Equal(got, []uint64{77}) {
		t.Errorf("%s=77: %v, want [77] (it wins over %s)", SeedVar, got, SeedsVar)
	}
	t.Setenv(SeedVar, "0x10")
	if got := Seeds(t, def...); !slices.Equal(got, []uint64{16}) {
		t.Errorf("%s=0x10: %v, want [16]", SeedVar, got)
	}
	if a, b := Fresh(2), Fresh(1); a[0]+1 != a[1] || b[0] == 0 {
		t.Errorf("Fresh: %v %v", a, b)
	}
}

func TestStream(t *testing.T) {
	collect := func() (is []int, ss []uint64) {
		for i, s := range Stream(t, func(i int) bool { return i < 3 }) {
			is = append(is, i)
			ss = append(ss, s)
		}
		return
	}
	t.Setenv(SeedVar, "")
	t.Setenv(SeedsVar, "")
	if is, ss := collect(); !slices.Equal(is, []int{0, 1, 2}) || ss[0]+2 != ss[2] {
		t.Errorf("until more says stop: %v %v", is, ss)
	}
	t.Setenv(SeedsVar, "5")
	if is, _ := collect(); !slices.Equal(is, []int{0, 1, 2, 3, 4}) {
		t.Errorf("%s=5: iterations %v", SeedsVar, is)
	}
	t.Setenv(SeedVar, "9")
	if is, ss := collect(); !slices.Equal(is, []int{0}) || !slices.Equal(ss, []uint64{9}) {
		t.Errorf("%s=9: %v %v", SeedVar, is, ss)
	}
	// Breaking out of the loop stops the iterator.
	t.Setenv(SeedVar, "")
	t.Setenv(SeedsVar, "")
	n := 0
	for range Stream(t, func(int) bool { return true }) {
		if n++; n == 4 {
			break
		}
	}
}

func TestCommand(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "STRATA_") {
			t.Setenv(k, "")
		}
	}
	t.Run("sub case", func(t *testing.T) {
		want := `STRATA_SEED=42 go test ./internal/testseed -run '^TestCommand$/^sub_case$'`
		if got := Command(t, 42); got != want {
			t.Errorf("Command = %s\nwant      %s", got, want)
		}
		// The configuration goes with the seed; the seed count does not.
		t.Setenv("STRATA_Z_STEPS", "5000")
		t.Setenv("STRATA_A_DIR", "/tmp/a b")
		t.Setenv(SeedsVar, "100")
		want = `STRATA_SEED=42 STRATA_A_DIR='/tmp/a b' STRATA_Z_STEPS=5000 go test ./internal/testseed -run '^TestCommand$/^sub_case$'`
		if got := Command(t, 42); got != want {
			t.Errorf("Command = %s\nwant      %s", got, want)
		}
	})
	if got := RunPattern("TestX/it's/a|b"); got != `^TestX$/^it's$/^a\|b$` {
		t.Errorf("RunPattern = %s", got)
	}
	// The quoting survives the shell.
	for _, s := range []string{"plain", "it's", `a\b$c"d`, "''"} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil {
			t.Skipf("no sh: %v", err)
		}
		if string(out) != s {
			t.Errorf("shellQuote(%q) came back from sh as %q", s, out)
		}
	}
}

// childVar makes the test binary, run as a child, run the Child tests.
const childVar = "STRATA_TESTSEED_CHILD"

// TestChildTree is a tree of subtests with awkward names, run only as a
// child: each leaf prints its name.
func TestChildTree(t *testing.T) {
	if os.Getenv(childVar) == "" {
		t.Skip("run by TestRunPatternSelectsOne")
	}
	leaf := func(t *testing.T) { fmt.Printf("LEAF %s\n", t.Name()) }
	for _, name := range []string{"paxos", "paxos-persistent", "a b", "[::1]", "p|q", "x$", "it's", "dup", "dup", "(paren)", `back\slash`, "1.5", ".*"} {
		t.Run(name, leaf)
	}
	t.Run("udp/[::1]/7", leaf) // a name with slashes: three levels
	t.Run("outer", func(t *testing.T) {
		t.Run("inner", leaf)
		t.Run("inner2", leaf)
		t.Run("in", leaf)
	})
}

func TestChildTreeTwin(t *testing.T) { // a sibling whose name extends the other
	if os.Getenv(childVar) == "" {
		t.Skip("run by TestRunPatternSelectsOne")
	}
	fmt.Printf("LEAF %s\n", t.Name())
}

// childEnv is the environment of a child run: the race detector's
// second's wait at exit is skipped.
func childEnv(extra ...string) []string {
	return append(append(os.Environ(), childVar+"=1", "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0"), extra...)
}

func leaves(t *testing.T, pattern string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+pattern)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child -test.run=%s: %v\n%s", pattern, err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(l, "LEAF "); ok {
			got = append(got, name)
		}
	}
	return got
}

// TestRunPatternSelectsOne runs this test binary with the pattern of each
// leaf subtest of TestChildTree (and of TestChildTree itself) and checks
// that it selects that test alone; and that every level of the pattern
// matches the name's level as a regexp.
func TestRunPatternSelectsOne(t *testing.T) {
	all := leaves(t, "^TestChildTree")
	if len(all) != 18 {
		t.Fatalf("the tree has %d leaves, want 18: %q", len(all), all)
	}
	for _, name := range all {
		p := RunPattern(name)
		levels, elems := strings.Split(p, "/"), strings.Split(name, "/")
		if len(levels) != len(elems) {
			t.Fatalf("%s: pattern %s has %d levels, the name %d", name, p, len(levels), len(elems))
		}
		for i := range levels {
			if !regexp.MustCompile(levels[i]).MatchString(elems[i]) {
				t.Errorf("%s: level %d pattern %s does not match %q", name, i, levels[i], elems[i])
			}
		}
		if got := leaves(t, p); !slices.Equal(got, []string{name}) {
			t.Errorf("-run %s selected %q, want only %q", p, got, name)
		}
	}
	if got := leaves(t, RunPattern("TestChildTree/outer")); !slices.Equal(got, []string{"TestChildTree/outer/inner", "TestChildTree/outer/inner2", "TestChildTree/outer/in"}) {
		t.Errorf("-run %s selected %q", RunPattern("TestChildTree/outer"), got)
	}
}

// TestChildCampaign fails on seed STRATA_TESTSEED_FAIL (run as a child),
// by a helper's t.Fatal, by t.Errorf from a goroutine or in a subtest,
// as STRATA_TESTSEED_HOW says.
func TestChildCampaign(t *testing.T) {
	if os.Getenv(childVar) == "" {
		t.Skip("run by TestReplayReproduces")
	}
	t.Run("sub", func(t *testing.T) {
		for seed := range Each(t, Range(1, 6)...) {
			fmt.Printf("RAN %d\n", seed)
			if fmt.Sprint(seed) != os.Getenv("STRATA_TESTSEED_FAIL") {
				continue
			}
			switch os.Getenv("STRATA_TESTSEED_HOW") {
			case "fatal":
				fatalHelper(t)
			case "goroutine":
				done := make(chan bool)
				go func() { t.Errorf("bad seed"); close(done) }()
				<-done
			case "subtest":
				t.Run("deeper", func(t *testing.T) { t.Error("bad seed") })
			}
		}
	})
}

func fatalHelper(t *testing.T) { t.Helper(); t.Fatal("bad seed") }

// TestChildStream is a time-bound campaign (run as a child) whose
// iterations fail on the seeds that are 3 mod 5.
func TestChildStream(t *testing.T) {
	if os.Getenv(childVar) == "" {
		t.Skip("run by TestReplayReproduces")
	}
	for i, seed := range Stream(t, func(i int) bool { return i < 50 }) {
		fmt.Printf("RAN %d\n", seed)
		if seed%5 == 3 {
			t.Fatalf("iteration %d: seed %d is 3 mod 5", i, seed)
		}
	}
}

var replayLine = regexp.MustCompile(`seed (\d+) failed; replay: STRATA_SEED=(\d+)((?: STRATA_\w+=\S+)*) go test (\S+) -run '(.*)'`)

// TestReplayReproduces fails a campaign on one seed, takes the replay
// command from the failure's output and runs it (the test binary, with
// the command's STRATA_SEED and -run): that seed alone must run, and fail.
func TestReplayReproduces(t *testing.T) {
	run := func(env []string, pattern string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.v")
		cmd.Env = append(childEnv(SeedVar+"=", SeedsVar+"="), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, how := range []string{"fatal", "goroutine", "subtest", "stream"} {
		test, env := "^TestChildCampaign$", []string{"STRATA_TESTSEED_FAIL=4", "STRATA_TESTSEED_HOW=" + how}
		if how == "stream" {
			test, env = "^TestChildStream$", nil
		}
		out, err := run(env, test)
		if err == nil {
			t.Fatalf("%s: the campaign passed:\n%s", how, out)
		}
		m := replayLine.FindAllStringSubmatch(out, -1)
		if len(m) != 1 {
			t.Fatalf("%s: %d replay lines in:\n%s", how, len(m), out)
		}
		seed, conf, pkg, pattern := m[0][2], strings.Fields(m[0][3]), m[0][4], m[0][5]
		if seed != m[0][1] || pkg != "./internal/testseed" || (how != "stream" && seed != "4") {
			t.Fatalf("%s: bad replay line %s", how, m[0][0])
		}
		if how == "stream" && !strings.Contains(out, "seed "+seed+" is 3 mod 5") {
			t.Fatalf("stream: the replay line names seed %s, not the failing iteration's:\n%s", seed, out)
		}
		// The replay line carries the configuration (here which seed
		// fails and how): run with its variables only.
		out, err = run(append(conf, SeedVar+"="+seed), pattern)
		if err == nil {
			t.Fatalf("%s: the replay passed:\n%s", how, out)
		}
		ran := regexp.MustCompile(`RAN (\d+)`).FindAllStringSubmatch(out, -1)
		if len(ran) != 1 || ran[0][1] != seed {
			t.Fatalf("%s: the replay ran %v, want only seed %s:\n%s", how, ran, seed, out)
		}
		if how == "stream" && !strings.Contains(out, "iteration 0: seed "+seed+" is 3 mod 5") {
			t.Fatalf("stream: the replay did not fail the same way:\n%s", out)
		}
	}
}
