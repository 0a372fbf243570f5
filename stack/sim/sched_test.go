package sim

import (
	"slices"
	"testing"
	"time"

	"strata/stack"
)

var _ stack.Clock = clock{}

func TestAfterFuncOrderAndTime(t *testing.T) {
	n := New(1)
	c := n.Clock()
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, name+"@"+c.Now().String()) }
	}
	c.AfterFunc(2*time.Millisecond, at("b"))
	c.AfterFunc(time.Millisecond, at("a"))
	c.AfterFunc(2*time.Millisecond, at("c")) // same instant as b: runs after b
	c.AfterFunc(-time.Second, at("now"))     // the past counts as now
	if n.Pending() != 4 {
		t.Fatalf("Pending = %d, want 4", n.Pending())
	}
	n.Run(10 * time.Millisecond)
	want := []string{"now@0s", "a@1ms", "b@2ms", "c@2ms"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if n.Now() != 10*time.Millisecond || c.Now() != n.Now() {
		t.Fatalf("Now = %v / %v, want 10ms", n.Now(), c.Now())
	}
}

func TestAfterFuncStop(t *testing.T) {
	n := New(1)
	c := n.Clock()
	ran := map[string]int{}
	stopA := c.AfterFunc(time.Second, func() { ran["a"]++ })
	stopB := c.AfterFunc(2*time.Second, func() { ran["b"]++ })
	// A callback that cancels a later timer.
	stopD := c.AfterFunc(4*time.Second, func() { ran["d"]++ })
	c.AfterFunc(3*time.Second, func() {
		if !stopD() {
			t.Error("stop of a pending timer from a callback returned false")
		}
	})
	if !stopA() {
		t.Fatal("stop of a pending timer returned false")
	}
	if stopA() {
		t.Fatal("second stop returned true")
	}
	if n.Pending() != 3 {
		t.Fatalf("Pending after stop = %d, want 3", n.Pending())
	}
	n.Run(10 * time.Second)
	if ran["a"] != 0 || ran["b"] != 1 || ran["d"] != 0 {
		t.Fatalf("ran %v, want only b once", ran)
	}
	if stopB() {
		t.Fatal("stop after the timer ran returned true")
	}
	if n.Pending() != 0 {
		t.Fatalf("Pending = %d at the end", n.Pending())
	}
}

// A simulated hour of a 1 Hz periodic timer is 3600 callbacks at exact
// whole seconds; being event-driven, it costs microseconds per tick.
func TestVirtualHour(t *testing.T) {
	n := New(7)
	c := n.Clock()
	ticks := 0
	var tick func()
	tick = func() {
		ticks++
		if c.Now() != time.Duration(ticks)*time.Second {
			t.Fatalf("tick %d at %v", ticks, c.Now())
		}
		c.AfterFunc(time.Second, tick)
	}
	c.AfterFunc(time.Second, tick)
	n.Run(time.Hour)
	if ticks != 3600 {
		t.Fatalf("ticks = %d, want 3600", ticks)
	}
	if n.Now() != time.Hour {
		t.Fatalf("Now = %v, want 1h", n.Now())
	}
	if n.Pending() != 1 {
		t.Fatalf("Pending = %d, want the next tick", n.Pending())
	}
}

