package nfsbench

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/bench/kit"
)

// The ratios pair rounds (the median of per-round ratios), exist only for
// the pairs of like durability plus the one labelled cross-durability
// target, and a cell that failed in a round has no ratio that round.
func TestPairRatios(t *testing.T) {
	var rs []Result
	add := func(server, workload string, clients, round int, v float64) {
		rs = append(rs, Result{Server: server, Workload: workload, Clients: clients, Round: round, PerSec: v})
	}
	// smallfile at 4 clients: strata-async 10, 20, 30; ganesha 5, 40, 10
	// -> per round 2, 0.5, 3: median 2 (the ratio of medians would be 2
	// too by chance; the spread shows the pairing).
	for r, v := range [][2]float64{{10, 5}, {20, 40}, {30, 10}} {
		add(StrataAsync, "smallfile", 4, r+1, v[0])
		add(Ganesha, "smallfile", 4, r+1, v[1])
	}
	// strata smallfile: 100, 100, 100 against gonfs 50, 400, 25 -> 2,
	// 0.25, 4: median 2 (ratio of medians 100/50 = 2 too) and against
	// ganesha 5, 40, 10 -> 20, 2.5, 10: median 10 (ratio of medians 10).
	for r, v := range []float64{50, 400, 25} {
		add(Strata, "smallfile", 4, r+1, 100)
		add(GoNFS, "smallfile", 4, r+1, v)
	}
	// largefile-write: every system; gonfs failed in round 2 (no result).
	for r := 1; r <= 3; r++ {
		add(Strata, "largefile-write", 1, r, 100)
		add(StrataAsync, "largefile-write", 1, r, 120)
		add(Ganesha, "largefile-write", 1, r, 80)
		add(Null, "largefile-write", 1, r, 200)
		if r != 2 {
			add(GoNFS, "largefile-write", 1, r, 50*float64(r))
		}
		add("fio", "sequential-write", 1, r, 500)
	}
	// app at 16 clients: the peer never finished it.
	add(StrataAsync, "app", 16, 1, 70)

	rep := kit.NewReport("nfs", nil)
	ratios := pairRatios(rs)
	ratios.Summarize(rep)
	want := map[string]float64{
		"smallfile strata-async/ganesha clients=4":          2,
		"smallfile strata/gonfs clients=4":                  2,
		"smallfile strata/ganesha-own-durability clients=4": 10,
		"largefile-write strata-async/ganesha":              1.5,
		"largefile-write strata/ganesha":                    1.25,
		"largefile-write strata/gonfs":                      kit.Round3((2 + 100.0/150) / 2),
		"largefile-write strata/null":                       0.5,
		"largefile-write strata-async/null":                 0.6,
	}
	for k, w := range want {
		if g, ok := rep.Ratios[k]; !ok || g != w {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
	for k := range rep.Ratios {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected ratio %s = %v", k, rep.Ratios[k])
		}
		if strings.Contains(k, "strata-async/gonfs") || strings.Contains(k, "fio") {
			t.Errorf("ratio %s compares unlike durability or the disk", k)
		}
	}
	if sp := rep.Spread["smallfile strata-async/ganesha clients=4"]; sp != [2]float64{0.5, 3} {
		t.Errorf("spread %v, want [0.5 3]: the ratios are not paired per round", sp)
	}
	if n := len(ratios["largefile-write strata/gonfs"]); n != 2 {
		t.Errorf("strata/gonfs largefile has %d rounds of ratios, want 2 (gonfs failed round 2)", n)
	}
}

// Targets are met, not met, or not measured (no ratio).
func TestJudge(t *testing.T) {
	rep := kit.NewReport("nfs", nil)
	rep.Ratios["largefile-write strata/null"] = 0.85
	rep.Ratios["largefile-read strata/null"] = 0.79
	ts := judge(rep)
	byRatio := map[string]Target{}
	for _, tg := range ts {
		byRatio[tg.Ratio] = tg
	}
	if tg := byRatio["largefile-write strata/null"]; !tg.Met || tg.Measured != 0.85 {
		t.Errorf("write: %+v, want met at 0.85", tg)
	}
	if tg := byRatio["largefile-read strata/null"]; tg.Met || tg.Measured != 0.79 {
		t.Errorf("read: %+v, want not met at 0.79", tg)
	}
	if tg := byRatio["app strata-async/ganesha clients=16"]; tg.Met || tg.Measured != 0 {
		t.Errorf("app: %+v, want not measured", tg)
	}
	for _, tg := range ts {
		if strings.Contains(tg.Ratio, "strata-async/gonfs") {
			t.Errorf("target on unlike durability: %s", tg.Ratio)
		}
	}
}

// fakeHost starts in-process null servers for every system but those in
// fail (which do not start) and dead (which start but whose address
// refuses connections, so every cell fails), and records the order of
// first starts.
type fakeHost struct {
	t          *testing.T
	fail, dead []string
	mu         sync.Mutex
	starts     []string
}

func (f *fakeHost) host() *host {
	return &host{
		prepare: func(context.Context, *Config, *kit.Report) (func(), error) { return func() {}, nil },
		start: func(ctx context.Context, cfg *Config, name string) (*system, error) {
			f.mu.Lock()
			f.starts = append(f.starts, name)
			f.mu.Unlock()
			if slices.Contains(f.fail, name) {
				return nil, errors.New("no such server here")
			}
			if slices.Contains(f.dead, name) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					return nil, err
				}
				a := ln.Addr().String()
				ln.Close()
				return &system{server: Server{Name: name, NFSAddr: a, MountAddr: a, Export: "/"}, stop: func() {}}, nil
			}
			s := startNull(f.t, NewNullServer(), nil)
			s.Name = name
			return &system{server: s, stop: func() {}}, nil
		},
	}
}

