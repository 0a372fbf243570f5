package kv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Pausing. Both systems' servers live for the whole run, and an idle
// system is not idle: Strata's kv leader writes a heartbeat entry every
// smr.DefaultHeartbeat (a journal fdatasync at each wormserver), etcd's
// members tick and heartbeat. So that neither system's background work
// costs the other disk syncs or CPU while the other is measured, only one
// system's servers run at a time: before a system's loads, cells or
// trials, every other system's server processes are stopped with SIGSTOP
// (all of them, one signal after another, then checked stopped), and its
// own are resumed with SIGCONT and probed until healthy, outside any
// measurement. The same rule holds for both systems in both directions.
//
// No server is left stopped: each system's Stop resumes its servers
// before it stops them, and the command turns SIGINT, SIGTERM and SIGHUP
// into a cancelled run that stops them. If the harness itself is killed
// (SIGKILL), each paused server's process group is orphaned with a
// stopped member, so the kernel sends it SIGHUP and SIGCONT, and the
// server exits (a Go program's default for SIGHUP); a server that was
// running is left running, as before pausing existed (bench/kit sets no
// parent-death signal).

// errNoPause: a run with the peer needs pausing, which needs Linux.
var errNoPause = errors.New("pausing one system while the other is measured needs Linux (process groups and /proc): run with --no-etcd here")

// Resume is one resume of a system whose servers were paused.
type Resume struct {
	System string `json:"system"`
	// For is what the system was resumed for: "idle sync rate",
	// "load records=N", "round R records=N", "failover records=N".
	For string `json:"for"`
	// PausedS is how long its processes were stopped.
	PausedS float64 `json:"paused_s"`
	// HealthyMs is from the SIGCONT to the end of the first probe (a
	// write, a linearizable read of it, every server naming the same
	// leader and term) whose view the confirming probe repeated: the
	// system has been healthy since then.
	HealthyMs float64 `json:"healthy_ms"`
	// WaitMs is from the SIGCONT to the confirming probe, a settle time
	// after the first: the harness's whole wait before the system's next
	// operation.
	WaitMs float64 `json:"wait_ms"`
	Probes int     `json:"probes"`        // probes run, failed ones included
	Failed int     `json:"failed_probes"` // probes that failed
	// LeaderBefore is the view a probe saw just before the pause ("" if
	// that probe failed), LeaderAfter the confirmed view after it.
	LeaderBefore string `json:"leader_before,omitempty"`
	LeaderAfter  string `json:"leader_after"`
}

// LeaderChanged says whether the resume moved the leadership (a new
// leader or term).
func (r Resume) LeaderChanged() bool { return r.LeaderBefore != "" && r.LeaderBefore != r.LeaderAfter }

// Idle is a system's disk syncs with no client load, the other system
// paused: the background cost a running peer would add to the other's
// measurements.
type Idle struct {
	System  string  `json:"system"`
	Seconds float64 `json:"seconds"`
	Syncs   uint64  `json:"syncs"`
	PerSec  float64 `json:"syncs_per_sec"`
}

// Defaults of the harness's health and idle timing (tests shorten them).
const (
	// healthLimit bounds the wait for a resumed system to be healthy.
	healthLimit = 2 * time.Minute
	// probeTimeout bounds one probe (a write, a read, a status per
	// server).
	probeTimeout = 5 * time.Second
	// probeRetry is the pause after a failed probe.
	probeRetry = 20 * time.Millisecond
	// idleSettle lets the healthy probe's own syncs (etcd commits its
	// backend up to 100 ms after a write) drain before the idle window.
	idleSettle = time.Second
	// idleWindow is how long the idle sync rate is counted.
	idleWindow = 2 * time.Second
	// drainStep is how often the sync rate is sampled after a load, and
	// drainCalm how many samples in a row must be near the idle rate.
	drainStep = time.Second
	drainCalm = 3
)

// timing is the harness's health and idle timing.
type timing struct {
	healthLimit, probeTimeout, probeRetry, idleSettle, idleWindow, drainStep time.Duration
}

var defaultTiming = timing{healthLimit, probeTimeout, probeRetry, idleSettle, idleWindow, drainStep}

// drain waits, after s's load, until s's background work is done: until
// its disk sync rate, sampled every drainStep, has been within
// max(2x, +10/s) of its idle rate drainCalm times in a row, or for at
// most max. It returns the wait and whether s drained. The same rule
// holds for every system; the wait is reported with the load.
func (h *harness) drain(ctx context.Context, s system, max time.Duration) (time.Duration, bool) {
	idle := -1.0
	for _, i := range h.res.Idle {
		if i.System == s.Name() {
			idle = i.PerSec
		}
	}
	if idle < 0 || max <= 0 {
		return 0, false
	}
	limit := math.Max(2*idle, idle+10)
	t0 := time.Now()
	prev, err := s.Syncs(ctx)
	if err != nil {
		return 0, false
	}
	calm := 0
	for time.Since(t0) < max {
		t1 := time.Now()
		if sleep(ctx, h.timing.drainStep) != nil {
			return time.Since(t0), false
		}
		cur, err := s.Syncs(ctx)
		if err != nil {
			return time.Since(t0), false
		}
		rate := float64(cur-prev) / time.Since(t1).Seconds()
		prev = cur
		if rate > limit {
			calm = 0
			continue
		}
		if calm++; calm >= drainCalm {
			return time.Since(t0), true
		}
	}
	return time.Since(t0), false
}

