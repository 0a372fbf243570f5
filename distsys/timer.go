package distsys

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"strata/distsys/tla"
)

// Timer is a `ref` resource for timeouts, such as Raft's election timer:
// a read returns TRUE once the current timeout has passed since the timer
// was last reset, FALSE before; a write (of any value) resets it when its
// section commits, drawing a new timeout uniformly from [Min, Max] (a
// randomized timeout, so that servers that reset together do not time out
// together). A read never aborts the section, so `await timer` aborts and
// retries the section until the timeout has passed.
//
// Guarantees: a read returns FALSE while less than Min has passed since
// the last committed reset (or since NewTimer), and TRUE once Max has
// passed. A write in a section that aborts does not reset the timer, and
// a section that writes reads FALSE afterwards only from the next section
// on: within the writing section a read still sees the old deadline, so
// that "await timer; timer := TRUE" commits only when the timeout had
// passed. Reads go to the monotonic clock (time.Since).
//
// A Timer belongs to one archetype, like a Local; Reset and Expired may be
// called from any goroutine.
type Timer struct {
	min, max time.Duration

	mu       sync.Mutex
	deadline time.Time  // guarded by mu: when reads start returning TRUE
	rng      *rand.Rand // guarded by mu

	reset bool // a write in the current section (archetype's goroutine)
}

// NewTimer returns a timer whose timeouts are drawn from [min, max],
// started now. It refuses a non-positive min or max < min.
func NewTimer(min, max time.Duration) (*Timer, error) {
	if min <= 0 || max < min {
		return nil, fmt.Errorf("distsys: timer: timeout range [%v, %v] is not 0 < min <= max", min, max)
	}
	t := &Timer{min: min, max: max, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x7469_6d65))}
	t.Reset()
	return t, nil
}

// Reset starts a new timeout now, as a committed write does.
func (t *Timer) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.min
	if t.max > t.min {
		d += time.Duration(t.rng.Int64N(int64(t.max-t.min) + 1))
	}
	t.deadline = time.Now().Add(d)
}

// Expired reports whether the current timeout has passed.
func (t *Timer) Expired() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !time.Now().Before(t.deadline)
}

func (t *Timer) Read(context.Context) (tla.Value, error) { return tla.Bool(t.Expired()), nil }

// Write schedules a reset for the section's commit; the value is ignored.
func (t *Timer) Write(context.Context, tla.Value) error {
	t.reset = true
	return nil
}

func (t *Timer) PreCommit(context.Context) error { return nil }

func (t *Timer) Commit(context.Context) error {
	if t.reset {
		t.reset = false
		t.Reset()
	}
	return nil
}

func (t *Timer) Abort() { t.reset = false }

// A timer is private to its archetype (nobody else observes a reset) and
// never refuses a commit, so it does not stop the last-agent optimization.
func (*Timer) private() {}
