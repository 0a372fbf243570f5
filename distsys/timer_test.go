package distsys

import (
	"context"
	"testing"
	"time"

	"strata/distsys/tla"
)

func readTimer(t *testing.T, tm *Timer) bool {
	t.Helper()
	v, err := tm.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.AsBool()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTimerExpiresAndResets: a timer reads FALSE until its timeout, TRUE
// after; a committed write resets it, an aborted one does not, and a read
// in the writing section still sees the old deadline.
func TestTimerExpiresAndResets(t *testing.T) {
	ctx := context.Background()
	const lo, hi = 40 * time.Millisecond, 60 * time.Millisecond
	tm, err := NewTimer(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if readTimer(t, tm) && time.Since(start) < lo {
		t.Fatalf("TRUE %v after start, before the minimum timeout %v", time.Since(start), lo)
	}
	for !readTimer(t, tm) {
		time.Sleep(2 * time.Millisecond)
	}
	if el := time.Since(start); el < lo {
		t.Fatalf("expired after %v, before the minimum %v", el, lo)
	}

	// An aborted write does not reset.
	if err := tm.Write(ctx, tla.True); err != nil {
		t.Fatal(err)
	}
	tm.Abort()
	if !readTimer(t, tm) {
		t.Fatal("an aborted write reset the timer")
	}

	// A write is seen at commit, not within its own section.
	if err := tm.Write(ctx, tla.True); err != nil {
		t.Fatal(err)
	}
	if !readTimer(t, tm) {
		t.Fatal("a write reset the timer before its section committed")
	}
	if err := tm.PreCommit(ctx); err != nil {
		t.Fatal(err)
	}
	reset := time.Now()
	if err := tm.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if readTimer(t, tm) && time.Since(reset) < lo {
		t.Fatal("TRUE right after a committed reset")
	}
	for !readTimer(t, tm) {
		time.Sleep(2 * time.Millisecond)
	}
	if el := time.Since(reset); el < lo {
		t.Fatalf("expired %v after the reset, before the minimum %v", el, lo)
	}
}

// TestTimerRandomizes: timeouts are drawn over the range, not fixed.
func TestTimerRandomizes(t *testing.T) {
	tm, err := NewTimer(time.Hour, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Duration]bool{}
	for range 20 {
		tm.Reset()
		tm.mu.Lock()
		d := time.Until(tm.deadline).Round(time.Minute)
		tm.mu.Unlock()
		if d < time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
			t.Fatalf("timeout %v outside [1h, 2h]", d)
		}
		seen[d] = true
	}
	if len(seen) < 5 {
		t.Fatalf("20 resets drew only %d distinct timeouts (to the minute): %v", len(seen), seen)
	}
}

// TestTimerAwaitInArchetype: `await timer` in a section aborts until the
// timeout has passed; the section's write then resets the timer.
func TestTimerAwaitInArchetype(t *testing.T) {
	tm, err := NewTimer(30*time.Millisecond, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	a := &Archetype{
		Name:  "T",
		Start: "wait",
		Params: []Param{
			{Name: "timer", Ref: true},
		},
		Sections: map[string]Section{
			"wait": {Label: "wait", Run: func(c *Context, e *tla.Eval) (string, error) {
				if !c.Await(e, c.Read(e, "timer")) {
					return "", e.Err()
				}
				c.Write(e, "timer", nil, tla.True)
				return Done, e.Err()
			}},
		},
	}
	c, err := NewContext(a, tla.Int(1), BindRef("timer", tm), WithBackoff(time.Millisecond, 2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("the await passed after %v, before the 30ms timeout", el)
	}
	if c.Aborts() == 0 {
		t.Fatal("the await never aborted")
	}
	if tm.Expired() {
		t.Fatal("the committed write did not reset the timer")
	}
}

func TestTimerRejects(t *testing.T) {
	for _, r := range [][2]time.Duration{{0, time.Second}, {-time.Second, time.Second}, {time.Second, time.Millisecond}} {
		if _, err := NewTimer(r[0], r[1]); err == nil {
			t.Errorf("NewTimer(%v, %v) accepted", r[0], r[1])
		}
	}
}