// activate makes s the only system whose servers run: every other system
// still running is probed (its view of the leadership before the pause)
// and paused, then s is resumed if it was paused and probed until
// healthy. why names what s is activated for (Resume.For). It does
// nothing if s is already the active system. On error s is not active:
// the next activation pauses and probes again.
func (h *harness) activate(ctx context.Context, s system, why string) error {
	if h.active == s.Name() {
		return nil
	}
	h.active = ""
	for _, o := range h.systems {
		if o == s {
			continue
		}
		if _, paused := h.pausedAt[o.Name()]; paused {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, h.timing.probeTimeout)
		view, err := o.Probe(pctx)
		cancel()
		if err != nil {
			view = "" // unknown; the resume will not call it a change
		}
		h.viewBefore[o.Name()] = view
		if err := o.Pause(ctx); err != nil {
			return fmt.Errorf("pausing %s: %w", o.Name(), err)
		}
		h.pausedAt[o.Name()] = time.Now()
		fmt.Fprintf(h.cfg.Progress, "%s: paused (SIGSTOP to its %d processes)\n", o.Name(), o.Processes())
	}
	at, wasPaused := h.pausedAt[s.Name()]
	t0 := time.Now()
	if wasPaused {
		if err := s.Resume(ctx); err != nil {
			return fmt.Errorf("resuming %s: %w", s.Name(), err)
		}
		delete(h.pausedAt, s.Name())
	}
	hl, err := h.waitHealthy(ctx, s, t0)
	if err != nil {
		return err
	}
	if wasPaused {
		r := Resume{System: s.Name(), For: why, PausedS: t0.Sub(at).Seconds(), HealthyMs: ms(hl.healthy.Sub(t0)), WaitMs: ms(hl.confirmed.Sub(t0)),
			Probes: hl.probes, Failed: hl.failed, LeaderBefore: h.viewBefore[s.Name()], LeaderAfter: hl.view}
		h.res.Resumes = append(h.res.Resumes, r)
		changed := ""
		if r.LeaderChanged() {
			changed = fmt.Sprintf("; leadership moved: %s -> %s", r.LeaderBefore, r.LeaderAfter)
		}
		fmt.Fprintf(h.cfg.Progress, "%s: resumed (SIGCONT) for %s after %.1f s paused: healthy after %.0f ms (waited %.0f ms, %d probes, %d failed)%s\n",
			s.Name(), why, r.PausedS, r.HealthyMs, r.WaitMs, r.Probes, r.Failed, changed)
	}
	h.active = s.Name()
	return nil
}

// health is the outcome of waitHealthy.
type health struct {
	healthy   time.Time // end of the first probe of the confirmed view
	confirmed time.Time // end of the confirming probe
	view      string
	probes    int
	failed    int
}

// waitHealthy probes s until a probe succeeds and another, at least
// s.Settle() later, sees the same view (leader and term): by then any
// server that was to act on the pause's silence (an election) has done
// so. A failed probe or a changed view starts the confirmation over.
// Probing starts at once and gives up healthLimit after t0.
func (h *harness) waitHealthy(ctx context.Context, s system, t0 time.Time) (health, error) {
	var (
		hl   health
		cand string // the view to confirm ("" none)
		last error
	)
	settle := s.Settle()
	for {
		pctx, cancel := context.WithTimeout(ctx, h.timing.probeTimeout)
		view, err := s.Probe(pctx)
		cancel()
		now := time.Now()
		hl.probes++
		wait := h.timing.probeRetry
		switch {
		case err != nil:
			hl.failed++
			last, cand = err, ""
		case view == cand && now.Sub(hl.healthy) >= settle:
			hl.confirmed, hl.view = now, view
			return hl, nil
		case view == cand:
			wait = settle - now.Sub(hl.healthy)
		default:
			cand, hl.healthy = view, now
			wait = settle
		}
		if err := ctx.Err(); err != nil {
			return hl, err
		}
		if now.Sub(t0) > h.timing.healthLimit {
			return hl, fmt.Errorf("%s not healthy %v after its resume (%d probes, %d failed; last failure: %v; last view %q)",
				s.Name(), h.timing.healthLimit, hl.probes, hl.failed, last, cand)
		}
		if err := sleep(ctx, wait); err != nil {
			return hl, err
		}
	}
}

// idle measures every system's disk sync rate with no client load, once,
// each with the others paused.
func (h *harness) idle(ctx context.Context) {
	for _, s := range h.systems {
		if err := h.activate(ctx, s, "idle sync rate"); err != nil {
			if ctx.Err() != nil {
				return
			}
			h.fail(s.Name(), "%s idle sync rate: %v", s.Name(), firstLine(err))
			continue
		}
		if sleep(ctx, h.timing.idleSettle) != nil {
			return
		}
		t0 := time.Now()
		s0, err0 := s.Syncs(ctx)
		if sleep(ctx, h.timing.idleWindow) != nil {
			return
		}
		s1, err1 := s.Syncs(ctx)
		d := time.Since(t0).Seconds()
		if err := errors.Join(err0, err1); err != nil {
			// Not a failed cell: the rate is context, not a figure compared.
			h.rep.Note("%s idle sync rate not measured: %v", s.Name(), firstLine(err))
			continue
		}
		i := Idle{System: s.Name(), Seconds: d, Syncs: s1 - s0, PerSec: float64(s1-s0) / d}
		h.res.Idle = append(h.res.Idle, i)
		others := ""
		if len(h.systems) > 1 {
			others = ", the other system paused"
		}
		fmt.Fprintf(h.cfg.Progress, "%s: idle (no client load%s): %d disk syncs in %.1f s, %.1f/s\n", s.Name(), others, i.Syncs, i.Seconds, i.PerSec)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