// Virtual time moves only when the loop runs a callback or Run reaches its
// limit: scheduling, sending and querying never advance it.
func TestNowAdvancesOnlyInLoop(t *testing.T) {
	n := New(1)
	c := n.Clock()
	a, _ := n.Endpoint("sim:a")
	b, _ := n.Endpoint("sim:b")
	b.SetReceiver(func(stack.Addr, []byte) {})
	n.SetDefault(Link{Delay: 3 * time.Millisecond})
	for range 1000 {
		c.AfterFunc(5*time.Millisecond, func() {})
		if err := a.Send("sim:b", [][]byte{[]byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if c.Now() != 0 || n.Now() != 0 {
		t.Fatalf("time advanced without the loop: %v", c.Now())
	}
	n.Run(0)
	if n.Now() != 0 {
		t.Fatalf("Run(0) moved time to %v", n.Now())
	}
	if !n.Step() || n.Now() != 3*time.Millisecond {
		t.Fatalf("after Step: Now = %v, want 3ms", n.Now())
	}
	n.Run(-time.Second) // negative limit: no time passes, due callbacks run
	if n.Now() != 3*time.Millisecond {
		t.Fatalf("Run(-1s) moved time to %v", n.Now())
	}
	if n.Pending() != 1000 {
		t.Fatalf("Pending = %d, want the 1000 timers after all deliveries at 3ms", n.Pending())
	}
}

func TestStep(t *testing.T) {
	n := New(1)
	if n.Step() {
		t.Fatal("Step on an empty queue returned true")
	}
	var order []int
	n.AfterFunc(2*time.Second, func() { order = append(order, 2) })
	n.AfterFunc(time.Second, func() { order = append(order, 1) })
	if !n.Step() || n.Now() != time.Second || !slices.Equal(order, []int{1}) {
		t.Fatalf("first Step: now %v order %v", n.Now(), order)
	}
	if !n.Step() || n.Now() != 2*time.Second || !slices.Equal(order, []int{1, 2}) {
		t.Fatalf("second Step: now %v order %v", n.Now(), order)
	}
	if n.Step() {
		t.Fatal("third Step returned true")
	}
}

func TestRunUntil(t *testing.T) {
	n := New(1)
	done := false
	n.AfterFunc(5*time.Millisecond, func() {})
	n.AfterFunc(7*time.Millisecond, func() { done = true })
	n.AfterFunc(9*time.Millisecond, func() { t.Error("ran past the condition") })
	if !n.RunUntil(func() bool { return done }, time.Second) {
		t.Fatal("RunUntil returned false")
	}
	if n.Now() != 7*time.Millisecond {
		t.Fatalf("Now = %v, want 7ms (the instant cond became true)", n.Now())
	}
	// Already true: runs nothing.
	if !n.RunUntil(func() bool { return true }, time.Second) || n.Pending() != 1 {
		t.Fatalf("RunUntil with a true condition ran callbacks (pending %d)", n.Pending())
	}

	m := New(1)
	late := 0
	m.AfterFunc(2*time.Second, func() { late++ })
	if m.RunUntil(func() bool { return false }, time.Second) {
		t.Fatal("RunUntil returned true for a false condition")
	}
	if m.Now() != time.Second || m.Pending() != 1 || late != 0 {
		t.Fatalf("after the limit: Now %v pending %d, want 1s and 1", m.Now(), m.Pending())
	}
	// The limit counts from the current time: the 2s callback is due now.
	if m.RunUntil(func() bool { return false }, time.Second) || m.Pending() != 0 || late != 1 {
		t.Fatalf("second RunUntil: pending %d, ran %d", m.Pending(), late)
	}
}

func TestReentrantRunPanics(t *testing.T) {
	for name, nested := range map[string]func(*Net){
		"Run":      func(n *Net) { n.Run(time.Second) },
		"Step":     func(n *Net) { n.Step() },
		"RunUntil": func(n *Net) { n.RunUntil(func() bool { return true }, 0) },
	} {
		n := New(1)
		panicked := false
		n.AfterFunc(0, func() {
			defer func() { panicked = recover() != nil }()
			nested(n)
		})
		n.Run(time.Second)
		if !panicked {
			t.Errorf("%s inside a callback did not panic", name)
		}
		// The loop is usable again afterwards.
		ran := false
		n.AfterFunc(0, func() { ran = true })
		n.Run(0)
		if !ran {
			t.Errorf("after the %s panic the loop no longer runs", name)
		}
	}
}

// A panicking callback must not leave the Net marked as running.
func TestPanickingCallbackReleasesLoop(t *testing.T) {
	n := New(1)
	n.AfterFunc(0, func() { panic("boom") })
	func() {
		defer func() { _ = recover() }()
		n.Run(time.Second)
	}()
	ran := false
	n.AfterFunc(0, func() { ran = true })
	n.Run(0)
	if !ran {
		t.Fatal("loop unusable after a callback panicked")
	}
}

func TestTimeSaturates(t *testing.T) {
	n := New(1)
	n.AfterFunc(maxTime, func() {})
	n.Run(time.Hour)
	if n.Pending() != 1 || n.Now() != time.Hour {
		t.Fatalf("pending %d now %v", n.Pending(), n.Now())
	}
	n.Run(maxTime) // would overflow without saturation
	if n.Pending() != 0 || n.Now() != maxTime {
		t.Fatalf("pending %d now %v", n.Pending(), n.Now())
	}
}
