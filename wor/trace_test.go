package wor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"strata/mpcal/tlc"
	"strata/mpcal/tracecheck"
)

// Trace validation of the paxos engine's acceptors against
// models/wor/WORAcceptors.tla (WORPaxos.tla's acceptor rule): runs of the
// linearizability campaign (simulated network with loss, duplication,
// reordering, partitions) record every acceptor step their servers take
// (Server.apply, through stepHook) and TLC checks that each is a step of
// the model with the same state after it and the same answer.

// accStep is one acceptor step a server took.
type accStep struct {
	run, server int // the campaign run (seed) and the server's index in it
	addr        uint64
	op          byte
	ballot      uint64
	value       []byte
	after       acceptor
	ok          bool
	mutated     bool // the step was changed by the mutation
}

// acceptorRecorder collects the acceptor steps of campaign runs.
type acceptorRecorder struct {
	mu    sync.Mutex // guards steps (servers step under their own locks)
	steps []accStep
	// mutate: accept a ballot below the promise (the mistake
	// WORPaxos_BugAcceptBelowPromise.cfg injects in the model).
	mutate bool
}

// hook returns the stepHook of server i of run.
func (r *acceptorRecorder) hook(run, i int) stepHook {
	return func(addr uint64, op byte, ballot uint64, value []byte, before acceptor, st stepped) stepped {
		if op != opPrepare && op != opAccept && op != opRead {
			return st // not a paxos register step (ec commit)
		}
		mutated := false
		if r.mutate && op == opAccept && ballot < before.promised {
			st = stepped{next: acceptor{promised: before.promised, accBallot: ballot, has: true,
				value: append([]byte(nil), value...), part: before.part}, status: stOK, changed: true}
			mutated = true
		}
		v := []byte(nil)
		if op == opAccept {
			v = append([]byte(nil), value...)
		}
		r.mu.Lock()
		r.steps = append(r.steps, accStep{run: run, server: i, addr: addr, op: op, ballot: ballot, value: v,
			after: st.next, ok: st.status == stOK, mutated: mutated})
		r.mu.Unlock()
		return st
	}
}

// record runs the paxos campaign with seed, its servers recording into r.
func (r *acceptorRecorder) record(t *testing.T, run int, seed uint64) error {
	_, err := linRunWith(t, seed, linOpts{engine: "paxos", corrupt: -1, onServer: func(i int, s *Server) {
		s.mu.Lock()
		s.stepHook = r.hook(run, i)
		s.mu.Unlock()
	}})
	return err
}

// trace writes the steps in the model's vocabulary: servers "rK.sI",
// registers numbered from 1 in order of first use in each run, ballots by rank, values
// numbered from 1 (0: none). It returns the events, the model's
// constants, and the index (from 1) of the first mutated step (0: none).
func (r *acceptorRecorder) trace() (evs []tracecheck.Event, cfg []byte, firstMutated int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ballots := []uint64{0}
	for _, s := range r.steps {
		ballots = append(ballots, s.ballot, s.after.promised, s.after.accBallot)
	}
	slices.Sort(ballots)
	ballots = slices.Compact(ballots)
	rank := func(b uint64) int { i, _ := slices.BinarySearch(ballots, b); return i }
	regs := map[int]map[string]int{} // per run: each run's servers have their own registers
	vals := map[string]int{}
	servers := map[string]bool{}
	num := func(m map[string]int, k string) int {
		if n, ok := m[k]; ok {
			return n
		}
		m[k] = len(m) + 1
		return m[k]
	}
	opName := map[byte]string{opPrepare: "prepare", opAccept: "accept", opRead: "read"}
	for i, s := range r.steps {
		srv := strconv.Quote(fmt.Sprintf("r%d.s%d", s.run, s.server))
		servers[srv] = true
		if regs[s.run] == nil {
			regs[s.run] = map[string]int{}
		}
		a := num(regs[s.run], strconv.FormatUint(s.addr, 10))
		v := 0
		if s.op == opAccept {
			v = num(vals, string(s.value))
		}
		after := 0
		if s.after.has {
			after = num(vals, string(s.after.value))
		}
		evs = append(evs, tracecheck.Event{
			Event:  opName[s.op],
			Action: fmt.Sprintf("Handle(%s, %d, %q, %d, %d)", srv, a, opName[s.op], rank(s.ballot), v),
			State: map[string]string{
				fmt.Sprintf("acc[%s][%d]", srv, a): fmt.Sprintf("[prom |-> %d, acc |-> %d, val |-> %d]",
					rank(s.after.promised), rank(s.after.accBallot), after),
				"last.ok": strings.ToUpper(strconv.FormatBool(s.ok)),
			},
			Line: i + 1,
		})
		if s.mutated && firstMutated == 0 {
			firstMutated = i + 1
		}
	}
	nregs := 0
	for _, m := range regs {
		nregs = max(nregs, len(m))
	}
	names := make([]string, 0, len(servers))
	for s := range servers {
		names = append(names, s)
	}
	slices.Sort(names)
	// A TLC configuration holds literal values only (no 1..n).
	upto := func(lo, hi int) string {
		var xs []string
		for i := lo; i <= hi; i++ {
			xs = append(xs, strconv.Itoa(i))
		}
		return "{" + strings.Join(xs, ", ") + "}"
	}
	cfg = fmt.Appendf(nil, "CONSTANTS\n  Servers = {%s}\n  Regs = %s\n  Ballots = %s\n  Values = %s\n  BugAcceptBelowPromise = FALSE\n",
		strings.Join(names, ", "), upto(1, nregs), upto(0, len(ballots)-1), upto(0, len(vals)))
	return evs, cfg, firstMutated
}