func testConfig(t *testing.T, systems ...string) Config {
	return Config{Systems: systems, Clients: []int{1}, Duration: 100 * time.Millisecond, Rounds: 2, Large: 1 << 20,
		Dir: t.TempDir(), AppSrc: "none", CellTimeout: time.Minute}
}

// A peer that does not start fails the run with a message naming it and
// the flags that skip it; no report.
func TestRunPeerDoesNotStart(t *testing.T) {
	f := &fakeHost{t: t, fail: []string{Ganesha}}
	cfg := testConfig(t, Strata, Ganesha, GoNFS)
	cfg.host = f.host()
	rep, err := Run(context.Background(), cfg)
	if err == nil || rep != nil {
		t.Fatalf("Run with a peer that does not start: report %v, error %v; want an error and no report", rep != nil, err)
	}
	for _, s := range []string{"ganesha did not start", "--peers gonfs", "--no-peers", "no such server here"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	cfg = testConfig(t, Strata, StrataAsync, Null)
	cfg.host = (&fakeHost{t: t, fail: []string{Null}}).host()
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--null=false") {
		t.Errorf("Run with a null server that does not start: %v, want the hint --null=false", err)
	}
}

// A peer's cells that fail mid-run are failures of the report, with no
// ratio, and do not fail the run; the order of the systems rotates every
// round.
func TestRunPeerCellsFail(t *testing.T) {
	f := &fakeHost{t: t, dead: []string{Ganesha}}
	systems := []string{Strata, StrataAsync, Ganesha, GoNFS, Null}
	cfg := testConfig(t, systems...)
	cfg.host = f.host()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run with a peer whose cells fail: %v", err)
	}
	if len(rep.Failures) == 0 {
		t.Fatal("no failures recorded")
	}
	for _, fl := range rep.Failures {
		if !strings.Contains(fl, Ganesha) {
			t.Errorf("failure of another system: %s", fl)
		}
	}
	for k := range rep.Ratios {
		if strings.Contains(k, Ganesha) {
			t.Errorf("ratio %s with a peer whose every cell failed", k)
		}
	}
	for _, k := range []string{"smallfile strata/gonfs clients=1", "largefile-write strata/null", "largefile-read strata-async/null"} {
		if _, ok := rep.Ratios[k]; !ok {
			t.Errorf("no ratio %s: %v", k, rep.Ratios)
		}
	}
	res := rep.Results.(*Results)
	for _, r := range res.Runs {
		if r.Server == Null && r.Workload == "smallfile" {
			t.Errorf("the null server ran smallfile: %+v", r)
		}
	}
	// First starts of each round (restarts after a failed cell repeat
	// a name).
	var firsts []string
	for _, s := range f.starts {
		if len(firsts) == 0 || firsts[len(firsts)-1] != s {
			firsts = append(firsts, s)
		}
	}
	want := append(slices.Clone(systems), kit.Order(1, systems)...)
	if !slices.Equal(firsts, want) {
		t.Errorf("start order %v, want %v", firsts, want)
	}
	var out strings.Builder
	Print(&out, rep)
	for _, s := range []string{"targets", "largefile-write strata/null", "FAILED", "settings:", "not measured"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("printed report lacks %q:\n%s", s, out.String())
		}
	}
}

// A Strata cell that fails fails the run, with the report complete.
func TestRunStrataCellFails(t *testing.T) {
	cfg := testConfig(t, Strata, Null)
	cfg.host = (&fakeHost{t: t, dead: []string{Strata}}).host()
	rep, err := Run(context.Background(), cfg)
	var sf *StrataFailedError
	if !errors.As(err, &sf) || rep == nil {
		t.Fatalf("Run with failing Strata cells: report %v, error %v; want a report and a StrataFailedError", rep != nil, err)
	}
	if _, ok := rep.Ratios["largefile-write strata/null"]; ok {
		t.Error("a ratio from a failed cell")
	}
}

// The versions the report prints are the ones bench/nfs/gonfsd pins.
func TestGoNFSVersions(t *testing.T) {
	b, err := os.ReadFile("gonfsd/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"github.com/mit-pdos/go-nfsd " + GoNFSVersion, "github.com/mit-pdos/go-journal " + GoJournalVersion} {
		if !strings.Contains(string(b), want) {
			t.Errorf("gonfsd/go.mod does not require %s", want)
		}
	}
}

// Skip hints name the flags of strata bench nfs.
func TestSkipHint(t *testing.T) {
	for _, c := range []struct {
		name    string
		systems []string
		want    string
	}{
		{GoNFS, []string{Strata, Ganesha, GoNFS}, "--peers ganesha"},
		{GoNFS, []string{Strata, GoNFS}, "--no-peers"},
		{StrataAsync, []string{Strata, StrataAsync}, "--async=false"},
		{Strata, []string{Strata}, ""},
	} {
		if got := skipHint(c.name, c.systems); !strings.Contains(got, c.want) || (c.want == "" && got != "") {
			t.Errorf("skipHint(%s, %v) = %q, want %q in it", c.name, c.systems, got, c.want)
		}
	}
}
