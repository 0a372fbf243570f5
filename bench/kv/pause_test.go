package kv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"strata/bench/kit"
	"strata/bench/ycsb"
)

// world holds the fake systems of a schedule test and checks, at every
// operation that is measured, the rule the harness promises: the system
// runs, was found healthy since its last resume, and every other system
// is paused.
type world struct {
	t       *testing.T
	systems []*fakeSystem
	log     []string // operations in order: "strata run A/1", "etcd pause", ...
}

// fakeSystem is a system without servers: it records what the harness
// does to it.
type fakeSystem struct {
	w       *world
	name    string
	paused  bool
	resumes int // resumes so far
	// probe answers the n-th probe (from 0) since the last resume, or
	// since the start before the first.
	probe  func(resumes, n int) (string, error)
	n      int         // probes since the last resume
	oks    []time.Time // ends of the successful probes since the last resume
	okView []string    // their views
	settle time.Duration
	syncs  uint64
}

func (w *world) add(name string) *fakeSystem {
	f := &fakeSystem{w: w, name: name, settle: 5 * time.Millisecond,
		probe: func(int, int) (string, error) { return "leader 1 term 1", nil }}
	w.systems = append(w.systems, f)
	return f
}

// check is called by every measured operation of f.
func (w *world) check(f *fakeSystem, op string) {
	w.t.Helper()
	w.log = append(w.log, f.name+" "+op)
	if f.paused {
		w.t.Errorf("%s %s while %s is paused", f.name, op, f.name)
	}
	for _, o := range w.systems {
		if o != f && !o.paused {
			w.t.Errorf("%s %s while %s runs", f.name, op, o.name)
		}
	}
	// Healthy: the last two probes since the resume succeeded with one
	// view, at least the settle time apart.
	k := len(f.oks)
	if f.resumes > 0 && (k < 2 || f.okView[k-1] != f.okView[k-2] || f.oks[k-1].Sub(f.oks[k-2]) < f.settle) {
		w.t.Errorf("%s %s before it was confirmed healthy (probes since the resume: %v)", f.name, op, f.okView)
	}
}

func (f *fakeSystem) Name() string { return f.name }

func (f *fakeSystem) Load(_ context.Context, lc ycsb.LoadConfig) (ycsb.LoadResult, uint64, error) {
	f.w.check(f, fmt.Sprintf("load %d", lc.To))
	return ycsb.LoadResult{Records: lc.To - lc.From, Seconds: 1, OpsPerSec: 1}, 1, nil
}

func (f *fakeSystem) Run(_ context.Context, rc ycsb.RunConfig) (ycsb.Result, uint64, error) {
	f.w.check(f, fmt.Sprintf("run %s/%d", rc.Workload.Name, rc.Clients))
	return ycsb.Result{Workload: rc.Workload.Name, Clients: rc.Clients, Records: rc.Records, Ops: 10, Seconds: 1, OpsPerSec: 10, P50us: 1, P99us: 2,
		OpsTotal: 10, After: rc.Records}, 1, nil
}

// fakeStrata has the failover trial.
type fakeStrata struct{ *fakeSystem }

func (f fakeStrata) failover(context.Context, int64, int) (Failover, Recovery, error) {
	f.w.check(f.fakeSystem, "failover")
	return Failover{}, Recovery{}, nil
}

func (f *fakeSystem) Settings() kit.Settings { return kit.Settings{} }
func (f *fakeSystem) Stop() error            { return nil }
func (f *fakeSystem) Processes() int         { return 3 }
func (f *fakeSystem) Settle() time.Duration  { return f.settle }

func (f *fakeSystem) Pause(context.Context) error {
	f.w.log = append(f.w.log, f.name+" pause")
	if f.paused {
		f.w.t.Errorf("%s paused twice", f.name)
	}
	f.paused = true
	return nil
}

func (f *fakeSystem) Resume(context.Context) error {
	f.w.log = append(f.w.log, f.name+" resume")
	if !f.paused {
		f.w.t.Errorf("%s resumed while running", f.name)
	}
	for _, o := range f.w.systems {
		if o != f && !o.paused {
			f.w.t.Errorf("%s resumed while %s runs", f.name, o.name)
		}
	}
	f.paused = false
	f.resumes++
	f.n, f.oks, f.okView = 0, nil, nil
	return nil
}

func (f *fakeSystem) Probe(context.Context) (string, error) {
	if f.paused {
		f.w.t.Errorf("%s probed while paused (a real probe would hang)", f.name)
		return "", errors.New("paused")
	}
	v, err := f.probe(f.resumes, f.n)
	f.n++
	if err == nil {
		f.oks, f.okView = append(f.oks, time.Now()), append(f.okView, v)
	}
	return v, err
}