// check validates the recorded steps against the model, with the
// model's BugAcceptBelowPromise as bug says. It returns the verdict and
// the index of the first mutated step (0: none).
func (r *acceptorRecorder) check(t *testing.T, bug bool) (*tracecheck.Result, int) {
	t.Helper()
	evs, cfg, first := r.trace()
	if bug {
		cfg = bytes.Replace(cfg, []byte("BugAcceptBelowPromise = FALSE"), []byte("BugAcceptBelowPromise = TRUE"), 1)
	}
	res, err := tracecheck.Check(context.Background(), "../models/wor/WORAcceptors.tla", evs, tracecheck.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return res, first
}

// keepTrace writes the recorded trace to a file for a failure's reader.
func (r *acceptorRecorder) keepTrace(t *testing.T) {
	evs, cfg, _ := r.trace()
	f, err := os.CreateTemp("", "wor-acceptors-*.trace")
	if err != nil {
		t.Log(err)
		return
	}
	defer f.Close()
	w := tracecheck.NewWriter(f)
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Log(err)
			return
		}
	}
	t.Logf("trace written to %s; check it with strata mpcal check --trace %s --config C models/wor/WORAcceptors.tla, C holding:\n%s", f.Name(), f.Name(), cfg)
}

// traceSeeds is how many campaign runs TestAcceptorTrace records:
// STRATA_TRACE_SEEDS, else 3 (about 600 acceptor steps; one TLC run).
func traceSeeds(t *testing.T) int {
	if s := os.Getenv("STRATA_TRACE_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("STRATA_TRACE_SEEDS=%q: want a positive number", s)
		}
		return n
	}
	return 3
}

// TestAcceptorTrace: the acceptor steps of runs of the paxos campaign
// (seeds 1..STRATA_TRACE_SEEDS) are steps of models/wor/WORAcceptors.tla.
// STRATA_TRACE_KEEP=1 keeps the trace in a file (its name is logged).
func TestAcceptorTrace(t *testing.T) {
	if _, err := tlc.Jar(); err != nil {
		t.Skip(err)
	}
	n := traceSeeds(t)
	// The model's state holds every server of the runs checked together:
	// batches of traceBatch runs keep TLC's time linear in the runs.
	const traceBatch = 50
	events, nacks := 0, 0
	var recorded, checked time.Duration
	for lo := 1; lo <= n; lo += traceBatch {
		r := &acceptorRecorder{}
		start := time.Now()
		for seed := lo; seed <= min(n, lo+traceBatch-1); seed++ {
			if err := r.record(t, seed, uint64(seed)); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		recorded += time.Since(start)
		if os.Getenv("STRATA_TRACE_KEEP") != "" {
			r.keepTrace(t)
		}
		res, _ := r.check(t, false)
		if !res.Accepted {
			r.keepTrace(t)
			t.Fatalf("seeds %d..%d: %v", lo, min(n, lo+traceBatch-1), res)
		}
		events += res.Events
		checked += res.TLC.Wall
		for _, s := range r.steps {
			if !s.ok {
				nacks++
			}
		}
	}
	t.Logf("%d runs: %d acceptor steps accepted (%d refused by the acceptor); runs %v, TLC %v",
		n, events, nacks, recorded.Round(time.Millisecond), checked.Round(time.Millisecond))
}

// TestAcceptorTraceMutant: an acceptor that accepts a ballot below its
// promise (through stepHook; the code is not edited) is caught at the
// first step where it did: the model refuses that accept. The model with
// the same mistake switched on accepts the trace.
func TestAcceptorTraceMutant(t *testing.T) {
	if _, err := tlc.Jar(); err != nil {
		t.Skip(err)
	}
	r := &acceptorRecorder{mutate: true}
	// Record runs until one took a mutated step (an accept that arrived
	// after a higher prepare); the campaign's own checks may or may not
	// notice, which is not what this test is about.
	for seed := 1; ; seed++ {
		_ = r.record(t, seed, uint64(seed))
		if _, _, first := r.trace(); first > 0 {
			break
		}
		if seed == 20 {
			t.Fatal("no accept below a promise in 20 runs: the mutation was never exercised")
		}
	}
	res, first := r.check(t, false)
	if res.Accepted {
		r.keepTrace(t)
		t.Fatal("the trace of an acceptor accepting below its promise was accepted")
	}
	if res.Index != first {
		r.keepTrace(t)
		t.Fatalf("rejected at event %d, want the first mutated step, event %d: %v", res.Index, first, res)
	}
	t.Logf("%v", res)
	// The same trace is a behaviour of the model with the same mistake
	// (WORPaxos's BugAcceptBelowPromise): it is that rule the check caught.
	if res, _ := r.check(t, true); !res.Accepted {
		r.keepTrace(t)
		t.Fatalf("with BugAcceptBelowPromise in the model: %v", res)
	}
}