func (f *fakeSystem) Syncs(context.Context) (uint64, error) {
	f.w.check(f, "syncs")
	f.syncs += 7
	return f.syncs, nil
}

func fastTiming() timing {
	return timing{healthLimit: 2 * time.Second, probeTimeout: time.Second, probeRetry: time.Millisecond, idleSettle: time.Millisecond, idleWindow: 5 * time.Millisecond, drainStep: time.Millisecond}
}

func testHarness(w *world, records []int64, rounds int) *harness {
	cfg := Config{Records: records, Workloads: []string{"A", "E"}, Clients: []int{1, 16}, Rounds: rounds, ValueSize: 10, LoadClients: 1,
		Warmup: time.Millisecond, Measure: time.Millisecond, Failover: true, Progress: io.Discard}
	var systems []system
	for _, f := range w.systems {
		if f.name == "strata" {
			systems = append(systems, fakeStrata{f})
		} else {
			systems = append(systems, f)
		}
	}
	h := newHarness(cfg, kit.NewReport("kv", kit.Settings{}), systems)
	h.timing = fastTiming()
	return h
}

// Every load, cell, failover trial and idle count runs with the other
// system paused and after its own resume was confirmed healthy; the
// pauses and resumes follow the rotating order, one resume per switch.
func TestEveryCellRunsWithTheOtherPaused(t *testing.T) {
	w := &world{t: t}
	w.add("strata")
	w.add("etcd")
	h := testHarness(w, []int64{100, 1000}, 2)
	if err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.failed != 0 || len(h.rep.Failures) != 0 {
		t.Fatalf("failures: %v", h.rep.Failures)
	}
	if got, want := len(h.res.Cells), 2*2*2*2*2; got != want {
		t.Errorf("%d cells, want %d", got, want)
	}
	var got []string
	for _, r := range h.res.Resumes {
		got = append(got, r.System+" "+r.For)
		if r.Probes < 2 || r.Failed != 0 || r.HealthyMs > r.WaitMs || r.WaitMs < ms(5*time.Millisecond) || r.PausedS <= 0 || r.LeaderAfter != "leader 1 term 1" || r.LeaderChanged() {
			t.Errorf("resume %+v", r)
		}
	}
	// Strata starts active (etcd paused for the idle count); rounds
	// alternate who goes first, so round 2 starts with the system that
	// ended round 1; the failover trial is Strata's, after the rounds.
	want := []string{
		"etcd idle sync rate",
		"strata load records=100", "etcd load records=100",
		"strata round 1 records=100", "etcd round 1 records=100",
		"strata round 2 records=100", // after etcd's round 2 cells
		// the failover left Strata running: the next load only probes it
		"etcd load records=1000",
		"strata round 1 records=1000", "etcd round 1 records=1000",
		"strata round 2 records=1000",
	}
	if !slices.Equal(got, want) {
		t.Errorf("resumes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Blocks of cells: round 2 starts with the system that ended round
	// 1, and the next phase's round 1 with the one that ended this one's.
	var runs []string
	for _, e := range w.log {
		if strings.Contains(e, " run ") && (len(runs) == 0 || !strings.HasPrefix(runs[len(runs)-1], strings.Fields(e)[0])) {
			runs = append(runs, strings.Fields(e)[0])
		}
	}
	if want := []string{"strata", "etcd", "strata", "etcd", "strata"}; !slices.Equal(runs, want) {
		t.Errorf("blocks of cells %v, want %v", runs, want)
	}
	if len(h.res.Idle) != 2 || h.res.Idle[0].Syncs != 7 || h.res.Idle[1].Syncs != 7 {
		t.Errorf("idle %+v", h.res.Idle)
	}
	if len(h.res.Failovers) != 2 {
		t.Errorf("%d failover trials, want 2", len(h.res.Failovers))
	}
}

// A resume that moves the leadership (a follower campaigns after the
// pause's silence) is waited out: failed probes, then the old view, then
// the new leader's, which alone is confirmed; the cells start after.
func TestResumeWaitsOutALeaderChange(t *testing.T) {
	w := &world{t: t}
	st := w.add("strata")
	st.probe = func(resumes, n int) (string, error) {
		switch {
		case resumes == 0:
			return "leader 1 epoch 1", nil
		case n < 2:
			return "", errors.New("timeout")
		case n == 2:
			return "leader 1 epoch 1", nil
		}
		return "leader 2 epoch 2", nil
	}
	w.add("etcd")
	h := testHarness(w, []int64{100}, 1)
	h.cfg.Failover = false
	if err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rs []Resume
	for _, r := range h.res.Resumes {
		if r.System == "strata" {
			rs = append(rs, r)
		}
	}
	if len(rs) != 2 {
		t.Fatalf("strata resumes %+v", rs)
	}
	r := rs[0]
	if r.Failed != 2 || r.Probes != 5 || r.LeaderBefore != "leader 1 epoch 1" || r.LeaderAfter != "leader 2 epoch 2" || !r.LeaderChanged() {
		t.Errorf("first resume %+v", r)
	}
	// The second resume starts from the new view: before it the probe
	// saw the new leader.
	if rs[1].LeaderBefore != "leader 2 epoch 2" {
		t.Errorf("second resume %+v", rs[1])
	}
	var b strings.Builder
	h.res.Checks = nil
	h.rep.Results = h.res
	Print(&b, h.rep)
	if !strings.Contains(b.String(), "leadership moved: leader 1 epoch 1 -> leader 2 epoch 2") || !strings.Contains(b.String(), "idle disk syncs") {
		t.Errorf("Print:\n%s", b.String())
	}
}

// A system that is not healthy after its resume gets no cells (each
// block is a failure, a Strata one counted), and the other system still
// runs its own with it paused.
func TestUnhealthyResumeSkipsTheCells(t *testing.T) {
	w := &world{t: t}
	st := w.add("strata")
	st.probe = func(resumes, n int) (string, error) {
		if resumes > 0 {
			return "", errors.New("no leader")
		}
		return "leader 1 epoch 1", nil
	}
	w.add("etcd")
	h := testHarness(w, []int64{100, 1000}, 1)
	h.timing.healthLimit = 20 * time.Millisecond
	if err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	strata, etcd := 0, 0
	for _, c := range h.res.Cells {
		if c.System == "strata" {
			strata++
		} else {
			etcd++
		}
	}
	if strata != 0 || etcd != 2*2*2 {
		t.Errorf("cells: strata %d, etcd %d", strata, etcd)
	}
	if h.failed != 2 || !strings.Contains(strings.Join(h.rep.Failures, "\n"), "strata not healthy") {
		t.Errorf("failed %d: %v", h.failed, h.rep.Failures)
	}
}

// With one system (--no-etcd) nothing is paused.
func TestOneSystemIsNeverPaused(t *testing.T) {
	w := &world{t: t}
	w.add("strata")
	h := testHarness(w, []int64{100}, 2)
	if err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(h.res.Resumes) != 0 || slices.Contains(w.log, "strata pause") || len(h.res.Cells) != 2*2*2 || len(h.res.Idle) != 1 {
		t.Errorf("resumes %v, cells %d, log %v", h.res.Resumes, len(h.res.Cells), w.log)
	}
}

// An interrupted run stops between cells and returns the context's error.
func TestInterruptedRunStops(t *testing.T) {
	w := &world{t: t}
	w.add("strata")
	w.add("etcd")
	h := testHarness(w, []int64{100}, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if len(h.res.Cells) != 0 {
		t.Errorf("%d cells after the interrupt", len(h.res.Cells))
	}
}

// drainSystem's disk syncs come at a rate that falls from busy to its
// idle rate after a number of samples.
type drainSystem struct {
	fakeSystem
	calls, busyFor int
	total          uint64
}

func (d *drainSystem) Syncs(context.Context) (uint64, error) {
	d.calls++
	if d.calls <= d.busyFor {
		d.total += 1000 // far above the idle rate, whatever the step
	}
	return d.total, nil
}

// After a load the harness waits while the system's sync rate stays
// above its idle rate, ends the wait after three calm samples in a row,
// and gives up (measuring anyway) at the bound.
func TestDrainWaitsForBackgroundWork(t *testing.T) {
	h := &harness{timing: fastTiming(), res: Results{Idle: []Idle{{System: "strata", PerSec: 1}}}}
	h.timing.drainStep = time.Millisecond
	busy := &drainSystem{fakeSystem: fakeSystem{name: "strata"}, busyFor: 5}
	if _, ok := h.drain(context.Background(), busy, time.Minute); !ok {
		t.Fatal("a system whose syncs calmed down did not drain")
	}
	if busy.calls != 5+3 {
		t.Fatalf("%d samples, want the 5 busy ones and 3 calm ones", busy.calls)
	}
	never := &drainSystem{fakeSystem: fakeSystem{name: "strata"}, busyFor: 1 << 30}
	if d, ok := h.drain(context.Background(), never, 20*time.Millisecond); ok || d < 20*time.Millisecond {
		t.Fatalf("a system busy for ever: drained %v after %v, want false after the 20ms bound", ok, d)
	}
	other := &drainSystem{fakeSystem: fakeSystem{name: "etcd"}}
	if d, ok := h.drain(context.Background(), other, time.Minute); ok || d != 0 {
		t.Fatal("a system without an idle rate was waited for")
	}
}
